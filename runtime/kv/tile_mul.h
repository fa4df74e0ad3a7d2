/* fp16 matrix products on cooperative matrices (VK_KHR_cooperative_matrix): C = A * B with A
 * [m][k] and B [k][n] fp16 (IEEE half bits, row-major), C [m][n] fp32, in tiles of a shape the
 * device lists for fp16 x fp16 + fp32 -> fp32 at subgroup scope (shaders/tile_mul_f16.coopmat.comp).
 * There is no scalar variant: a context without cooperative matrices gets MISSING_FEATURE and
 * keeps to the kernels it already has. Reference: runtime/ref/tile_ref.h. */
#ifndef OSCAR_TILE_MUL_H
#define OSCAR_TILE_MUL_H

#include "common/tile_layout.h"
#include "vk_context.h"

/* The shapes this context can run the product in (the device's fp16 x fp16 + fp32 -> fp32
 * subgroup shapes, when it enabled cooperative matrices and this build has the kernel): up to
 * `max` into out, the number that exist returned. */
uint32_t ovk_tile_mul_shapes(const oscar_context *ctx, oscar_coopmat_shape *out, uint32_t max);

/* Records C = A * B in tiles of `shape` (NULL: the first of ovk_tile_mul_shapes, 16 x 16 x 16
 * where listed); m, n, k positive multiples of the shape's M, N, K. */
oscar_status ovk_tile_mul_f16(oscar_context *ctx, ovk_cmd *cmd, const oscar_coopmat_shape *shape, ovk_binding a,
                              ovk_binding b, ovk_binding c, uint32_t m, uint32_t n, uint32_t k);

#endif
