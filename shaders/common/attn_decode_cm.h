/* Specialization constants and shared-memory size of attn_decode_cm (decode attention on
 * cooperative matrices, common/attn_decode_cm_body.glsl), shared by C and GLSL like
 * kv_layout.h. Its ids reuse numbers of attn_push.h with this kernel's own meaning (each
 * pipeline fills its own). */
#ifndef OSCAR_ATTN_DECODE_CM_H
#define OSCAR_ATTN_DECODE_CM_H

#include "common/attn_push.h"

/* SG_MIN: the smallest subgroup size the device may run the kernel with; WALKERS: the
 * subgroups that walk an item, at most WG / SG_MIN (any further subgroups only merge); TT:
 * 16-token column blocks a walker takes a step (1, 2 or 4, with 4 TT <= SG_MIN), 16 * TT tokens. The kernel reads
 * gl_SubgroupSize itself. */
#define KV_SPEC_CM_SG_MIN 10
#define KV_SPEC_CM_TILES 13
#define KV_SPEC_CM_WALKERS 14

/* Its shared memory in bytes for `wg` threads, W walkers, `tt` column blocks a step, gqa query
 * heads per KV head, head_dim d and INT2 group G:
 *   sk    [W][16 tt][d + 8] fp16     each walker's K rows, then V rows, of a step (at the start
 *                                   [16][d + 8] q·scale)
 *   sp    [W][16][16 tt + 8] fp16    each walker's p
 *   ss    [W][16 * 16 tt] fp32       each walker's scores, or one accumulator
 *   s_kp, s_vp [W][16 tt][d/G] fp32 pairs   each walker's K and V (scale, min) of a step
 *   s_qs  [16][d/G] fp32             q's group sums
 *   s_mv  [W][16][d/G] fp32          each walker's sums of p times the V groups' minima
 *   s_a, s_m, s_l [W][16] fp32       each walker's rescale factors, maxima, sums
 *   the merge's lane sums and outputs [max(wg / (d/4), gqa)][d], per-thread values [gqa][wg],
 *   first-level results [gqa][16], a flag
 * (Arrays the matrix operations read or write are sized without a conditional: one driver
 * misaddressed them when their size was a selected specialization constant.) */
#define ATTN_CM_QS(d) ((d) / 4 + 2)      /* row stride of sk in 4-element fp16 vectors */
#define ATTN_CM_PS(tt) (4 * (tt) + 2)    /* row stride of sp in 4-element fp16 vectors */
#define ATTN_CM_SHARED_BYTES(wg, w, tt, gqa, d, g)                                                         \
    (8 * (w) * 16 * (tt) * ATTN_CM_QS(d) + 8 * (w) * 16 * ATTN_CM_PS(tt) + 4 * (w) * 256 * (tt) +           \
     16 * (w) * 16 * (tt) * ((d) / (g)) + 4 * 16 * ((d) / (g)) + 4 * (w) * 16 * ((d) / (g)) +             \
     4 * 3 * (w) * 16 + 4 * ATTN_MAX2((wg) / ((d) / 4), (gqa)) * (d) + 4 * (gqa) * (wg) + 4 * (gqa) * 16 + 4)

#endif
