/* Int8 block dot products (runtime/kv/q8_dot.h) against runtime/ref/q8_ref.h, every variant the
 * context can run (dot_q8 everywhere, dot_q8.idot with integer dot products: lavapipe has them,
 * not accelerated), plus the variant ovk_pick_variant chooses, its log line, the OSCAR_DISABLE_*
 * variables and bad shapes.
 *
 * Bounds (docs/accuracy.md):
 *  - quantizer: scales bit-exact (amax times a constant, both correctly rounded); codes equal,
 *    except that a value within 1e-4 of a rounding tie of x / scale may land one code away
 *    (Vulkan allows 2.5 ulp for the division; lavapipe divides exactly and matches everywhere).
 *  - products against the rounding-faithful reference, fed the GPU's own quantized x: the integer
 *    block sums are exact, so only the order of the fp32 additions differs (~1e-14; NSE <= 1e-5).
 *    The variants compute the same terms: NSE <= 1e-12 between them.
 *  - products against the exact ones (stored int8 W times the unrounded fp32 x): NSE <= 1e-4 on
 *    Gaussian data, where int8 blocks of 32 cost ~3e-5; the adversarial cases (outliers,
 *    constant and zero blocks, exact ties) are checked against the faithful reference only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "q8_dot.h"
#include "q8_ref.h"
#include "test_accuracy.h"
#include "test_gpu.h"

static ovk_binding bind(ovk_buffer *b) { return (ovk_binding){ b, 0, 0 }; }

/* Fills x [n_rows][n]: Gaussian, or with adversarial blocks (all zero, all equal, one outlier,
 * exact ties of x / scale at scale 1, tiny values). */
static void fill(float *x, uint32_t n, uint32_t n_rows, int adversarial)
{
    for (size_t i = 0; i < (size_t)n * n_rows; i++) x[i] = test_rng_normal();
    if (!adversarial) return;
    size_t blocks = (size_t)n * n_rows / OSCAR_Q8_BLOCK;
    for (size_t b = 0; b < blocks; b++) {
        float *xb = x + b * OSCAR_Q8_BLOCK;
        switch (b % 6) {
        case 0: memset(xb, 0, OSCAR_Q8_BLOCK * 4); break;
        case 1: for (uint32_t i = 0; i < OSCAR_Q8_BLOCK; i++) xb[i] = -3.25f; break;
        case 2: xb[b % OSCAR_Q8_BLOCK] = 1000.0f; break;
        case 3: /* amax 127 gives scale 1.0f exactly: every k + 0.5 is a tie, rounded to even */
            for (uint32_t i = 0; i < OSCAR_Q8_BLOCK; i++) xb[i] = (float)((int)i - 16) + 0.5f;
            xb[0] = 127.0f;
            break;
        case 4: for (uint32_t i = 0; i < OSCAR_Q8_BLOCK; i++) xb[i] *= 1e-30f; break;
        default: break;
        }
    }
}

/* The GPU's quantization of x against the reference: scales bit-exact, codes equal except
 * near ties. */
static void check_quantized(const float *x, const uint32_t *codes, const float *scales, size_t n_blocks)
{
    uint32_t *rc = malloc(n_blocks * OSCAR_Q8_BLOCK);
    float *rs = malloc(n_blocks * 4);
    ovk_ref_q8_quantize(x, n_blocks, rc, rs);
    size_t bad_scales = 0, near_tie = 0, bad_codes = 0;
    for (size_t b = 0; b < n_blocks; b++) bad_scales += memcmp(&scales[b], &rs[b], 4) != 0;
    for (size_t i = 0; i < n_blocks * OSCAR_Q8_BLOCK; i++) {
        int got = ovk_ref_q8_code(codes, i), want = ovk_ref_q8_code(rc, i);
        if (got == want) continue;
        double t = (double)x[i] / rs[i / OSCAR_Q8_BLOCK];
        if (abs(got - want) == 1 && fabs(fabs(t - floor(t)) - 0.5) < 1e-4) near_tie++;
        else bad_codes++;
    }
    CHECK_MSG(bad_scales == 0, "quantize: %zu of %zu scales differ from the reference", bad_scales, n_blocks);
    CHECK_MSG(bad_codes == 0, "quantize: %zu codes differ from the reference away from a tie", bad_codes);
    if (near_tie) printf("quantize: %zu codes one away at a near tie (the GPU's division)\n", near_tie);
    free(rc);
    free(rs);
}

/* One shape: W quantized on the host (the stored int8 rows), x quantized on the GPU, then each
 * runnable variant and the picked one. */
static void test_shape(oscar_context *ctx, uint32_t n, uint32_t rows, uint32_t n_vec, int adversarial)
{
    size_t wb = (size_t)rows * n / OSCAR_Q8_BLOCK, xb = (size_t)n_vec * n / OSCAR_Q8_BLOCK;
    float *w = malloc((size_t)rows * n * 4), *x = malloc((size_t)n_vec * n * 4);
    uint32_t *wc = malloc(wb * OSCAR_Q8_BLOCK), *xc = malloc(xb * OSCAR_Q8_BLOCK);
    float *ws = malloc(wb * 4), *xs = malloc(xb * 4);
    float *got = malloc((size_t)rows * n_vec * 4), *first = malloc((size_t)rows * n_vec * 4);
    float *faithful = malloc((size_t)rows * n_vec * 4), *exact = malloc((size_t)rows * n_vec * 4);
    fill(w, n, rows, 0);
    fill(x, n, n_vec, adversarial);
    ovk_ref_q8_quantize(w, wb, wc, ws);

    ovk_buffer bwc, bws, bx, bxc, bxs, by;
    CHECK_OK(test_gpu_buffer_from(ctx, wc, wb * OSCAR_Q8_BLOCK, &bwc));
    CHECK_OK(test_gpu_buffer_from(ctx, ws, wb * 4, &bws));
    CHECK_OK(test_gpu_buffer_from(ctx, x, (size_t)n_vec * n * 4, &bx));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, xb * OSCAR_Q8_BLOCK, &bxc));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, xb * 4, &bxs));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, (size_t)rows * n_vec * 4, &by));

    const char *variants[] = { NULL, "dot_q8", "dot_q8.idot" };
    int have_first = 0;
    for (size_t k = 0; k < 3; k++) {
        const char *v = variants[k];
        if (v && !ovk_variant_usable(ctx, v)) {
            printf("n %u rows %u vectors %u: %s cannot run here, not tested\n", n, rows, n_vec, v);
            continue;
        }
        CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
        CHECK_OK(ovk_q8_quantize(ctx, &ctx->cmd, bind(&bx), bind(&bxc), bind(&bxs), n, n_vec));
        ovk_cmd_barrier(ctx, &ctx->cmd);
        CHECK_OK(ovk_q8_dot(ctx, &ctx->cmd, v, bind(&bwc), bind(&bws), bind(&bxc), bind(&bxs), bind(&by), n, rows, n_vec));
        CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
        CHECK_OK(ovk_buffer_download(ctx, &by, 0, got, (size_t)rows * n_vec * 4));
        if (k == 0) { /* the GPU's quantized x feeds the faithful reference */
            CHECK_OK(ovk_buffer_download(ctx, &bxc, 0, xc, xb * OSCAR_Q8_BLOCK));
            CHECK_OK(ovk_buffer_download(ctx, &bxs, 0, xs, xb * 4));
            check_quantized(x, xc, xs, xb);
            ovk_ref_q8_dot(wc, ws, xc, xs, faithful, n, rows, n_vec);
            ovk_ref_q8_dot_exact(wc, ws, x, exact, n, rows, n_vec);
        }
        char what[160];
        snprintf(what, sizeof what, "%s n %u rows %u vectors %u%s", v ? v : "picked", n, rows, n_vec,
                 adversarial ? " (adversarial x)" : "");
        test_check_accuracy(what, got, faithful, adversarial ? NULL : exact, (size_t)rows * n_vec);
        if (have_first) {
            double between = test_nse(got, first, (size_t)rows * n_vec);
            CHECK_MSG(between <= 1e-12, "%s: NSE %.3g against the first variant", what, between);
        } else {
            memcpy(first, got, (size_t)rows * n_vec * 4);
            have_first = 1;
        }
    }
    ovk_buffer *bufs[] = { &bwc, &bws, &bx, &bxc, &bxs, &by };
    for (size_t i = 0; i < 6; i++) ovk_buffer_destroy(ctx, bufs[i]);
    free(w), free(x), free(wc), free(xc), free(ws), free(xs), free(got), free(first), free(faithful), free(exact);
}

/* Shapes and names the ops refuse, each with one clear status. */
static void test_bad_input(oscar_context *ctx)
{
    ovk_buffer small;
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, 64, &small));
    ovk_binding b = bind(&small);
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    CHECK_STATUS(ovk_q8_quantize(ctx, &ctx->cmd, b, b, b, 33, 1), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_q8_quantize(ctx, &ctx->cmd, b, b, b, 64, 1), OSCAR_ERROR_INVALID_ARGUMENT); /* x holds 64 bytes, needs 256 */
    CHECK(strstr(oscar_last_error(), "binding x") != NULL);
    CHECK_STATUS(ovk_q8_dot(ctx, &ctx->cmd, NULL, b, b, b, b, b, 0, 1, 1), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_q8_dot(ctx, &ctx->cmd, NULL, b, b, b, b, b, 32, 70000, 1), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_q8_dot(ctx, &ctx->cmd, "dot_q8.fast", b, b, b, b, b, 32, 1, 1), OSCAR_ERROR_INVALID_ARGUMENT);
    ovk_binding y4 = { &small, 0, 4 }; /* two rows need 8 bytes of y */
    CHECK_STATUS(ovk_q8_dot(ctx, &ctx->cmd, NULL, b, b, b, b, y4, 32, 2, 1), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "binding y") != NULL);
    ovk_cmd_abort(ctx, &ctx->cmd);
    ovk_buffer_destroy(ctx, &small);
}

/* A context made with `var` set: what it enabled, and which dot_q8 variant it can run and picks. */
static void test_disable(const char *var)
{
    setenv(var, "1", 1);
    oscar_context *c = test_gpu_context();
    unsetenv(var);
    oscar_device_info info;
    CHECK_OK(oscar_context_device_info(c, &info));
    if (!strcmp(var, "OSCAR_DISABLE_INTEGER_DOT")) {
        CHECK(!info.integer_dot_product && !info.integer_dot_4x8_signed_accelerated);
        CHECK(!ovk_variant_usable(c, "dot_q8.idot") && ovk_variant_usable(c, "dot_q8"));
        const char *pick = ovk_pick_variant(c, "dot_q8");
        CHECK_MSG(pick && !strcmp(pick, "dot_q8"), "picked %s", pick ? pick : "(none)");
        ovk_buffer one;
        CHECK_OK(test_gpu_buffer_from(c, NULL, 256, &one));
        ovk_binding b = bind(&one);
        CHECK_OK(ovk_cmd_begin(c, &c->cmd));
        CHECK_STATUS(ovk_q8_dot(c, &c->cmd, "dot_q8.idot", b, b, b, b, b, 32, 1, 1), OSCAR_ERROR_MISSING_FEATURE);
        ovk_cmd_abort(c, &c->cmd);
        ovk_buffer_destroy(c, &one);
    } else if (!strcmp(var, "OSCAR_DISABLE_F16")) {
        CHECK(!info.float16_arithmetic && !(c->features.enabled & OVK_NEEDS_F16));
        CHECK(!info.cooperative_matrix); /* the coopmat kernels compute in fp16 */
    } else {
        CHECK(!info.cooperative_matrix && info.coopmat_shape_count == 0 && !(c->features.enabled & OVK_NEEDS_COOPMAT));
    }
    printf("%s=1: fp16 %d, integer dot %d, coopmat %d\n", var, info.float16_arithmetic, info.integer_dot_product,
           info.cooperative_matrix);
    test_gpu_release(c);
}

/* OSCAR_PIPELINE_STATS=1: the choice for an op is logged once, naming the variant. */
static void test_pick_log(void)
{
    fflush(stderr);
    FILE *log = tmpfile();
    int saved = dup(fileno(stderr));
    CHECK(log && saved >= 0 && dup2(fileno(log), fileno(stderr)) >= 0);
    setenv("OSCAR_PIPELINE_STATS", "1", 1);
    oscar_context *c = test_gpu_context();
    unsetenv("OSCAR_PIPELINE_STATS");
    const char *a = ovk_pick_variant(c, "dot_q8"), *b = ovk_pick_variant(c, "dot_q8");
    fflush(stderr);
    if (saved >= 0) {
        dup2(saved, fileno(stderr));
        close(saved);
    }
    CHECK(a && a == b);
    char line[512], want[128];
    snprintf(want, sizeof want, "oscar: kernel dot_q8: %s", a ? a : "?");
    int lines = 0, found = 0;
    rewind(log);
    while (fgets(line, sizeof line, log))
        if (strstr(line, "oscar: kernel dot_q8:")) lines++, found |= strncmp(line, want, strlen(want)) == 0;
    CHECK_MSG(lines == 1 && found, "%d log lines for dot_q8, want one starting '%s'", lines, want);
    fclose(log);
    test_gpu_release(c);
}

int main(void)
{
    test_rng_seed(8);
    oscar_context *ctx = test_gpu_context();
    const char *pick = ovk_pick_variant(ctx, "dot_q8");
    int want_idot = ovk_variant_usable(ctx, "dot_q8.idot") && ctx->info.integer_dot_4x8_signed_accelerated;
    printf("integer dot %d (4x8 signed accelerated %d); dot_q8 picks %s\n", ctx->info.integer_dot_product,
           ctx->info.integer_dot_4x8_signed_accelerated, pick ? pick : "(none)");
    CHECK_MSG(pick && !strcmp(pick, want_idot ? "dot_q8.idot" : "dot_q8"), "picked %s", pick ? pick : "(none)");

    test_shape(ctx, 32, 1, 1, 0);
    test_shape(ctx, 96, 7, 2, 0);      /* fewer blocks than invocations */
    test_shape(ctx, 4096, 37, 3, 0);   /* 128 blocks: two per invocation */
    test_shape(ctx, 8192 + 32, 5, 1, 0);
    test_shape(ctx, 2048, 9, 4, 1);    /* adversarial x */
    test_bad_input(ctx);
    test_disable("OSCAR_DISABLE_INTEGER_DOT");
    test_disable("OSCAR_DISABLE_F16");
    test_disable("OSCAR_DISABLE_COOPMAT");
    test_pick_log();
    return test_gpu_finish(ctx);
}
