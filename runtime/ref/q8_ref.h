/* C references of the int8 block dot products (runtime/kv/q8_dot.h; layout and rounding in
 * shaders/common/q8_layout.h), per docs/accuracy.md: one reproduces the kernels' own rounding
 * (the quantizer, then exact integer sums with the same scales), the other computes what the
 * rounding approximates (the stored int8 rows times the unrounded fp32 vector). */
#ifndef OSCAR_Q8_REF_H
#define OSCAR_Q8_REF_H

#include <stddef.h>
#include <stdint.h>

#include "common/q8_layout.h"

/* x [n_blocks * 32] fp32 -> codes [n_blocks * 8] words, scales [n_blocks] fp32, as
 * shaders/quantize_q8.comp with a correctly rounded x / scale. */
void ovk_ref_q8_quantize(const float *x, size_t n_blocks, uint32_t *codes, float *scales);

/* Signed code of element i of a codes array. */
static inline int ovk_ref_q8_code(const uint32_t *codes, size_t i)
{
    return (int)(int8_t)(uint8_t)(codes[i / 4] >> (8 * (i % 4)));
}

/* The kernels' result: y [n_vec][rows] = sum over blocks of (float)(integer block sum) *
 * (w scale * x scale, a float product), the block terms added in double. W codes [rows][n / 4],
 * scales [rows][n / 32]; x codes [n_vec][n / 4], scales [n_vec][n / 32]. */
void ovk_ref_q8_dot(const uint32_t *w_codes, const float *w_scales, const uint32_t *x_codes, const float *x_scales,
                    float *y, uint32_t n, uint32_t rows, uint32_t n_vec);

/* What the products approximate: y [n_vec][rows] = sum_i (w code * w scale) * x [n_vec][n] in
 * double, over the same stored W and the fp32 x before quantizing. */
void ovk_ref_q8_dot_exact(const uint32_t *w_codes, const float *w_scales, const float *x, float *y, uint32_t n,
                          uint32_t rows, uint32_t n_vec);

#endif
