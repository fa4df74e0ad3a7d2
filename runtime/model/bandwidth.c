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

    /* warm-up: 300 ms of reads back to back (in submissions of about 50 ms), so the GPU's clock
     * governor has the clocks up after idle time (loading a model, compiling pipelines): timed
     * from idle, an H100 read 1.85 TB/s instead of 3.16 */
    double warm_ns = 0, spent_ns = 0;
    for (uint32_t reps = 1; spent_ns < 300e6 && reps <= 4096;) {
        OSCAR_TRY(ovk_cmd_begin(ctx, &ctx->cmd));
        int t0 = ovk_cmd_timestamp(ctx, &ctx->cmd);
        for (uint32_t r = 0; r < reps; r++)
            OSCAR_TRY(ovk_op_read_stream(&ops, &ctx->cmd, (ovk_binding){ &src, 0, 0 }, bytes, 0, (ovk_binding){ &sink, 0, 0 }));
        int t1 = ovk_cmd_timestamp(ctx, &ctx->cmd);
        OSCAR_TRY(ovk_cmd_submit_wait(ctx, &ctx->cmd));
        OSCAR_TRY(ovk_cmd_elapsed_ns(ctx, &ctx->cmd, t0, t1, &warm_ns));
        spent_ns += warm_ns;
        double per = warm_ns / reps;
        reps = per > 0 ? (uint32_t)(50e6 / per) + 1 : 4096;
        if (reps > 4096) reps = 4096;
    }
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
