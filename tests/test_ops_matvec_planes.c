/* The texel-fetch product over weight planes (shaders/mul_mat_vec_planes.comp) against the C
 * reference product of the GGUF blocks (ovk_ref_mul_mat), for Q4_0, Q4_1, Q8_0 (one block to
 * 160 blocks a row, counts that are and are not multiples of the four a scale texel holds),
 * Q4_K and Q6_K (one to 35 blocks of 256), row counts that leave the last thread part of its
 * rows, 1 to 16 rows and 1 to 8 tokens per thread (both bodies of the shader: one token, and
 * groups of tokens), 1 to 256 threads, 1, 5, 7 and 13 tokens (not multiples of the tokens a
 * thread: the last group part empty) with y rows further apart than W's (columns between them
 * and rows past the last token left alone), x bound at an offset inside a larger buffer.
 * ovk_planes_pack is checked byte for byte against the GGUF fields it moves. SwiGLU's pair of
 * products in one dispatch (GLU) equals the two products then swiglu on the device bit for bit,
 * and the C reference's within the same bound.
 *
 * Weights are random bytes with sane fp16 scale fields (test_make_weights): every code bit
 * counts. Bound: as test_ops_matvec's fp32 products, NSE 1e-6 against the double reference
 * (the kernel's only rounding is its fp32 sum; ~1e-13 measured), which one wrong element of a
 * 4096-column row (~2.4e-4) fails. Devices without texel buffers skip the products. */
#include <string.h>

#include "ggml_types.h"
#include "half.h"
#include "ops.h"
#include "ops_ref.h"
#include "test_gpu.h"
#include "test_weights.h"
#include "weight_planes.h"

#define NSE_BOUND 1e-6

static const uint32_t types[] = { OSCAR_GGML_TYPE_Q4_0, OSCAR_GGML_TYPE_Q4_1, OSCAR_GGML_TYPE_Q8_0, OSCAR_GGML_TYPE_Q4_K,
                                  OSCAR_GGML_TYPE_Q6_K };

/* The planes hold each block's code bytes and fp16 fields where weight_planes.h says. */
static void check_pack(uint32_t type, const uint8_t *w, const uint8_t *planes, uint32_t rows, uint32_t cols)
{
    if (type == OSCAR_GGML_TYPE_Q4_K || type == OSCAR_GGML_TYPE_Q6_K) { /* each block as stored, then zeros */
        uint32_t stored = type == OSCAR_GGML_TYPE_Q4_K ? 144 : 210, padded = ovk_planes_code_bytes(type);
        size_t bad = 0, n = (size_t)rows * (cols / 256);
        for (size_t b = 0; b < n; b++) {
            bad += memcmp(planes + b * padded, w + b * stored, stored) != 0;
            for (uint32_t k = stored; k < padded; k++) bad += planes[b * padded + k] != 0;
        }
        CHECK_MSG(bad == 0 && ovk_planes_bytes(type, rows, cols) == n * padded, "planes of %s %u x %u: %zu bytes misplaced",
                  ovk_ggml_type_name(type), rows, cols, bad);
        return;
    }
    uint32_t blocks = cols / 32, code = ovk_planes_code_bytes(type), head = type == OSCAR_GGML_TYPE_Q4_1 ? 4 : 2;
    const uint8_t *scales = planes + ovk_planes_scale_offset(type, rows, cols);
    size_t bad = 0;
    for (uint32_t r = 0; r < rows; r++)
        for (uint32_t b = 0; b < blocks; b++) {
            const uint8_t *blk = w + ((size_t)r * blocks + b) * (head + code);
            const uint8_t *s = scales + ((size_t)r * ovk_planes_scale_words(cols) + b) * 4;
            uint8_t want[4] = { blk[0], blk[1], head == 4 ? blk[2] : 0, head == 4 ? blk[3] : 0 };
            bad += memcmp(planes + ((size_t)r * blocks + b) * code, blk + head, code) != 0;
            bad += memcmp(s, want, 4) != 0;
        }
    CHECK_MSG(bad == 0, "planes of %s %u x %u: %zu blocks misplaced", ovk_ggml_type_name(type), rows, cols, bad);
}

/* One weight of rows x cols through a pipeline of wg threads, per rows and tok tokens a thread
 * (0: the op's defaults, which pick the tokens by n), for each token count of ns. */
static void check_case(ovk_ops *ops, uint32_t type, uint32_t rows, uint32_t cols, uint32_t wg, uint32_t per, uint32_t tok)
{
    oscar_context *ctx = ops->ctx;
    size_t wbytes;
    uint64_t pbytes = ovk_planes_bytes(type, rows, cols);
    uint8_t *w = test_make_weights(type, rows, cols, &wbytes);
    uint8_t *planes = malloc(pbytes);
    static const uint32_t ns[] = { 1, 5, 7, 13 };
    const uint32_t n_max = 13, stride = rows + 3;
    size_t ybytes = (size_t)n_max * stride * 4;
    float *x = calloc((size_t)n_max * cols + 16, sizeof *x), *ref = malloc((size_t)n_max * rows * 4), *got = malloc(ybytes);
    CHECK(w && planes && x && ref && got);
    if (!w || !planes || !x || !ref || !got) goto done;
    ovk_planes_pack(type, w, rows, cols, planes);
    check_pack(type, w, planes, rows, cols);
    for (uint32_t i = 0; i < n_max * cols; i++) x[16 + i] = test_rng_normal(); /* x starts 64 bytes into its buffer */

    ops->matvec_workgroup = wg;
    ops->matvec_rows = per;
    ops->matvec_tokens = tok;
    ovk_buffer bw = { 0 }, bx = { 0 }, by = { 0 };
    CHECK_OK(test_gpu_buffer_from(ctx, planes, pbytes, &bw));
    CHECK_OK(test_gpu_buffer_from(ctx, x, ((size_t)n_max * cols + 16) * 4, &bx));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, ybytes, &by));
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        uint32_t n = ns[k];
        CHECK_OK(ovk_ref_mul_mat(type, w, x + 16, ref, rows, cols, n));
        CHECK_OK(ovk_buffer_fill(ctx, &by, 0, ybytes, 0x7FC00000u));
        CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
        CHECK_OK(ovk_op_mul_mat_vec_planes(ops, &ctx->cmd, type, (ovk_binding){ &bw, 0, 0 }, (ovk_binding){ &bx, 64, 0 },
                                           (ovk_binding){ &by, 0, 0 }, stride, rows, cols, n));
        CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
        CHECK_OK(ovk_buffer_download(ctx, &by, 0, got, ybytes));
        size_t touched = 0;
        for (uint32_t t = 0; t < n_max; t++)
            for (uint32_t r = 0; r < stride; r++) {
                float v = got[(size_t)t * stride + r];
                if (t < n && r < rows) got[(size_t)t * rows + r] = v; /* packed in place: t * rows <= t * stride */
                else touched += ovk_f32_bits(v) != 0x7FC00000u;
            }
        double nse = test_nse(got, ref, (size_t)n * rows);
        CHECK_MSG(nse <= NSE_BOUND && touched == 0, "mul_mat_vec_planes %s rows %u cols %u n %u wg %u rows/thread %u "
                  "tokens/thread %u: nse %.3g, %zu floats outside y written", ovk_ggml_type_name(type), rows, cols, n, wg, per,
                  tok, nse, touched);
        if (getenv("OSCAR_TEST_VERBOSE"))
            printf("planes %-4s rows %3u cols %4u n %2u wg %3u rows/thread %2u tokens/thread %u: nse %.3g\n",
                   ovk_ggml_type_name(type), rows, cols, n, wg, per, tok, nse);
    }
    ovk_buffer_destroy(ctx, &bw);
    ovk_buffer_destroy(ctx, &bx);
    ovk_buffer_destroy(ctx, &by);
    ops->matvec_workgroup = ops->matvec_rows = ops->matvec_tokens = 0;
done:
    free(w);
    free(planes);
    free(x);
    free(ref);
    free(got);
}

/* SwiGLU's products in one dispatch (ovk_op_mul_mat_vec_planes_glu) with gate and up weights
 * of rows x cols: bit for bit the two products then ovk_op_swiglu on the device, and within
 * NSE_BOUND of the C reference's products and SwiGLU; rows past y's untouched. per: rows a thread
 * of both weights together (even; 0: the defaults). */
static void check_glu(ovk_ops *ops, uint32_t type, uint32_t rows, uint32_t cols, uint32_t wg, uint32_t per, uint32_t tok)
{
    oscar_context *ctx = ops->ctx;
    size_t wbytes;
    uint64_t pbytes = ovk_planes_bytes(type, rows, cols);
    uint8_t *wg_ = test_make_weights(type, rows, cols, &wbytes), *wu = test_make_weights(type, rows, cols, &wbytes);
    uint8_t *pg = malloc(pbytes), *pu = malloc(pbytes);
    static const uint32_t ns[] = { 1, 5, 13 };
    const uint32_t n_max = 13, stride = rows + 3;
    size_t ybytes = (size_t)n_max * stride * 4;
    float *x = malloc((size_t)n_max * cols * 4), *rg = malloc((size_t)n_max * rows * 4), *ru = malloc((size_t)n_max * rows * 4);
    float *got = malloc(ybytes), *two = malloc(ybytes);
    CHECK(wg_ && wu && pg && pu && x && rg && ru && got && two);
    if (!wg_ || !wu || !pg || !pu || !x || !rg || !ru || !got || !two) goto done;
    ovk_planes_pack(type, wg_, rows, cols, pg);
    ovk_planes_pack(type, wu, rows, cols, pu);
    for (uint32_t i = 0; i < n_max * cols; i++) x[i] = test_rng_normal();
    ops->matvec_workgroup = wg;
    ops->matvec_rows = per;
    ops->matvec_tokens = tok;
    ovk_buffer bg = { 0 }, bu = { 0 }, bx = { 0 }, by = { 0 }, yg = { 0 }, yu = { 0 };
    CHECK_OK(test_gpu_buffer_from(ctx, pg, pbytes, &bg));
    CHECK_OK(test_gpu_buffer_from(ctx, pu, pbytes, &bu));
    CHECK_OK(test_gpu_buffer_from(ctx, x, (size_t)n_max * cols * 4, &bx));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, ybytes, &by));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, ybytes, &yg));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, ybytes, &yu));
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        uint32_t n = ns[k];
        ovk_binding g = { &bg, 0, 0 }, u = { &bu, 0, 0 }, xb = { &bx, 0, 0 };
        CHECK_OK(ovk_buffer_fill(ctx, &by, 0, ybytes, 0x7FC00000u));
        CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
        CHECK_OK(ovk_op_mul_mat_vec_planes_glu(ops, &ctx->cmd, type, g, u, xb, (ovk_binding){ &by, 0, 0 }, stride, rows, cols, n));
        /* the three kernels, with the default shapes of the plain product */
        ops->matvec_rows = 0;
        CHECK_OK(ovk_op_mul_mat_vec_planes(ops, &ctx->cmd, type, g, xb, (ovk_binding){ &yg, 0, 0 }, stride, rows, cols, n));
        CHECK_OK(ovk_op_mul_mat_vec_planes(ops, &ctx->cmd, type, u, xb, (ovk_binding){ &yu, 0, 0 }, stride, rows, cols, n));
        ops->matvec_rows = per;
        ovk_cmd_barrier(ctx, &ctx->cmd);
        CHECK_OK(ovk_op_swiglu(ops, &ctx->cmd, (ovk_binding){ &yg, 0, 0 }, (ovk_binding){ &yu, 0, 0 }, (ovk_binding){ &yg, 0, 0 },
                               n * stride));
        CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
        CHECK_OK(ovk_buffer_download(ctx, &by, 0, got, ybytes));
        CHECK_OK(ovk_buffer_download(ctx, &yg, 0, two, ybytes));
        CHECK_OK(ovk_ref_mul_mat(type, wg_, x, rg, rows, cols, n));
        CHECK_OK(ovk_ref_mul_mat(type, wu, x, ru, rows, cols, n));
        ovk_ref_swiglu(rg, ru, rg, (size_t)n * rows);
        size_t touched = 0, differ = 0;
        for (uint32_t t = 0; t < n_max; t++)
            for (uint32_t r = 0; r < stride; r++) {
                float v = got[(size_t)t * stride + r];
                if (t < n && r < rows) {
                    differ += ovk_f32_bits(v) != ovk_f32_bits(two[(size_t)t * stride + r]);
                    got[(size_t)t * rows + r] = v; /* packed in place: t * rows <= t * stride */
                } else {
                    touched += ovk_f32_bits(v) != 0x7FC00000u;
                }
            }
        double nse = test_nse(got, rg, (size_t)n * rows);
        CHECK_MSG(differ == 0 && nse <= NSE_BOUND && touched == 0, "mul_mat_vec_planes_glu %s rows %u cols %u n %u wg %u "
                  "rows/thread %u tokens/thread %u: %zu values not those of the products and swiglu, nse %.3g, %zu floats "
                  "outside y written", ovk_ggml_type_name(type), rows, cols, n, wg, per, tok, differ, nse, touched);
    }
    ovk_buffer_destroy(ctx, &bg);
    ovk_buffer_destroy(ctx, &bu);
    ovk_buffer_destroy(ctx, &bx);
    ovk_buffer_destroy(ctx, &by);
    ovk_buffer_destroy(ctx, &yg);
    ovk_buffer_destroy(ctx, &yu);
    ops->matvec_workgroup = ops->matvec_rows = ops->matvec_tokens = 0;
done:
    free(wg_), free(wu), free(pg), free(pu), free(x), free(rg), free(ru), free(got), free(two);
}

/* Refusals: a type without planes, x at an offset no texel view may start at, columns not
 * whole blocks, y rows closer than W's, too many rows or tokens per thread. */
static void check_errors(ovk_ops *ops)
{
    oscar_context *ctx = ops->ctx;
    ovk_buffer b = { 0 };
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, 1 << 16, &b));
    ovk_binding bb = { &b, 0, 0 }, odd = { &b, 4, 0 };
    CHECK(!ovk_op_mul_mat_vec_planes_supported(ops, OSCAR_GGML_TYPE_Q5_K));
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    CHECK_STATUS(ovk_op_mul_mat_vec_planes(ops, &ctx->cmd, OSCAR_GGML_TYPE_Q5_K, bb, bb, bb, 4, 4, 256, 1),
                 OSCAR_ERROR_UNSUPPORTED);
    if (ctx->texel_buffers) {
        CHECK_STATUS(ovk_op_mul_mat_vec_planes(ops, &ctx->cmd, OSCAR_GGML_TYPE_Q4_0, bb, odd, bb, 4, 4, 64, 1),
                     OSCAR_ERROR_INVALID_ARGUMENT);
        CHECK_STATUS(ovk_op_mul_mat_vec_planes(ops, &ctx->cmd, OSCAR_GGML_TYPE_Q4_0, bb, bb, bb, 4, 4, 48, 1),
                     OSCAR_ERROR_INVALID_ARGUMENT);
        CHECK_STATUS(ovk_op_mul_mat_vec_planes(ops, &ctx->cmd, OSCAR_GGML_TYPE_Q4_0, bb, bb, bb, 3, 4, 64, 1),
                     OSCAR_ERROR_INVALID_ARGUMENT);
        ops->matvec_rows = 17;
        CHECK_STATUS(ovk_op_mul_mat_vec_planes(ops, &ctx->cmd, OSCAR_GGML_TYPE_Q4_0, bb, bb, bb, 4, 4, 64, 1),
                     OSCAR_ERROR_INVALID_ARGUMENT);
        ops->matvec_rows = 3; /* SwiGLU's pair: half the rows from each weight */
        CHECK_STATUS(ovk_op_mul_mat_vec_planes_glu(ops, &ctx->cmd, OSCAR_GGML_TYPE_Q4_0, bb, bb, bb, bb, 4, 4, 64, 1),
                     OSCAR_ERROR_INVALID_ARGUMENT);
        ops->matvec_rows = 0;
        ops->matvec_tokens = 9;
        CHECK_STATUS(ovk_op_mul_mat_vec_planes(ops, &ctx->cmd, OSCAR_GGML_TYPE_Q4_0, bb, bb, bb, 4, 4, 64, 2),
                     OSCAR_ERROR_INVALID_ARGUMENT);
        ops->matvec_tokens = 0;
    }
    CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
    ovk_buffer_destroy(ctx, &b);
}

int main(void)
{
    oscar_context *ctx = test_gpu_context();
    test_rng_seed(11);
    ovk_ops ops;
    ovk_ops_init(&ops, ctx);
    check_errors(&ops);
    if (!ctx->texel_buffers) {
        printf("no R32G32B32A32_UINT texel buffers on this device: the planes mat-vec does not run\n");
        return test_gpu_finish(ctx);
    }
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        uint32_t type = types[t];
        /* tokens a thread 1..8 over the cases; the defaults take 1, 5, 7 and 8 by n */
        if (type == OSCAR_GGML_TYPE_Q4_K || type == OSCAR_GGML_TYPE_Q6_K) {
            check_case(&ops, type, 1, 256, 1, 1, 2);      /* one block, one row */
            check_case(&ops, type, 37, 768, 8, 4, 1);     /* 3 blocks; the last thread 1 row of 4; one token a thread */
            check_case(&ops, type, 67, 1536, 16, 2, 3);   /* Qwen2.5-1.5B's rows */
            check_case(&ops, type, 33, 4096, 64, 8, 4);   /* 16 blocks, 8 rows a thread */
            check_case(&ops, type, 29, 512, 8, 16, 6);    /* 16 rows a thread: 2 threads, the last 13 of them */
            check_case(&ops, type, 45, 1024, 4, 5, 7);
            check_case(&ops, type, 50, 768, 8, 12, 8);
            check_case(&ops, type, 130, 8960, 0, 0, 0);   /* 35 blocks, the defaults */
            check_glu(&ops, type, 37, 768, 8, 4, 1);      /* SwiGLU's pair: 2 rows of each weight, one token a thread */
            check_glu(&ops, type, 67, 1536, 0, 0, 0);     /* the defaults */
            continue;
        }
        check_case(&ops, type, 1, 32, 1, 1, 3);       /* one block, one row */
        check_case(&ops, type, 37, 96, 8, 4, 1);      /* 3 blocks: a partial scale texel; the last thread 1 row of 4 */
        check_case(&ops, type, 67, 576, 16, 2, 2);    /* 18 blocks (SmolLM2's rows) */
        check_case(&ops, type, 33, 4096, 64, 8, 4);   /* 128 blocks, 8 rows a thread */
        check_case(&ops, type, 41, 5120, 256, 3, 5);  /* 160 blocks, 3 rows a thread */
        check_case(&ops, type, 29, 320, 8, 16, 6);    /* 16 rows a thread: 2 threads, the last 13 of them */
        check_case(&ops, type, 45, 1024, 4, 5, 7);
        check_case(&ops, type, 50, 224, 8, 12, 8);    /* 7 blocks */
        check_case(&ops, type, 130, 1536, 0, 0, 0);   /* the defaults */
        check_glu(&ops, type, 37, 96, 8, 4, 1);       /* SwiGLU's pair: 2 rows of each weight, one token a thread */
        check_glu(&ops, type, 29, 320, 4, 16, 6);     /* 8 of each: the last thread 5 */
        check_glu(&ops, type, 67, 576, 0, 0, 0);      /* the defaults (SmolLM2's rows) */
    }
    return test_gpu_finish(ctx);
}
