/* The short-batch matmul (shaders/mul_mat_short.coopmat.comp, ovk_mms_record) and its scalar
 * emulation (mul_mat_short_emu.f16.comp: the same rows, blocks, stages, decoding, offsets and
 * stores) against their two references (docs/accuracy.md): the faithful one
 * (ovk_ref_mul_mat_f16: dequantized W and x rounded to fp16, sums in double), NSE <= 1e-5, and
 * the exact one (ovk_ref_mul_mat: the same stored weights, x as given), NSE <= 1e-4. Q4_0 at 1 to
 * 64 tokens (whole, partial and single token matrices), rows that leave partial row matrices
 * and workgroups (37, 130, 300), columns of one block, of stages and of a stage and a block
 * (32, 96, 288, 1024, 4096); unsplit, split into slices (the default per shape, and 3) and with
 * y's rows rows + 5 floats apart; a NaN-filled tail and gap stay. Weights with scale 1 and x of
 * small integers are exact: bit for bit. Another type is refused, and ovk_op_mul_mat_coopmat
 * routes a short Q4_0 batch here.
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
 * (ovk_op_mul_mat_coopmat), or the emulation at tm x tn x 16. */
typedef struct variant {
    enum { V_SHORT, V_ROUTED, V_EMULATED } kind;
    uint32_t tm, tn;
} variant;

static const char *variant_name(const variant *v, char *buf, size_t size)
{
    if (v->kind == V_EMULATED) snprintf(buf, size, "mul_mat_short_emu %ux%ux16", v->tm, v->tn);
    else snprintf(buf, size, "%s", v->kind == V_ROUTED ? "mul_mat.coopmat(short batch)" : "mul_mat_short.coopmat");
    return buf;
}

static oscar_status record(const ovk_ops *ops, ovk_cmd *cmd, const variant *v, uint32_t type, ovk_binding w, ovk_binding x,
                           ovk_binding y, uint32_t stride, uint32_t rows, uint32_t cols, uint32_t n)
{
    if (v->kind == V_EMULATED) return ovk_mms_record_emulated(ops, cmd, v->tm, v->tn, type, w, x, y, stride, rows, cols, n);
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

/* Q4_0 weights with scale 1 (codes - 8) and x of small integers: every sum exact in fp32, the
 * result bit for bit. */
static void check_integers(ovk_ops *ops, const variant *v, uint32_t rows, uint32_t cols, uint32_t n)
{
    size_t ny = (size_t)n * rows, wbytes = (size_t)rows * (cols / 32) * 18;
    uint8_t *w = malloc(wbytes);
    float *x = malloc((size_t)n * cols * 4), *got = malloc(ny * 4), *ref = malloc(ny * 4);
    for (size_t b = 0; b < wbytes / 18; b++) {
        w[18 * b] = 0x00, w[18 * b + 1] = 0x3C; /* d = 1.0 in fp16, little-endian */
        for (int i = 2; i < 18; i++) w[18 * b + i] = (uint8_t)test_rng_u32();
    }
    for (size_t i = 0; i < (size_t)n * cols; i++) x[i] = (float)((int)(test_rng_u32() % 7) - 3);
    CHECK_OK(ovk_ref_mul_mat(OSCAR_GGML_TYPE_Q4_0, w, x, ref, rows, cols, n));
    size_t touched = run(ops, v, OSCAR_GGML_TYPE_Q4_0, w, wbytes, x, got, rows, cols, n, 0), diff = 0;
    for (size_t i = 0; i < ny; i++) diff += ovk_f32_bits(got[i]) != ovk_f32_bits(ref[i]);
    char name[48];
    variant_name(v, name, sizeof name);
    CHECK_MSG(diff == 0 && touched == 0, "%s integers %u x %u, %u tokens: %zu of %zu differ, %zu written past y", name, rows,
              cols, n, diff, ny, touched);
    printf("%s Q4_0 integers %u x %u, %u tokens: %zu of %zu differ from the exact sums\n", name, rows, cols, n, diff, ny);
    free(w), free(x), free(got), free(ref);
}

/* By variant v: Q4_0 at odd shapes and token counts (all: else the first five), splits, strided y
 * and exact integers. */
static void check_all(ovk_ops *ops, const variant *v, int all)
{
    static const struct { uint32_t rows, cols, n; } shapes[] = {
        { 37, 32, 5 }, { 130, 288, 33 }, { 300, 1024, 1 }, { 300, 1024, 16 }, { 300, 1024, 64 },
        { 37, 96, 2 }, { 130, 4096, 17 }, { 300, 1024, 40 },
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (all || i < 5) check_type(ops, v, OSCAR_GGML_TYPE_Q4_0, shapes[i].rows, shapes[i].cols, shapes[i].n, 0);
    if (!all) return;
    static const uint32_t splits[] = { 1, 3 };
    for (size_t i = 0; i < sizeof splits / sizeof splits[0]; i++) {
        ops->matmul_split = splits[i];
        check_type(ops, v, OSCAR_GGML_TYPE_Q4_0, 67, 2048, 33, 0);
    }
    ops->matmul_split = 0;
    check_type(ops, v, OSCAR_GGML_TYPE_Q4_0, 100, 512, 20, 5); /* y of a part of a split matrix */
    check_integers(ops, v, 67, 1024, 45);
}

/* Another weight type is refused, with a line that says why. */
static void check_refused(ovk_ops *ops)
{
    oscar_context *ctx = ops->ctx;
    ovk_buffer b;
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, 1u << 16, &b));
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    oscar_status st = ovk_mms_record(ops, &ctx->cmd, OSCAR_GGML_TYPE_Q4_K, bind(&b), bind(&b), bind(&b), 16, 16, 256, 4);
    CHECK_MSG(st == OSCAR_ERROR_MISSING_FEATURE, "mul_mat_short took Q4_K (status %d)", (int)st);
    printf("refused: %s\n", oscar_last_error());
    CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
    ovk_buffer_destroy(ctx, &b);
}

int main(void)
{
    test_rng_seed(43);
    oscar_context *ctx = test_gpu_context();
    ovk_ops ops;
    ovk_ops_init(&ops, ctx);
    ovk_buffer scratch; /* a session's scratch for split products */
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, OVK_MMC_SCRATCH_BYTES, &scratch));
    ops.matmul_scratch = (ovk_binding){ &scratch, 0, 0 };
    check_refused(&ops);
    if (!ovk_op_mul_mat_coopmat_supported(&ops)) {
        if (ctx->info.float16_arithmetic) { /* the emulation: the kernel's indexing without its matrix units */
            static const variant emu[] = { { V_EMULATED, 16, 16 }, { V_EMULATED, 16, 8 } };
            for (size_t i = 0; i < sizeof emu / sizeof emu[0]; i++) check_all(&ops, &emu[i], i == 0);
        } else {
            printf("mul_mat_short_emu: skipped (no fp16 arithmetic on '%s')\n", ctx->info.name);
        }
        char why[320];
        snprintf(why, sizeof why, "no fp16 cooperative matrices for mul_mat_short on '%.256s'", ctx->info.name);
        ovk_buffer_destroy(ctx, &scratch);
        test_gpu_release(ctx);
        if (test_checks_failed) return test_finish();
        test_skip(why);
    }
    static const variant kernel = { V_SHORT, 0, 0 }, routed = { V_ROUTED, 0, 0 };
    check_all(&ops, &kernel, 1);
    check_type(&ops, &routed, OSCAR_GGML_TYPE_Q4_0, 300, 1024, 32, 0);
    ovk_buffer_destroy(ctx, &scratch);
    return test_gpu_finish(ctx);
}
