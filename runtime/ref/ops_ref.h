/* Plain-C references for the forward-pass kernels other than attention (shaders/mul_mat*.comp,
 * get_rows, rms_norm, rope, swiglu, add, scale, argmax). Readable loops, sums in double: the
 * tests compare the GPU kernels against these. Shapes follow the shaders; every matrix is
 * row-major with the last-named dimension contiguous. */
#ifndef OSCAR_OPS_REF_H
#define OSCAR_OPS_REF_H

#include <stddef.h>
#include <stdint.h>

#include "oscar/oscar.h"

/* y[t][r] = sum_c W[r][c] * x[t][c] for t < n, r < rows. w: [rows][row bytes] raw GGUF blocks
 * of `type` (any alignment), x: [n][cols], y: [n][rows]. Each row of W is dequantized with
 * ovk_ggml_dequantize_row and the dot product summed in double, then rounded to float.
 * Returns INVALID_ARGUMENT for a type without a dequantizer or a bad cols,
 * OUT_OF_HOST_MEMORY when the row buffer cannot be allocated. */
oscar_status ovk_ref_mul_mat(uint32_t type, const void *w, const float *x, float *y,
                               uint32_t rows, uint32_t cols, uint32_t n);

/* The rounding-faithful reference of the cooperative-matrix matmul (shaders/mul_mat.coopmat.comp):
 * ovk_ref_mul_mat with every dequantized weight and every x rounded to fp16 (clamped to +-65504,
 * then to nearest even) before the products, summed in double. Same shapes and statuses. */
oscar_status ovk_ref_mul_mat_f16(uint32_t type, const void *w, const float *x, float *y,
                                   uint32_t rows, uint32_t cols, uint32_t n);

/* out[t][c] = W[ids[t]][c] dequantized: w [vocab][row bytes], ids [n], out [n][cols]. */
oscar_status ovk_ref_get_rows(uint32_t type, const void *w, const uint32_t *ids, float *out,
                                uint32_t cols, uint32_t n);

/* y[r][i] = (x[r][i] * s_r) * w[i], s_r = 1 / sqrt(mean_i x[r][i]^2 + eps) (mean in double).
 * x, y: [n_rows][dim]; w: [dim]. */
void ovk_ref_rms_norm(const float *x, const float *w, float *y, uint32_t dim, uint32_t n_rows, float eps);

/* Rotary embedding, all in double: theta_i = pos[t] * freq_scale * freq_base^(-2i/n_rot) / f_i
 * (f_i = factors[i], or 1 when factors is NULL) for pair i < n_rot/2 of every head; pairs
 * are (2i, 2i+1) when neox is 0 and (i, i + n_rot/2) when neox is 1; elements from n_rot
 * on are copied. x, y: [n_tok][n_heads][head_dim]; pos: [n_tok]. */
void ovk_ref_rope(const float *x, const int32_t *pos, float *y, uint32_t head_dim, uint32_t n_heads,
                    uint32_t n_tok, uint32_t n_rot, int neox, double freq_base, double freq_scale,
                    const float *factors);

/* y[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)) in double. */
void ovk_ref_swiglu(const float *gate, const float *up, float *y, size_t n);

/* y[i] = a[i] + b[i % nb] (nb >= 1). */
void ovk_ref_add(const float *a, const float *b, float *y, size_t n, size_t nb);

/* y[i] = x[i] * s. */
void ovk_ref_scale(const float *x, float s, float *y, size_t n);

/* Index of the largest of x[0..n), ties to the lowest index; NaNs are never chosen; 0 when
 * every value is NaN or n is 0. */
uint32_t ovk_ref_argmax(const float *x, size_t n);

#endif
