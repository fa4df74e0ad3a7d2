#include <stdlib.h>

#include "test_gpu.h"

oscar_context *test_gpu_context(void)
{
    oscar_context_params p = oscar_context_params_default();
    p.validation = 1;
    oscar_context *ctx = NULL;
    oscar_status st = oscar_context_create(&p, &ctx);
    if (st == OSCAR_ERROR_NO_LOADER || st == OSCAR_ERROR_NO_DEVICE) test_skip(oscar_last_error());
    if (st != OSCAR_OK) {
        fprintf(stderr, "oscar_context_create: %s: %s\n", oscar_status_string(st), oscar_last_error());
        exit(1);
    }
    oscar_device_info info;
    oscar_context_device_info(ctx, &info);
    printf("device: %s (subgroup %u, %u..%u)\n", info.name, info.subgroup_size, info.min_subgroup_size, info.max_subgroup_size);
    return ctx;
}

int test_gpu_finish(oscar_context *ctx)
{
    uint64_t n = oscar_context_validation_messages(ctx);
    CHECK_MSG(n == 0, "%llu validation messages", (unsigned long long)n);
    oscar_context_destroy(ctx);
    return test_finish();
}

void test_gpu_release(oscar_context *ctx)
{
    uint64_t n = oscar_context_validation_messages(ctx);
    CHECK_MSG(n == 0, "%llu validation messages", (unsigned long long)n);
    oscar_context_destroy(ctx);
}

oscar_status test_gpu_run(oscar_context *ctx, const ovk_pipeline *p, const ovk_binding *bindings,
                          const void *push, uint32_t gx, uint32_t gy, uint32_t gz)
{
    oscar_status st = ovk_cmd_begin(ctx, &ctx->cmd);
    if (st != OSCAR_OK) return st;
    uint32_t groups[3] = { gx, gy, gz };
    st = ovk_cmd_dispatch(ctx, &ctx->cmd, p, bindings, push, groups);
    oscar_status st2 = ovk_cmd_submit_wait(ctx, &ctx->cmd); /* always close the stream */
    return st != OSCAR_OK ? st : st2;
}

oscar_status test_gpu_buffer_from(oscar_context *ctx, const void *data, size_t bytes, ovk_buffer *out)
{
    oscar_status st = ovk_buffer_create(ctx, bytes, OSCAR_BUFFER_DEVICE, out);
    if (st == OSCAR_OK && data) st = ovk_buffer_upload(ctx, out, 0, data, bytes);
    return st;
}
