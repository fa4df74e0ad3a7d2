/* The cooperative-matrix matmul (shaders/mul_mat.coopmat.comp, ovk_op_mul_mat_coopmat) and its
 * scalar emulation (mul_mat_emu.f16.comp: the same tiles, offsets and stores) against their two
 * references (docs/accuracy.md), for every weight type the GPU reads: the faithful one
 * (ovk_ref_mul_mat_f16: dequantized W and x rounded to fp16, sums in double), NSE <= 1e-5, and
 * the exact one (ovk_ref_mul_mat: the same stored weights, x as given), NSE <= 1e-4. Shapes with
 * M, N and K off the tiles: rows and tokens that leave partial tiles (37, 67, 130, 300 rows; 5, 24,
 * 45, 129, 200 tokens), K a few blocks with a partial step for the float types (72, 264 columns),
 * several K-quant blocks (256, 768); the default launch plan and other warp-tile plans
 * (ops->matmul_coopmat); y is checked to be written at exactly [n][rows], also with its rows
 * rows + 5 floats apart (a part of a matrix split by rows): a NaN-filled tail and gap stay.
 * Small integers (|w|, |x| <= 3, F16, 256 columns) are exact in fp32 whatever the order:
 * bit-exact. Inputs beyond the fp16 range are clamped to +-65504 (finite results, faithful bound). Short
 * batches split their columns into slices (check_split, check_split_plans), and their Q4_0
 * weights are decoded in packed fp16 (the cases of 64 tokens or fewer; in a 32-token tile, 24
 * tokens, from blocks staged in shared memory as whole words), long ones' in fp32. ovk_op_mul_mat
 * chooses this kernel for a prefill batch where the device has it, and W bound off a 16-byte
 * boundary is refused (check_misaligned).
 *
 * Where the context has no cooperative matrices (lavapipe, a build without glslang 13) the
 * emulation runs instead, given fp16 arithmetic, at the shape 16 x 16 x 16 (and 16 x 8 x 16,
 * 16 x 16 x 8 for F16, Q4_0 and Q6_K at 130 x K x 129 with the default plan), so that the
 * kernel's indexing is checked there (each pipeline takes lavapipe seconds to compile); then the
 * kernel's refusal is checked and the test is skipped (exit 77, one line saying why). On a
 * device with them, the kernel runs every case and its refusal with OSCAR_DISABLE_COOPMAT=1 is
 * checked. */
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

/* Which product runs: the kernel through ovk_op_mul_mat_coopmat, through ovk_op_mul_mat (auto),
 * or its emulation at the shape tm x tn x tk. */
typedef struct variant {
    enum { V_COOPMAT, V_AUTO, V_EMULATED } kind;
    uint32_t tm, tn, tk;
} variant;

static const char *variant_name(const variant *v, char *buf, size_t size)
{
    if (v->kind == V_EMULATED) snprintf(buf, size, "mul_mat_emu %ux%ux%u", v->tm, v->tn, v->tk);
    else snprintf(buf, size, "%s", v->kind == V_AUTO ? "mul_mat(auto)" : "mul_mat.coopmat");
    return buf;
}

/* One product of W [rows][cols] (w, wbytes bytes) by x [n][cols] by variant v into y [n][rows +
 * pad] (the strided product where pad > 0), its columns 0..rows-1 copied to got [n][rows];
 * returns the floats written outside them (the pad columns and the tail). */
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
    ovk_binding yb = { &by, 0, ((size_t)(n - 1) * stride + rows) * 4 }, wb = bind(&bw), xb = bind(&bx);
    if (v->kind == V_EMULATED) CHECK_OK(ovk_mmc_record_emulated(ops, &ctx->cmd, v->tm, v->tn, v->tk, type, wb, xb, yb, stride, rows, cols, n));
    else if (pad) CHECK_OK(ovk_op_mul_mat_strided(ops, &ctx->cmd, type, wb, xb, yb, stride, rows, cols, n)); /* auto */
    else if (v->kind == V_AUTO) CHECK_OK(ovk_op_mul_mat(ops, &ctx->cmd, type, wb, xb, yb, rows, cols, n));
    else CHECK_OK(ovk_op_mul_mat_coopmat(ops, &ctx->cmd, type, wb, xb, yb, rows, cols, n));
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
    char what[160], name[48];
    const uint32_t *t = ops->matmul_coopmat;
    char split[32] = "";
    if (ops->matmul_scratch.buffer) snprintf(split, sizeof split, ", split %u", ops->matmul_split); /* 0: per shape */
    snprintf(what, sizeof what, "%s %s %u x %u, %u tokens, plan %ux%ux%ux%u%s%s", variant_name(v, name, sizeof name),
             ovk_ggml_type_name(type), rows, cols, n, t[0], t[1], t[2], t[3], split, pad ? ", y rows apart by rows + 5" : "");
    test_check_accuracy(what, got, faithful, exact, ny);
    CHECK_MSG(touched == 0, "%s: %zu floats written outside y's rows", what, touched);
done:
    free(w), free(x), free(got), free(faithful), free(exact);
}

/* Values beyond the fp16 range (F32 weights of +-1e6, x of +-1e5 among N(0, 1) data): clamped to
 * +-65504, as the faithful reference does, so the result is finite and tight against it (not
 * against the exact product, which the clamping departs from on purpose). */
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
    float *wf = malloc((size_t)rows * cols * 4), *x = malloc((size_t)n * cols * 4), *got = malloc(ny * 4), *ref = malloc(ny * 4);
    uint16_t *w = malloc(wbytes);
    for (size_t i = 0; i < (size_t)rows * cols; i++) wf[i] = (float)((int)(test_rng_u32() % 7) - 3);
    for (size_t i = 0; i < (size_t)n * cols; i++) x[i] = (float)((int)(test_rng_u32() % 7) - 3);
    for (size_t i = 0; i < (size_t)rows * cols; i++) w[i] = ovk_f32_to_f16(wf[i]);
    CHECK_OK(ovk_ref_mul_mat(OSCAR_GGML_TYPE_F16, w, x, ref, rows, cols, n));
    size_t touched = run(ops, v, OSCAR_GGML_TYPE_F16, (const uint8_t *)w, wbytes, x, got, rows, cols, n, 0);
    size_t diff = 0;
    for (size_t i = 0; i < ny; i++) diff += ovk_f32_bits(got[i]) != ovk_f32_bits(ref[i]);
    char name[48];
    variant_name(v, name, sizeof name);
    CHECK_MSG(diff == 0 && touched == 0, "%s integers %u x %u, %u tokens: %zu of %zu differ, %zu written past y", name, rows,
              cols, n, diff, ny, touched);
    printf("%s F16 integers %u x %u, %u tokens: %zu of %zu differ from the exact sums\n", name, rows, cols, n, diff, ny);
    free(wf), free(x), free(got), free(ref), free(w);
}

/* Without cooperative matrices the variant is refused and the auto product still runs. */
static void check_refused(oscar_context *ctx)
{
    ovk_ops ops;
    ovk_ops_init(&ops, ctx);
    CHECK(!ovk_op_mul_mat_coopmat_supported(&ops));
    ovk_buffer buf;
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, 1 << 16, &buf));
    ovk_binding b = bind(&buf);
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    CHECK_STATUS(ovk_op_mul_mat_coopmat(&ops, &ctx->cmd, OSCAR_GGML_TYPE_Q4_0, b, b, b, 64, 64, 64),
                 OSCAR_ERROR_MISSING_FEATURE);
    CHECK(strstr(oscar_last_error(), ctx->info.name) != NULL);
    CHECK(!ctx->env.disable_coopmat || strstr(oscar_last_error(), "OSCAR_DISABLE_COOPMAT") != NULL);
    ovk_cmd_abort(ctx, &ctx->cmd);
    ovk_buffer_destroy(ctx, &buf);
    variant autopick = { V_AUTO, 0, 0, 0 };
    check_type(&ops, &autopick, OSCAR_GGML_TYPE_Q4_0, 37, 96, 45, 0); /* the tiled kernel: exact to fp32 sums */
}

/* The columns split into slices summed by mul_mat_slices (a short batch): forced slice counts
 * that leave a short last slice (5 steps in 3 slices; F16's 72 columns, a partial step, in 2;
 * K-quant blocks cut across slices), the automatic split of a few tokens, y rows apart (through
 * ovk_op_mul_mat_strided, hence OVK_MMC_BATCH_MIN tokens: fewer take the batched lanes product
 * where cooperative matrices run), and a scratch too small for any split (the unsplit product
 * runs). Each split must have written the NaN-filled scratch. */
/* Whether anything was written into a NaN-filled scratch (a split product ran). */
static int scratch_used(oscar_context *ctx, const ovk_buffer *scratch)
{
    size_t n = scratch->size / 4, used = 0;
    uint32_t *all = malloc(scratch->size);
    CHECK_OK(ovk_buffer_download(ctx, scratch, 0, all, scratch->size));
    for (size_t i = 0; i < n; i++) used += all[i] != 0x7FC00000u;
    free(all);
    return used > 0;
}

static void check_split(ovk_ops *ops, const variant *v)
{
    oscar_context *ctx = ops->ctx;
    ovk_buffer scratch;
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, 1u << 20, &scratch));
    ops->matmul_scratch = (ovk_binding){ &scratch, 0, 0 };
    static const struct { uint32_t split, type, rows, cols, n, pad; } cases[] = {
        { 3, OSCAR_GGML_TYPE_Q4_0, 67, 160, 33, 0 }, { 2, OSCAR_GGML_TYPE_F16, 37, 72, 5, 0 },
        { 3, OSCAR_GGML_TYPE_Q4_K, 130, 768, 5, 0 }, { 5, OSCAR_GGML_TYPE_Q6_K, 100, 512, OVK_MMC_BATCH_MIN, 5 },
        { 0, OSCAR_GGML_TYPE_Q4_0, 300, 1024, 8, 0 }, { 0, OSCAR_GGML_TYPE_Q8_0, 37, 4096, OVK_MMC_BATCH_MIN, 3 },
        { 2, OSCAR_GGML_TYPE_Q4_0, 67, 288, 24, 0 }, /* staged words from a slice's first step on */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ops->matmul_split = cases[i].split;
        CHECK_OK(ovk_buffer_fill(ctx, &scratch, 0, scratch.size, 0x7FC00000u));
        check_type(ops, v, cases[i].type, cases[i].rows, cases[i].cols, cases[i].n, cases[i].pad);
        CHECK_MSG(scratch_used(ctx, &scratch), "%s %u x %u, %u tokens, split %u: the scratch was not written",
                  ovk_ggml_type_name(cases[i].type), cases[i].rows, cases[i].cols, cases[i].n, cases[i].split);
    }
    ops->matmul_split = 4;
    ops->matmul_scratch.range = 67 * 33 * 4 - 4; /* less than one slice */
    CHECK_OK(ovk_buffer_fill(ctx, &scratch, 0, scratch.size, 0x7FC00000u));
    check_type(ops, v, OSCAR_GGML_TYPE_Q4_0, 67, 160, 33, 0);
    CHECK_MSG(!scratch_used(ctx, &scratch), "a scratch smaller than a slice was written");
    ops->matmul_split = 0;
    ops->matmul_scratch = (ovk_binding){ 0 };
    ovk_buffer_destroy(ctx, &scratch);
}

/* Three split products of one input recorded back to back, as the forward pass records q, k and
 * v: alone, each records a barrier before it, since they share the scratch and the previous
 * product's sum may still be reading it; as a group (ovk_op_mul_mat_group_begin), each takes its
 * own part of the scratch and the sums come at the end, except where the scratch is full: here it
 * holds two products' slices, so the third waits for the first two sums. ctest runs every test
 * with the validation layer's synchronization checks (CMakeLists.txt; not under the sanitizers),
 * where a missing barrier is a message and fails the test. Every result must be right. */
static void check_split_products(ovk_ops *ops, const variant *v, int grouped)
{
    oscar_context *ctx = ops->ctx;
    enum { COLS = 512, N = 16, SPLIT = 4, PRODUCTS = 3 };
    static const uint32_t rows[PRODUCTS] = { 67, 130, 67 };
    const uint32_t type = OSCAR_GGML_TYPE_Q4_0;
    size_t wbytes[PRODUCTS];
    uint8_t *w[PRODUCTS];
    float *x = malloc((size_t)N * COLS * 4), *got = malloc((size_t)N * 130 * 4), *ref = malloc((size_t)N * 130 * 4);
    for (size_t i = 0; i < (size_t)N * COLS; i++) x[i] = test_rng_normal();
    ovk_buffer bw[PRODUCTS], bx, by[PRODUCTS], scratch;
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, 1u << 20, &scratch));
    CHECK_OK(test_gpu_buffer_from(ctx, x, (size_t)N * COLS * 4, &bx));
    uint64_t align = ctx->limits.minStorageBufferOffsetAlignment;
    uint64_t first = ((uint64_t)N * rows[0] * SPLIT * 4 + align - 1) / align * align;
    ops->matmul_scratch = (ovk_binding){ &scratch, 0, grouped ? first + (uint64_t)N * rows[1] * SPLIT * 4 : 0 };
    ops->matmul_split = SPLIT;
    for (int i = 0; i < PRODUCTS; i++) {
        w[i] = test_make_weights(type, rows[i], COLS, &wbytes[i]);
        CHECK_OK(test_gpu_buffer_from(ctx, w[i], wbytes[i], &bw[i]));
        CHECK_OK(test_gpu_buffer_from(ctx, NULL, (size_t)N * rows[i] * 4, &by[i]));
    }
    ovk_mm_group group;
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    if (grouped) ovk_op_mul_mat_group_begin(ops, &group);
    for (int i = 0; i < PRODUCTS; i++) {
        ovk_binding wb = bind(&bw[i]), xb = bind(&bx), yb = bind(&by[i]);
        if (v->kind == V_EMULATED)
            CHECK_OK(ovk_mmc_record_emulated(ops, &ctx->cmd, v->tm, v->tn, v->tk, type, wb, xb, yb, rows[i], rows[i], COLS, N));
        else CHECK_OK(ovk_op_mul_mat_coopmat(ops, &ctx->cmd, type, wb, xb, yb, rows[i], COLS, N));
        if (grouped) CHECK_MSG(group.count == (i < 2 ? (uint32_t)i + 1 : 1u), "group: %u products pending after product %d",
                               group.count, i);
    }
    if (grouped) CHECK_OK(ovk_op_mul_mat_group_end(ops, &ctx->cmd));
    CHECK(ops->mm_group == NULL);
    CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
    for (int i = 0; i < PRODUCTS; i++) {
        CHECK_OK(ovk_buffer_download(ctx, &by[i], 0, got, (size_t)N * rows[i] * 4));
        CHECK_OK(ovk_ref_mul_mat_f16(type, w[i], x, ref, rows[i], COLS, N));
        double e = test_nse(got, ref, (size_t)N * rows[i]);
        CHECK_MSG(e <= 1e-5, "split products back to back%s: product %d NSE %.3g against the faithful reference",
                  grouped ? " (a group)" : "", i, e);
    }
    printf("three split products back to back%s: %llu validation messages so far (synchronization checks %s)\n",
           grouped ? ", as a group" : "", (unsigned long long)oscar_context_validation_messages(ctx),
           getenv("VK_LAYER_ENABLES") ? "on" : "off");
    ops->matmul_split = 0;
    ops->matmul_scratch = (ovk_binding){ 0 };
    for (int i = 0; i < PRODUCTS; i++) ovk_buffer_destroy(ctx, &bw[i]), ovk_buffer_destroy(ctx, &by[i]), free(w[i]);
    ovk_buffer_destroy(ctx, &bx), ovk_buffer_destroy(ctx, &scratch);
    free(x), free(got), free(ref);
}

/* The split plan's arithmetic (no device work) for a 128 x 32 tile: slices cover the columns in
 * whole steps, the last one not empty, within the scratch, at the counts worked out by hand
 * (aim: tiles x slices >= OVK_MMC_SPLIT_GROUPS, each slice at least OVK_MMC_SPLIT_STEPS steps). */
static void check_split_plans(oscar_context *ctx)
{
    ovk_ops ops;
    ovk_ops_init(&ops, ctx);
    ovk_buffer fake = { .size = OVK_MMC_SCRATCH_BYTES };
    static const struct { uint32_t split, rows, cols, n, scratch_mib, slices; } cases[] = {
        { 0, 14336, 4096, 32, 16, 5 },  { 0, 4096, 4096, 32, 16, 16 }, { 0, 4096, 14336, 32, 16, 16 },
        { 0, 1024, 4096, 8, 16, 32 },   { 0, 14336, 4096, 65, 16, 1 }, { 0, 128256, 4096, 32, 16, 1 },
        { 0, 4096, 4096, 32, 1, 2 },    { 7, 300, 100, 5, 16, 4 },     { 3, 67, 160, 33, 16, 3 },
        { 0, 4096, 128, 32, 16, 1 },    { 1, 1024, 4096, 8, 16, 1 },   { 0, 1024, 4096, 8, 0, 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ovk_mmc_plan p = { .bm = 128, .bn = 32 };
        ops.matmul_split = cases[i].split;
        fake.size = (uint64_t)cases[i].scratch_mib << 20;
        ops.matmul_scratch = (ovk_binding){ &fake, 0, 0 };
        uint32_t rows = cases[i].rows, cols = cases[i].cols, n = cases[i].n;
        ovk_mmc_plan_split(&ops, &p, rows, cols, n);
        int ok = p.slices == cases[i].slices && p.k_slice % MMC_BK == 0 && (uint64_t)p.slices * p.k_slice >= cols &&
                 (uint64_t)(p.slices - 1) * p.k_slice < cols && (p.slices == 1 || (uint64_t)p.slices * n * rows * 4 <= fake.size);
        CHECK_MSG(ok, "split plan %u x %u, %u tokens, split %u, scratch %u MiB: %u slices of %u columns (want %u slices)", rows,
                  cols, n, cases[i].split, cases[i].scratch_mib, p.slices, p.k_slice, cases[i].slices);
    }
}

/* W bound off a 16-byte boundary: the kernel (or its emulation, by variant v) refuses it with one
 * line naming the offset, before anything is recorded (ovk_op_mul_mat gives such a W another
 * kernel; a device's storage-offset alignment may not allow the binding at all). */
static void check_misaligned(ovk_ops *ops, const variant *v)
{
    oscar_context *ctx = ops->ctx;
    ovk_buffer buf;
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, 1 << 16, &buf));
    ovk_binding b = bind(&buf), w = { &buf, 4, (1 << 16) - 4 };
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    if (v->kind == V_EMULATED)
        CHECK_STATUS(ovk_mmc_record_emulated(ops, &ctx->cmd, v->tm, v->tn, v->tk, OSCAR_GGML_TYPE_Q4_K, w, b, b, 64, 64, 256, 32),
                     OSCAR_ERROR_INVALID_ARGUMENT);
    else
        CHECK_STATUS(ovk_op_mul_mat_coopmat(ops, &ctx->cmd, OSCAR_GGML_TYPE_Q4_K, w, b, b, 64, 256, 32),
                     OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "byte 4") != NULL);
    ovk_cmd_abort(ctx, &ctx->cmd);
    ovk_buffer_destroy(ctx, &buf);
}

/* The plans of short batches on this device: at most two warp tiles along tokens up to
 * OVK_MMC_SPLIT_TOKENS tokens, none of them padding only, the tokens inside the tile. */
static void check_short_plans(ovk_ops *ops)
{
    static const uint32_t counts[] = { 5, 16, 24, 32, 40, 48, OVK_MMC_SPLIT_TOKENS };
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        ovk_mmc_plan p;
        uint32_t n = counts[i];
        CHECK_OK(ovk_mmc_plan_for(ops, n, &p));
        CHECK_MSG(p.sg_n <= 2 && p.bn >= n && (p.sg_n - 1) * p.cn * p.tn < n,
                  "plan for %u tokens: %u warp tiles of %u token matrices of %u", n, p.sg_n, p.cn, p.tn);
    }
}

/* By variant v: every weight type at odd shapes (all: else one float, one 32-block and one
 * K-quant type at the largest), then (all) the warp-tile plans and exact integers. */
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
        if (all) check_type(ops, v, type, 37, k_small, 45, 0);
        check_type(ops, v, type, 130, k_big, 129, 0);
    }
    if (!all) return;
    check_type(ops, v, OSCAR_GGML_TYPE_Q4_0, 300, 1024, 200, 0);
    check_type(ops, v, OSCAR_GGML_TYPE_Q4_0, 67, 160, 24, 0); /* a 32-token tile: Q4_0 blocks staged as words */
    check_type(ops, v, OSCAR_GGML_TYPE_Q6_K, 100, 512, 70, 5); /* y of a part of a split matrix */
    static const uint32_t tiles[][4] = { { 1, 1, 1, 1 }, { 4, 1, 2, 4 }, { 1, 4, 2, 2 }, { 2, 2, 4, 4 } };
    for (size_t p = 0; p < sizeof tiles / sizeof tiles[0]; p++) {
        memcpy(ops->matmul_coopmat, tiles[p], sizeof tiles[p]);
        check_type(ops, v, OSCAR_GGML_TYPE_Q4_K, 130, 768, 129, 0);
        check_type(ops, v, OSCAR_GGML_TYPE_Q4_0, 67, 160, 33, 0);
    }
    memset(ops->matmul_coopmat, 0, sizeof ops->matmul_coopmat);
    check_split(ops, v);
    check_outliers(ops, v, 67, 264, 45);
    check_integers(ops, v, 67, 256, 45);
    check_integers(ops, v, 160, 256, 200);
}

int main(void)
{
    test_rng_seed(41);
    oscar_context *ctx = test_gpu_context();
    ovk_ops ops;
    ovk_ops_init(&ops, ctx);
    check_split_plans(ctx);
    if (!ovk_op_mul_mat_coopmat_supported(&ops)) {
        if (ctx->info.float16_arithmetic) { /* the emulation: the kernel's indexing without its matrix units */
            static const variant emu[] = { { V_EMULATED, 16, 16, 16 }, { V_EMULATED, 16, 8, 16 }, { V_EMULATED, 16, 16, 8 } };
            for (size_t i = 0; i < sizeof emu / sizeof emu[0]; i++) check_all(&ops, &emu[i], i == 0);
            check_split_products(&ops, &emu[0], 0);
            check_split_products(&ops, &emu[0], 1);
            check_misaligned(&ops, &emu[0]);
        } else {
            printf("mul_mat_emu: skipped (no fp16 arithmetic on '%s')\n", ctx->info.name);
        }
        check_refused(ctx);
        char why[512];
        snprintf(why, sizeof why, "no fp16 cooperative matrices for mul_mat on '%s' (device lists %u shapes, %s; this build %s "
                 "the kernel)", ctx->info.name, ctx->info.coopmat_shape_count,
                 ctx->info.cooperative_matrix ? "enabled" : "VK_KHR_cooperative_matrix not enabled",
                 (oscar_built_kernels() & OSCAR_BUILT_COOPMAT) ? "has" : "lacks");
        test_gpu_release(ctx);
        if (test_checks_failed) return test_finish();
        test_skip(why);
    }
    static const variant coopmat = { V_COOPMAT, 0, 0, 0 }, autopick = { V_AUTO, 0, 0, 0 };
    check_short_plans(&ops);
    check_misaligned(&ops, &coopmat);
    check_all(&ops, &coopmat, 1);
    check_split_products(&ops, &coopmat, 0);
    check_split_products(&ops, &coopmat, 1);
    check_type(&ops, &autopick, OSCAR_GGML_TYPE_Q4_0, 300, 1024, 200, 0); /* the auto product takes this kernel */

    setenv("OSCAR_DISABLE_COOPMAT", "1", 1);
    oscar_context *off = test_gpu_context();
    unsetenv("OSCAR_DISABLE_COOPMAT");
    check_refused(off);
    test_gpu_release(off);
    return test_gpu_finish(ctx);
}
