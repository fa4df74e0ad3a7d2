/* Int8 block dot products: shape checks, variant choice and the dispatch of
 * shaders/quantize_q8.comp and shaders/dot_q8[.idot].comp. */
#include <assert.h>
#include <string.h>

#include "q8_dot.h"

static_assert(sizeof(struct q8_quantize_push) == 4, "q8_quantize_push must match the GLSL push block");
static_assert(sizeof(struct q8_dot_push) == 8, "q8_dot_push must match the GLSL push block");
static_assert(OSCAR_Q8_WORDS * 4 == OSCAR_Q8_BLOCK, "a block is OSCAR_Q8_WORDS words of 4 codes");

#define QUANTIZE_WORKGROUP 64 /* one block per invocation */
#define DOT_WORKGROUP 64      /* invocations per (row, vector); a power of two (the reduction tree) */
#define GRID_MAX 65535u       /* workgroups per grid dimension every device allows */

static oscar_status check_n(uint32_t n, const char *op)
{
    if (n == 0 || n % OSCAR_Q8_BLOCK)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: n = %u is not a positive multiple of %u", op, n,
                           OSCAR_Q8_BLOCK);
    return OSCAR_OK;
}

static oscar_status dispatch(oscar_context *ctx, ovk_cmd *cmd, const ovk_pipeline_desc *d, const ovk_binding *b,
                             const void *push, const uint32_t groups[3])
{
    ovk_pipeline *p;
    oscar_status st = ovk_pipeline_get(ctx, d, &p);
    return st != OSCAR_OK ? st : ovk_cmd_dispatch(ctx, cmd, p, b, push, groups);
}

oscar_status ovk_q8_quantize(oscar_context *ctx, ovk_cmd *cmd, ovk_binding x, ovk_binding codes, ovk_binding scales,
                             uint32_t n, uint32_t n_rows)
{
    oscar_status st;
    if ((st = check_n(n, "q8_quantize")) != OSCAR_OK) return st;
    uint64_t n_blocks = (uint64_t)n_rows * (n / OSCAR_Q8_BLOCK);
    if (n_blocks > UINT32_MAX)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "q8_quantize: %u rows of %u elements are too many", n_rows, n);
    if ((st = ovk_binding_check(&x, n_blocks * OSCAR_Q8_BLOCK * 4, "q8_quantize", "x")) != OSCAR_OK ||
        (st = ovk_binding_check(&codes, n_blocks * OSCAR_Q8_BLOCK, "q8_quantize", "codes")) != OSCAR_OK ||
        (st = ovk_binding_check(&scales, n_blocks * 4, "q8_quantize", "scales")) != OSCAR_OK)
        return st;
    if (n_blocks == 0) return OSCAR_OK;
    ovk_pipeline_desc d = { .shader = "quantize_q8", .n_buffers = 3, .push_size = sizeof(struct q8_quantize_push),
                            .n_spec = 1, .spec = { /* WORKGROUP */ QUANTIZE_WORKGROUP } };
    uint64_t groups_needed = (n_blocks + QUANTIZE_WORKGROUP - 1) / QUANTIZE_WORKGROUP;
    uint32_t gx = groups_needed < GRID_MAX ? (uint32_t)groups_needed : GRID_MAX;
    uint32_t groups[3] = { gx, (uint32_t)((groups_needed + gx - 1) / gx), 1 }; /* x-major, spilling into y */
    struct q8_quantize_push push = { (uint32_t)n_blocks };
    ovk_binding b[3] = { x, codes, scales };
    return dispatch(ctx, cmd, &d, b, &push, groups);
}

oscar_status ovk_q8_dot(oscar_context *ctx, ovk_cmd *cmd, const char *variant, ovk_binding w_codes,
                        ovk_binding w_scales, ovk_binding x_codes, ovk_binding x_scales, ovk_binding y, uint32_t n,
                        uint32_t rows, uint32_t n_vec)
{
    oscar_status st;
    if ((st = check_n(n, "q8_dot")) != OSCAR_OK) return st;
    if (rows > GRID_MAX || n_vec > GRID_MAX)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "q8_dot: %u rows and %u vectors (at most %u each)", rows, n_vec,
                           GRID_MAX);
    if (variant && strcmp(variant, "dot_q8") != 0 && strcmp(variant, "dot_q8.idot") != 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "q8_dot: no variant '%s' (dot_q8, dot_q8.idot)", variant);
    if (variant && !ovk_variant_usable(ctx, variant))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISSING_FEATURE, "q8_dot: this context cannot run '%s' (%s)", variant,
                           ovk_spirv_find(variant, &(size_t){ 0 }) ? "integer dot products not enabled"
                                                                   : "not compiled into this build");
    if (!variant && !(variant = ovk_pick_variant(ctx, "dot_q8")))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_SHADER, "q8_dot: no variant of dot_q8 in this build");
    uint64_t blocks = n / OSCAR_Q8_BLOCK;
    if ((st = ovk_binding_check(&w_codes, (uint64_t)rows * n, "q8_dot", "w_codes")) != OSCAR_OK ||
        (st = ovk_binding_check(&w_scales, rows * blocks * 4, "q8_dot", "w_scales")) != OSCAR_OK ||
        (st = ovk_binding_check(&x_codes, (uint64_t)n_vec * n, "q8_dot", "x_codes")) != OSCAR_OK ||
        (st = ovk_binding_check(&x_scales, n_vec * blocks * 4, "q8_dot", "x_scales")) != OSCAR_OK ||
        (st = ovk_binding_check(&y, (uint64_t)n_vec * rows * 4, "q8_dot", "y")) != OSCAR_OK)
        return st;
    if (rows == 0 || n_vec == 0) return OSCAR_OK;
    ovk_pipeline_desc d = { .shader = variant, .n_buffers = 5, .push_size = sizeof(struct q8_dot_push), .n_spec = 1,
                            .spec = { /* WORKGROUP */ DOT_WORKGROUP } };
    struct q8_dot_push push = { (uint32_t)blocks, rows };
    ovk_binding b[5] = { w_codes, w_scales, x_codes, x_scales, y };
    uint32_t groups[3] = { rows, n_vec, 1 };
    return dispatch(ctx, cmd, &d, b, &push, groups);
}
