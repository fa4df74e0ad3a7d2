/* The dequantizing matrix kernels against their C references (runtime/ops_ref.c), for every
 * weight type the GPU reads: get_rows (the dequantizer alone), mul_mat_vec (decode) and the
 * tiled mul_mat (prefill), at workgroups 64/128/256 (the tiled matmul at 32 too), odd row
 * counts, column counts from one block to 5120, 1 to 4 rows per mat-vec workgroup and the per-type default, the three mat-vec
 * shaders (UNITS at 1 to 4 units per pass, 32 threads too; LANES, block types only, at 1 to 3
 * words per pass), the batched LANES product (block types: every token count, 3, 4 and 5
 * tokens per workgroup),
 * and 1, 3, 7 and 64 tokens. A matrix split by rows (as the model splits one over the
 * storage-binding limit): each part in its own buffer, its products written into its columns of
 * a wider y (ovk_op_mul_mat_strided: the mat-vec, batched and tiled kernels at 1, 3 and 40
 * tokens) equal the whole matrix's product bit for bit and leave the other columns alone; its
 * lookups (ovk_op_get_rows_part, one per part) fill every row, bit-exact with the reference.
 *
 * Weights: quantized types are random bytes with the fp16 scale fields replaced by sane
 * values, so every bit of every code, scale and high-bit field is exercised (the reference
 * quantizer would leave many patterns unused); float types come from Gaussian data.
 *
 * Bounds. get_rows is bit-exact: common/dequant.glsl evaluates each formula of ggml_types.h
 * in the same fp32 order, with `precise` against fused multiply-adds. The products differ
 * from the reference only in the sum: the GPU accumulates cols terms in fp32 in its own
 * order, the reference in double. The rounding error of an fp32 sum grows like
 * u * sqrt(cols) * rms(term) for terms of random sign (u = 2^-24), the same order as the
 * result's sqrt(cols) * rms(term), so the normalised squared error sum (gpu - ref)^2 /
 * sum ref^2 stays near u^2 * small factor (~1e-13 measured; ~3e-10 for the lanes shader's Q4_1,
 * which dots 1024 + q and takes the offset out once: common/dequant_word.glsl); 1e-6 leaves a wide margin
 * yet fails on a single wrong element of a 4096-column row (~1/4096 = 2.4e-4).
 * The packed-fp16 mat-vec (mul_mat_vec_f16: Q4_0 and Q8_0 where the device has shaderFloat16)
 * rounds x * 2^k and each product to fp16: ~2^-12 relative per product, random in sign, so its
 * error is ~1e-7; it is held to 2e-6 (still far below one wrong element), with x of unit scale
 * and x scaled by 3e4 and by 1e-4 (the per-block power-of-two scaling of x_f16_blocks keeps
 * fp16 from overflowing or flushing). x_f16_blocks itself: every pair within one fp16 rounding
 * of x * s, s the exact power of two that puts the block's max |x * s| in [8, 16). */
#include <math.h>
#include <string.h>

#include "ggml_types.h"
#include "half.h"
#include "ops.h"
#include "ops_ref.h"
#include "test_gpu.h"
#include "test_weights.h"

#define NSE_BOUND 1e-6
#define NSE_BOUND_F16 2e-6

static const uint32_t types[] = {
    OSCAR_GGML_TYPE_F32, OSCAR_GGML_TYPE_F16, OSCAR_GGML_TYPE_BF16, OSCAR_GGML_TYPE_Q8_0, OSCAR_GGML_TYPE_Q4_0,
    OSCAR_GGML_TYPE_Q4_1, OSCAR_GGML_TYPE_Q4_K, OSCAR_GGML_TYPE_Q5_K, OSCAR_GGML_TYPE_Q6_K,
};
#define N_TYPES (sizeof types / sizeof types[0])
static const uint32_t workgroups[] = { 64, 128, 256 };

/* Records one op on the context's stream and waits for it. */
typedef enum { OP_VEC, OP_TILED, OP_AUTO, OP_BATCH } op_kind;

static oscar_status run_mul_mat(const ovk_ops *ops, op_kind kind, uint32_t type, ovk_buffer *w, ovk_buffer *x,
                                ovk_buffer *y, uint32_t rows, uint32_t cols, uint32_t n)
{
    oscar_context *ctx = ops->ctx;
    oscar_status st = ovk_cmd_begin(ctx, &ctx->cmd);
    if (st != OSCAR_OK) return st;
    ovk_binding bw = { w, 0, 0 }, bx = { x, 0, 0 }, by = { y, 0, 0 };
    if (kind == OP_VEC) st = ovk_op_mul_mat_vec(ops, &ctx->cmd, type, bw, bx, by, rows, cols, n);
    else if (kind == OP_TILED) st = ovk_op_mul_mat_tiled(ops, &ctx->cmd, type, bw, bx, by, rows, cols, n);
    else if (kind == OP_BATCH) st = ovk_op_mul_mat_batch(ops, &ctx->cmd, type, bw, bx, by, rows, cols, n);
    else st = ovk_op_mul_mat(ops, &ctx->cmd, type, bw, bx, by, rows, cols, n);
    oscar_status st2 = ovk_cmd_submit_wait(ctx, &ctx->cmd);
    return st != OSCAR_OK ? st : st2;
}

/* One weight matrix: get_rows bit-exact, then the products for each token count. */
static void check_case(ovk_ops *ops, uint32_t type, uint32_t rows, uint32_t cols, uint32_t wg, uint32_t per_group)
{
    oscar_context *ctx = ops->ctx;
    static const uint32_t ns[] = { 1, 3, 7, 64 };
    const uint32_t n_max = 64;
    size_t wbytes;
    uint8_t *w = test_make_weights(type, rows, cols, &wbytes);
    float *x = malloc((size_t)n_max * cols * sizeof *x);
    float *ref = malloc((size_t)n_max * (rows > cols ? rows : cols) * sizeof *ref);
    float *got = malloc((size_t)n_max * (rows > cols ? rows : cols) * sizeof *got);
    uint32_t *ids = malloc(n_max * sizeof *ids);
    CHECK(w && x && ref && got && ids);
    if (!w || !x || !ref || !got || !ids) goto done;
    for (size_t i = 0; i < (size_t)n_max * cols; i++) x[i] = test_rng_normal();
    for (uint32_t i = 0; i < n_max; i++) ids[i] = test_rng_u32() % rows;
    ids[0] = rows - 1; /* the last row reaches the end of the (unaligned) data */

    ops->workgroup = wg;
    ops->matvec_rows = per_group;
    ops->matmul_workgroup = per_group == 4 ? 32 : wg; /* the tiled matmul at 32..256 threads (tiles of 8..64 tokens) */
    ovk_buffer bw = { 0 }, bx = { 0 }, by = { 0 }, bid = { 0 };
    size_t ybytes = (size_t)n_max * (rows > cols ? rows : cols) * 4;
    CHECK_OK(test_gpu_buffer_from(ctx, w, wbytes, &bw));
    CHECK_OK(test_gpu_buffer_from(ctx, x, (size_t)n_max * cols * 4, &bx));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, ybytes, &by));
    CHECK_OK(test_gpu_buffer_from(ctx, ids, n_max * 4, &bid));

    /* get_rows: 9 rows, bit-exact */
    {
        uint32_t n = 9;
        CHECK_OK(ovk_ref_get_rows(type, w, ids, ref, cols, n));
        CHECK_OK(ovk_buffer_fill(ctx, &by, 0, ybytes, 0x7FC00000u));
        CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
        CHECK_OK(ovk_op_get_rows(ops, &ctx->cmd, type, (ovk_binding){ &bw, 0, 0 }, (ovk_binding){ &bid, 0, 0 },
                                   (ovk_binding){ &by, 0, 0 }, cols, n));
        CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
        CHECK_OK(ovk_buffer_download(ctx, &by, 0, got, (size_t)n * cols * 4));
        size_t bad = 0;
        for (size_t i = 0; i < (size_t)n * cols; i++) {
            if (ovk_f32_bits(got[i]) != ovk_f32_bits(ref[i]) && bad++ < 3)
                fprintf(stderr, "get_rows %s: [%zu][%zu] gpu %.9g ref %.9g\n", ovk_ggml_type_name(type), i / cols,
                        i % cols, got[i], ref[i]);
        }
        CHECK_MSG(bad == 0, "get_rows %s cols %u wg %u: %zu values differ", ovk_ggml_type_name(type), cols, wg, bad);
    }

    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        uint32_t n = ns[k];
        CHECK_OK(ovk_ref_mul_mat(type, w, x, ref, rows, cols, n));
        /* AUTO (for block types and n = 3, 7 the batched lanes product), then the mat-vec (n = 3)
         * or the tiled kernel (1, 7), then in the LANES cases the batched product at every n */
        op_kind kinds[] = { OP_AUTO, n == 3 ? OP_VEC : OP_TILED, OP_BATCH };
        int lanes_case = ops->matvec_shader == OSCAR_MATVEC_LANES; /* block types only */
        for (int kk = 0; kk < 3; kk++) {
            if (kk == 1 && n != 1 && n != 3) continue; /* n = 7, 64: AUTO is the tiled kernel already */
            if (kk == 2 && !lanes_case) break;
            CHECK_OK(ovk_buffer_fill(ctx, &by, 0, ybytes, 0x7FC00000u));
            CHECK_OK(run_mul_mat(ops, kinds[kk], type, &bw, &bx, &by, rows, cols, n));
            CHECK_OK(ovk_buffer_download(ctx, &by, 0, got, (size_t)n * rows * 4));
            double nse = test_nse(got, ref, (size_t)n * rows);
            const char *kernel = kinds[kk] == OP_BATCH ? "mul_mat_batch"
                                 : kinds[kk] == OP_VEC || (kinds[kk] == OP_AUTO && n == 1) ? "mul_mat_vec"
                                                                                           : "mul_mat(auto/tiled)";
            CHECK_MSG(nse <= NSE_BOUND, "%s %s rows %u cols %u n %u wg %u rows/group %u: nse %.3g", kernel,
                      ovk_ggml_type_name(type), rows, cols, n, wg, per_group, nse);
            if (getenv("OSCAR_TEST_VERBOSE"))
                printf("%-11s %-4s rows %3u cols %4u n %2u wg %3u: nse %.3g\n", kernel, ovk_ggml_type_name(type), rows,
                       cols, n, wg, nse);
        }
    }
    ovk_buffer_destroy(ctx, &bw);
    ovk_buffer_destroy(ctx, &bx);
    ovk_buffer_destroy(ctx, &by);
    ovk_buffer_destroy(ctx, &bid);
done:
    free(w);
    free(x);
    free(ref);
    free(got);
    free(ids);
}

/* A copy of rows row0 .. row0 + n - 1 of W (row_bytes each) in a buffer of its own, padded to a word. */
static oscar_status part_buffer(oscar_context *ctx, const uint8_t *w, uint64_t row_bytes, uint32_t row0, uint32_t n,
                                ovk_buffer *out)
{
    size_t bytes = (size_t)n * row_bytes, padded = (bytes + 3) & ~(size_t)3;
    uint8_t *p = calloc(padded, 1);
    if (!p) return OSCAR_ERROR_OUT_OF_HOST_MEMORY;
    memcpy(p, w + (size_t)row0 * row_bytes, bytes);
    oscar_status st = test_gpu_buffer_from(ctx, p, padded, out);
    free(p);
    return st;
}

/* W [rows][cols] split into parts of `per` rows (a multiple of minStorageBufferOffsetAlignment / 4,
 * the last part shorter): products of every part written into y [n][rows + 5] at the part's
 * columns, against the whole matrix's product into a packed y, bit for bit; lookups, one per
 * part, against the reference, bit for bit. */
static void check_parts(ovk_ops *ops, uint32_t type, uint32_t rows, uint32_t cols, uint32_t per)
{
    enum { N_MAX = 40, N_PARTS_MAX = 8 };
    oscar_context *ctx = ops->ctx;
    uint32_t stride = rows + 5, n_parts = (rows + per - 1) / per, wide = stride > cols ? stride : cols;
    uint64_t row_bytes;
    size_t wbytes;
    CHECK(n_parts <= N_PARTS_MAX && ovk_ggml_row_size(type, cols, &row_bytes) == OSCAR_OK);
    if (n_parts > N_PARTS_MAX) return;
    uint8_t *w = test_make_weights(type, rows, cols, &wbytes);
    float *x = malloc((size_t)N_MAX * cols * sizeof *x), *whole = malloc((size_t)N_MAX * rows * sizeof *whole);
    float *got = malloc((size_t)N_MAX * wide * sizeof *got), *ref = malloc((size_t)N_MAX * cols * sizeof *ref);
    uint32_t ids[N_MAX];
    ovk_buffer bw = { 0 }, bx = { 0 }, by = { 0 }, bwhole = { 0 }, bid = { 0 }, parts[N_PARTS_MAX] = { { 0 } };
    CHECK(w && x && whole && got && ref);
    if (!w || !x || !whole || !got || !ref) goto done;
    for (size_t i = 0; i < (size_t)N_MAX * cols; i++) x[i] = test_rng_normal();
    for (uint32_t i = 0; i < N_MAX; i++) ids[i] = i < 2 * n_parts ? (i / 2) * per + (i & 1 ? per - 1 : 0) : test_rng_u32();
    for (uint32_t i = 0; i < N_MAX; i++) ids[i] = ids[i] % rows; /* both ends of every part, then random rows */
    CHECK_OK(test_gpu_buffer_from(ctx, w, wbytes, &bw));
    CHECK_OK(test_gpu_buffer_from(ctx, x, (size_t)N_MAX * cols * 4, &bx));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, (size_t)N_MAX * wide * 4, &by)); /* y [N_MAX][stride], then lookups [N_MAX][cols] */
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, (size_t)N_MAX * rows * 4, &bwhole));
    CHECK_OK(test_gpu_buffer_from(ctx, ids, sizeof ids, &bid));
    for (uint32_t p = 0; p < n_parts; p++)
        CHECK_OK(part_buffer(ctx, w, row_bytes, p * per, rows - p * per < per ? rows - p * per : per, &parts[p]));
    static const uint32_t ns[] = { 1, 3, N_MAX };
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        uint32_t n = ns[k];
        CHECK_OK(ovk_buffer_fill(ctx, &by, 0, (size_t)N_MAX * stride * 4, 0x7FC00000u));
        CHECK_OK(run_mul_mat(ops, OP_AUTO, type, &bw, &bx, &bwhole, rows, cols, n));
        CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
        for (uint32_t p = 0; p < n_parts; p++) {
            uint32_t row0 = p * per, pr = rows - row0 < per ? rows - row0 : per;
            ovk_binding yp = { &by, (uint64_t)row0 * 4, ((uint64_t)(n - 1) * stride + pr) * 4 };
            CHECK_OK(ovk_op_mul_mat_strided(ops, &ctx->cmd, type, (ovk_binding){ &parts[p], 0, 0 }, (ovk_binding){ &bx, 0, 0 },
                                              yp, stride, pr, cols, n));
        }
        CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
        CHECK_OK(ovk_buffer_download(ctx, &bwhole, 0, whole, (size_t)n * rows * 4));
        CHECK_OK(ovk_buffer_download(ctx, &by, 0, got, (size_t)N_MAX * stride * 4));
        size_t bad = 0, touched = 0;
        for (uint32_t t = 0; t < N_MAX; t++)
            for (uint32_t c = 0; c < stride; c++) {
                uint32_t g = ovk_f32_bits(got[(size_t)t * stride + c]);
                if (t < n && c < rows) bad += g != ovk_f32_bits(whole[(size_t)t * rows + c]);
                else touched += g != 0x7FC00000u;
            }
        CHECK_MSG(bad == 0 && touched == 0, "%s rows %u in parts of %u, n %u: %zu values differ from the whole product, "
                  "%zu outside the parts' columns written", ovk_ggml_type_name(type), rows, per, n, bad, touched);
    }
    /* the lookup, one dispatch per part */
    CHECK_OK(ovk_ref_get_rows(type, w, ids, ref, cols, N_MAX));
    CHECK_OK(ovk_buffer_fill(ctx, &by, 0, (size_t)N_MAX * wide * 4, 0x7FC00000u));
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    for (uint32_t p = 0; p < n_parts; p++)
        CHECK_OK(ovk_op_get_rows_part(ops, &ctx->cmd, type, (ovk_binding){ &parts[p], 0, 0 }, (ovk_binding){ &bid, 0, 0 },
                                        (ovk_binding){ &by, 0, 0 }, cols, N_MAX, p * per,
                                        rows - p * per < per ? rows - p * per : per));
    CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
    CHECK_OK(ovk_buffer_download(ctx, &by, 0, got, (size_t)N_MAX * cols * 4));
    size_t bad = 0;
    for (size_t i = 0; i < (size_t)N_MAX * cols; i++) bad += ovk_f32_bits(got[i]) != ovk_f32_bits(ref[i]);
    CHECK_MSG(bad == 0, "get_rows %s rows %u in parts of %u: %zu values differ", ovk_ggml_type_name(type), rows, per, bad);
done:
    ovk_buffer_destroy(ctx, &bw), ovk_buffer_destroy(ctx, &bx), ovk_buffer_destroy(ctx, &by);
    ovk_buffer_destroy(ctx, &bwhole), ovk_buffer_destroy(ctx, &bid);
    for (uint32_t p = 0; p < N_PARTS_MAX; p++) ovk_buffer_destroy(ctx, &parts[p]);
    free(w), free(x), free(whole), free(got), free(ref);
}

/* The packed-fp16 mat-vec: x_f16_blocks (each pair within one fp16 rounding of x * s) and
 * mul_mat_vec_f16 against the fp32 reference, for 1 and 3 tokens of x scaled by x_mul. */
static void check_f16_case(ovk_ops *ops, uint32_t type, uint32_t rows, uint32_t cols, uint32_t wg, uint32_t per_group,
                           float x_mul)
{
    oscar_context *ctx = ops->ctx;
    const uint32_t n_max = 3, nb = cols / 32;
    size_t wbytes;
    uint8_t *w = test_make_weights(type, rows, cols, &wbytes);
    float *x = malloc((size_t)n_max * cols * sizeof *x), *ref = malloc((size_t)n_max * rows * sizeof *ref);
    float *got = malloc((size_t)n_max * rows * sizeof *got);
    uint8_t *xq = malloc(OSCAR_X_F16_BYTES(n_max, cols));
    CHECK(w && x && ref && got && xq);
    if (!w || !x || !ref || !got || !xq) goto done;
    for (size_t i = 0; i < (size_t)n_max * cols; i++) x[i] = test_rng_normal() * x_mul;
    ops->workgroup = wg;
    ops->matvec_rows = per_group;
    ovk_buffer bw = { 0 }, bx = { 0 }, bq = { 0 }, by = { 0 };
    CHECK_OK(test_gpu_buffer_from(ctx, w, wbytes, &bw));
    CHECK_OK(test_gpu_buffer_from(ctx, x, (size_t)n_max * cols * 4, &bx));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, OSCAR_X_F16_BYTES(n_max, cols), &bq));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, (size_t)n_max * rows * 4, &by));
    for (uint32_t n = 1; n <= n_max; n += 2) {
        CHECK_OK(ovk_ref_mul_mat(type, w, x, ref, rows, cols, n));
        CHECK_OK(ovk_buffer_fill(ctx, &by, 0, (size_t)n_max * rows * 4, 0x7FC00000u));
        ovk_binding bbx = { &bx, 0, 0 }, bbq = { &bq, 0, 0 }, bbw = { &bw, 0, 0 }, bby = { &by, 0, 0 };
        CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
        CHECK_OK(ovk_op_x_f16_blocks(ops, &ctx->cmd, bbx, bbq, cols, n));
        ovk_cmd_barrier(ctx, &ctx->cmd);
        CHECK_OK(ovk_op_mul_mat_vec_f16(ops, &ctx->cmd, type, bbw, bbq, bby, rows, cols, n));
        CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
        CHECK_OK(ovk_buffer_download(ctx, &by, 0, got, (size_t)n * rows * 4));
        CHECK_OK(ovk_buffer_download(ctx, &bq, 0, xq, OSCAR_X_F16_BYTES(n, cols)));
        /* the prepared x: pair 2j of a block holds elements (4j, 4j + 2), pair 2j + 1 (4j + 1, 4j + 3) */
        size_t bad = 0;
        for (uint32_t b = 0; b < n * nb; b++) {
            const float *xb = x + (size_t)b * 32;
            float mx = 0;
            for (int i = 0; i < 32; i++) mx = fabsf(xb[i]) > mx ? fabsf(xb[i]) : mx;
            int e;
            frexpf(mx, &e);
            float s = ldexpf(1.0f, 4 - e), inv;
            memcpy(&inv, xq + (size_t)n * cols * 2 + 4 * b, 4);
            bad += inv != ldexpf(1.0f, e - 4);
            for (int i = 0; i < 32; i++) {
                int j = i / 4, pair = 2 * j + (i & 1), half = (i & 2) != 0;
                uint16_t h;
                memcpy(&h, xq + (size_t)b * 64 + 4 * pair + 2 * half, 2);
                float want = xb[i] * s, g = ovk_f16_to_f32(h);
                bad += !(fabsf(g - want) <= fabsf(want) * 0x1p-10f + 0x1p-24f); /* one rounding, either mode */
            }
        }
        CHECK_MSG(bad == 0, "x_f16_blocks cols %u n %u x x%g: %zu values off", cols, n, x_mul, bad);
        double nse = test_nse(got, ref, (size_t)n * rows);
        CHECK_MSG(nse <= NSE_BOUND_F16, "mul_mat_vec_f16 %s rows %u cols %u n %u wg %u rows/group %u x x%g: nse %.3g",
                  ovk_ggml_type_name(type), rows, cols, n, wg, per_group, x_mul, nse);
        if (getenv("OSCAR_TEST_VERBOSE"))
            printf("mul_mat_vec_f16 %-4s rows %3u cols %4u n %u wg %3u x x%g: nse %.3g\n", ovk_ggml_type_name(type), rows,
                   cols, n, wg, x_mul, nse);
    }
    ovk_buffer_destroy(ctx, &bw);
    ovk_buffer_destroy(ctx, &bx);
    ovk_buffer_destroy(ctx, &bq);
    ovk_buffer_destroy(ctx, &by);
done:
    free(w), free(x), free(ref), free(got), free(xq);
}

/* Shapes and types the ops refuse, before anything is recorded. */
static void check_errors(ovk_ops *ops)
{
    oscar_context *ctx = ops->ctx;
    ovk_buffer b = { 0 };
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, 4096, &b));
    ovk_binding bb = { &b, 0, 0 };
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    ops->workgroup = 128;
    ops->matvec_rows = 1;
    CHECK_STATUS(ovk_op_mul_mat(ops, &ctx->cmd, OSCAR_GGML_TYPE_Q5_0, bb, bb, bb, 1, 32, 1), OSCAR_ERROR_UNSUPPORTED);
    CHECK_STATUS(ovk_op_mul_mat(ops, &ctx->cmd, OSCAR_GGML_TYPE_Q4_K, bb, bb, bb, 1, 128, 1), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_op_mul_mat(ops, &ctx->cmd, OSCAR_GGML_TYPE_F16, bb, bb, bb, 1, 12, 1), OSCAR_ERROR_INVALID_ARGUMENT);
    /* 64 rows of 256 F32 = 64 KiB of weights: more than the binding holds */
    CHECK_STATUS(ovk_op_mul_mat(ops, &ctx->cmd, OSCAR_GGML_TYPE_F32, bb, bb, bb, 64, 256, 1), OSCAR_ERROR_INVALID_ARGUMENT);
    ovk_binding past = { &b, 4096, 4 };
    CHECK_STATUS(ovk_op_get_rows(ops, &ctx->cmd, OSCAR_GGML_TYPE_F32, past, bb, bb, 8, 1), OSCAR_ERROR_INVALID_ARGUMENT);
    /* a part: no rows; more rows than the binding holds; y rows closer than rows; y too short for the stride */
    CHECK_STATUS(ovk_op_get_rows_part(ops, &ctx->cmd, OSCAR_GGML_TYPE_F32, bb, bb, bb, 8, 1, 0, 0), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_op_get_rows_part(ops, &ctx->cmd, OSCAR_GGML_TYPE_F32, bb, bb, bb, 8, 1, 5, 129), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_op_mul_mat_strided(ops, &ctx->cmd, OSCAR_GGML_TYPE_F32, bb, bb, bb, 3, 4, 8, 2), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_op_mul_mat_strided(ops, &ctx->cmd, OSCAR_GGML_TYPE_F32, bb, bb, bb, 1024, 4, 8, 2), OSCAR_ERROR_INVALID_ARGUMENT);
    ops->matvec_shader = OSCAR_MATVEC_LANES; /* block types only */
    CHECK_STATUS(ovk_op_mul_mat(ops, &ctx->cmd, OSCAR_GGML_TYPE_F16, bb, bb, bb, 1, 8, 1), OSCAR_ERROR_UNSUPPORTED);
    ops->matvec_shader = 7;
    CHECK_STATUS(ovk_op_mul_mat(ops, &ctx->cmd, OSCAR_GGML_TYPE_Q4_0, bb, bb, bb, 1, 32, 1), OSCAR_ERROR_INVALID_ARGUMENT);
    ops->matvec_shader = OSCAR_MATVEC_AUTO;
    ops->workgroup = 96;
    CHECK_STATUS(ovk_op_mul_mat(ops, &ctx->cmd, OSCAR_GGML_TYPE_F32, bb, bb, bb, 1, 8, 1), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
    ovk_buffer_destroy(ctx, &b);
}

int main(void)
{
    oscar_context *ctx = test_gpu_context();
    test_rng_seed(7);
    ovk_ops ops;
    ovk_ops_init(&ops, ctx);
    check_errors(&ops);
    for (size_t t = 0; t < N_TYPES; t++) {
        uint32_t type = types[t], block = ovk_ggml_type_get(type)->block_size;
        /* one block (or 40 for float types: a partial 32-column tile), three blocks, 4096 */
        uint32_t cols[3] = { block == 1 ? 40 : block, block == 1 ? 96 : 3 * block, 4096 };
        uint32_t rows[3] = { 37, 67, 33 };
        uint32_t per_group[3] = { 1, 2, 3 };
        ops.matvec_shader = OSCAR_MATVEC_UNITS;
        for (int c = 0; c < 3; c++) {
            ops.matvec_unroll = 1u << c; /* 1, 2, 4 units per thread per pass */
            check_case(&ops, type, rows[c], cols[c], workgroups[(t + (size_t)c) % 3], per_group[c]);
        }
        ops.matvec_unroll = 0;
        /* the per-type defaults (shader, rows per group) */
        check_case(&ops, type, 41, 5120, 128, 0);
        /* the RUN8 shader (the default for F32/F16/BF16) on the block types too, and the UNITS
         * shader at 32 threads, 4 rows and 3 units per pass (a partial last pass) */
        ops.matvec_shader = OSCAR_MATVEC_RUN8;
        check_case(&ops, type, 35, 4096, 64, 4);
        ops.matvec_shader = OSCAR_MATVEC_UNITS;
        ops.matvec_unroll = 3;
        ops.matvec_workgroup = 32;
        check_case(&ops, type, 35, 4096, 64, 4);
        ops.matvec_unroll = 0;
        ops.matvec_workgroup = 0;
        if (block > 1) { /* the LANES shader (the default for Q4_0 and Q4_1) on every block type:
                          * 1 to 3 words per pass, 32 to 256 threads, 1 to 4 rows per group */
            ops.matvec_shader = OSCAR_MATVEC_LANES;
            for (uint32_t c = 0; c < 3; c++) {
                ops.matvec_unroll = 1 + c;
                ops.matvec_workgroup = c == 2 ? 32 : workgroups[c];
                ops.matvec_tokens = c == 0 ? 0 : c == 1 ? 3 : 5; /* batched: 4 (default), 3, 5 per group */
                check_case(&ops, type, 37 + 2 * c, cols[c], workgroups[c], 1 + c);
            }
            ops.matvec_unroll = ops.matvec_workgroup = ops.matvec_tokens = 0;
            check_case(&ops, type, 35, 4096, 64, 4);
        }
        ops.matvec_shader = OSCAR_MATVEC_AUTO;
        { /* split by rows: 3 parts of 36 rows (more where the output offsets must align to more
           * than 16 bytes) and a fourth of 9 (an odd count) */
            uint32_t align = ctx->limits.minStorageBufferOffsetAlignment, unit = align > 4 ? align / 4 : 1;
            uint32_t per = (36 + unit - 1) / unit * unit;
            check_parts(&ops, type, 3 * per + 9, block == 1 ? 40 : 2 * block, per);
        }
        if (ovk_op_mul_mat_vec_f16_supported(&ops, type)) {
            /* the packed-fp16 path: 1, 3, 128, 160 blocks, 1 to 4 rows per group, 1 to 3 blocks
             * per pass, 32 to 256 threads, x at scales 1, 3e4 and 1e-4 */
            static const float scales[3] = { 1.0f, 3e4f, 1e-4f };
            for (uint32_t c = 0; c < 3; c++) {
                ops.matvec_unroll = 1 + c;
                ops.matvec_workgroup = c == 2 ? 32 : 0;
                check_f16_case(&ops, type, 37 + 2 * c, c == 0 ? 32 : c == 1 ? 96 : 4096, workgroups[c], 1 + c, scales[c]);
            }
            ops.matvec_unroll = ops.matvec_workgroup = 0;
            check_f16_case(&ops, type, 41, 5120, 128, 0, 1.0f);
        }
    }
    if (ctx->info.float16_arithmetic) { /* the fp16 path refuses the types it does not read */
        ovk_buffer b = { 0 };
        CHECK_OK(test_gpu_buffer_from(ctx, NULL, 4096, &b));
        ovk_binding bb = { &b, 0, 0 };
        CHECK(!ovk_op_mul_mat_vec_f16_supported(&ops, OSCAR_GGML_TYPE_Q4_K));
        CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
        CHECK_STATUS(ovk_op_mul_mat_vec_f16(&ops, &ctx->cmd, OSCAR_GGML_TYPE_Q4_K, bb, bb, bb, 1, 256, 1),
                     OSCAR_ERROR_UNSUPPORTED);
        CHECK_STATUS(ovk_op_x_f16_blocks(&ops, &ctx->cmd, bb, bb, 48, 1), OSCAR_ERROR_INVALID_ARGUMENT);
        CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
        ovk_buffer_destroy(ctx, &b);
    }
    return test_gpu_finish(ctx);
}
