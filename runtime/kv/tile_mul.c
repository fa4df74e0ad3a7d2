/* fp16 matrix products on cooperative matrices: shape choice and checks, the workgroup size and
 * the dispatch of shaders/tile_mul_f16.coopmat.comp. */
#include <assert.h>
#include <string.h>

#include "tile_mul.h"

static_assert(sizeof(struct tile_mul_push) == 12, "tile_mul_push must match the GLSL push block");

#define SUBGROUPS_PER_GROUP 4 /* tiles in flight per workgroup, when subgroups are the largest size */
#define GRID_MAX 65535u

uint32_t ovk_tile_mul_shapes(const oscar_context *ctx, oscar_coopmat_shape *out, uint32_t max)
{
    if (!(ctx->features.enabled & OVK_NEEDS_COOPMAT) || !ovk_spirv_find("tile_mul_f16.coopmat", &(size_t){ 0 })) return 0;
    uint32_t n = 0;
    for (uint32_t i = 0; i < ctx->info.coopmat_shape_count; i++) {
        const oscar_coopmat_shape *s = &ctx->info.coopmat_shapes[i];
        if (!ovk_coopmat_shape_f16_f32(s)) continue;
        if (out && n < max) out[n] = *s;
        n++;
    }
    return n;
}

oscar_status ovk_tile_mul_f16(oscar_context *ctx, ovk_cmd *cmd, const oscar_coopmat_shape *shape, ovk_binding a,
                              ovk_binding b, ovk_binding c, uint32_t m, uint32_t n, uint32_t k)
{
    oscar_status st;
    oscar_coopmat_shape shapes[OSCAR_MAX_COOPMAT_SHAPES];
    uint32_t n_shapes = ovk_tile_mul_shapes(ctx, shapes, OSCAR_MAX_COOPMAT_SHAPES);
    const char *shader = ovk_pick_variant(ctx, "tile_mul_f16");
    if (n_shapes == 0 || !shader)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "tile_mul_f16: no fp16 cooperative matrices on '%s'%s",
                           ctx->info.name, ctx->env.disable_coopmat ? " (OSCAR_DISABLE_COOPMAT=1)" : "");
    const oscar_coopmat_shape *use = NULL;
    for (uint32_t i = 0; i < n_shapes && !use; i++) /* the requested shape, else 16 x 16 x 16, else the first */
        if (shape ? shapes[i].m == shape->m && shapes[i].n == shape->n && shapes[i].k == shape->k
                  : shapes[i].m == 16 && shapes[i].n == 16 && shapes[i].k == 16)
            use = &shapes[i];
    if (!use && shape)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "tile_mul_f16: '%s' has no fp16 tile of %u x %u x %u",
                           ctx->info.name, shape->m, shape->n, shape->k);
    if (!use) use = &shapes[0];
    if (!m || !n || !k || m % use->m || n % use->n || k % use->k)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "tile_mul_f16: %u x %u x %u is not a multiple of the tile %u x %u x %u",
                           m, n, k, use->m, use->n, use->k);
    if ((uint64_t)m * k > UINT32_MAX || (uint64_t)k * n > UINT32_MAX || (uint64_t)m * n > UINT32_MAX)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "tile_mul_f16: %u x %u x %u has more than 2^32 elements in a matrix", m, n, k);
    if ((st = ovk_binding_check(&a, (uint64_t)m * k * 2, "tile_mul_f16", "a")) != OSCAR_OK ||
        (st = ovk_binding_check(&b, (uint64_t)k * n * 2, "tile_mul_f16", "b")) != OSCAR_OK ||
        (st = ovk_binding_check(&c, (uint64_t)m * n * 4, "tile_mul_f16", "c")) != OSCAR_OK)
        return st;

    /* a multiple of the largest subgroup size the device may pick, so every subgroup is full */
    uint32_t sg = ovk_max_subgroup_size(ctx);
    uint32_t wg = sg * SUBGROUPS_PER_GROUP;
    while (wg > sg && wg > ctx->limits.maxComputeWorkGroupInvocations) wg -= sg;
    uint64_t tiles = (uint64_t)(m / use->m) * (n / use->n);
    uint64_t want = (tiles + SUBGROUPS_PER_GROUP - 1) / SUBGROUPS_PER_GROUP; /* the shader loops over what is left */
    uint32_t groups[3] = { want < GRID_MAX ? (uint32_t)want : GRID_MAX, 1, 1 };
    ovk_pipeline_desc d = { .shader = shader, .n_buffers = 3, .push_size = sizeof(struct tile_mul_push), .n_spec = 4,
                            .spec = { [TILE_SPEC_WORKGROUP] = wg, [TILE_SPEC_M] = use->m, [TILE_SPEC_N] = use->n,
                                      [TILE_SPEC_K] = use->k } };
    struct tile_mul_push push = { m, n, k };
    ovk_binding bind[3] = { a, b, c };
    ovk_pipeline *p;
    if ((st = ovk_pipeline_get(ctx, &d, &p)) != OSCAR_OK) return st;
    return ovk_cmd_dispatch(ctx, cmd, p, bind, &push, groups);
}
