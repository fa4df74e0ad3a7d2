/* Int8 block dot products on the GPU: quantizing fp32 vectors to int8 blocks and the products
 * of int8 rows with int8 vectors, by integer dot products (VK_KHR_shader_integer_dot_product)
 * where the device runs them fast and by scalar code everywhere. Layout and rounding:
 * shaders/common/q8_layout.h. References: runtime/ref/q8_ref.h. Both record one dispatch into
 * `cmd`; the caller puts ovk_cmd_barrier() between dependent ones. */
#ifndef OSCAR_Q8_DOT_H
#define OSCAR_Q8_DOT_H

#include "common/q8_layout.h"
#include "vk_context.h"

/* x [n_rows][n] fp32 -> codes [n_rows][n / 4] words and scales [n_rows][n / 32] fp32; n a
 * positive multiple of 32. x must be finite. */
oscar_status ovk_q8_quantize(oscar_context *ctx, ovk_cmd *cmd, ovk_binding x, ovk_binding codes, ovk_binding scales,
                             uint32_t n, uint32_t n_rows);

/* y [n_vec][rows] fp32: y[v][r] = sum over blocks b of (w_scales[r][b] * x_scales[v][b]) *
 * (integer sum over the block of w[r][i] * x[v][i]), for W = w_codes [rows][n / 4] with
 * w_scales [rows][n / 32] and x = x_codes [n_vec][n / 4] with x_scales [n_vec][n / 32]; n a
 * positive multiple of 32, rows and n_vec at most 65535. `variant` NULL runs
 * ovk_pick_variant(ctx, "dot_q8"); "dot_q8" or "dot_q8.idot" names one (MISSING_FEATURE when
 * the context cannot run it). */
oscar_status ovk_q8_dot(oscar_context *ctx, ovk_cmd *cmd, const char *variant, ovk_binding w_codes,
                        ovk_binding w_scales, ovk_binding x_codes, ovk_binding x_scales, ovk_binding y, uint32_t n,
                        uint32_t rows, uint32_t n_vec);

#endif
