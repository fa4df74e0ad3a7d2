/* The cooperative-matrix fp16 product (runtime/kv/tile_mul.h) in every fp16 x fp16 + fp32 ->
 * fp32 subgroup shape the device lists, against runtime/ref/tile_ref.h. Skipped (exit 77, one
 * line saying why) where the context has no cooperative matrices: lavapipe, or a build without
 * glslang 13; the refusal of the product there is checked first.
 *
 * Bounds (docs/accuracy.md), per shape, for several matrix sizes (one tile, a few, and more
 * tiles than the grid has subgroups):
 *  - Gaussian inputs rounded to fp16: against the same fp16 inputs summed in double, NSE <= 1e-5
 *    (fp32 accumulation: ~1e-13 where every step rounds; matrix units that truncate partial
 *    sums stay far below the bound); against the fp32 inputs, NSE <= 1e-4 (fp16 inputs cost
 *    ~1e-7).
 *  - small integers (|x| <= 3, k <= 256): every product and partial sum is an integer below 2^24,
 *    exact in fp32 whatever the order: bit-exact.
 *  - OSCAR_DISABLE_COOPMAT=1: the product is refused with MISSING_FEATURE. */
#include <stdlib.h>
#include <string.h>

#include "half.h"
#include "test_accuracy.h"
#include "test_gpu.h"
#include "tile_mul.h"
#include "tile_ref.h"

static ovk_binding bind(ovk_buffer *b) { return (ovk_binding){ b, 0, 0 }; }

/* One product of m x k by k x n in tiles of `s`; integers: small-integer inputs, bit-exact. */
static void test_product(oscar_context *ctx, const oscar_coopmat_shape *s, uint32_t m, uint32_t n, uint32_t k,
                         int integers)
{
    size_t na = (size_t)m * k, nb = (size_t)k * n, nc = (size_t)m * n;
    float *a = malloc(na * 4), *b = malloc(nb * 4), *got = malloc(nc * 4), *faithful = malloc(nc * 4), *exact = malloc(nc * 4);
    uint16_t *ah = malloc(na * 2), *bh = malloc(nb * 2);
    for (size_t i = 0; i < na; i++) a[i] = integers ? (float)((int)(test_rng_u32() % 7) - 3) : test_rng_normal();
    for (size_t i = 0; i < nb; i++) b[i] = integers ? (float)((int)(test_rng_u32() % 7) - 3) : test_rng_normal();
    for (size_t i = 0; i < na; i++) ah[i] = ovk_f32_to_f16(a[i]);
    for (size_t i = 0; i < nb; i++) bh[i] = ovk_f32_to_f16(b[i]);
    ovk_ref_matmul_f16(ah, bh, faithful, m, n, k);
    ovk_ref_matmul_f32(a, b, exact, m, n, k);

    ovk_buffer ba, bb, bc;
    CHECK_OK(test_gpu_buffer_from(ctx, ah, na * 2, &ba));
    CHECK_OK(test_gpu_buffer_from(ctx, bh, nb * 2, &bb));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, nc * 4, &bc));
    CHECK_OK(ovk_buffer_fill(ctx, &bc, 0, nc * 4, 0x7FC00000u)); /* NaN: a tile left unwritten shows */
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    CHECK_OK(ovk_tile_mul_f16(ctx, &ctx->cmd, s, bind(&ba), bind(&bb), bind(&bc), m, n, k));
    CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
    CHECK_OK(ovk_buffer_download(ctx, &bc, 0, got, nc * 4));

    char what[128];
    snprintf(what, sizeof what, "tile %ux%ux%u, %u x %u x %u%s", s->m, s->n, s->k, m, n, k, integers ? ", integers" : "");
    if (integers) {
        size_t diff = 0;
        for (size_t i = 0; i < nc; i++) diff += memcmp(&got[i], &faithful[i], 4) != 0;
        CHECK_MSG(diff == 0, "%s: %zu of %zu results differ from the exact integer sums", what, diff, nc);
        printf("%s: %zu of %zu differ from the exact integer sums\n", what, diff, nc);
    } else {
        test_check_accuracy(what, got, faithful, exact, nc);
    }
    ovk_buffer_destroy(ctx, &ba);
    ovk_buffer_destroy(ctx, &bb);
    ovk_buffer_destroy(ctx, &bc);
    free(a), free(b), free(got), free(faithful), free(exact), free(ah), free(bh);
}

/* Shapes the product refuses, each with one clear status. */
static void test_bad_input(oscar_context *ctx, const oscar_coopmat_shape *s)
{
    ovk_buffer buf;
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, 4096, &buf));
    ovk_binding b = bind(&buf);
    oscar_coopmat_shape odd = *s;
    odd.m = 3, odd.n = 5, odd.k = 7;
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    CHECK_STATUS(ovk_tile_mul_f16(ctx, &ctx->cmd, s, b, b, b, s->m + 1, s->n, s->k), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_tile_mul_f16(ctx, &ctx->cmd, &odd, b, b, b, 3, 5, 7), OSCAR_ERROR_MISSING_FEATURE);
    CHECK_STATUS(ovk_tile_mul_f16(ctx, &ctx->cmd, s, b, b, b, s->m * 64, s->n * 64, s->k), OSCAR_ERROR_INVALID_ARGUMENT);
    ovk_cmd_abort(ctx, &ctx->cmd);
    ovk_buffer_destroy(ctx, &buf);
}

/* The product refuses to run without cooperative matrices, naming the device. */
static void check_refused(oscar_context *ctx)
{
    ovk_buffer buf;
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, 4096, &buf));
    ovk_binding b = bind(&buf);
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    CHECK_STATUS(ovk_tile_mul_f16(ctx, &ctx->cmd, NULL, b, b, b, 16, 16, 16), OSCAR_ERROR_MISSING_FEATURE);
    CHECK(strstr(oscar_last_error(), ctx->info.name) != NULL);
    ovk_cmd_abort(ctx, &ctx->cmd);
    ovk_buffer_destroy(ctx, &buf);
}

int main(void)
{
    test_rng_seed(16);
    oscar_context *ctx = test_gpu_context();
    oscar_coopmat_shape shapes[OSCAR_MAX_COOPMAT_SHAPES];
    uint32_t n_shapes = ovk_tile_mul_shapes(ctx, shapes, OSCAR_MAX_COOPMAT_SHAPES);
    if (n_shapes == 0) {
        check_refused(ctx);
        char why[512];
        snprintf(why, sizeof why, "no fp16 cooperative matrices on '%s' (device lists %u shapes, %s; this build %s the kernel)",
                 ctx->info.name, ctx->info.coopmat_shape_count,
                 ctx->info.cooperative_matrix ? "enabled" : "VK_KHR_cooperative_matrix not enabled",
                 (oscar_built_kernels() & OSCAR_BUILT_COOPMAT) ? "has" : "lacks");
        test_gpu_release(ctx);
        if (test_checks_failed) return test_finish();
        test_skip(why);
    }
    for (uint32_t i = 0; i < n_shapes; i++) {
        const oscar_coopmat_shape *s = &shapes[i];
        printf("shape %u x %u x %u (fp16 x fp16 + fp32 -> fp32, subgroup)\n", s->m, s->n, s->k);
        test_product(ctx, s, s->m, s->n, s->k, 0);                 /* one tile */
        test_product(ctx, s, s->m * 3, s->n * 5, s->k * 4, 0);     /* a few, k in steps */
        test_product(ctx, s, s->m * 40, s->n * 36, s->k * 8, 0);   /* more tiles than a wave of subgroups */
        test_product(ctx, s, s->m * 2, s->n * 3, 256, 1);          /* exact integers */
        test_bad_input(ctx, s);
    }
    setenv("OSCAR_DISABLE_COOPMAT", "1", 1);
    oscar_context *off = test_gpu_context();
    unsetenv("OSCAR_DISABLE_COOPMAT");
    CHECK(ovk_tile_mul_shapes(off, NULL, 0) == 0 && !off->info.cooperative_matrix);
    check_refused(off);
    CHECK(strstr(oscar_last_error(), "OSCAR_DISABLE_COOPMAT") != NULL);
    test_gpu_release(off);
    return test_gpu_finish(ctx);
}
