/* The small forward-pass kernels against their C references (runtime/ops_ref.c), at
 * workgroups 64/128/256: rms_norm (hidden rows and per-head rows; also fused with the
 * residual add before it, whose sum must equal the fp32 add bit for bit), rope (normal and neox,
 * partial rotation, linear scaling, per-frequency factors), swiglu, add (residual, bias
 * broadcast, in place), scale and argmax; rms_norm, its residual form and swiglu with x
 * prepared for the int8 mat-vec in the same dispatch, bit for bit the separate kernels' y and
 * int8 blocks (ovk_op_x_q8, tested against its C reference in test_q8_dot); a command stream submitted in parts (ovk_cmd_flush,
 * more flushes than parts, and an abort after flushes); the OSCAR_PROFILE=1 profiler; and
 * OSCAR_SHADER_DIR, whose SPIR-V file replaces the embedded shader (announced on stderr).
 *
 * Bounds, each against a reference computed in double:
 *  - add, scale: bit-exact (one fp32 add or multiply, which Vulkan rounds correctly).
 *  - argmax: exact, including ties (lowest index), -inf, NaNs and an all-NaN row.
 *  - rms_norm: the fp32 sum of squares is off by ~u*sqrt(dim) relative (u = 2^-24), the
 *    result by half that plus a few ulp from sqrt, divide and two multiplies: NSE <= 1e-10.
 *  - swiglu: exp() may be off by (3 + 2|x|) ulp (Vulkan's bound): NSE <= 1e-10.
 *  - rope: theta = pos * inv_freq is rounded to fp32 (relative u twice), so a pair at angle
 *    theta turns by up to ~2u*theta too much or too little; with pos < 4096 the first pairs
 *    (theta ~ pos) carry errors up to ~5e-4 rad, the later pairs far less; NSE <= 1e-7 (the
 *    same rounding ggml's fp32 rope has). Position 0 and the pass-through dims are exact. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "half.h"
#include "ops.h"
#include "ops_ref.h"
#include "test_gpu.h"

static const uint32_t workgroups[] = { 64, 128, 256 };

/* Device buffers with host copies; every op test is: fill host, upload, record, compare. */
static ovk_buffer buf_from(oscar_context *ctx, const void *data, size_t bytes)
{
    ovk_buffer b = { 0 };
    CHECK_OK(test_gpu_buffer_from(ctx, data, bytes, &b));
    return b;
}

static ovk_binding bind(ovk_buffer *b) { return (ovk_binding){ b, 0, 0 }; }

static void begin(oscar_context *ctx) { CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd)); }
static void finish(oscar_context *ctx) { CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd)); }

static size_t count_bit_diffs(const float *a, const float *b, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += ovk_f32_bits(a[i]) != ovk_f32_bits(b[i]);
    return bad;
}

/* ---- rms_norm -------------------------------------------------------------------------------- */

static void test_rms_norm(ovk_ops *ops, uint32_t dim, uint32_t n_rows, float eps)
{
    oscar_context *ctx = ops->ctx;
    size_t n = (size_t)dim * n_rows;
    float *x = malloc(n * 4), *w = malloc(dim * 4), *ref = malloc(n * 4), *got = malloc(n * 4);
    for (size_t i = 0; i < n; i++) x[i] = test_rng_normal();
    for (uint32_t i = 0; i < dim; i++) w[i] = 1.0f + 0.1f * test_rng_normal();
    if (n_rows > 1) memset(x + dim, 0, dim * 4);                         /* all zero: output 0 */
    if (n_rows > 2) for (uint32_t i = 0; i < dim; i++) x[2 * dim + i] = 3.0f; /* all equal */
    if (n_rows > 3) x[3 * dim + dim / 2] = 1000.0f;                      /* an outlier */
    ovk_ref_rms_norm(x, w, ref, dim, n_rows, eps);
    /* the fused residual: sum = x + res in fp32 (as the add kernel), then its norm */
    float *res = malloc(n * 4), *sum = malloc(n * 4), *ref_sum = malloc(n * 4), *got_x = malloc(n * 4);
    for (size_t i = 0; i < n; i++) res[i] = test_rng_normal(), sum[i] = x[i] + res[i];
    ovk_ref_rms_norm(sum, w, ref_sum, dim, n_rows, eps);
    ovk_buffer bx = buf_from(ctx, x, n * 4), bw = buf_from(ctx, w, dim * 4), by = buf_from(ctx, NULL, n * 4);
    ovk_buffer bx2 = buf_from(ctx, x, n * 4), bres = buf_from(ctx, res, n * 4);
    begin(ctx);
    CHECK_OK(ovk_op_rms_norm(ops, &ctx->cmd, bind(&bx), bind(&bw), bind(&by), dim, n_rows, eps));
    finish(ctx);
    CHECK_OK(ovk_buffer_download(ctx, &by, 0, got, n * 4));
    double nse = test_nse(got, ref, n);
    CHECK_MSG(nse <= 1e-10, "rms_norm dim %u rows %u wg %u: nse %.3g", dim, n_rows, ops->workgroup, nse);
    /* in place */
    begin(ctx);
    CHECK_OK(ovk_op_rms_norm(ops, &ctx->cmd, bind(&bx), bind(&bw), bind(&bx), dim, n_rows, eps));
    finish(ctx);
    CHECK_OK(ovk_buffer_download(ctx, &bx, 0, x, n * 4));
    CHECK_MSG(count_bit_diffs(x, got, n) == 0, "rms_norm in place differs");
    begin(ctx);
    CHECK_OK(ovk_op_add_rms_norm(ops, &ctx->cmd, bind(&bx2), bind(&bres), bind(&bw), bind(&by), dim, n_rows, eps));
    CHECK_STATUS(ovk_op_add_rms_norm(ops, &ctx->cmd, bind(&bx2), bind(&bres), bind(&bw), bind(&bx2), dim, n_rows, eps),
                 OSCAR_ERROR_INVALID_ARGUMENT); /* y over x */
    finish(ctx);
    CHECK_OK(ovk_buffer_download(ctx, &by, 0, got, n * 4));
    CHECK_OK(ovk_buffer_download(ctx, &bx2, 0, got_x, n * 4));
    CHECK_MSG(count_bit_diffs(got_x, sum, n) == 0, "add_rms_norm dim %u: x + res differs from the fp32 sum", dim);
    nse = test_nse(got, ref_sum, n);
    CHECK_MSG(nse <= 1e-10, "add_rms_norm dim %u rows %u wg %u: nse %.3g", dim, n_rows, ops->workgroup, nse);
    ovk_buffer_destroy(ctx, &bx2);
    ovk_buffer_destroy(ctx, &bres);
    free(res), free(sum), free(ref_sum), free(got_x);
    ovk_buffer_destroy(ctx, &bx);
    ovk_buffer_destroy(ctx, &bw);
    ovk_buffer_destroy(ctx, &by);
    free(x), free(w), free(ref), free(got);
}

/* ---- rope ------------------------------------------------------------------------------------ */

static void test_rope(ovk_ops *ops, ovk_rope_type mode, uint32_t head_dim, uint32_t n_rot, uint32_t n_heads,
                      uint32_t n_tok, double base, double scale, int with_factors)
{
    oscar_context *ctx = ops->ctx;
    size_t n = (size_t)n_tok * n_heads * head_dim;
    float *x = malloc(n * 4), *ref = malloc(n * 4), *got = malloc(n * 4), *freq = malloc(n_rot / 2 * 4);
    float *factors = malloc(n_rot / 2 * 4);
    int32_t *pos = malloc(n_tok * 4);
    for (size_t i = 0; i < n; i++) x[i] = test_rng_normal();
    for (uint32_t t = 0; t < n_tok; t++) pos[t] = t == 0 ? 0 : t == 1 ? 4095 : (int32_t)(test_rng_u32() % 4096);
    for (uint32_t i = 0; i < n_rot / 2; i++) factors[i] = 1.0f + (float)(i % 5);
    CHECK_OK(ovk_rope_inv_freq(freq, n_rot, base, scale, with_factors ? factors : NULL));
    ovk_ref_rope(x, pos, ref, head_dim, n_heads, n_tok, n_rot, mode == OSCAR_ROPE_NEOX, base, scale,
                   with_factors ? factors : NULL);
    ovk_buffer bx = buf_from(ctx, x, n * 4), bp = buf_from(ctx, pos, n_tok * 4), bf = buf_from(ctx, freq, n_rot / 2 * 4);
    ovk_buffer by = buf_from(ctx, NULL, n * 4);
    begin(ctx);
    CHECK_OK(ovk_op_rope(ops, &ctx->cmd, mode, bind(&bx), bind(&bp), bind(&bf), bind(&by), head_dim, n_heads, n_tok, n_rot));
    finish(ctx);
    CHECK_OK(ovk_buffer_download(ctx, &by, 0, got, n * 4));
    double nse = test_nse(got, ref, n);
    CHECK_MSG(nse <= 1e-7, "rope mode %d head_dim %u n_rot %u wg %u: nse %.3g", (int)mode, head_dim, n_rot, ops->workgroup, nse);
    if (getenv("OSCAR_TEST_VERBOSE")) printf("rope mode %d head_dim %u n_rot %u: nse %.3g\n", (int)mode, head_dim, n_rot, nse);
    /* token 0 (position 0) and every pass-through dim are copied exactly */
    size_t bad = count_bit_diffs(got, x, (size_t)n_heads * head_dim);
    for (size_t h = 0; h < (size_t)n_tok * n_heads; h++)
        bad += count_bit_diffs(got + h * head_dim + n_rot, x + h * head_dim + n_rot, head_dim - n_rot);
    CHECK_MSG(bad == 0, "rope: %zu values at position 0 or past n_rot differ", bad);
    /* in place */
    begin(ctx);
    CHECK_OK(ovk_op_rope(ops, &ctx->cmd, mode, bind(&bx), bind(&bp), bind(&bf), bind(&bx), head_dim, n_heads, n_tok, n_rot));
    finish(ctx);
    CHECK_OK(ovk_buffer_download(ctx, &bx, 0, x, n * 4));
    CHECK_MSG(count_bit_diffs(x, got, n) == 0, "rope in place differs");
    ovk_buffer_destroy(ctx, &bx);
    ovk_buffer_destroy(ctx, &bp);
    ovk_buffer_destroy(ctx, &bf);
    ovk_buffer_destroy(ctx, &by);
    free(x), free(ref), free(got), free(freq), free(factors), free(pos);
}

/* ---- the same with x prepared for the int8 mat-vec ------------------------------------------ */

/* Each fused kernel against its unfused kernel followed by ovk_op_x_q8, both on the device:
 * y, the int8 blocks and (with the residual) the updated x, bit for bit. */
static void test_x_q8_fused(ovk_ops *ops, uint32_t dim)
{
    oscar_context *ctx = ops->ctx;
    size_t qb = OSCAR_X_Q8_BYTES(dim);
    float *x = malloc(dim * 4), *res = malloc(dim * 4), *w = malloc(dim * 4);
    float *y[2] = { malloc(dim * 4), malloc(dim * 4) }, *xo[2] = { malloc(dim * 4), malloc(dim * 4) };
    uint8_t *q[2] = { malloc(qb), malloc(qb) };
    for (uint32_t i = 0; i < dim; i++) x[i] = test_rng_normal(), res[i] = test_rng_normal(), w[i] = 1.0f + 0.1f * test_rng_normal();
    for (uint32_t i = 0; i < 32; i++) x[i] = 0.0f, res[i] = 0.0f; /* an all-zero first block: scale 0 */
    ovk_buffer bw = buf_from(ctx, w, dim * 4), bres = buf_from(ctx, res, dim * 4);
    ovk_buffer bx[2] = { buf_from(ctx, x, dim * 4), buf_from(ctx, x, dim * 4) };
    ovk_buffer by[2] = { buf_from(ctx, NULL, dim * 4), buf_from(ctx, NULL, dim * 4) };
    ovk_buffer bq[2] = { buf_from(ctx, NULL, qb), buf_from(ctx, NULL, qb) };
    static const char *const names[4] = { "rms_norm", "add_rms_norm", "rms_norm in place", "swiglu" };
    for (int kind = 0; kind < 4; kind++) {
        for (int fused = 0; fused < 2; fused++) {
            CHECK_OK(ovk_buffer_upload(ctx, &bx[fused], 0, x, dim * 4));
            ovk_binding xb = bind(&bx[fused]), yb = kind == 2 ? xb : bind(&by[fused]), rb = bind(&bres), qbnd = bind(&bq[fused]);
            begin(ctx);
            if (kind == 3 && fused) CHECK_OK(ovk_op_swiglu_x_q8(ops, &ctx->cmd, xb, rb, yb, qbnd, dim));
            else if (kind == 3) CHECK_OK(ovk_op_swiglu(ops, &ctx->cmd, xb, rb, yb, dim));
            else if (fused) CHECK_OK(ovk_op_rms_norm_x_q8(ops, &ctx->cmd, xb, kind == 1 ? &rb : NULL, bind(&bw), yb, qbnd, dim, 1e-5f));
            else if (kind == 1) CHECK_OK(ovk_op_add_rms_norm(ops, &ctx->cmd, xb, rb, bind(&bw), yb, dim, 1, 1e-5f));
            else CHECK_OK(ovk_op_rms_norm(ops, &ctx->cmd, xb, bind(&bw), yb, dim, 1, 1e-5f));
            if (!fused) {
                ovk_cmd_barrier(ctx, &ctx->cmd);
                CHECK_OK(ovk_op_x_q8(ops, &ctx->cmd, yb, qbnd, dim));
            }
            finish(ctx);
            CHECK_OK(ovk_buffer_download(ctx, kind == 2 ? &bx[fused] : &by[fused], 0, y[fused], dim * 4));
            CHECK_OK(ovk_buffer_download(ctx, &bx[fused], 0, xo[fused], dim * 4));
            CHECK_OK(ovk_buffer_download(ctx, &bq[fused], 0, q[fused], qb));
        }
        CHECK_MSG(count_bit_diffs(y[0], y[1], dim) == 0, "%s_x_q8 dim %u wg %u: y differs from the unfused kernel's",
                  names[kind], dim, ops->workgroup);
        CHECK_MSG(count_bit_diffs(xo[0], xo[1], dim) == 0, "%s_x_q8 dim %u: x differs from the unfused kernel's", names[kind], dim);
        CHECK_MSG(memcmp(q[0], q[1], dim) == 0 && memcmp(q[0] + OSCAR_X_Q8_SCALES(dim), q[1] + OSCAR_X_Q8_SCALES(dim), dim / 8) == 0,
                  "%s_x_q8 dim %u wg %u: int8 blocks differ from ovk_op_x_q8's", names[kind], dim, ops->workgroup);
    }
    /* bad input: a row not in blocks of 32, a short xq */
    begin(ctx);
    CHECK_STATUS(ovk_op_rms_norm_x_q8(ops, &ctx->cmd, bind(&bx[0]), NULL, bind(&bw), bind(&by[0]), bind(&bq[0]), dim - 16, 1e-5f),
                 OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_op_swiglu_x_q8(ops, &ctx->cmd, bind(&bx[0]), bind(&bres), bind(&by[0]),
                                    (ovk_binding){ &bq[0], 0, qb - 4 }, dim), OSCAR_ERROR_INVALID_ARGUMENT);
    finish(ctx);
    for (int i = 0; i < 2; i++) {
        ovk_buffer_destroy(ctx, &bx[i]), ovk_buffer_destroy(ctx, &by[i]), ovk_buffer_destroy(ctx, &bq[i]);
        free(y[i]), free(xo[i]), free(q[i]);
    }
    ovk_buffer_destroy(ctx, &bw), ovk_buffer_destroy(ctx, &bres);
    free(x), free(res), free(w);
}

/* ---- swiglu, add, scale ---------------------------------------------------------------------- */

static void test_pointwise(ovk_ops *ops, uint32_t n, uint32_t row)
{
    oscar_context *ctx = ops->ctx;
    float *a = malloc(n * 4), *b = malloc(n * 4), *ref = malloc(n * 4), *got = malloc(n * 4);
    for (uint32_t i = 0; i < n; i++) {
        a[i] = test_rng_normal() * 4.0f;
        b[i] = test_rng_normal();
    }
    a[0] = 100.0f, a[1] = -100.0f, a[2] = 0.0f, a[3] = -0.0f; /* saturating gates */
    ovk_buffer ba = buf_from(ctx, a, n * 4), bb = buf_from(ctx, b, n * 4), by = buf_from(ctx, NULL, n * 4);

    ovk_ref_swiglu(a, b, ref, n);
    begin(ctx);
    CHECK_OK(ovk_op_swiglu(ops, &ctx->cmd, bind(&ba), bind(&bb), bind(&by), n));
    finish(ctx);
    CHECK_OK(ovk_buffer_download(ctx, &by, 0, got, n * 4));
    double nse = test_nse(got, ref, n);
    int finite = 1;
    for (uint32_t i = 0; i < n; i++) finite &= isfinite(got[i]) != 0;
    CHECK_MSG(nse <= 1e-10 && finite, "swiglu n %u wg %u: nse %.3g, finite %d", n, ops->workgroup, nse, finite);

    ovk_ref_add(a, b, ref, n, n);
    begin(ctx);
    CHECK_OK(ovk_op_add(ops, &ctx->cmd, bind(&ba), bind(&bb), bind(&by), n, n));
    finish(ctx);
    CHECK_OK(ovk_buffer_download(ctx, &by, 0, got, n * 4));
    CHECK_MSG(count_bit_diffs(got, ref, n) == 0, "add (residual) n %u differs", n);

    ovk_ref_add(a, b, ref, n, row); /* bias: b[0..row) broadcast over rows, in place on a */
    begin(ctx);
    CHECK_OK(ovk_op_add(ops, &ctx->cmd, bind(&ba), bind(&bb), bind(&ba), n, row));
    finish(ctx);
    CHECK_OK(ovk_buffer_download(ctx, &ba, 0, got, n * 4));
    CHECK_MSG(count_bit_diffs(got, ref, n) == 0, "add (bias of %u, in place) n %u differs", row, n);

    ovk_ref_scale(b, 0.125f * 3.0f, ref, n);
    begin(ctx);
    CHECK_OK(ovk_op_scale(ops, &ctx->cmd, bind(&bb), bind(&by), n, 0.125f * 3.0f));
    finish(ctx);
    CHECK_OK(ovk_buffer_download(ctx, &by, 0, got, n * 4));
    CHECK_MSG(count_bit_diffs(got, ref, n) == 0, "scale n %u differs", n);

    ovk_buffer_destroy(ctx, &ba);
    ovk_buffer_destroy(ctx, &bb);
    ovk_buffer_destroy(ctx, &by);
    free(a), free(b), free(ref), free(got);
}

/* ---- a command stream submitted in parts (ovk_cmd_flush) ------------------------------------ */

/* y = x * 2 forty times in place, a flush after every product: more flushes than a stream has
 * parts (the last part takes the rest), each product reading what the one before wrote in an
 * earlier submission; exact (powers of two). Then the same stream recorded and dropped
 * (ovk_cmd_abort after flushes) leaves the buffer as the flushed parts wrote it. */
static void test_stream_parts(ovk_ops *ops)
{
    oscar_context *ctx = ops->ctx;
    enum { N = 3000, STEPS = 40 };
    float *x = malloc(N * 4), *got = malloc(N * 4);
    for (uint32_t i = 0; i < N; i++) x[i] = (float)i - 1500.0f;
    ovk_buffer bx = buf_from(ctx, x, N * 4);
    begin(ctx);
    for (int i = 0; i < STEPS; i++) {
        CHECK_OK(ovk_op_scale(ops, &ctx->cmd, bind(&bx), bind(&bx), N, 2.0f));
        CHECK_OK(ovk_cmd_flush(ctx, &ctx->cmd));
    }
    CHECK(ctx->cmd.part == OSCAR_CMD_PARTS - 1);
    finish(ctx);
    CHECK_OK(ovk_buffer_download(ctx, &bx, 0, got, N * 4));
    size_t bad = 0;
    for (uint32_t i = 0; i < N; i++) bad += got[i] != x[i] * 1099511627776.0f; /* 2^40 */
    CHECK_MSG(bad == 0, "stream in parts: %zu of %d elements differ", bad, N);

    begin(ctx); /* three parts flushed (x 2^3), the fourth recorded (x 2) but dropped */
    for (int i = 0; i < 4; i++) {
        CHECK_OK(ovk_op_scale(ops, &ctx->cmd, bind(&bx), bind(&bx), N, 2.0f));
        if (i < 3) CHECK_OK(ovk_cmd_flush(ctx, &ctx->cmd));
    }
    ovk_cmd_abort(ctx, &ctx->cmd);
    CHECK(!ctx->cmd.recording && ctx->cmd.part == 3); /* three flushed parts were waited on */
    ovk_cmd_abort(ctx, &ctx->cmd);                    /* a second abort only finds signalled fences */
    CHECK_OK(ovk_buffer_download(ctx, &bx, 0, got, N * 4));
    bad = 0;
    for (uint32_t i = 0; i < N; i++) bad += got[i] != x[i] * 8796093022208.0f; /* 2^43 */
    CHECK_MSG(bad == 0, "aborted stream: %zu of %d elements differ", bad, N);
    ovk_buffer_destroy(ctx, &bx);
    free(x), free(got);
}

/* ---- argmax ---------------------------------------------------------------------------------- */

static void test_argmax(ovk_ops *ops, uint32_t n)
{
    oscar_context *ctx = ops->ctx;
    enum { ROWS = 9 };
    float *l = malloc((size_t)ROWS * n * 4);
    uint32_t want[ROWS], got[ROWS];
    for (size_t i = 0; i < (size_t)ROWS * n; i++) l[i] = test_rng_normal(); /* row 0: random */
    float *r;
    r = l + 1 * n; for (uint32_t i = 0; i < n; i++) r[i] = 1.0f;              /* all equal: 0 */
    r = l + 2 * n; r[n - 1] = 50.0f; r[n / 2] = 50.0f; r[n / 3 + 1] = 50.0f;    /* ties: lowest index */
    r = l + 3 * n; r[n - 1] = 60.0f;                                           /* max at the end */
    r = l + 4 * n; for (uint32_t i = 0; i < n; i++) r[i] = -INFINITY;          /* all -inf: 0 */
    r = l + 5 * n; for (uint32_t i = 0; i < n; i++) r[i] = NAN;                /* all NaN: 0 */
    r = l + 6 * n; r[0] = NAN; r[n / 2] = NAN; r[n - 2] = 70.0f; r[n - 1] = NAN; /* NaNs skipped */
    r = l + 7 * n; for (uint32_t i = 0; i < n; i++) r[i] = (float)(i % 17);    /* ties far apart */
    r = l + 8 * n; for (uint32_t i = 0; i < n; i++) r[i] = -(float)i; r[n - 1] = -0.0f; /* 0 == -0: index 0 */
    for (int k = 0; k < ROWS; k++) want[k] = ovk_ref_argmax(l + (size_t)k * n, n);
    CHECK(want[1] == 0 && want[2] == n / 3 + 1 && want[3] == n - 1 && want[4] == 0 && want[5] == 0 &&
          want[6] == n - 2 && want[7] == (n > 16 ? 16 : n - 1) && want[8] == 0);
    ovk_buffer bl = buf_from(ctx, l, (size_t)ROWS * n * 4), bo = buf_from(ctx, NULL, sizeof got);
    begin(ctx);
    CHECK_OK(ovk_op_argmax(ops, &ctx->cmd, bind(&bl), bind(&bo), n, ROWS));
    finish(ctx);
    CHECK_OK(ovk_buffer_download(ctx, &bo, 0, got, sizeof got));
    for (int k = 0; k < ROWS; k++)
        CHECK_MSG(got[k] == want[k], "argmax n %u wg %u row %d: gpu %u, ref %u", n, ops->workgroup, k, got[k], want[k]);
    ovk_buffer_destroy(ctx, &bl);
    ovk_buffer_destroy(ctx, &bo);
    free(l);
}

/* The profile's total for shader `name` (0 without an entry). */
static double profile_ns(const oscar_context *c, const char *name)
{
    for (uint32_t i = 0; i < c->profile->n; i++)
        if (!strcmp(c->profile->entries[i].name, name)) return c->profile->entries[i].ns;
    return 0;
}

/* OSCAR_PROFILE=1: a context that profiles counts each dispatch under its shader, with a
 * positive time (the table itself goes to stderr at destroy), also in a stream submitted in
 * parts with the host idle between them (the GPU's wait charged to no dispatch), and keeps a
 * host-time table; OSCAR_PROFILE=host keeps only the host's. */
static void test_profile(void)
{
    setenv("OSCAR_PROFILE", "host", 1);
    oscar_context *hc = test_gpu_context();
    CHECK(hc->profile == NULL && hc->host_profile != NULL);
    oscar_context_destroy(hc);
    setenv("OSCAR_PROFILE", "1", 1);
    oscar_context *pc = test_gpu_context();
    unsetenv("OSCAR_PROFILE");
    CHECK(pc->host_profile != NULL);
    if (!pc->info.timestamps) {
        CHECK(pc->profile == NULL);
        printf("profile: skipped (no timestamps)\n");
        oscar_context_destroy(pc);
        return;
    }
    CHECK(pc->profile != NULL);
    ovk_ops ops;
    ovk_ops_init(&ops, pc);
    float v[300];
    for (int i = 0; i < 300; i++) v[i] = (float)i;
    ovk_buffer bl = buf_from(pc, v, sizeof v), bo = buf_from(pc, NULL, 16);
    begin(pc);
    CHECK_OK(ovk_op_argmax(&ops, &pc->cmd, bind(&bl), bind(&bo), 300, 1));
    ovk_cmd_barrier(pc, &pc->cmd);
    CHECK_OK(ovk_op_argmax(&ops, &pc->cmd, bind(&bl), bind(&bo), 300, 1));
    finish(pc);
    int found = 0;
    for (uint32_t i = 0; i < pc->profile->n; i++) {
        const ovk_profile_entry *e = &pc->profile->entries[i];
        if (strcmp(e->name, "argmax")) continue;
        found = 1;
        CHECK_MSG(e->calls == 2 && e->ns > 0, "profile: argmax %llu calls, %g ns", (unsigned long long)e->calls, e->ns);
    }
    CHECK_MSG(found, "profile: no entry for argmax (%u entries)", pc->profile->n);
    /* a stream in two parts, the host idle between them: the wait is no dispatch's time */
    double before = profile_ns(pc, "argmax");
    begin(pc);
    CHECK_OK(ovk_op_argmax(&ops, &pc->cmd, bind(&bl), bind(&bo), 300, 1));
    CHECK_OK(ovk_cmd_flush(pc, &pc->cmd));
    struct timespec pause = { 0, 200 * 1000 * 1000 };
    nanosleep(&pause, NULL);
    CHECK_OK(ovk_op_argmax(&ops, &pc->cmd, bind(&bl), bind(&bo), 300, 1));
    finish(pc);
    double parts_ms = (profile_ns(pc, "argmax") - before) * 1e-6;
    CHECK_MSG(parts_ms < 100.0, "profile: two argmax calls in two parts, 200 ms apart on the host, counted %.1f ms", parts_ms);
    ovk_buffer_destroy(pc, &bl);
    ovk_buffer_destroy(pc, &bo);
    CHECK_MSG(oscar_context_validation_messages(pc) == 0, "profile: validation messages");
    oscar_context_destroy(pc);
}

/* OSCAR_SHADER_DIR: a context created with it takes argmax from DIR/argmax.spv (here a copy of
 * the embedded code), says so on stderr, and computes the same result. */
static void test_shader_dir(void)
{
    char dir[] = "/tmp/oscar-spv-XXXXXX", path[64], line[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/argmax.spv", dir);
    size_t n = 0;
    const uint32_t *code = ovk_spirv_find("argmax", &n);
    FILE *f = fopen(path, "wb");
    CHECK(code && f && fwrite(code, 1, n, f) == n);
    if (f) fclose(f);
    fflush(stderr); /* stderr into a file while the context creates its pipelines */
    FILE *log = tmpfile();
    int saved = dup(fileno(stderr));
    CHECK(log && saved >= 0 && dup2(fileno(log), fileno(stderr)) >= 0);
    setenv("OSCAR_SHADER_DIR", dir, 1); /* read when the context is created */
    oscar_context *c = test_gpu_context();
    ovk_ops ops;
    ovk_ops_init(&ops, c);
    float v[100];
    for (int i = 0; i < 100; i++) v[i] = (float)((i * 37) % 100);
    uint32_t got = 0;
    ovk_buffer bl = buf_from(c, v, sizeof v), bo = buf_from(c, NULL, 16);
    begin(c);
    CHECK_OK(ovk_op_argmax(&ops, &c->cmd, bind(&bl), bind(&bo), 100, 1));
    finish(c);
    unsetenv("OSCAR_SHADER_DIR");
    fflush(stderr);
    if (saved >= 0) {
        dup2(saved, fileno(stderr));
        close(saved);
    }
    CHECK_OK(ovk_buffer_download(c, &bo, 0, &got, 4));
    CHECK_MSG(got == ovk_ref_argmax(v, 100), "shader dir: argmax %u", got);
    int announced = 0;
    if (log) {
        rewind(log);
        while (fgets(line, sizeof line, log)) announced |= strstr(line, path) != NULL;
        fclose(log);
    }
    CHECK_MSG(announced, "shader dir: no line naming %s on stderr", path);
    ovk_buffer_destroy(c, &bl);
    ovk_buffer_destroy(c, &bo);
    CHECK_MSG(oscar_context_validation_messages(c) == 0, "shader dir: validation messages");
    oscar_context_destroy(c);
    remove(path);
    rmdir(dir);
}

int main(void)
{
    oscar_context *ctx = test_gpu_context();
    test_rng_seed(11);
    ovk_ops ops;
    ovk_ops_init(&ops, ctx);
    for (int k = 0; k < 3; k++) {
        ops.workgroup = workgroups[k];
        test_rms_norm(&ops, 576, 5, 1e-5f);             /* hidden rows (SmolLM2 n_embd) */
        test_rms_norm(&ops, 4096, 3, 1e-6f);
        test_rms_norm(&ops, 128, 7 * 16, 1e-6f);        /* qwen3 q norm: 7 tokens x 16 heads */
        test_rms_norm(&ops, 64, 4, 1e-5f);              /* rows shorter than the workgroup */
        test_rms_norm(&ops, 1030, 2, 1e-5f);            /* not whole words of 4 */
        test_rms_norm(&ops, 16416, 2, 1e-5f);           /* more than a round of 1,024 threads */
        test_x_q8_fused(&ops, 4096);
        if (k == 0) test_x_q8_fused(&ops, 16416);
        test_x_q8_fused(&ops, 576 + 32 * (uint32_t)k); /* rows of 18..20 blocks */
        test_rope(&ops, OSCAR_ROPE_NORMAL, 64, 64, 9, 6, 10000.0, 1.0, 0);
        test_rope(&ops, OSCAR_ROPE_NEOX, 128, 128, 4, 5, 1000000.0, 1.0, 0);
        test_rope(&ops, OSCAR_ROPE_NEOX, 128, 64, 3, 4, 10000.0, 0.25, 0); /* partial, linear scaling */
        test_rope(&ops, OSCAR_ROPE_NORMAL, 128, 96, 2, 4, 500000.0, 1.0, 1); /* partial, factors */
        test_pointwise(&ops, 1000 + 37 * (uint32_t)k, 8);
        test_pointwise(&ops, 3 * 4096, 4096);
        test_argmax(&ops, 1000 + 13 * (uint32_t)k);
        test_argmax(&ops, 49152 + 1);                   /* a vocabulary-sized row */
        test_argmax(&ops, 5);                           /* fewer logits than threads */
    }
    test_stream_parts(&ops);
    test_profile();
    test_shader_dir();
    return test_gpu_finish(ctx);
}
