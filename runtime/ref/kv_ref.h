/* Plain-loop C references of the KV write path: append to fp16 pages, flush fp16 -> INT2
 * pages, and row rotation. They operate on host copies of the page pools in exactly the
 * shaders/common/kv_layout.h format and define what kv_append.comp, kv_flush.comp and
 * rotate_rows.comp compute (tests/test_kv_write.c compares them). Nothing here allocates;
 * nothing is checked beyond what each contract states: the caller passes valid shapes and
 * in-range page ids and slots (the page bookkeeping guarantees them).
 *
 * Pools, in 32-bit words (d = head_dim, G = group, P = page, NKV = n_kv):
 *   uint32_t *f16_pool;  [n_f16_pages][K, V][NKV][P][d/2]  two fp16 per word, element 2i low
 *   uint32_t *int2_pool; [n_int2_pages][K codes [NKV][P][d/16], K params [NKV][P][d/G],
 *                                       V codes, V params]   (KV_INT2_PAGE_WORDS per page)
 * Rotation matrices: float [n_rot][d][d] row-major, R[i][j] at i*d + j; a row vector x is
 * rotated as y = x·R, y_j = sum_i x_i R[i][j]. */
#ifndef OSCAR_KV_REF_H
#define OSCAR_KV_REF_H

#include <stdint.h>

#include "common/kv_layout.h"
#include "common/kv_write.h"

/* The per-model shape of one layer's pools (the spec constants of the shaders). */
typedef struct kv_ref_shape {
    uint32_t head_dim; /* d: multiple of 16, <= KV_MAX_HEAD_DIM */
    uint32_t group;    /* G: divides d, d / G <= 16 */
    uint32_t page;     /* P: tokens per page */
    uint32_t n_kv;     /* NKV: KV heads */
} kv_ref_shape;

/* kv_append.comp: for each of the n_slots entries s, writes the K and V rows of input row
 * s.src_row (every KV head h) into fp16 page s.dst_page, slot s.dst_slot of f16_pool.
 *   mode        KV_MODE_*: FP16 and INT2 store x as is; HADAMARD and ROTATED store x·R
 *   rot_per_head 0: r_k, r_v are [1][d][d]; 1: [NKV][d][d], head h uses R[h]
 *   input_f16   0: k, v are float [n_rows][NKV][d]; 1: uint32_t [n_rows][NKV][d/2] fp16 pairs
 *   r_k, r_v    rotations (ignored, may be NULL, when not rotating)
 *   mean_k, mean_v  ROTATED mode only (else ignored), NULL for none: [NKV][d] centering
 *               vectors subtracted (fp32) before the rotation, x_i − μ_i
 *   key_centers ROTATED mode only (else ignored), NULL for none: [n_blocks][NKV][d/2] fp16 pairs,
 *               the key-center table (kv_write.h); K rows get y_j − c_j (fp32) after the
 *               rotation, c the entry of block s.src_slot / center_block (src_slot: position)
 * Rotation: y_j = ((0 + x_0 R[0][j]) + x_1 R[1][j]) + ... in fp32, each product and sum
 * rounded (no fma), then rounded to fp16 to nearest even (half.h). Without rotation fp32 input
 * is rounded to fp16 and fp16 input words are copied verbatim. Words of f16_pool that no
 * slot addresses are not touched. */
void kv_ref_append(const kv_ref_shape *s, uint32_t mode, uint32_t rot_per_head, uint32_t input_f16,
                   const void *k, const void *v, const float *r_k, const float *r_v, const float *mean_k,
                   const float *mean_v, const uint32_t *key_centers, uint32_t center_block,
                   const struct kv_token_slot *slots, uint32_t n_slots, uint32_t *f16_pool);

/* kv_flush.comp: for each of the n_slots entries s and every KV head, reads the K row and the
 * V row at fp16 page s.src_row, slot s.src_slot of f16_pool, clips each at ratio clip_k /
 * clip_v (ovk_int2_clip_threshold; r >= 1 or NaN: no clip; r < 0 counts as 0), quantizes per
 * group of G (ovk_int2_quantize_group) and writes codes and params to INT2 page s.dst_page,
 * slot s.dst_slot of int2_pool. With key_feedback ([n][d][d] of this layer: n = NKV with
 * feedback_per_head, else 1; NULL: none) the K rows' codes are chosen by
 * ovk_int2_feedback_codes with the matrix of their KV head (the params as without it). With
 * refit_rounds (and G == d) every row's codes and params then go through ovk_int2_refit_row:
 * K rows under key_metric (laid out as key_feedback; NULL: identity), V rows under the
 * identity. The
 * fp16 pool is only read; int2 words no slot addresses are not touched. Rows holding NaN have
 * no defined codes (the shader's differ). */
void kv_ref_flush(const kv_ref_shape *s, const struct kv_token_slot *slots, uint32_t n_slots,
                  float clip_k, float clip_v, const float *key_feedback, uint32_t feedback_per_head,
                  const float *key_metric, uint32_t refit_rounds, const uint32_t *f16_pool, uint32_t *int2_pool);

/* rotate_rows.comp: y[row][h] = x[row][h]·R[h / heads_per_rot] (transpose = 0) or
 * x[row][h]·R[h / heads_per_rot]ᵀ (transpose = 1) for x, y float [n_rows][n_heads][d],
 * r float [n_rot][d][d]. Sums in double, rounded once to float. y may equal x. */
void kv_ref_rotate_rows(const float *x, uint32_t n_rows, uint32_t n_heads, uint32_t d, const float *r,
                        uint32_t heads_per_rot, int transpose, float *y);

/* Unpacks one stored INT2 row (codes and params of one token and head) back to floats:
 * the dequantization the attention kernels apply. out holds d floats. */
void kv_ref_dequant_row(const kv_ref_shape *s, const uint32_t *codes, const uint32_t *params, float *out);

/* Word offsets of one token's row inside the pools (kind 0 = K, 1 = V). */
uint64_t kv_ref_f16_row(const kv_ref_shape *s, uint32_t page, uint32_t kind, uint32_t head, uint32_t slot);
uint64_t kv_ref_int2_codes(const kv_ref_shape *s, uint32_t page, uint32_t kind, uint32_t head, uint32_t slot);
uint64_t kv_ref_int2_params(const kv_ref_shape *s, uint32_t page, uint32_t kind, uint32_t head, uint32_t slot);

#endif
