/* The int8 mat-vec that ends with the next RMS norm (ovk_op_mul_mat_q8_norm): its product y,
 * the residual stream x += y, the normalized row xb and xb's int8 blocks equal bit for bit those
 * of the two dispatches it replaces (ovk_op_mul_mat_q8, a barrier, ovk_op_rms_norm_x_q8), which
 * test_ops_matvec_q8 and test_ops_elementwise check against their references. Two calls in a row
 * (the second on the first's x) check that the workgroup count returns to 0. Q4_0, Q4_K and Q6_K,
 * every variant this context runs, 64 to 256 threads, one to four subgroups a row, 32 to 4096
 * rows (1 to 8 words of 4 elements a thread in the norm); bad arguments, and rows over what the
 * norm's threads hold, are refused before anything is recorded. Skips (77) where the device has no
 * subgroup arithmetic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_types.h"
#include "ops.h"
#include "test_gpu.h"
#include "test_weights.h"

static const char *const variants[] = { "mul_mat_vec_q8", "mul_mat_vec_q8.idot" };

enum { X, NW, Y, XB, XQ, XIN, XINQ, COUNT, N_BUF };

/* Two rounds of y = W xin, then the norm, fused or not; xin quantized first. */
static oscar_status run(const ovk_ops *ops, const char *variant, uint32_t type, const ovk_buffer *w, ovk_buffer *b,
                        uint32_t rows, uint32_t cols, int fused)
{
    oscar_context *ctx = ops->ctx;
    const float eps = 1e-5f;
    ovk_binding x = { &b[X], 0, 0 }, nw = { &b[NW], 0, 0 }, y = { &b[Y], 0, 0 }, xb = { &b[XB], 0, 0 };
    ovk_binding xq = { &b[XQ], 0, 0 }, xinq = { &b[XINQ], 0, 0 }, wb = { (ovk_buffer *)w, 0, 0 };
    ovk_norm_tail tail = { x, nw, xb, xq, { &b[COUNT], 0, 0 }, eps };
    oscar_status st = ovk_cmd_begin(ctx, &ctx->cmd);
    if (st == OSCAR_OK) st = ovk_op_x_q8(ops, &ctx->cmd, (ovk_binding){ &b[XIN], 0, 0 }, xinq, cols);
    for (int round = 0; round < 2 && st == OSCAR_OK; round++) {
        ovk_cmd_barrier(ctx, &ctx->cmd);
        if (fused) {
            st = ovk_op_mul_mat_q8_norm(ops, &ctx->cmd, variant, type, wb, xinq, y, rows, cols, &tail);
            continue;
        }
        st = ovk_op_mul_mat_q8(ops, &ctx->cmd, variant, type, wb, xinq, y, rows, rows, cols, 1);
        ovk_cmd_barrier(ctx, &ctx->cmd);
        if (st == OSCAR_OK) st = ovk_op_rms_norm_x_q8(ops, &ctx->cmd, x, &y, nw, xb, xq, rows, eps);
    }
    oscar_status st2 = ovk_cmd_submit_wait(ctx, &ctx->cmd);
    return st != OSCAR_OK ? st : st2;
}

static void check_case(ovk_ops *ops, const char *variant, uint32_t type, uint32_t rows, uint32_t cols)
{
    oscar_context *ctx = ops->ctx;
    size_t wbytes;
    uint8_t *w = test_make_weights(type, rows, cols, &wbytes);
    uint64_t sizes[N_BUF] = { rows * 4ull, rows * 4ull, rows * 4ull, rows * 4ull, OSCAR_X_Q8_BYTES(rows), cols * 4ull,
                              OSCAR_X_Q8_BYTES(cols), 4 };
    float *x = malloc(rows * 4), *nw = malloc(rows * 4), *xin = malloc(cols * 4);
    uint8_t *got[2][N_BUF] = { { NULL } };
    ovk_buffer bw = { 0 }, b[2][N_BUF] = { { { 0 } } };
    int ok = w && x && nw && xin;
    for (int f = 0; f < 2; f++)
        for (int i = 0; i < N_BUF; i++) ok = ok && (got[f][i] = malloc(sizes[i])) != NULL;
    CHECK(ok);
    if (!ok) goto done;
    for (uint32_t i = 0; i < rows; i++) x[i] = test_rng_normal() * 4.0f, nw[i] = 1.0f + 0.25f * test_rng_normal();
    for (uint32_t i = 0; i < cols; i++) xin[i] = test_rng_normal();
    CHECK_OK(test_gpu_buffer_from(ctx, w, wbytes, &bw));
    for (int f = 0; f < 2; f++) {
        const void *init[N_BUF] = { x, nw, NULL, NULL, NULL, xin, NULL, NULL };
        for (int i = 0; i < N_BUF; i++) {
            CHECK_OK(test_gpu_buffer_from(ctx, init[i], sizes[i], &b[f][i]));
            if (!init[i]) CHECK_OK(ovk_buffer_fill(ctx, &b[f][i], 0, sizes[i], i == COUNT ? 0 : 0x7FC00000u));
        }
        CHECK_OK(run(ops, variant, type, &bw, b[f], rows, cols, f));
        for (int i = 0; i < N_BUF; i++) CHECK_OK(ovk_buffer_download(ctx, &b[f][i], 0, got[f][i], sizes[i]));
    }
    static const char *const names[N_BUF] = { "x", "w", "y", "xb", "xq", "xin", "xin's int8", "count" };
    size_t differ = 0;
    for (int i = 0; i < N_BUF; i++)
        if (memcmp(got[0][i], got[1][i], sizes[i]) != 0) {
            differ++;
            printf("  %s differs\n", names[i]);
        }
    printf("%s %s %u x %u, wg %u, split %u: %zu of %d buffers differ from the product and rms_norm_x_q8\n", variant,
           ovk_ggml_type_name(type), rows, cols, ops->matvec_workgroup, ops->matvec_split, differ, N_BUF);
    CHECK_MSG(differ == 0, "%s %s %u x %u: the fused norm differs from the two dispatches", variant,
              ovk_ggml_type_name(type), rows, cols);
    uint32_t count;
    memcpy(&count, got[1][COUNT], 4);
    CHECK_MSG(count == 0, "the workgroup count is left at %u", count);
done:
    ovk_buffer_destroy(ctx, &bw);
    for (int f = 0; f < 2; f++)
        for (int i = 0; i < N_BUF; i++) ovk_buffer_destroy(ctx, &b[f][i]), free(got[f][i]);
    free(w), free(x), free(nw), free(xin);
}

/* What the op refuses before recording. */
static void check_errors(ovk_ops *ops)
{
    oscar_context *ctx = ops->ctx;
    ovk_buffer b = { 0 }, c = { 0 };
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, 65536, &b));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, 65536, &c));
    /* 1024 rows: y, x, w and xb 4 KB each, xq 4 KB and its scales, the count; 4 KB apart, which
     * every device's offset alignment divides */
    ovk_binding w = { &c, 0, 0 }, xinq = { &c, 32768, 0 }, y = { &b, 0, 4096 };
    ovk_norm_tail tail = { { &b, 4096, 4096 }, { &b, 8192, 4096 }, { &b, 12288, 4096 }, { &b, 16384, 8192 },
                           { &b, 32768, 4 }, 1e-5f };
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    ovk_norm_tail bad = tail;
    bad.x = (ovk_binding){ &b, 0, 4096 }; /* x over y */
    CHECK_STATUS(ovk_op_mul_mat_q8_norm(ops, &ctx->cmd, NULL, OSCAR_GGML_TYPE_Q4_0, w, xinq, y, 1024, 32, &bad),
                 OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_op_mul_mat_q8_norm(ops, &ctx->cmd, NULL, OSCAR_GGML_TYPE_Q4_0, w, xinq, y, 1000, 32, &tail),
                 OSCAR_ERROR_INVALID_ARGUMENT); /* not whole int8 blocks */
    bad = tail;
    bad.eps = -1.0f;
    CHECK_STATUS(ovk_op_mul_mat_q8_norm(ops, &ctx->cmd, NULL, OSCAR_GGML_TYPE_Q4_0, w, xinq, y, 1024, 32, &bad),
                 OSCAR_ERROR_INVALID_ARGUMENT);
    bad = tail;
    bad.count = (ovk_binding){ &b, 65536 - 2, 2 };
    CHECK_STATUS(ovk_op_mul_mat_q8_norm(ops, &ctx->cmd, NULL, OSCAR_GGML_TYPE_Q4_0, w, xinq, y, 1024, 32, &bad),
                 OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_op_mul_mat_q8_norm(ops, &ctx->cmd, NULL, OSCAR_GGML_TYPE_F16, w, xinq, y, 1024, 32, &tail),
                 OSCAR_ERROR_UNSUPPORTED);
    ops->matvec_workgroup = 32; /* 1024 rows: 8 words of 4 a thread; 8192: 64, over what a thread holds */
    CHECK(ovk_op_mul_mat_q8_norm_fits(ops, 1024) && !ovk_op_mul_mat_q8_norm_fits(ops, 8192));
    CHECK_STATUS(ovk_op_mul_mat_q8_norm(ops, &ctx->cmd, NULL, OSCAR_GGML_TYPE_Q4_0, w, xinq, y, 8192, 32, &tail),
                 OSCAR_ERROR_INVALID_ARGUMENT);
    ops->matvec_workgroup = 0;
    CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
    ovk_buffer_destroy(ctx, &b), ovk_buffer_destroy(ctx, &c);
}

/* Subgroups a row: `want` halved until it divides the subgroups of the workgroup. */
static uint32_t split_for(const ovk_ops *ops, uint32_t want)
{
    uint32_t sg = ops->ctx->info.subgroup_size ? ops->ctx->info.subgroup_size : 1;
    uint32_t sgs = ops->matvec_workgroup / sg > 0 ? ops->matvec_workgroup / sg : 1;
    while (sgs % want) want /= 2;
    return want;
}

int main(void)
{
    oscar_context *ctx = test_gpu_context();
    if (!ctx->info.subgroup_arithmetic) {
        printf("skipped: the device has no subgroup arithmetic\n");
        test_gpu_release(ctx);
        return 77;
    }
    test_rng_seed(5);
    ovk_ops ops;
    ovk_ops_init(&ops, ctx);
    check_errors(&ops);
    static const uint32_t types[] = { OSCAR_GGML_TYPE_Q4_0, OSCAR_GGML_TYPE_Q4_K, OSCAR_GGML_TYPE_Q6_K };
    static const uint32_t rows[] = { 32, 96, 1024, 4096 }, cols[] = { 256, 512, 768, 256 }, wgs[] = { 64, 128, 256, 128 };
    for (size_t v = 0; v < 2; v++) {
        if (!ovk_variant_usable(ctx, variants[v])) {
            printf("%s: not run\n", variants[v]);
            continue;
        }
        for (size_t t = 0; t < 3; t++)
            for (size_t c = 0; c < 4; c++) {
                ops.matvec_workgroup = wgs[c];
                ops.matvec_split = split_for(&ops, c == 1 ? 4 : c == 2 ? 2 : 1);
                check_case(&ops, variants[v], types[t], rows[c], cols[c]);
            }
    }
    return test_gpu_finish(ctx);
}
