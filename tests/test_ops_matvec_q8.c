/* The int8 decode mat-vec (ovk_op_mul_mat_q8, shaders/mul_mat_vec_q8[.idot].comp) against
 * its two references (docs/accuracy.md), for Q4_0, Q4_1, Q8_0, Q4_K, Q5_K and Q6_K: x is quantized on the GPU
 * (ovk_op_x_q8; its scales bit-exact with ovk_ref_q8_quantize, its codes at most one step away,
 * at a rounding tie), and the product is checked against ovk_ref_mul_mat_vec_q8 fed the GPU's
 * codes (NSE <= 1e-5) and against ovk_ref_mul_mat, the same stored weights times the unrounded
 * x (NSE <= 1e-4), on Gaussian x and rows of 1024 columns or more; x with outliers and all-zero blocks against the faithful
 * reference only. Every variant this context can run (the scalar one everywhere, the OpSDot one
 * where integer dot products are enabled), 1 to 4 rows a subgroup, 1 to 3 blocks a lane per
 * pass, 1, 2 or 4 subgroups a row, 64 to 256 threads; rows not a multiple of the rows a workgroup
 * owns; rows of 1 block to 14336 columns (K-quants from 256), and odd block counts (rows starting
 * 2 bytes past a word for Q4_0, Q8_0 and Q6_K).
 * A matrix split by rows: the parts' products, each into its columns of y, equal the whole
 * product bit for bit. Batches of tokens (ovk_op_mul_mat_q8): each token equals its
 * single-token product bit for bit. A bias added as y is written equals the product plus the bias.
 * Skips (77) where the device has no subgroup arithmetic. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_types.h"
#include "half.h"
#include "matvec_q8_ref.h"
#include "ops.h"
#include "ops_ref.h"
#include "test_accuracy.h"
#include "test_gpu.h"
#include "test_weights.h"

static const uint32_t types[] = { OSCAR_GGML_TYPE_Q4_0, OSCAR_GGML_TYPE_Q4_1, OSCAR_GGML_TYPE_Q8_0, OSCAR_GGML_TYPE_Q4_K,
                                  OSCAR_GGML_TYPE_Q5_K, OSCAR_GGML_TYPE_Q6_K };
static const char *const variants[] = { "mul_mat_vec_q8", "mul_mat_vec_q8.idot" };

/* Quantizes x [cols] into bq on the GPU, then records the product of each part of W (parts of
 * `per` rows; per >= rows: the whole) into its columns of by, and waits. */
static oscar_status run_q8(const ovk_ops *ops, const char *variant, uint32_t type, ovk_buffer *const *parts, uint32_t per,
                           ovk_buffer *bx, ovk_buffer *bq, ovk_buffer *by, uint32_t rows, uint32_t cols)
{
    oscar_context *ctx = ops->ctx;
    oscar_status st = ovk_cmd_begin(ctx, &ctx->cmd);
    if (st == OSCAR_OK) st = ovk_op_x_q8(ops, &ctx->cmd, (ovk_binding){ bx, 0, 0 }, (ovk_binding){ bq, 0, 0 }, cols);
    ovk_cmd_barrier(ctx, &ctx->cmd);
    for (uint32_t p = 0; st == OSCAR_OK && p * per < rows; p++) {
        uint32_t pr = rows - p * per < per ? rows - p * per : per;
        ovk_binding yp = { by, (uint64_t)p * per * 4, (uint64_t)pr * 4 };
        st = ovk_op_mul_mat_q8(ops, &ctx->cmd, variant, type, (ovk_binding){ parts[p], 0, 0 }, (ovk_binding){ bq, 0, 0 },
                               yp, pr, pr, cols, 1);
    }
    oscar_status st2 = ovk_cmd_submit_wait(ctx, &ctx->cmd);
    return st != OSCAR_OK ? st : st2;
}

/* Subgroups a row for the int8 mat-vec: `want` halved until it divides the subgroups of a
 * workgroup of its threads, as ops.c halves its default: an explicit split must divide them. */
static uint32_t split_for(const ovk_ops *ops, uint32_t want)
{
    uint32_t wg = ops->matvec_workgroup ? ops->matvec_workgroup : ops->workgroup;
    uint32_t sg = ops->ctx->info.subgroup_size ? ops->ctx->info.subgroup_size : 1, sgs = wg / sg > 0 ? wg / sg : 1;
    while (sgs % want) want /= 2;
    return want;
}

/* x [cols]: Gaussian (kind 0), or with every third block zero and outliers x100 (kind 1). */
static void make_x(float *x, uint32_t cols, int kind)
{
    for (uint32_t i = 0; i < cols; i++) {
        x[i] = test_rng_normal();
        if (kind == 1 && (i / 32) % 3 == 1) x[i] = 0.0f;
        if (kind == 1 && test_rng_u32() % 97 == 0) x[i] *= 100.0f;
    }
}

/* One case: W [rows][cols] of type, x of `kind`, one variant and tuning. With per < rows, W is
 * also run in parts of per rows (each its own buffer) and must equal the whole product bit for bit. */
static void check_case(ovk_ops *ops, const char *variant, uint32_t type, uint32_t rows, uint32_t cols, int kind,
                       uint32_t per)
{
    oscar_context *ctx = ops->ctx;
    uint64_t row_bytes;
    size_t wbytes;
    CHECK(ovk_ggml_row_size(type, cols, &row_bytes) == OSCAR_OK);
    uint8_t *w = test_make_weights(type, rows, cols, &wbytes);
    float *x = malloc(cols * sizeof *x), *got = malloc(rows * sizeof *got), *part_got = malloc(rows * sizeof *got);
    float *faithful = malloc(rows * sizeof *faithful), *exact = malloc(rows * sizeof *exact);
    float *xs = malloc(cols / 8);
    uint32_t *xc = malloc(cols);
    uint8_t *xq = malloc(OSCAR_X_Q8_BYTES(cols));
    enum { N_PARTS_MAX = 8 };
    ovk_buffer bw = { 0 }, bx = { 0 }, bq = { 0 }, by = { 0 }, pb[N_PARTS_MAX] = { { 0 } };
    CHECK(w && x && got && part_got && faithful && exact && xs && xc && xq);
    if (!w || !x || !got || !part_got || !faithful || !exact || !xs || !xc || !xq) goto done;
    make_x(x, cols, kind);
    CHECK_OK(test_gpu_buffer_from(ctx, w, wbytes, &bw));
    CHECK_OK(test_gpu_buffer_from(ctx, x, cols * 4, &bx));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, OSCAR_X_Q8_BYTES(cols), &bq));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, rows * 4, &by));
    CHECK_OK(ovk_buffer_fill(ctx, &by, 0, rows * 4, 0x7FC00000u));
    ovk_buffer *whole[1] = { &bw };
    CHECK_OK(run_q8(ops, variant, type, whole, rows, &bx, &bq, &by, rows, cols));
    CHECK_OK(ovk_buffer_download(ctx, &by, 0, got, rows * 4));
    CHECK_OK(ovk_buffer_download(ctx, &bq, 0, xq, OSCAR_X_Q8_BYTES(cols)));
    memcpy(xc, xq, cols);
    memcpy(xs, xq + OSCAR_X_Q8_SCALES(cols), cols / 8);

    /* the quantized x: scales bit-exact, codes within one step (a tie under a division within 2.5 ulp) */
    size_t bad = test_q8_blocks_off(x, cols, xc, xs);
    CHECK_MSG(bad == 0, "x_q8 cols %u: %zu scales or codes off", cols, bad);

    CHECK_OK(ovk_ref_mul_mat_vec_q8(type, w, xc, xs, faithful, rows, cols));
    CHECK_OK(ovk_ref_mul_mat(type, w, x, exact, rows, cols, 1));
    char what[160];
    snprintf(what, sizeof what, "%s %s rows %u cols %u x %s wg %u rows %u unroll %u split %u", variant,
             ovk_ggml_type_name(type), rows, cols, kind ? "outliers" : "gaussian", ops->matvec_workgroup, ops->matvec_rows,
             ops->matvec_unroll, ops->matvec_split);
    /* the exact bound on rows of 1024 and more: over a few hundred int8 blocks the error of x's
     * rounding scatters by half its size (1.07e-4 seen for Q4_1 at 67 x 96) */
    CHECK_MSG(test_check_accuracy(what, got, faithful, kind || cols < 1024 ? NULL : exact, rows), "%s", what);

    if (per < rows) { /* split by rows: each part in its own buffer, bit for bit the whole product */
        uint32_t n_parts = (rows + per - 1) / per;
        CHECK(n_parts <= N_PARTS_MAX);
        ovk_buffer *pp[N_PARTS_MAX];
        for (uint32_t p = 0; p < n_parts && p < N_PARTS_MAX; p++) {
            uint32_t pr = rows - p * per < per ? rows - p * per : per;
            size_t bytes = (size_t)pr * row_bytes, padded = (bytes + 3) & ~(size_t)3;
            uint8_t *tmp = calloc(padded, 1);
            CHECK(tmp != NULL);
            if (tmp) memcpy(tmp, w + (size_t)p * per * row_bytes, bytes);
            if (tmp) CHECK_OK(test_gpu_buffer_from(ctx, tmp, padded, &pb[p]));
            free(tmp);
            pp[p] = &pb[p];
        }
        CHECK_OK(ovk_buffer_fill(ctx, &by, 0, rows * 4, 0x7FC00000u));
        if (n_parts <= N_PARTS_MAX) CHECK_OK(run_q8(ops, variant, type, pp, per, &bx, &bq, &by, rows, cols));
        CHECK_OK(ovk_buffer_download(ctx, &by, 0, part_got, rows * 4));
        CHECK_MSG(memcmp(got, part_got, rows * 4) == 0, "%s in parts of %u rows: differs from the whole product", what, per);
    }
done:
    ovk_buffer_destroy(ctx, &bw), ovk_buffer_destroy(ctx, &bx), ovk_buffer_destroy(ctx, &bq), ovk_buffer_destroy(ctx, &by);
    for (uint32_t p = 0; p < N_PARTS_MAX; p++) ovk_buffer_destroy(ctx, &pb[p]);
    free(w), free(x), free(got), free(part_got), free(faithful), free(exact), free(xs), free(xc);
    free(xq);
}

/* n tokens at once (ovk_op_mul_mat_q8): x [n][cols] prepared as one vector of n * cols, y rows
 * apart by rows + 3 (a NaN-filled gap that must stay), ops->matvec_tokens a workgroup (0: the
 * default). Each token's result equals the single-token product of its x bit for bit, and is
 * checked against the faithful reference fed that token's GPU codes. */
static void check_batch(ovk_ops *ops, const char *variant, uint32_t type, uint32_t rows, uint32_t cols, uint32_t n,
                        uint32_t tokens)
{
    oscar_context *ctx = ops->ctx;
    size_t wbytes, nc = (size_t)n * cols, stride = rows + 3, ny = (n - 1) * stride + rows;
    uint8_t *w = test_make_weights(type, rows, cols, &wbytes);
    float *x = malloc(nc * 4), *all = malloc(ny * 4), *one = malloc(rows * 4), *faithful = malloc(rows * 4);
    uint8_t *xq = malloc(OSCAR_X_Q8_BYTES(nc));
    ovk_buffer bw = { 0 }, bx = { 0 }, bq = { 0 }, by = { 0 }, bx1 = { 0 }, bq1 = { 0 }, by1 = { 0 };
    CHECK(w && x && all && one && faithful && xq);
    if (!w || !x || !all || !one || !faithful || !xq) goto done;
    for (uint32_t t = 0; t < n; t++) make_x(x + (size_t)t * cols, cols, t % 2);
    CHECK_OK(test_gpu_buffer_from(ctx, w, wbytes, &bw));
    CHECK_OK(test_gpu_buffer_from(ctx, x, nc * 4, &bx));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, OSCAR_X_Q8_BYTES(nc), &bq));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, ny * 4, &by));
    CHECK_OK(ovk_buffer_fill(ctx, &by, 0, ny * 4, 0x7FC00000u));
    ops->matvec_tokens = tokens;
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    CHECK_OK(ovk_op_x_q8(ops, &ctx->cmd, (ovk_binding){ &bx, 0, 0 }, (ovk_binding){ &bq, 0, 0 }, (uint32_t)nc));
    ovk_cmd_barrier(ctx, &ctx->cmd);
    CHECK_OK(ovk_op_mul_mat_q8(ops, &ctx->cmd, variant, type, (ovk_binding){ &bw, 0, 0 }, (ovk_binding){ &bq, 0, 0 },
                               (ovk_binding){ &by, 0, 0 }, (uint32_t)stride, rows, cols, n));
    CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
    ops->matvec_tokens = 0;
    CHECK_OK(ovk_buffer_download(ctx, &by, 0, all, ny * 4));
    CHECK_OK(ovk_buffer_download(ctx, &bq, 0, xq, OSCAR_X_Q8_BYTES(nc)));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, cols * 4, &bx1));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, OSCAR_X_Q8_BYTES(cols), &bq1));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, rows * 4, &by1));
    ovk_buffer *whole[1] = { &bw };
    size_t differ = 0, gap = 0;
    double worst = 0;
    for (uint32_t t = 0; t < n; t++) {
        const uint32_t *xc = (const uint32_t *)(xq + (size_t)t * cols);
        const float *xs = (const float *)(xq + OSCAR_X_Q8_SCALES(nc)) + (size_t)t * (cols / 32);
        CHECK_OK(ovk_buffer_upload(ctx, &bx1, 0, x + (size_t)t * cols, cols * 4));
        CHECK_OK(run_q8(ops, variant, type, whole, rows, &bx1, &bq1, &by1, rows, cols));
        CHECK_OK(ovk_buffer_download(ctx, &by1, 0, one, rows * 4));
        differ += memcmp(one, all + t * stride, rows * 4) != 0;
        CHECK_OK(ovk_ref_mul_mat_vec_q8(type, w, xc, xs, faithful, rows, cols));
        double e = test_nse(all + t * stride, faithful, rows);
        if (e > worst) worst = e;
        for (size_t c = rows; c < stride && t + 1 < n; c++) gap += ovk_f32_bits(all[t * stride + c]) != 0x7FC00000u;
    }
    printf("%s %s %u x %u, %u tokens, %u a workgroup: %zu tokens differ from their single-token product, worst NSE %.3g "
           "against the faithful reference\n", variant, ovk_ggml_type_name(type), rows, cols, n, tokens, differ, worst);
    CHECK_MSG(differ == 0 && worst <= 1e-5 && gap == 0, "%s %s batch of %u (%u a workgroup): %zu tokens differ, NSE %.3g, %zu "
              "floats written in the gaps", variant, ovk_ggml_type_name(type), n, tokens, differ, worst, gap);
done:
    ovk_buffer_destroy(ctx, &bw), ovk_buffer_destroy(ctx, &bx), ovk_buffer_destroy(ctx, &bq), ovk_buffer_destroy(ctx, &by);
    ovk_buffer_destroy(ctx, &bx1), ovk_buffer_destroy(ctx, &bq1), ovk_buffer_destroy(ctx, &by1);
    free(w), free(x), free(all), free(one), free(faithful), free(xq);
}

/* The bias epilogue (ovk_op_mul_mat_q8_bias): n tokens' products with a bias b [rows] bound at
 * an offset equal the products without it plus b, float for float (the add the model would
 * record after them), and the gaps between y's rows stay untouched. */
static void check_bias(ovk_ops *ops, const char *variant, uint32_t type, uint32_t rows, uint32_t cols, uint32_t n)
{
    oscar_context *ctx = ops->ctx;
    size_t wbytes, nc = (size_t)n * cols, stride = rows + 3, ny = (n - 1) * stride + rows;
    uint64_t boff = ctx->limits.minStorageBufferOffsetAlignment > 4 ? ctx->limits.minStorageBufferOffsetAlignment : 16;
    uint8_t *w = test_make_weights(type, rows, cols, &wbytes);
    float *x = malloc(nc * 4), *plain = malloc(ny * 4), *biased = malloc(ny * 4), *b = malloc(rows * 4);
    ovk_buffer bw = { 0 }, bx = { 0 }, bq = { 0 }, by = { 0 }, byb = { 0 }, bb = { 0 };
    CHECK(w && x && plain && biased && b);
    if (!w || !x || !plain || !biased || !b) goto done;
    for (uint32_t t = 0; t < n; t++) make_x(x + (size_t)t * cols, cols, 0);
    for (uint32_t r = 0; r < rows; r++) b[r] = test_rng_normal() * (r % 3 ? 0.1f : 10.0f);
    CHECK_OK(test_gpu_buffer_from(ctx, w, wbytes, &bw));
    CHECK_OK(test_gpu_buffer_from(ctx, x, nc * 4, &bx));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, OSCAR_X_Q8_BYTES(nc), &bq));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, ny * 4, &by));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, ny * 4, &byb));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, boff + rows * 4, &bb));
    CHECK_OK(ovk_buffer_upload(ctx, &bb, boff, b, rows * 4));
    CHECK_OK(ovk_buffer_fill(ctx, &byb, 0, ny * 4, 0x7FC00000u));
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    CHECK_OK(ovk_op_x_q8(ops, &ctx->cmd, (ovk_binding){ &bx, 0, 0 }, (ovk_binding){ &bq, 0, 0 }, (uint32_t)nc));
    ovk_cmd_barrier(ctx, &ctx->cmd);
    ovk_binding bias = { &bb, boff, rows * 4 };
    CHECK_OK(ovk_op_mul_mat_q8(ops, &ctx->cmd, variant, type, (ovk_binding){ &bw, 0, 0 }, (ovk_binding){ &bq, 0, 0 },
                               (ovk_binding){ &by, 0, 0 }, (uint32_t)stride, rows, cols, n));
    CHECK_OK(ovk_op_mul_mat_q8_bias(ops, &ctx->cmd, variant, type, (ovk_binding){ &bw, 0, 0 }, (ovk_binding){ &bq, 0, 0 },
                                    &bias, (ovk_binding){ &byb, 0, 0 }, (uint32_t)stride, rows, cols, n));
    CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
    CHECK_OK(ovk_buffer_download(ctx, &by, 0, plain, ny * 4));
    CHECK_OK(ovk_buffer_download(ctx, &byb, 0, biased, ny * 4));
    size_t differ = 0, gap = 0;
    for (uint32_t t = 0; t < n; t++) {
        for (uint32_t r = 0; r < rows; r++) {
            float want = plain[t * stride + r] + b[r];
            differ += ovk_f32_bits(biased[t * stride + r]) != ovk_f32_bits(want);
        }
        for (size_t c = rows; c < stride && t + 1 < n; c++) gap += ovk_f32_bits(biased[t * stride + c]) != 0x7FC00000u;
    }
    CHECK_MSG(differ == 0 && gap == 0, "%s %s %u x %u, %u tokens with a bias: %zu values differ from the product plus the "
              "bias, %zu floats written in the gaps", variant, ovk_ggml_type_name(type), rows, cols, n, differ, gap);
    printf("%s %s %u x %u, %u tokens with a bias: %zu differ from the product plus the bias\n", variant,
           ovk_ggml_type_name(type), rows, cols, n, differ);
done:
    ovk_buffer_destroy(ctx, &bw), ovk_buffer_destroy(ctx, &bx), ovk_buffer_destroy(ctx, &bq), ovk_buffer_destroy(ctx, &by);
    ovk_buffer_destroy(ctx, &byb), ovk_buffer_destroy(ctx, &bb);
    free(w), free(x), free(plain), free(biased), free(b);
}

/* What the op refuses before recording. */
static void check_errors(ovk_ops *ops)
{
    oscar_context *ctx = ops->ctx;
    ovk_buffer b = { 0 };
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, 8192, &b));
    ovk_binding bb = { &b, 0, 0 };
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    CHECK(!ovk_op_mul_mat_vec_q8_supported(ops, OSCAR_GGML_TYPE_F16));
    CHECK_STATUS(ovk_op_mul_mat_q8(ops, &ctx->cmd, NULL, OSCAR_GGML_TYPE_F16, bb, bb, bb, 1, 1, 256, 1),
                 OSCAR_ERROR_UNSUPPORTED);
    CHECK_STATUS(ovk_op_mul_mat_q8(ops, &ctx->cmd, NULL, OSCAR_GGML_TYPE_Q4_K, bb, bb, bb, 1, 1, 96, 1),
                 OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_op_mul_mat_q8(ops, &ctx->cmd, NULL, OSCAR_GGML_TYPE_Q4_0, bb, bb, bb, 1, 1, 48, 1),
                 OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_op_mul_mat_q8(ops, &ctx->cmd, "dot_q8", OSCAR_GGML_TYPE_Q4_0, bb, bb, bb, 1, 1, 32, 1),
                 OSCAR_ERROR_INVALID_ARGUMENT);
    /* 400 rows of 32 Q8_0 = 13600 bytes: more than the binding holds */
    CHECK_STATUS(ovk_op_mul_mat_q8(ops, &ctx->cmd, NULL, OSCAR_GGML_TYPE_Q8_0, bb, bb, bb, 400, 400, 32, 1),
                 OSCAR_ERROR_INVALID_ARGUMENT);
    ops->matvec_rows = 9;
    CHECK_STATUS(ovk_op_mul_mat_q8(ops, &ctx->cmd, NULL, OSCAR_GGML_TYPE_Q4_0, bb, bb, bb, 1, 1, 32, 1),
                 OSCAR_ERROR_INVALID_ARGUMENT);
    ops->matvec_rows = 0;
    ops->matvec_split = 3; /* does not divide a workgroup's subgroups */
    CHECK_STATUS(ovk_op_mul_mat_q8(ops, &ctx->cmd, NULL, OSCAR_GGML_TYPE_Q4_0, bb, bb, bb, 1, 1, 32, 1),
                 OSCAR_ERROR_INVALID_ARGUMENT);
    ops->matvec_split = 0;
    CHECK_STATUS(ovk_op_x_q8(ops, &ctx->cmd, bb, bb, 48), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
    ovk_buffer_destroy(ctx, &b);
}

int main(void)
{
    oscar_context *ctx = test_gpu_context();
    if (!ctx->info.subgroup_arithmetic) {
        printf("skipped: the device has no subgroup arithmetic (the fp32 mat-vec kernels serve it)\n");
        test_gpu_release(ctx);
        return 77;
    }
    test_rng_seed(11);
    ovk_ops ops;
    ovk_ops_init(&ops, ctx);
    check_errors(&ops);
    static const uint32_t wgs[] = { 64, 128, 256 };
    /* parts of about 16 and 20 rows, their y offsets aligned as the device asks */
    uint32_t align = (uint32_t)ctx->limits.minStorageBufferOffsetAlignment, unit = align > 4 ? align / 4 : 1;
    uint32_t per16 = (16 + unit - 1) / unit * unit, per20 = (20 + unit - 1) / unit * unit;
    for (size_t v = 0; v < 2; v++) {
        if (!ovk_variant_usable(ctx, variants[v])) {
            printf("%s: not run (%s)\n", variants[v],
                   ovk_spirv_find(variants[v], &(size_t){ 0 }) ? "integer dot products not enabled" : "not in this build");
            continue;
        }
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
            uint32_t type = types[t];
            /* 1 block, 3 blocks (odd: every other row 2 bytes off a word), 4096, 5120 (odd rows per
             * workgroup count), 14336: at 1..4 rows a subgroup, 1..3 blocks a pass, 64..256 threads */
            static const uint32_t cols[] = { 32, 96, 4096, 5120, 14336, 256, 768 }, rows[] = { 37, 67, 33, 41, 19, 37, 67 };
            int kq = ovk_ggml_type_get(type)->block_size == 256;
            for (uint32_t c = 0; c < 7; c++) {
                if (cols[c] % (kq ? 256 : 32)) continue; /* K-quants: 256 and 768 for the short rows */
                ops.matvec_workgroup = wgs[c % 3];
                ops.matvec_rows = 1 + c % 4;
                ops.matvec_unroll = 1 + c % 3;
                ops.matvec_split = split_for(&ops, c % 2 ? 2 : 1); /* subgroups a row */
                check_case(&ops, variants[v], type, rows[c], cols[c], 0, c == 1 || c == 6 ? per16 : rows[c]);
            }
            ops.matvec_workgroup = ops.matvec_rows = ops.matvec_unroll = ops.matvec_split = 0; /* the defaults */
            check_case(&ops, variants[v], type, 45, 4096, 0, per20);
            check_case(&ops, variants[v], type, 45, 4096, 1, 45);
            /* batches: the default tokens a workgroup, fewer than n (a last partial group), 1 */
            check_batch(&ops, variants[v], type, 37, kq ? 512 : 96, 13, 0);
            check_batch(&ops, variants[v], type, 67, 1024, 5, 3);
            if (t == 0) check_batch(&ops, variants[v], type, 19, 256, 2, 1);
            ops.matvec_split = split_for(&ops, 4); /* a batch whose rows are shared by four subgroups */
            check_batch(&ops, variants[v], type, 67, kq ? 512 : 96, 11, 0);
            ops.matvec_split = 0;
            /* two groups of tokens at two rows a subgroup, as a long matrix's default; one task a
             * lane and pass, as lavapipe computes the single-token product it is compared with
             * wrong at two rows and two tasks (NSE 0.3-0.8 for Q6_K; decisions.md) */
            ops.matvec_rows = 2, ops.matvec_unroll = 1;
            check_batch(&ops, variants[v], type, 67, 1024, 11, 0);
            ops.matvec_rows = ops.matvec_unroll = 0;
            check_bias(&ops, variants[v], type, t % 2 ? 67 : 37, kq ? 512 : 1024, t % 3 == 0 ? 1 : 3);
        }
    }
    return test_gpu_finish(ctx);
}
