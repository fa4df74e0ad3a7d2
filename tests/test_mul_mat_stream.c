/* The streaming short-batch matmul (shaders/mul_mat_stream.coopmat.comp, ovk_mms_record) and its
 * scalar emulation (mul_mat_stream_emu.f16.comp: the same rows, steps, offsets and stores)
 * against their two references (docs/accuracy.md): the faithful one (ovk_ref_mul_mat_f16:
 * dequantized W and x rounded to fp16, sums in double), NSE <= 1e-5, and the exact one
 * (ovk_ref_mul_mat: the same stored weights, x as given), NSE <= 1e-4; for every weight type the
 * GPU reads, at 1 to 64 tokens (whole, partial and single token matrices), rows that leave partial
 * row matrices and workgroups (37, 130, 300), columns a few blocks long and a partial step for the
 * float types (72, 264); unsplit, split into slices (the default per shape, and 3) and with y's
 * rows rows + 5 floats apart; a NaN-filled tail and gap stay. Small integers are exact: bit for
 * bit. Three products of one x as a group convert x to fp16 once; a fourth of another x in the
 * same group converts again (ctest runs the validation layer's synchronization checks: a
 * missing barrier is a message). ovk_op_mul_mat_coopmat routes a short batch here.
 *
 * Where the context has no cooperative matrices (lavapipe) the emulation runs at 16 x 16 x 16 and
 * 16 x 8 x 16, given fp16 arithmetic, then the test is skipped (exit 77) saying why. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_types.h"
#include "half.h"
#include "mul_mat_coopmat.h"
#include "ops.h"
#include "ops_ref.h"
#include "test_accuracy.h"
#include "test_gpu.h"
#include "test_weights.h"

#define TAIL 64u /* floats after y [n][rows] that must stay NaN */

static ovk_binding bind(ovk_buffer *b) { return (ovk_binding){ b, 0, 0 }; }

/* Which product runs: the kernel (ovk_mms_record), the cooperative-matrix product's own choice
 * (ovk_op_mul_mat_coopmat), or the emulation at tm x tn x tk. */
typedef struct variant {
    enum { V_STREAM, V_ROUTED, V_EMULATED } kind;
    uint32_t tm, tn, tk;
} variant;

static const char *variant_name(const variant *v, char *buf, size_t size)
{
    if (v->kind == V_EMULATED) snprintf(buf, size, "mul_mat_stream_emu %ux%ux%u", v->tm, v->tn, v->tk);
    else snprintf(buf, size, "%s", v->kind == V_ROUTED ? "mul_mat.coopmat(short batch)" : "mul_mat_stream.coopmat");
    return buf;
}

static oscar_status record(const ovk_ops *ops, ovk_cmd *cmd, const variant *v, uint32_t type, ovk_binding w, ovk_binding x,
                           ovk_binding y, uint32_t stride, uint32_t rows, uint32_t cols, uint32_t n)
{
    if (v->kind == V_EMULATED) return ovk_mms_record_emulated(ops, cmd, v->tm, v->tn, v->tk, type, w, x, y, stride, rows, cols, n);
    if (v->kind == V_ROUTED) return ovk_op_mul_mat_coopmat(ops, cmd, type, w, x, y, rows, cols, n);
    return ovk_mms_record(ops, cmd, type, w, x, y, stride, rows, cols, n);
}

/* One product of W [rows][cols] by x [n][cols] into y [n][rows + pad], its columns 0..rows-1
 * copied to got [n][rows]; returns the floats written outside them (the pad columns and the tail). */
static size_t run(ovk_ops *ops, const variant *v, uint32_t type, const uint8_t *w, size_t wbytes, const float *x,
                  float *got, uint32_t rows, uint32_t cols, uint32_t n, uint32_t pad)
{
    oscar_context *ctx = ops->ctx;
    uint32_t stride = rows + pad;
    size_t ny = (size_t)n * stride;
    float *all = malloc((ny + TAIL) * 4);
    ovk_buffer bw, bx, by;
    CHECK_OK(test_gpu_buffer_from(ctx, w, wbytes, &bw));
    CHECK_OK(test_gpu_buffer_from(ctx, x, (size_t)n * cols * 4, &bx));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, (ny + TAIL) * 4, &by));
    CHECK_OK(ovk_buffer_fill(ctx, &by, 0, (ny + TAIL) * 4, 0x7FC00000u)); /* NaN: a tile left unwritten shows */
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    ovk_binding yb = { &by, 0, ((size_t)(n - 1) * stride + rows) * 4 };
    CHECK_OK(record(ops, &ctx->cmd, v, type, bind(&bw), bind(&bx), yb, stride, rows, cols, n));
    CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
    CHECK_OK(ovk_buffer_download(ctx, &by, 0, all, (ny + TAIL) * 4));
    size_t touched = 0;
    for (size_t t = 0; t < n; t++) {
        memcpy(got + t * rows, all + t * stride, (size_t)rows * 4);
        for (size_t c = rows; c < stride; c++) touched += ovk_f32_bits(all[t * stride + c]) != 0x7FC00000u;
    }
    for (size_t i = 0; i < TAIL; i++) touched += ovk_f32_bits(all[ny + i]) != 0x7FC00000u;
    ovk_buffer_destroy(ctx, &bw), ovk_buffer_destroy(ctx, &bx), ovk_buffer_destroy(ctx, &by);
    free(all);
    return touched;
}

/* Random W of `type` and Gaussian x: the product against both references. */
static void check_type(ovk_ops *ops, const variant *v, uint32_t type, uint32_t rows, uint32_t cols, uint32_t n, uint32_t pad)
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
    char what[160], name[48];
    snprintf(what, sizeof what, "%s %s %u x %u, %u tokens, split %u%s", variant_name(v, name, sizeof name),
             ovk_ggml_type_name(type), rows, cols, n, ops->matmul_split, pad ? ", y rows apart by rows + 5" : "");
    test_check_accuracy(what, got, faithful, exact, ny);
    CHECK_MSG(touched == 0, "%s: %zu floats written outside y's rows", what, touched);
done:
    free(w), free(x), free(got), free(faithful), free(exact);
}

/* F16 weights and x of small integers: every sum exact in fp32, the result bit for bit. */
static void check_integers(ovk_ops *ops, const variant *v, uint32_t rows, uint32_t cols, uint32_t n)
{
    size_t ny = (size_t)n * rows, wbytes = (size_t)rows * cols * 2;
    float *wf = malloc((size_t)rows * cols * 4), *x = malloc((size_t)n * cols * 4), *got = malloc(ny * 4), *ref = malloc(ny * 4);
    uint16_t *w = malloc(wbytes);
    for (size_t i = 0; i < (size_t)rows * cols; i++) wf[i] = (float)((int)(test_rng_u32() % 7) - 3);
    for (size_t i = 0; i < (size_t)n * cols; i++) x[i] = (float)((int)(test_rng_u32() % 7) - 3);
    for (size_t i = 0; i < (size_t)rows * cols; i++) w[i] = ovk_f32_to_f16(wf[i]);
    CHECK_OK(ovk_ref_mul_mat(OSCAR_GGML_TYPE_F16, w, x, ref, rows, cols, n));
    size_t touched = run(ops, v, OSCAR_GGML_TYPE_F16, (const uint8_t *)w, wbytes, x, got, rows, cols, n, 0), diff = 0;
    for (size_t i = 0; i < ny; i++) diff += ovk_f32_bits(got[i]) != ovk_f32_bits(ref[i]);
    char name[48];
    CHECK_MSG(diff == 0 && touched == 0, "%s integers %u x %u, %u tokens: %zu of %zu differ, %zu written past y",
              variant_name(v, name, sizeof name), rows, cols, n, diff, ny, touched);
}

/* Four products recorded in one group: three of one x (one conversion to fp16), then one of
 * another x (a second conversion, after a barrier: the first three may still read the first). */
static void check_group(ovk_ops *ops, const variant *v)
{
    oscar_context *ctx = ops->ctx;
    enum { COLS = 512, N = 24, PRODUCTS = 4 };
    static const uint32_t rows[PRODUCTS] = { 67, 130, 37, 67 };
    const uint32_t type = OSCAR_GGML_TYPE_Q4_0;
    size_t wbytes[PRODUCTS];
    uint8_t *w[PRODUCTS];
    float *x = malloc((size_t)2 * N * COLS * 4), *got = malloc((size_t)N * 130 * 4), *ref = malloc((size_t)N * 130 * 4);
    for (size_t i = 0; i < (size_t)2 * N * COLS; i++) x[i] = test_rng_normal();
    ovk_buffer bw[PRODUCTS], bx, by[PRODUCTS];
    CHECK_OK(test_gpu_buffer_from(ctx, x, (size_t)2 * N * COLS * 4, &bx));
    for (int i = 0; i < PRODUCTS; i++) {
        w[i] = test_make_weights(type, rows[i], COLS, &wbytes[i]);
        CHECK_OK(test_gpu_buffer_from(ctx, w[i], wbytes[i], &bw[i]));
        CHECK_OK(test_gpu_buffer_from(ctx, NULL, (size_t)N * rows[i] * 4, &by[i]));
    }
    uint64_t second = (uint64_t)N * COLS * 4; /* the fourth product's x */
    ovk_mm_group group;
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    ovk_op_mul_mat_group_begin(ops, &group);
    for (int i = 0; i < PRODUCTS; i++) {
        ovk_binding xb = { &bx, i == 3 ? second : 0, second };
        CHECK_OK(record(ops, &ctx->cmd, v, type, bind(&bw[i]), xb, bind(&by[i]), rows[i], rows[i], COLS, N));
    }
    CHECK_OK(ovk_op_mul_mat_group_end(ops, &ctx->cmd));
    CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
    for (int i = 0; i < PRODUCTS; i++) {
        CHECK_OK(ovk_buffer_download(ctx, &by[i], 0, got, (size_t)N * rows[i] * 4));
        CHECK_OK(ovk_ref_mul_mat_f16(type, w[i], x + (i == 3 ? (size_t)N * COLS : 0), ref, rows[i], COLS, N));
        double e = test_nse(got, ref, (size_t)N * rows[i]);
        CHECK_MSG(e <= 1e-5, "a group of products: product %d NSE %.3g against the faithful reference", i, e);
    }
    printf("four products as a group, two inputs: %llu validation messages so far (synchronization checks %s)\n",
           (unsigned long long)oscar_context_validation_messages(ctx), getenv("VK_LAYER_ENABLES") ? "on" : "off");
    for (int i = 0; i < PRODUCTS; i++) ovk_buffer_destroy(ctx, &bw[i]), ovk_buffer_destroy(ctx, &by[i]), free(w[i]);
    ovk_buffer_destroy(ctx, &bx);
    free(x), free(got), free(ref);
}

/* By variant v: every weight type at odd shapes and token counts (all: else one float, one
 * 32-block and one K-quant type), splits, strided y, exact integers and a group. */
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
    static const uint32_t tokens[] = { 1, 2, 16, 17, 40, 64 };
    for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++) check_type(ops, v, OSCAR_GGML_TYPE_Q4_0, 300, 1024, tokens[i], 0);
    if (!all) return;
    static const uint32_t splits[] = { 1, 3 };
    for (size_t i = 0; i < sizeof splits / sizeof splits[0]; i++) {
        ops->matmul_split = splits[i];
        check_type(ops, v, OSCAR_GGML_TYPE_Q4_0, 67, 160, 33, 0);
        check_type(ops, v, OSCAR_GGML_TYPE_F16, 37, 264, 16, 0);
    }
    ops->matmul_split = 0;
    check_type(ops, v, OSCAR_GGML_TYPE_Q6_K, 100, 512, 20, 5); /* y of a part of a split matrix */
    check_integers(ops, v, 67, 256, 45);
    check_group(ops, v);
}

int main(void)
{
    test_rng_seed(43);
    oscar_context *ctx = test_gpu_context();
    ovk_ops ops;
    ovk_ops_init(&ops, ctx);
    ovk_buffer scratch;
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, OVK_MMC_SESSION_SCRATCH_BYTES, &scratch));
    ovk_mmc_use_scratch(&ops, &scratch);
    if (!ovk_op_mul_mat_coopmat_supported(&ops)) {
        if (ctx->info.float16_arithmetic) { /* the emulation: the kernel's indexing without its matrix units */
            static const variant emu[] = { { V_EMULATED, 16, 16, 16 }, { V_EMULATED, 16, 8, 16 } };
            for (size_t i = 0; i < sizeof emu / sizeof emu[0]; i++) check_all(&ops, &emu[i], i == 0);
        } else {
            printf("mul_mat_stream_emu: skipped (no fp16 arithmetic on '%s')\n", ctx->info.name);
        }
        char why[320];
        snprintf(why, sizeof why, "no fp16 cooperative matrices for mul_mat_stream on '%.256s'", ctx->info.name);
        ovk_buffer_destroy(ctx, &scratch);
        test_gpu_release(ctx);
        if (test_checks_failed) return test_finish();
        test_skip(why);
    }
    static const variant stream = { V_STREAM, 0, 0, 0 }, routed = { V_ROUTED, 0, 0, 0 };
    check_all(&ops, &stream, 1);
    check_type(&ops, &routed, OSCAR_GGML_TYPE_Q4_0, 300, 1024, 32, 0);
    ovk_buffer_destroy(ctx, &scratch);
    return test_gpu_finish(ctx);
}
