/* The short-batch product (shaders/mul_mat_short.coopmat.comp, ovk_op_mul_mat_short), its fp16
 * input (x_f16_rows.f16.comp, ovk_op_x_f16_rows) and its scalar emulation
 * (mul_mat_short_emu.f16.comp: the same slots, offsets, column parts and stores) against their
 * references (docs/accuracy.md): the faithful one (ovk_ref_mul_mat_f16: dequantized W and x
 * rounded to fp16, sums in double), NSE <= 1e-5, and the exact one (ovk_ref_mul_mat), NSE <=
 * 1e-4. Every weight type the GPU reads, at rows that leave partial tiles (37, 67, 130, 300),
 * 1 to 64 tokens (partial token matrices), K with a partial step for the float types (72, 264)
 * and several K-quant blocks (256, 768); plans with one to four subgroups along rows and along
 * columns, column parts left empty (5 steps over 4 parts), forced and automatic column slices
 * through a scratch, y rows apart by rows + 5: a NaN-filled tail and gap stay. xh is checked
 * value by value (the C rounding of each x clamped to +-65504, zeros in its padding), small
 * integers give exact sums bit for bit, and inputs beyond the fp16 range stay finite.
 *
 * Where the context has no cooperative matrices (lavapipe) the emulation runs at 16 x 16 x 16
 * and 16 x 8 x 16, given fp16 arithmetic and 16-bit storage; then the kernel's refusal is
 * checked and the test is skipped (exit 77, one line saying why). On a device with them, the
 * kernel runs every case. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_types.h"
#include "half.h"
#include "mul_mat_short.h"
#include "ops.h"
#include "ops_ref.h"
#include "test_accuracy.h"
#include "test_gpu.h"
#include "test_weights.h"

#define TAIL 64u          /* floats after y [n][rows] that must stay NaN */
#define NAN_BITS 0x7FC00000u
#define NAN16_PAIR 0x7E007E00u

static ovk_binding bind(ovk_buffer *b) { return (ovk_binding){ b, 0, 0 }; }

/* The kernel, or its emulation at the shape tm x tn x tk. */
typedef struct variant {
    int emulated;
    uint32_t tm, tn, tk;
} variant;

static const char *variant_name(const variant *v, char *buf, size_t size)
{
    if (v->emulated) snprintf(buf, size, "mul_mat_short_emu %ux%ux%u", v->tm, v->tn, v->tk);
    else snprintf(buf, size, "mul_mat_short.coopmat");
    return buf;
}

/* x clamped to the fp16 range and rounded as the C reference rounds (to nearest even). */
static uint16_t x16_of(float x) { return ovk_f32_to_f16(x > 65504.0f ? 65504.0f : x < -65504.0f ? -65504.0f : x); }

/* Whether fp16 bits a are b or, for a conversion that rounds toward zero, its neighbour there. */
static int same_or_toward_zero(uint16_t a, uint16_t b)
{
    return a == b || ((a & 0x8000u) == (b & 0x8000u) && (b & 0x7FFFu) > 0 && a == b - 1);
}

/* One conversion and product of W [rows][cols] (w, wbytes bytes) by x [n][cols] by variant v
 * into y [n][rows + pad], its columns 0..rows-1 copied to got [n][rows]; returns the floats
 * written outside them (the pad columns and the tail). Checks xh against the C rounding. */
static size_t run(ovk_ops *ops, const variant *v, uint32_t type, const uint8_t *w, size_t wbytes, const float *x,
                  float *got, uint32_t rows, uint32_t cols, uint32_t n, uint32_t pad)
{
    oscar_context *ctx = ops->ctx;
    uint32_t stride = rows + pad;
    size_t ny = (size_t)n * stride, xh_bytes = ovk_x16_bytes(n, cols);
    float *all = malloc((ny + TAIL) * 4);
    uint16_t *xh = malloc(xh_bytes);
    ovk_buffer bw, bx, bh, by;
    CHECK_OK(test_gpu_buffer_from(ctx, w, wbytes, &bw));
    CHECK_OK(test_gpu_buffer_from(ctx, x, (size_t)n * cols * 4, &bx));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, xh_bytes, &bh));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, (ny + TAIL) * 4, &by));
    CHECK_OK(ovk_buffer_fill(ctx, &bh, 0, xh_bytes, NAN16_PAIR)); /* padding left unwritten shows */
    CHECK_OK(ovk_buffer_fill(ctx, &by, 0, (ny + TAIL) * 4, NAN_BITS));
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    ovk_binding yb = { &by, 0, ((size_t)(n - 1) * stride + rows) * 4 }, wb = bind(&bw), xb = bind(&bx), hb = bind(&bh);
    CHECK_OK(ovk_op_x_f16_rows(ops, &ctx->cmd, xb, hb, cols, n));
    ovk_cmd_barrier(ctx, &ctx->cmd);
    if (v->emulated) CHECK_OK(ovk_mms_record_emulated(ops, &ctx->cmd, v->tm, v->tn, v->tk, type, wb, hb, yb, stride, rows, cols, n));
    else CHECK_OK(ovk_op_mul_mat_short(ops, &ctx->cmd, type, wb, hb, yb, stride, rows, cols, n));
    CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
    CHECK_OK(ovk_buffer_download(ctx, &by, 0, all, (ny + TAIL) * 4));
    CHECK_OK(ovk_buffer_download(ctx, &bh, 0, xh, xh_bytes));
    size_t touched = 0, off = 0, row16 = (size_t)ovk_x16_stride(cols) * 4;
    for (size_t t = 0; t < ovk_x16_tokens(n); t++)
        for (size_t c = 0; c < row16; c++) {
            uint16_t want = t < n && c < cols ? x16_of(x[t * cols + c]) : 0;
            off += !same_or_toward_zero(xh[t * row16 + c], want);
        }
    CHECK_MSG(off == 0, "x_f16_rows %u x %u: %zu of %zu fp16 values differ from the C rounding", n, cols, off,
              ovk_x16_tokens(n) * row16);
    for (size_t t = 0; t < n; t++) {
        memcpy(got + t * rows, all + t * stride, (size_t)rows * 4);
        for (size_t c = rows; c < stride; c++) touched += ovk_f32_bits(all[t * stride + c]) != NAN_BITS;
    }
    for (size_t i = 0; i < TAIL; i++) touched += ovk_f32_bits(all[ny + i]) != NAN_BITS;
    ovk_buffer_destroy(ctx, &bw), ovk_buffer_destroy(ctx, &bx), ovk_buffer_destroy(ctx, &bh), ovk_buffer_destroy(ctx, &by);
    free(all), free(xh);
    return touched;
}

/* Random W of `type` and Gaussian x: the product against both references. */
static void check_type(ovk_ops *ops, const variant *v, uint32_t type, uint32_t rows, uint32_t cols, uint32_t n,
                       uint32_t pad)
{
    size_t wbytes, ny = (size_t)n * rows;
    uint8_t *w = test_make_weights(type, rows, cols, &wbytes);
    float *x = malloc((size_t)n * cols * 4), *got = malloc(ny * 4), *faithful = malloc(ny * 4), *exact = malloc(ny * 4);
    CHECK(w && x && got && faithful && exact);
    if (!w || !x || !got || !faithful || !exact) goto done;
    for (size_t i = 0; i < (size_t)n * cols; i++) x[i] = test_rng_normal();
    CHECK_OK(ovk_ref_mul_mat_f16(type, w, x, faithful, rows, cols, n));
    CHECK_OK(ovk_ref_mul_mat(type, w, x, exact, rows, cols, n));
    size_t touched = run(ops, v, type, w, wbytes, x, got, rows, cols, n, pad);
    char what[192], name[48], split[32] = "";
    const uint32_t *t = ops->matmul_short;
    if (ops->matmul_scratch.buffer) snprintf(split, sizeof split, ", split %u", ops->matmul_split); /* 0: per shape */
    snprintf(what, sizeof what, "%s %s %u x %u, %u tokens, plan %ux%ux%u%s%s", variant_name(v, name, sizeof name),
             ovk_ggml_type_name(type), rows, cols, n, t[0], t[1], t[2], split, pad ? ", y rows apart by rows + 5" : "");
    test_check_accuracy(what, got, faithful, exact, ny);
    CHECK_MSG(touched == 0, "%s: %zu floats written outside y's rows", what, touched);
done:
    free(w), free(x), free(got), free(faithful), free(exact);
}

/* F32 weights of +-1e6 and x of +-1e5 among N(0, 1) data: clamped to +-65504 as the faithful
 * reference does, so the result is finite and tight against it. */
static void check_outliers(ovk_ops *ops, const variant *v, uint32_t rows, uint32_t cols, uint32_t n)
{
    size_t wbytes, ny = (size_t)n * rows;
    uint8_t *w = test_make_weights(OSCAR_GGML_TYPE_F32, rows, cols, &wbytes);
    float *wf = (float *)w, *x = malloc((size_t)n * cols * 4), *got = malloc(ny * 4), *faithful = malloc(ny * 4);
    for (size_t i = 0; i < (size_t)n * cols; i++) x[i] = test_rng_normal();
    for (uint32_t k = 0; k < 40; k++) {
        wf[test_rng_u32() % ((size_t)rows * cols)] = test_rng_u32() & 1 ? 1e6f : -1e6f;
        x[test_rng_u32() % ((size_t)n * cols)] = test_rng_u32() & 1 ? 1e5f : -1e5f;
    }
    CHECK_OK(ovk_ref_mul_mat_f16(OSCAR_GGML_TYPE_F32, w, x, faithful, rows, cols, n));
    size_t touched = run(ops, v, OSCAR_GGML_TYPE_F32, w, wbytes, x, got, rows, cols, n, 0), bad = 0;
    for (size_t i = 0; i < ny; i++) bad += !isfinite(got[i]);
    char what[96], name[48];
    snprintf(what, sizeof what, "%s F32 outliers %u x %u, %u tokens", variant_name(v, name, sizeof name), rows, cols, n);
    test_check_accuracy(what, got, faithful, NULL, ny);
    CHECK_MSG(bad == 0 && touched == 0, "%s: %zu results not finite, %zu written outside y", what, bad, touched);
    free(w), free(x), free(got), free(faithful);
}

/* F16 weights and x of small integers: every sum exact in fp32, the result bit for bit. */
static void check_integers(ovk_ops *ops, const variant *v, uint32_t rows, uint32_t cols, uint32_t n)
{
    size_t ny = (size_t)n * rows, wbytes = (size_t)rows * cols * 2;
    float *x = malloc((size_t)n * cols * 4), *got = malloc(ny * 4), *ref = malloc(ny * 4);
    uint16_t *w = malloc(wbytes);
    for (size_t i = 0; i < (size_t)rows * cols; i++) w[i] = ovk_f32_to_f16((float)((int)(test_rng_u32() % 7) - 3));
    for (size_t i = 0; i < (size_t)n * cols; i++) x[i] = (float)((int)(test_rng_u32() % 7) - 3);
    CHECK_OK(ovk_ref_mul_mat(OSCAR_GGML_TYPE_F16, w, x, ref, rows, cols, n));
    size_t touched = run(ops, v, OSCAR_GGML_TYPE_F16, (const uint8_t *)w, wbytes, x, got, rows, cols, n, 0), diff = 0;
    for (size_t i = 0; i < ny; i++) diff += ovk_f32_bits(got[i]) != ovk_f32_bits(ref[i]);
    char name[48];
    variant_name(v, name, sizeof name);
    CHECK_MSG(diff == 0 && touched == 0, "%s integers %u x %u, %u tokens: %zu of %zu differ, %zu written past y", name, rows,
              cols, n, diff, ny, touched);
    printf("%s F16 integers %u x %u, %u tokens: %zu of %zu differ from the exact sums\n", name, rows, cols, n, diff, ny);
    free(x), free(got), free(ref), free(w);
}

/* Column slices through a NaN-filled scratch: forced counts that leave a short last slice and
 * K-quant blocks cut across slices, and the automatic split; each must have written the scratch. */
static void check_split(ovk_ops *ops, const variant *v)
{
    oscar_context *ctx = ops->ctx;
    ovk_buffer scratch;
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, 1u << 20, &scratch));
    ops->matmul_scratch = (ovk_binding){ &scratch, 0, 0 };
    static const struct { uint32_t split, type, rows, cols, n, pad; } cases[] = {
        { 3, OSCAR_GGML_TYPE_Q4_0, 67, 160, 33, 0 },  { 2, OSCAR_GGML_TYPE_F16, 37, 72, 5, 0 },
        { 3, OSCAR_GGML_TYPE_Q4_K, 130, 768, 5, 0 },  { 5, OSCAR_GGML_TYPE_Q6_K, 100, 512, 16, 5 },
        { 0, OSCAR_GGML_TYPE_Q4_0, 300, 4096, 16, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ops->matmul_split = cases[i].split;
        CHECK_OK(ovk_buffer_fill(ctx, &scratch, 0, scratch.size, NAN_BITS));
        check_type(ops, v, cases[i].type, cases[i].rows, cases[i].cols, cases[i].n, cases[i].pad);
        uint32_t *s = malloc(scratch.size);
        size_t used = 0;
        CHECK_OK(ovk_buffer_download(ctx, &scratch, 0, s, scratch.size));
        for (size_t k = 0; k < scratch.size / 4; k++) used += s[k] != NAN_BITS;
        free(s);
        CHECK_MSG(used > 0, "%s %u x %u, %u tokens, split %u: the scratch was not written", ovk_ggml_type_name(cases[i].type),
                  cases[i].rows, cases[i].cols, cases[i].n, cases[i].split);
    }
    ops->matmul_split = 0;
    ops->matmul_scratch = (ovk_binding){ 0 };
    ovk_buffer_destroy(ctx, &scratch);
}

/* The plan's slices (no device work): whole steps, the last slice not empty, within the scratch,
 * at the counts worked out by hand for the default 2 x 4 subgroups of 32 rows at 16 x 16 x 16. */
static void check_plans(oscar_context *ctx)
{
    ovk_ops ops;
    ovk_ops_init(&ops, ctx);
    memset(ops.matmul_short, 0, sizeof ops.matmul_short);
    ovk_buffer fake;
    static const struct { uint32_t split, rows, cols, n, scratch_mib, slices; } cases[] = {
        /* 14336 rows: 224 workgroups of 8 subgroups = 1792, want 2; at most 128 / 32 = 4 */
        { 0, 14336, 4096, 32, 16, 2 }, { 0, 4096, 4096, 32, 16, 4 }, { 0, 4096, 14336, 32, 16, 4 },
        { 0, 1024, 4096, 8, 16, 4 },   { 0, 128256, 4096, 32, 16, 1 }, { 0, 4096, 4096, 32, 1, 2 },
        { 7, 300, 100, 5, 16, 4 },     { 0, 1024, 4096, 8, 0, 1 },     { 1, 1024, 4096, 8, 16, 1 },
        { 0, 4096, 512, 64, 16, 1 }, /* 16 steps: no slice of 8 steps in each of 4 parts */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ovk_mms_plan p;
        ops.matmul_split = cases[i].split;
        fake = (ovk_buffer){ .size = (uint64_t)cases[i].scratch_mib << 20 };
        ops.matmul_scratch = (ovk_binding){ cases[i].scratch_mib ? &fake : NULL, 0, 0 };
        uint32_t rows = cases[i].rows, cols = cases[i].cols, n = cases[i].n;
        CHECK_OK(ovk_mms_plan_for(&ops, 16, 16, 16, 32, 32, rows, cols, n, &p));
        int ok = p.slices == cases[i].slices && p.k_slice % MMS_BK == 0 && (uint64_t)p.slices * p.k_slice >= cols &&
                 (uint64_t)(p.slices - 1) * p.k_slice < cols && (p.slices == 1 || (uint64_t)p.slices * n * rows * 4 <= fake.size);
        CHECK_MSG(ok, "short plan %u x %u, %u tokens, split %u, scratch %u MiB: %u slices of %u columns (want %u)", rows, cols,
                  n, cases[i].split, cases[i].scratch_mib, p.slices, p.k_slice, cases[i].slices);
    }
    ovk_mms_plan p;
    CHECK_STATUS(ovk_mms_plan_for(&ops, 16, 16, 16, 32, 32, 64, 64, 65, &p), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_mms_plan_for(&ops, 16, 32, 16, 32, 32, 64, 64, 8, &p), OSCAR_ERROR_INVALID_ARGUMENT);
}

/* Every weight type at odd shapes (all: else F16, Q4_0 and Q6_K at the largest), then (all) the
 * token counts, plans, slices, outliers and exact integers. */
static void check_all(ovk_ops *ops, const variant *v, int all)
{
    static const uint32_t types[] = { OSCAR_GGML_TYPE_F32,  OSCAR_GGML_TYPE_F16,  OSCAR_GGML_TYPE_BF16,
                                      OSCAR_GGML_TYPE_Q8_0, OSCAR_GGML_TYPE_Q4_0, OSCAR_GGML_TYPE_Q4_1,
                                      OSCAR_GGML_TYPE_Q4_K, OSCAR_GGML_TYPE_Q5_K, OSCAR_GGML_TYPE_Q6_K };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        uint32_t type = types[i], block = ovk_op_type_block(type);
        uint32_t k_small = block == 8 ? 72 : block == 32 ? 96 : 256, k_big = block == 8 ? 264 : block == 32 ? 288 : 768;
        if (!all && type != OSCAR_GGML_TYPE_F16 && type != OSCAR_GGML_TYPE_Q4_0 && type != OSCAR_GGML_TYPE_Q6_K) continue;
        if (all) check_type(ops, v, type, 37, k_small, 5, 0);
        check_type(ops, v, type, 130, k_big, 33, 0);
    }
    if (!all) return;
    static const uint32_t tokens[] = { 1, 2, 16, 17, 64 };
    for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++) check_type(ops, v, OSCAR_GGML_TYPE_Q4_0, 300, 1024, tokens[i], 0);
    check_type(ops, v, OSCAR_GGML_TYPE_Q6_K, 100, 512, 20, 5); /* y of a part of a split matrix */
    static const uint32_t plans[][3] = { { 1, 1, 1 }, { 4, 1, 1 }, { 1, 4, 1 }, { 3, 3, 1 }, { 2, 2, 2 } };
    for (size_t p = 0; p < sizeof plans / sizeof plans[0]; p++) {
        memcpy(ops->matmul_short, plans[p], sizeof plans[p]);
        check_type(ops, v, OSCAR_GGML_TYPE_Q4_K, 130, 768, 9, 0);
        check_type(ops, v, OSCAR_GGML_TYPE_Q4_0, 67, 160, 33, 0); /* 5 steps: a column part left empty */
    }
    memset(ops->matmul_short, 0, sizeof ops->matmul_short);
    check_split(ops, v);
    check_outliers(ops, v, 67, 264, 45);
    check_integers(ops, v, 67, 256, 45);
}

int main(void)
{
    test_rng_seed(43);
    oscar_context *ctx = test_gpu_context();
    ovk_ops ops;
    ovk_ops_init(&ops, ctx);
    memset(ops.matmul_short, 0, sizeof ops.matmul_short);
    check_plans(ctx);
    if (!ovk_op_mul_mat_short_supported(&ops)) {
        if (ctx->info.float16_arithmetic && ctx->info.storage_16bit) { /* the kernel's indexing without its matrix units */
            static const variant emu[] = { { 1, 16, 16, 16 }, { 1, 16, 8, 16 } };
            for (size_t i = 0; i < sizeof emu / sizeof emu[0]; i++) check_all(&ops, &emu[i], i == 0);
        } else {
            printf("mul_mat_short_emu: skipped (no fp16 arithmetic and 16-bit storage on '%s')\n", ctx->info.name);
        }
        ovk_buffer buf;
        CHECK_OK(test_gpu_buffer_from(ctx, NULL, 1 << 16, &buf));
        CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
        CHECK_STATUS(ovk_op_mul_mat_short(&ops, &ctx->cmd, OSCAR_GGML_TYPE_Q4_0, bind(&buf), bind(&buf), bind(&buf), 64, 64, 64, 8),
                     OSCAR_ERROR_MISSING_FEATURE);
        CHECK(strstr(oscar_last_error(), ctx->info.name) != NULL);
        ovk_cmd_abort(ctx, &ctx->cmd);
        ovk_buffer_destroy(ctx, &buf);
        char why[320];
        snprintf(why, sizeof why, "no fp16 cooperative matrices for mul_mat_short on '%s'", ctx->info.name);
        test_gpu_release(ctx);
        if (test_checks_failed) return test_finish();
        test_skip(why);
    }
    static const variant coopmat = { 0, 0, 0, 0 };
    check_all(&ops, &coopmat, 1);
    return test_gpu_finish(ctx);
}
