/* The KV cache on an application's own device (oscar/vulkan.h).
 *
 * 1. apps/examples/oscar-embed (its own instance, device, buffers and command buffer, the
 *    validation layer on with its synchronization checks (core checks only under
 *    AddressSanitizer, see EXAMPLE_VALIDATION), the library given its
 *    vkGetInstanceProcAddr and no loader path of its own) dumps every step's inputs and
 *    outputs; the same inputs replayed through the
 *    host-pointer API (oscar_kv_append / oscar_kv_attention) on a context of the library's must
 *    give the same outputs bit for bit: the kernels are the same. Modes fp16, int2 and
 *    int2-hadamard, K/V in fp32 and fp16, the flush recorded by the program or left to
 *    oscar_kv_step_end, long enough that tokens move into INT2 pages.
 * 2. Bad input, in process, on a context made from the test context's own device: each gets
 *    its status and one line naming the problem, and the features the context uses are the
 *    ones the description enabled.
 * 3. The model level on such a context: a generated model's logits equal those on the test
 *    context, bit for bit, when the description enables what that context enabled.
 */
#include <string.h>

#include "kv_cache_impl.h"
#include "model_gen.h"
#include "oscar/vulkan.h"
#include "test_gpu.h"
#include "test_proc.h"

/* ---- 1. the example against the host-pointer path -------------------------------------------- */
typedef struct dump_header {
    uint32_t version, mode, n_layer, n_head, n_kv_head, head_dim, page_tokens, sink, recent, flush, max_context,
        max_step_tokens, n_seqs, n_steps;
} dump_header;

static int read_all(FILE *f, void *dst, size_t bytes) { return fread(dst, 1, bytes, f) == bytes; }

/* Replays the dump through the host-pointer API; returns the number of output floats compared
 * (0 when the dump is unreadable) and counts those that differ in any bit. */
static size_t replay(oscar_context *ctx, const char *path, size_t *differ, uint64_t *int2_tokens)
{
    size_t compared = 0;
    *differ = 0;
    FILE *f = fopen(path, "rb");
    char magic[8];
    dump_header h;
    oscar_kv_cache *cache = NULL;
    float *k = NULL, *v = NULL, *q = NULL, *out = NULL, *got = NULL;
    if (!f || !read_all(f, magic, 8) || memcmp(magic, "OSCAREMB", 8) != 0 || !read_all(f, &h, sizeof h) || h.version != 1 ||
        h.n_seqs > 8 || h.max_step_tokens > 4096) {
        CHECK_MSG(0, "%s is not a dump of oscar-embed", path);
        goto done;
    }
    oscar_kv_params p = oscar_kv_params_default();
    p.mode = (oscar_kv_mode)h.mode;
    p.n_layer = h.n_layer, p.n_head = h.n_head, p.n_kv_head = h.n_kv_head, p.head_dim = h.head_dim;
    p.page_tokens = h.page_tokens, p.sink_tokens = h.sink, p.recent_tokens = h.recent, p.flush_tokens = h.flush;
    p.max_sequences = h.n_seqs, p.max_context = h.max_context, p.max_step_tokens = h.max_step_tokens;
    CHECK_OK(oscar_kv_cache_create(ctx, &p, &cache));
    if (!cache) goto done;
    int32_t seqs[8];
    for (uint32_t s = 0; s < h.n_seqs; s++) CHECK_OK(oscar_kv_seq_add(cache, &seqs[s]));
    size_t kv_max = (size_t)p.max_step_tokens * h.n_kv_head * h.head_dim, qo_max = (size_t)p.max_step_tokens * h.n_head * h.head_dim;
    k = malloc(kv_max * 4), v = malloc(kv_max * 4), q = malloc(qo_max * 4), out = malloc(qo_max * 4), got = malloc(qo_max * 4);
    if (!k || !v || !q || !out || !got) goto done;
    for (uint32_t step = 0; step < h.n_steps; step++) {
        uint32_t n_new[8], T = 0;
        if (!read_all(f, n_new, 4 * h.n_seqs)) goto truncated;
        for (uint32_t s = 0; s < h.n_seqs; s++) T += n_new[s];
        if (T > p.max_step_tokens) goto truncated;
        size_t kv_n = (size_t)T * h.n_kv_head * h.head_dim, qo_n = (size_t)T * h.n_head * h.head_dim;
        CHECK_OK(oscar_kv_step_begin(cache, h.n_seqs, seqs, n_new));
        for (uint32_t l = 0; l < h.n_layer; l++) {
            if (!read_all(f, k, kv_n * 4) || !read_all(f, v, kv_n * 4) || !read_all(f, q, qo_n * 4) || !read_all(f, out, qo_n * 4))
                goto truncated;
            CHECK_OK(oscar_kv_append(cache, l, k, v));
            CHECK_OK(oscar_kv_attention(cache, l, q, got));
            size_t bad = 0;
            for (size_t i = 0; i < qo_n; i++) bad += memcmp(&got[i], &out[i], 4) != 0;
            CHECK_MSG(bad == 0, "%s: step %u layer %u: %zu of %zu outputs differ from the host-pointer path", path, step, l,
                      bad, qo_n);
            *differ += bad;
            compared += qo_n;
        }
        CHECK_OK(oscar_kv_step_end(cache));
    }
    oscar_kv_stats st;
    CHECK_OK(oscar_kv_get_stats(cache, &st));
    *int2_tokens = st.int2_tokens;
    goto done;
truncated:
    CHECK_MSG(0, "%s is truncated", path);
    compared = 0;
done:
    if (f) fclose(f);
    oscar_kv_cache_destroy(cache);
    free(k), free(v), free(q), free(out), free(got);
    return compared;
}

/* Under AddressSanitizer the program keeps to the layer's core checks: with its synchronization
 * checks the layer (C++) leaves objects behind at exit that LeakSanitizer cannot attribute, since
 * the loader unloads the layer with the instance before the report, so tests/lsan.supp cannot
 * match them. The plain build runs the synchronization checks here, and CI once more (.ci/run). */
#if defined(__SANITIZE_ADDRESS__)
#define EXAMPLE_VALIDATION "--validation"
#else
#define EXAMPLE_VALIDATION "--sync-validation"
#endif

static void check_example(oscar_context *ctx, const char *app, const char *name, const char *const *extra)
{
    const char *dump = test_tmp_path(name);
    const char *args[16] = { EXAMPLE_VALIDATION, "--dump", dump };
    int n = 3;
    for (; *extra && n < 15; extra++) args[n++] = *extra;
    args[n] = NULL;
    test_run_result r = test_run(app, args, NULL, test_tmp_path(""), 300);
    CHECK_MSG(r.code == 0, "oscar-embed %s: exit %d: %s", name, r.code, r.err);
    if (r.code == 0) {
        size_t differ = 0;
        uint64_t int2_tokens = 0;
        size_t compared = replay(ctx, dump, &differ, &int2_tokens);
        CHECK_MSG(compared > 0 && differ == 0, "%s: %zu of %zu outputs differ", name, differ, compared);
        char want[64];
        snprintf(want, sizeof want, "%llu INT2", (unsigned long long)int2_tokens);
        CHECK_MSG(strstr(r.out, want) != NULL, "%s: the program's stats (%s) differ from the host path's (%s)", name, r.out, want);
        if (strcmp(name, "fp16") != 0) CHECK_MSG(int2_tokens > 0, "%s: no token reached the INT2 pages", name);
        if (compared > 0 && differ == 0)
            printf("%s: %zu outputs bit for bit, %llu INT2 tokens\n", name, compared, (unsigned long long)int2_tokens);
    }
    test_run_free(&r);
}

/* ---- 2. bad input ---------------------------------------------------------------------------- */
/* The loader this process uses, through another function: the same loader. */
static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL forwarding_gipa(VkInstance instance, const char *name)
{
    return vkGetInstanceProcAddr(instance, name);
}

/* A loader other than the one this process uses (it resolves nothing). */
static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL other_gipa(VkInstance instance, const char *name)
{
    (void)instance, (void)name;
    return NULL;
}

/* A description of the test context's own device, enabling what `chain` says. */
static oscar_vk_device describe(const oscar_context *ctx, const VkPhysicalDeviceFeatures2 *chain)
{
    oscar_vk_device d = { .get_instance_proc_addr = vkGetInstanceProcAddr, .instance = ctx->instance,
                          .api_version = VK_API_VERSION_1_2, .physical_device = ctx->physical, .device = ctx->device,
                          .queue_family = ctx->queue_family, .enabled_features = chain };
    return d;
}

static void check_error(oscar_status got, oscar_status want, const char *words, const char *what)
{
    CHECK_MSG(got == want, "%s: %s, want %s", what, oscar_status_string(got), oscar_status_string(want));
    CHECK_MSG(strstr(oscar_last_error(), words) != NULL, "%s: the message '%s' does not name '%s'", what, oscar_last_error(), words);
    CHECK_MSG(strchr(oscar_last_error(), '\n') == NULL, "%s: more than one line", what);
}

static void check_device_descriptions(oscar_context *ctx)
{
    oscar_vk_device d = describe(ctx, NULL);
    char report[1024];
    d.api_version = VK_API_VERSION_1_0;
    check_error(oscar_vk_check_device(&d, report, sizeof report), OSCAR_ERROR_MISSING_FEATURE, "api_version", "Vulkan 1.0");
    d = describe(ctx, NULL);
    d.queue_family = 99;
    check_error(oscar_vk_check_device(&d, report, sizeof report), OSCAR_ERROR_INVALID_ARGUMENT, "queue_family 99", "family");
    d = describe(ctx, NULL);
    d.queue_index = 99;
    check_error(oscar_vk_check_device(&d, report, sizeof report), OSCAR_ERROR_INVALID_ARGUMENT, "queue_index 99", "queue");
    d = describe(ctx, NULL);
    d.device = VK_NULL_HANDLE;
    oscar_context *ext = (oscar_context *)&d; /* must come back NULL */
    check_error(oscar_vk_context_create(&d, NULL, &ext), OSCAR_ERROR_INVALID_ARGUMENT, "device", "no device");
    CHECK(ext == NULL);
    d = describe(ctx, NULL);
    d.get_instance_proc_addr = forwarding_gipa;
    CHECK_OK(oscar_vk_check_device(&d, NULL, 0));
    d.get_instance_proc_addr = other_gipa;
    check_error(oscar_vk_check_device(&d, NULL, 0), OSCAR_ERROR_INVALID_STATE, "one loader", "a second loader");
    d = describe(ctx, NULL);
    d.enabled_extension_count = 1;
    check_error(oscar_vk_check_device(&d, NULL, 0), OSCAR_ERROR_INVALID_ARGUMENT, "enabled_extensions", "no names");

    /* nothing enabled: the report lists fp16 where the device has it, and the context leaves it off */
    oscar_device_info has;
    CHECK_OK(oscar_context_device_info(ctx, &has));
    d = describe(ctx, NULL);
    CHECK_OK(oscar_vk_check_device(&d, report, sizeof report));
    CHECK_MSG(!has.float16_arithmetic || strstr(report, "shaderFloat16"), "report without shaderFloat16: %s", report);
    CHECK_OK(oscar_vk_context_create(&d, NULL, &ext));
    oscar_device_info info;
    CHECK_OK(oscar_context_device_info(ext, &info));
    CHECK(info.float16_arithmetic == 0 && info.subgroup_size_control == 0 && info.integer_dot_product == 0);
    CHECK(info.min_subgroup_size == info.subgroup_size && info.max_subgroup_size == info.subgroup_size);
    oscar_context_destroy(ext);
    /* shaderFloat16 enabled through a Vulkan 1.2 structure deep in the chain */
    VkPhysicalDeviceVulkan12Features f12 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                             .shaderFloat16 = (VkBool32)has.float16_arithmetic };
    VkPhysicalDeviceVulkan11Features f11 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, .pNext = &f12 };
    VkPhysicalDeviceFeatures2 f2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11 };
    d = describe(ctx, &f2);
    CHECK_OK(oscar_vk_check_device(&d, report, sizeof report));
    CHECK_MSG(strstr(report, "shaderFloat16") == NULL, "report: %s", report);
    CHECK_OK(oscar_vk_context_create(&d, NULL, &ext));
    CHECK_OK(oscar_context_device_info(ext, &info));
    CHECK(info.float16_arithmetic == has.float16_arithmetic);
    oscar_context_destroy(ext);
}

static void check_buffers(oscar_context *ctx)
{
    oscar_vk_device d = describe(ctx, NULL);
    oscar_context *ext = NULL;
    oscar_kv_cache *cache = NULL, *own = NULL;
    CHECK_OK(oscar_vk_context_create(&d, NULL, &ext));
    oscar_kv_params p = oscar_kv_params_default();
    p.n_layer = 1, p.n_head = 2, p.n_kv_head = 1, p.head_dim = 64, p.max_context = 64, p.max_step_tokens = 4;
    CHECK_OK(oscar_kv_cache_create(ext, &p, &cache));
    CHECK_OK(oscar_kv_cache_create(ctx, &p, &own));
    ovk_buffer buf;
    CHECK_OK(ovk_buffer_create(ctx, 4096, OSCAR_BUFFER_DEVICE, &buf));
    if (!cache || !own || !buf.buffer) goto done;
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    VkCommandBuffer cb = ctx->cmd.cb;
    uint64_t align = ctx->limits.minStorageBufferOffsetAlignment < 4 ? 4 : ctx->limits.minStorageBufferOffsetAlignment;
    /* 2 tokens: k, v 2 x 1 x 64 floats = 512 bytes; q, out 2 x 2 x 64 = 1024 bytes */
    oscar_vk_buffer k = { buf.buffer, 0, 512, OSCAR_VK_F32 }, v = { buf.buffer, 512, 512, OSCAR_VK_F32 };
    oscar_vk_buffer q = { buf.buffer, 1024, 1024, OSCAR_VK_F32 }, out = { buf.buffer, 2048, 1024, OSCAR_VK_F32 };
    check_error(oscar_vk_kv_append(cache, cb, 0, &k, &v), OSCAR_ERROR_INVALID_STATE, "outside a step", "no step");
    int32_t seq;
    uint32_t n_new = 2;
    CHECK_OK(oscar_kv_seq_add(cache, &seq));
    CHECK_OK(oscar_kv_seq_add(own, &seq));
    CHECK_OK(oscar_kv_step_begin(cache, 1, &seq, &n_new));
    CHECK_OK(oscar_kv_step_begin(own, 1, &seq, &n_new));
    check_error(oscar_vk_kv_append(own, cb, 0, &k, &v), OSCAR_ERROR_INVALID_ARGUMENT, "oscar_vk_context_create", "own context");
    check_error(oscar_vk_kv_append(cache, VK_NULL_HANDLE, 0, &k, &v), OSCAR_ERROR_INVALID_ARGUMENT, "command buffer", "no cb");
    oscar_vk_buffer bad = k;
    bad.size = 508;
    check_error(oscar_vk_kv_append(cache, cb, 0, &bad, &v), OSCAR_ERROR_INVALID_ARGUMENT, "k.size is 508 bytes", "small k");
    bad = v;
    bad.offset = 2;
    check_error(oscar_vk_kv_append(cache, cb, 0, &k, &bad), OSCAR_ERROR_INVALID_ARGUMENT, "v.offset 2", "misaligned v");
    bad = k;
    bad.type = OSCAR_VK_F16;
    bad.size = 256;
    check_error(oscar_vk_kv_append(cache, cb, 0, &bad, &v), OSCAR_ERROR_INVALID_ARGUMENT, "different types", "k f16, v f32");
    bad.type = (oscar_vk_type)7;
    check_error(oscar_vk_kv_append(cache, cb, 0, &bad, &v), OSCAR_ERROR_INVALID_ARGUMENT, "k.type 7", "unknown type");
    bad = q;
    bad.type = OSCAR_VK_F16;
    check_error(oscar_vk_kv_attention(cache, cb, 0, &bad, &out), OSCAR_ERROR_INVALID_ARGUMENT, "q.type", "f16 q");
    bad = out;
    bad.offset = q.offset + align;
    check_error(oscar_vk_kv_attention(cache, cb, 0, &q, &bad), OSCAR_ERROR_INVALID_ARGUMENT, "out overlaps q", "overlap");
    check_error(oscar_vk_kv_attention(cache, cb, 0, &q, NULL), OSCAR_ERROR_INVALID_ARGUMENT, "out is NULL", "no out");
    check_error(oscar_vk_kv_append(cache, cb, 1, &k, &v), OSCAR_ERROR_INVALID_ARGUMENT, "layer 1 of 1", "layer");
    /* the good calls record into the test context's stream; after the flush nothing more */
    CHECK_OK(oscar_vk_kv_append(cache, cb, 0, &k, &v));
    CHECK_OK(oscar_vk_kv_attention(cache, cb, 0, &q, &out));
    CHECK_OK(oscar_vk_kv_flush(cache, cb));
    check_error(oscar_vk_kv_attention(cache, cb, 0, &q, &out), OSCAR_ERROR_INVALID_STATE, "after oscar_vk_kv_flush", "late");
    CHECK_OK(oscar_kv_step_end(cache));
    CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
    ovk_kv_cancel_step(own);
done:
    ovk_buffer_destroy(ctx, &buf);
    oscar_kv_cache_destroy(own);
    oscar_kv_cache_destroy(cache);
    oscar_context_destroy(ext);
}

/* ---- 3. the model level ----------------------------------------------------------------------- */
/* Loads the model on ctx, prefills the same tokens in mode int2 with small fp16 windows (the
 * prompt reaches the INT2 pages) and decodes one token; logits of both steps into
 * logits[2][n_vocab]. Returns 1 when every call succeeded. */
static int run_model(oscar_context *ctx, const char *path, float *logits, uint32_t n_vocab)
{
    oscar_model *m = NULL;
    oscar_session *s = NULL;
    int32_t seq = -1, prompt[40], next = 7;
    for (int i = 0; i < 40; i++) prompt[i] = (int32_t)((i * 37 + 11) % n_vocab);
    oscar_session_params sp = oscar_session_params_default();
    sp.kv_mode = OSCAR_KV_INT2, sp.n_ctx = 128, sp.sink_tokens = 4, sp.recent_tokens = 8, sp.n_batch = 16;
    int ok = oscar_model_load(ctx, path, NULL, &m) == OSCAR_OK && oscar_session_create(m, &sp, &s) == OSCAR_OK &&
             oscar_session_seq_add(s, &seq) == OSCAR_OK && oscar_session_prefill(s, seq, prompt, 40, logits) == OSCAR_OK &&
             oscar_session_decode(s, 1, &seq, &next, logits + n_vocab) == OSCAR_OK;
    CHECK_MSG(ok, "the model on %s context: %s", ctx->external ? "an application's" : "the test", oscar_last_error());
    oscar_session_destroy(s);
    oscar_model_destroy(m);
    return ok;
}

static void check_model(oscar_context *ctx)
{
    ovk_model_gen_params gp = ovk_model_gen_params_default(OSCAR_ARCH_LLAMA);
    gp.n_embd = 128, gp.n_head = 2, gp.n_head_kv = 1, gp.head_dim = 64, gp.n_ff = 256;
    gp.weight_type = gp.embd_type = OSCAR_GGML_TYPE_Q4_0;
    const char *path = test_tmp_path("tiny.gguf");
    CHECK_OK(ovk_model_gen_write(&gp, path));
    /* describe what the test context enabled on its device */
    const oscar_device_info *has = &ctx->info;
    VkPhysicalDeviceShaderIntegerDotProductFeatures idot = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES,
        .shaderIntegerDotProduct = (VkBool32)has->integer_dot_product };
    VkPhysicalDeviceSubgroupSizeControlFeatures sc = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES,
                                                       .pNext = &idot, .subgroupSizeControl = (VkBool32)has->subgroup_size_control,
                                                       .computeFullSubgroups = (VkBool32)has->compute_full_subgroups };
    VkPhysicalDeviceVulkan12Features f12 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .pNext = &sc,
                                             .shaderFloat16 = (VkBool32)has->float16_arithmetic,
                                             .shaderInt8 = (VkBool32)has->int8_arithmetic,
                                             .storageBuffer8BitAccess = (VkBool32)has->storage_8bit };
    VkPhysicalDeviceVulkan11Features f11 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, .pNext = &f12,
                                             .storageBuffer16BitAccess = (VkBool32)has->storage_16bit };
    VkPhysicalDeviceFeatures2 f2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11 };
    f2.features.shaderInt16 = (VkBool32)has->int16_arithmetic, f2.features.shaderInt64 = (VkBool32)has->int64_arithmetic;
    const char *exts[2];
    uint32_t n_exts = 0;
    if (has->integer_dot_product) exts[n_exts++] = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
    if (has->subgroup_size_control) exts[n_exts++] = VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME;
    oscar_vk_device d = describe(ctx, &f2);
    d.enabled_extension_count = n_exts, d.enabled_extensions = exts;
    oscar_context *ext = NULL;
    CHECK_OK(oscar_vk_context_create(&d, NULL, &ext));
    oscar_device_info got;
    if (ext && oscar_context_device_info(ext, &got) == OSCAR_OK)
        CHECK_MSG(got.float16_arithmetic == has->float16_arithmetic && got.integer_dot_product == has->integer_dot_product &&
                  got.min_subgroup_size == has->min_subgroup_size && got.max_subgroup_size == has->max_subgroup_size,
                  "the description enables other features than the test context has");
    uint32_t n_vocab = gp.n_vocab;
    float *a = malloc(2ull * n_vocab * 4), *b = malloc(2ull * n_vocab * 4);
    if (ext && a && b && run_model(ctx, path, a, n_vocab) && run_model(ext, path, b, n_vocab)) {
        size_t differ = 0;
        for (size_t i = 0; i < 2ull * n_vocab; i++) differ += memcmp(&a[i], &b[i], 4) != 0;
        CHECK_MSG(differ == 0, "the model's logits: %zu of %u differ between the two contexts", differ, 2 * n_vocab);
        if (differ == 0) printf("model level: %u logits bit for bit\n", 2 * n_vocab);
    }
    free(a), free(b);
    oscar_context_destroy(ext);
}

int main(void)
{
    char apps[4096], app[4200];
    test_apps_require(apps, sizeof apps, "oscar-embed");
    snprintf(app, sizeof app, "%s/oscar-embed", apps);
    oscar_context *ctx = test_gpu_context(); /* the host-pointer path's context; its loader is open now */
    test_tmp_dir_make("oscar_test_vk_embed");
    /* the program must hand the library its loader: the library's own path leads nowhere */
    setenv("OSCAR_VULKAN_LIBRARY", "/nonexistent/libvulkan.so.1", 1);
    static const char *const int2[] = { NULL };
    static const char *const fp16[] = { "--mode", "fp16", "--f16-kv", "--steps", "8", NULL };
    static const char *const hadamard[] = { "--mode", "int2-hadamard", "--f16-kv", "--flush-in-step-end", "--steps", "16", NULL };
    static const char *const int2_late[] = { "--flush-in-step-end", "--steps", "12", NULL };
    check_example(ctx, app, "int2", int2);
    check_example(ctx, app, "fp16", fp16);
    check_example(ctx, app, "int2-hadamard", hadamard);
    check_example(ctx, app, "int2-step-end", int2_late);
    unsetenv("OSCAR_VULKAN_LIBRARY");

    check_device_descriptions(ctx);
    check_buffers(ctx);
    check_model(ctx);
    test_tmp_dir_remove();
    return test_gpu_finish(ctx);
}
