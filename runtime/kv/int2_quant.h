/* The INT2 quantizer of DESIGN.md §1, as a plain-C reference. The shaders implement the same
 * arithmetic in the same order (shaders/common/int2_quant.glsl) and are tested bit-exact
 * against these functions, so every step here is defined to be reproducible on a GPU:
 * only fp32 add, subtract, multiply and compare (correctly rounded in Vulkan; the shaders
 * mark them `precise` so nothing is fused), no division, fp16 rounding by hand (half.h).
 *
 * Clip threshold of a row x[0..n) at ratio r (0 < r <= 1):
 *     a = |x| sorted ascending;  pos = r * (n - 1);  lo = floor(pos);  hi = min(lo + 1, n - 1)
 *     frac = pos - lo;  tau = a[lo] + frac * (a[hi] - a[lo])       (linear interpolation,
 *     torch.quantile's default).  r >= 1 means no clipping (tau = +inf).
 * Quantizing a group g[0..G) of the clipped row:
 *     min_h = f16(min g);  mn = f32(min_h)
 *     scale_h = f16((max g - mn) * (1/3));  sc = f32(scale_h)
 *     code = [x >= mn + 0.5 sc] + [x >= mn + 1.5 sc] + [x >= mn + 2.5 sc]   (0 when sc == 0)
 *     dequant(code) = mn + code * sc
 * i.e. round to the nearest of the four levels, ties upward.
 */
#ifndef OSCAR_INT2_QUANT_H
#define OSCAR_INT2_QUANT_H

#include <stdint.h>

/* Default clip ratios of the OSCAR reference. */
#define OSCAR_CLIP_RATIO_K 0.96f
#define OSCAR_CLIP_RATIO_V 0.92f
/* Largest group (and head_dim) the reference handles. */
#define OSCAR_INT2_MAX_GROUP 256u
#define OSCAR_INT2_MAX_ROW 256u /* longest row ovk_int2_fake_quantize_feedback takes (head_dim) */

/* The quantization group when none is given (oscar_kv_params.group_size 0): one group per row up
 * to 128 elements, else 128. Every default of the runtime and the calibrator comes from here. */
static inline uint32_t ovk_int2_default_group(uint32_t head_dim) { return head_dim < 128 ? head_dim : 128; }

/* Returns the clip threshold tau of x[0..n) at ratio r (see above); +inf when r >= 1 or n == 0.
 * `scratch` must hold n floats. */
float ovk_int2_clip_threshold(const float *x, uint32_t n, float r, float *scratch);

/* The same threshold from |x| already sorted ascending (a[0..n)), for callers that try many
 * ratios on one row: the arithmetic above, bit for bit. */
float ovk_int2_clip_threshold_sorted(const float *a, uint32_t n, float r);

/* Clamps x[0..n) to [-tau, tau] into out (out may equal x). */
void ovk_int2_clip(const float *x, uint32_t n, float tau, float *out);

/* Quantizes one group of G values: codes[0..G) in 0..3, fp16 bits of scale and min. */
void ovk_int2_quantize_group(const float *x, uint32_t G, uint8_t *codes, uint16_t *scale_h, uint16_t *min_h);

/* Dequantizes one group. */
void ovk_int2_dequantize_group(const uint8_t *codes, uint32_t G, uint16_t scale_h, uint16_t min_h, float *out);

/* Error-feedback codes of a clipped row x[0..n) (modified: it ends as the targets the codes
 * were chosen for) whose groups of G already have their fp16 scale and min (from
 * ovk_int2_quantize_group): element by element in order, code i is the nearest of x[i]
 * (the group's thresholds, as ovk_int2_quantize_group), and its error e = x[i] − (min +
 * code·scale) is taken out of every later element, x[j] −= e · F[i][j] (F [n][n] row-major,
 * used above its diagonal only). With F from the key rotation's query covariance
 * (oscar-calib, docs/calibration.md) the rounding errors fall where queries look least
 * (GPTQ-style). Arithmetic in fp32 as written, no fused multiply-add (the GPU's kv_flush.comp
 * matches it bit for bit). */
void ovk_int2_feedback_codes(float *x, uint32_t n, uint32_t G, const uint16_t *scale_h, const uint16_t *min_h,
                               const float *F, uint8_t *codes);

/* Least-squares refit of a one-group row. The min–max grid above spends its four
 * levels on the row's (clipped) extremes; for fixed codes c the grid (a, b) that minimises the
 * error (y − a·1 − b·c)ᵀ M (y − a·1 − b·c) of the unclipped row y is a 2×2 linear solve. Each
 * round: the sums below for the current codes, the solve, both rounded to fp16 as stored; the
 * new grid's codes are then chosen again (nearest, or by error feedback under F), and after
 * `rounds` rounds the best (codes, grid) seen is kept, scored by the same sums:
 *     mc_j = Σ_i M[j][i]·c_i,  m1_j = Σ_i M[j][i]     (i ascending; M = I: mc_j = c_j, m1_j = 1)
 *     m11 = Σ_j m1_j,  m12 = Σ_j mc_j,  m22 = Σ_j mc_j·c_j,  r1 = Σ_j m1_j·y_j,  r2 = Σ_j mc_j·y_j
 *     det = m11·m22 − m12·m12;  no solve unless det > 2^-20·m11·m22
 *     inv = 1/det by ovk_int2_recip;  a = (r1·m22 − r2·m12)·inv;  b = (m11·r2 − m12·r1)·inv
 *     score(a, b) = 2(a·r1 + b·r2) − a·a·m11 − 2a·b·m12 − b·b·m22   (= yᵀMy − error: larger is better)
 * Candidates: the current grid and the solve's (both as fp16), with the current codes; a solve
 * with b ≤ 0 ends the rounds. All sums left to right in j, fp32 as written (kv_flush.comp
 * matches it bit for bit). M: [n][n] row-major and symmetric, NULL for the identity (values); F: NULL for
 * nearest codes. x: the clipped row with its min–max grid's codes already chosen (codes,
 * *scale_h, *min_h from ovk_int2_quantize_group / ovk_int2_feedback_codes); y: the row
 * before clipping. Replaces codes, *scale_h and *min_h by the best. n <= OSCAR_INT2_MAX_ROW. */
void ovk_int2_refit_row(const float *y, uint32_t n, const float *M, const float *F, uint32_t rounds, uint8_t *codes,
                          uint16_t *scale_h, uint16_t *min_h);

/* 1/d for a positive normal d by an integer first guess and four Newton steps in fp32 (add and
 * multiply only), so a GPU computes the same bits (Vulkan's division is not correctly rounded). */
float ovk_int2_recip(float d);

/* ovk_int2_fake_quantize_tau (one group per row, G = n) or, with F, _feedback, followed by
 * ovk_int2_refit_row under M: what a row becomes in a cache with refit_rounds. */
void ovk_int2_fake_quantize_refit(const float *x, uint32_t n, float tau, const float *F, const float *M,
                                    uint32_t rounds, float *out);

/* Clamp to [-tau, tau] + quantize + dequantize a row of n values in groups of G into out
 * (out may equal x); n a multiple of G, G <= OSCAR_INT2_MAX_GROUP. */
void ovk_int2_fake_quantize_tau(const float *x, uint32_t n, uint32_t G, float tau, float *out);

/* ovk_int2_fake_quantize_tau with the codes chosen by ovk_int2_feedback_codes under F
 * ([n][n]): what a key row becomes in a cache with key_feedback. n <= OSCAR_INT2_MAX_ROW. */
void ovk_int2_fake_quantize_feedback(const float *x, uint32_t n, uint32_t G, float tau, const float *F, float *out);

/* Clip (ratio r) + quantize + dequantize a whole row of n values in groups of G, returning the
 * reconstruction in out: the "fake quantization" the calibrator and tests use. `scratch` holds
 * n floats; n must be a multiple of G and G <= OSCAR_INT2_MAX_GROUP. */
void ovk_int2_fake_quantize_row(const float *x, uint32_t n, uint32_t G, float r, float *out, float *scratch);

#endif
