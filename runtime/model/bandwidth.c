/* Device read bandwidth with a streaming kernel: the roofline every benchmark quotes. */
#include "oscar/experimental.h"
#include "ops.h"
#include "vk_context.h"

OSCAR_API oscar_status oscar_measure_read_bandwidth(oscar_context *ctx, uint64_t bytes, uint32_t iterations, double *gbps)
{
    oscar_status st = OSCAR_OK;
    ovk_buffer src = { 0 }, sink = { 0 };
    if (!ctx || !gbps || iterations == 0) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_measure_read_bandwidth: bad argument");
    if (!ctx->info.timestamps) OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "device has no timestamp queries");
    if (bytes > ctx->limits.maxStorageBufferRange) bytes = ctx->limits.maxStorageBufferRange;
    if (bytes > (uint64_t)UINT32_MAX * 16u) bytes = (uint64_t)UINT32_MAX * 16u;
    bytes &= ~(uint64_t)15;
    if (bytes < 4096) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "bandwidth buffer too small (%llu bytes)", (unsigned long long)bytes);
    if (iterations > 100) iterations = 100;

    ovk_ops ops;
    ovk_ops_init(&ops, ctx);
    OSCAR_TRY(ovk_buffer_create(ctx, bytes, OSCAR_BUFFER_DEVICE, &src));
    OSCAR_TRY(ovk_buffer_create(ctx, 16, OSCAR_BUFFER_DEVICE, &sink));
    OSCAR_TRY(ovk_buffer_fill(ctx, &src, 0, bytes, 0x5A5A5A5Au));

    double best_ns = 0;
    for (uint32_t it = 0; it <= iterations; it++) { /* iteration 0 warms up */
        OSCAR_TRY(ovk_cmd_begin(ctx, &ctx->cmd));
        int t0 = ovk_cmd_timestamp(ctx, &ctx->cmd);
        OSCAR_TRY(ovk_op_read_stream(&ops, &ctx->cmd, (ovk_binding){ &src, 0, 0 }, bytes, 0, (ovk_binding){ &sink, 0, 0 }));
        int t1 = ovk_cmd_timestamp(ctx, &ctx->cmd);
        OSCAR_TRY(ovk_cmd_submit_wait(ctx, &ctx->cmd));
        double ns;
        OSCAR_TRY(ovk_cmd_elapsed_ns(ctx, &ctx->cmd, t0, t1, &ns));
        if (it > 0 && ns > 0 && (best_ns == 0 || ns < best_ns)) best_ns = ns;
    }
    *gbps = best_ns > 0 ? (double)bytes / best_ns : 0.0;
fail:
    ovk_buffer_destroy(ctx, &src);
    ovk_buffer_destroy(ctx, &sink);
    return st;
}
