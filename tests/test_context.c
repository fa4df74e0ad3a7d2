/* The Vulkan context: device listing and choice, capabilities, buffers (upload, download,
 * fill), pipeline reuse, timestamps, bandwidth (and its probe kernel), and bad device names. */
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "oscar/experimental.h"
#include "test_gpu.h"

static void test_buffers(oscar_context *ctx)
{
    /* sizes around the 16 MiB staging chunk and odd sizes */
    size_t sizes[] = { 4, 12, 4096, 1000004, (16u << 20) + 8 };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        uint8_t *src = malloc(n), *dst = malloc(n);
        for (size_t i = 0; i < n; i++) src[i] = (uint8_t)(test_rng_u32() >> 7);
        ovk_buffer buf;
        CHECK_OK(ovk_buffer_create(ctx, n, OSCAR_BUFFER_DEVICE, &buf));
        CHECK_OK(ovk_buffer_upload(ctx, &buf, 0, src, n));
        memset(dst, 0, n);
        CHECK_OK(ovk_buffer_download(ctx, &buf, 0, dst, n));
        CHECK_MSG(memcmp(src, dst, n) == 0, "round trip of %zu bytes", n);
        if (n >= 12) {
            CHECK_OK(ovk_buffer_fill(ctx, &buf, 4, 8, 0xA1B2C3D4u));
            uint32_t words[3];
            CHECK_OK(ovk_buffer_download(ctx, &buf, 0, words, 12));
            uint32_t first;
            memcpy(&first, src, 4);
            CHECK(words[0] == first && words[1] == 0xA1B2C3D4u && words[2] == 0xA1B2C3D4u);
        }
        /* out-of-range access is refused, not performed */
        CHECK_STATUS(ovk_buffer_upload(ctx, &buf, 1, src, n), OSCAR_ERROR_INVALID_ARGUMENT);
        CHECK_STATUS(ovk_buffer_download(ctx, &buf, n, dst, 1), OSCAR_ERROR_INVALID_ARGUMENT);
        ovk_buffer_destroy(ctx, &buf);
        free(src);
        free(dst);
    }
}

static void test_pipelines(oscar_context *ctx)
{
    ovk_pipeline_desc d = { .shader = "convert_f16", .n_buffers = 3, .push_size = 4, .n_spec = 1, .spec = { 64 } };
    ovk_pipeline *a = NULL, *b = NULL, *c = NULL;
    CHECK_OK(ovk_pipeline_get(ctx, &d, &a));
    CHECK_OK(ovk_pipeline_get(ctx, &d, &b));
    CHECK(a != NULL && a == b); /* created once, reused */
    d.spec[0] = 32;
    CHECK_OK(ovk_pipeline_get(ctx, &d, &c));
    CHECK(c != NULL && c != a); /* other constants, other pipeline */
    ovk_pipeline_desc bad = { .shader = "no_such_shader", .n_buffers = 1 };
    CHECK_STATUS(ovk_pipeline_get(ctx, &bad, &c), OSCAR_ERROR_SHADER);
    CHECK(strstr(oscar_last_error(), "no_such_shader") != NULL);
    d.spec[0] = 0; /* a workgroup of no threads is refused before the driver sees it */
    CHECK_STATUS(ovk_pipeline_get(ctx, &d, &c), OSCAR_ERROR_INVALID_ARGUMENT);
    /* a texel-buffer binding past the bindings is refused */
    ovk_pipeline_desc texel = { .shader = "mul_mat_vec_planes", .n_buffers = 3, .push_size = 16, .n_spec = 1, .spec = { 8 },
                                .texel_bindings = 0x8 };
    CHECK_STATUS(ovk_pipeline_get(ctx, &texel, &c), OSCAR_ERROR_INVALID_ARGUMENT);
}

static void test_device_choice(void)
{
    uint32_t n = 0;
    CHECK_OK(oscar_list_devices(NULL, &n));
    CHECK(n >= 1);
    oscar_device_info *infos = calloc(n, sizeof *infos);
    CHECK_OK(oscar_list_devices(infos, &n));
    for (uint32_t i = 0; i < n; i++) {
        CHECK(infos[i].name[0] != '\0');
        CHECK(infos[i].subgroup_size >= 1 && infos[i].min_subgroup_size <= infos[i].max_subgroup_size);
        CHECK(infos[i].heap_count >= 1 && infos[i].heaps[0].size > 0);
    }
    oscar_context_params p = oscar_context_params_default();
    p.validation = 1;
    oscar_context *ctx = (oscar_context *)1;
    /* a name that exists nowhere: a status naming the request and listing the devices */
    p.device = "no-such-gpu-xyz";
    unsetenv("OSCAR_DEVICE");
    CHECK_STATUS(oscar_context_create(&p, &ctx), OSCAR_ERROR_DEVICE_NOT_FOUND);
    CHECK(ctx == NULL);
    CHECK(strstr(oscar_last_error(), "no-such-gpu-xyz") != NULL && strstr(oscar_last_error(), infos[0].name) != NULL);
    p.device = "99";
    CHECK_STATUS(oscar_context_create(&p, &ctx), OSCAR_ERROR_DEVICE_NOT_FOUND);
    /* the environment overrides the params */
    setenv("OSCAR_DEVICE", "also-not-a-gpu", 1);
    p.device = NULL;
    CHECK_STATUS(oscar_context_create(&p, &ctx), OSCAR_ERROR_DEVICE_NOT_FOUND);
    unsetenv("OSCAR_DEVICE");
    /* by index and by name substring */
    p.device = "0";
    CHECK_OK(oscar_context_create(&p, &ctx));
    oscar_context_destroy(ctx);
    char sub[8] = { 0 };
    memcpy(sub, infos[0].name, strlen(infos[0].name) < 4 ? strlen(infos[0].name) : 4);
    p.device = sub;
    CHECK_OK(oscar_context_create(&p, &ctx));
    CHECK(oscar_context_validation_messages(ctx) == 0);
    oscar_context_destroy(ctx);
    oscar_context_destroy(NULL); /* a no-op */
    free(infos);
}

/* The bandwidth probe's one observable effect, against its definition: sink[0] is written (with
 * the magic 0x0BADF00D) exactly when the XOR of a thread's loaded words equals the magic. A
 * buffer of one vec4 holding the magic writes it; a buffer whose every thread XORs to anything
 * else leaves sink alone; bad sizes and bindings are refused. */
static void test_read_stream(oscar_context *ctx)
{
    ovk_ops ops;
    ovk_ops_init(&ops, ctx);
    ovk_buffer src = { 0 }, sink = { 0 };
    CHECK_OK(ovk_buffer_create(ctx, 1 << 16, OSCAR_BUFFER_DEVICE, &src));
    CHECK_OK(ovk_buffer_create(ctx, 16, OSCAR_BUFFER_DEVICE, &sink));
    ovk_binding bs = { &src, 0, 0 }, bk = { &sink, 0, 0 };
    for (int hit = 0; hit < 2; hit++) {
        uint32_t first[4] = { hit ? 0x0BADF00Du : 0x0BADF00Cu, 0, 0, 0 }, got = 0;
        CHECK_OK(ovk_buffer_fill(ctx, &src, 0, 1 << 16, 0x5A5A5A5Au));
        CHECK_OK(ovk_buffer_upload(ctx, &src, 0, first, 16));
        for (int c = 0; c < 3; c++) { /* the first vec4 alone, then 64 KiB: 16 loads a thread, then 1 */
            int whole = c > 0;
            CHECK_OK(ovk_buffer_fill(ctx, &sink, 0, 16, 0x12345678u));
            CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
            CHECK_OK(ovk_op_read_stream(&ops, &ctx->cmd, bs, whole ? 1 << 16 : 16, c == 2 ? 1 : 0, bk));
            CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
            CHECK_OK(ovk_buffer_download(ctx, &sink, 0, &got, 4));
            /* 64 KiB, 16 loads a thread: thread 0 also XORs in 15 vec4s of 0x5A5A5A5A, whose
             * four words cancel in its final XOR, so it sees the first word again; the other
             * threads see 0. One load a thread (16 workgroups): thread 0 reads the first vec4 only */
            uint32_t want = hit ? 0x0BADF00Du : 0x12345678u;
            CHECK_MSG(got == want, "read_stream %s, %s: sink %08x, want %08x", hit ? "magic" : "no magic",
                      c == 2 ? "64 KiB, 1 load a thread" : whole ? "64 KiB" : "16 bytes", got, want);
        }
    }
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    CHECK_STATUS(ovk_op_read_stream(&ops, &ctx->cmd, bs, 24, 0, bk), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_op_read_stream(&ops, &ctx->cmd, bs, 0, 0, bk), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_op_read_stream(&ops, &ctx->cmd, bs, 1 << 17, 0, bk), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
    ovk_buffer_destroy(ctx, &src);
    ovk_buffer_destroy(ctx, &sink);
}

int main(void)
{
    test_rng_seed(1);
    CHECK(strcmp(oscar_status_string(OSCAR_ERROR_OUT_OF_PAGES), "OSCAR_ERROR_OUT_OF_PAGES") == 0);
    CHECK(oscar_version_number() == OSCAR_VERSION_NUMBER);
    oscar_context *ctx = test_gpu_context();
    oscar_device_info info;
    CHECK_OK(oscar_context_device_info(ctx, &info));
    CHECK(info.max_shared_memory >= 16384 && info.max_workgroup_invocations >= 128);
    test_buffers(ctx);
    test_pipelines(ctx);
    test_read_stream(ctx);
    if (info.timestamps) {
        double gbps = 0;
        CHECK_OK(oscar_measure_read_bandwidth(ctx, 16u << 20, 2, &gbps));
        printf("read bandwidth (16 MiB): %.1f GB/s\n", gbps);
        CHECK(gbps > 0.01 && gbps < 100000);
    }
    test_device_choice();
    return test_gpu_finish(ctx);
}
