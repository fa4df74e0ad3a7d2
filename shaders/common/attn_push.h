/* Push constants and tuning constants of the decode attention kernels (shaders/attn_decode.comp,
 * attn_decode_f16.comp), shared by C and GLSL like kv_layout.h: 32-bit fields only, sizes
 * checked in runtime/kv/attn_items.c. */
#ifndef OSCAR_ATTN_PUSH_H
#define OSCAR_ATTN_PUSH_H

#include "common/kv_layout.h"

/* attn_decode's own specialization constants (ids 7..9 and 15..17 are the write path's,
 * kv_write.h; 11, 12 attn_prefill's):
 *   SG_MIN  the smallest subgroup size the device may run the kernel with (a power of two, at
 *           least 4): it bounds the per-lane arrays; the kernel reads gl_SubgroupSize itself
 *   KU      INT2 keys: tokens a lane scores per tile (1..4); a tile is SG * KU tokens of a page
 *   VE      INT2 values: elements of a row a lane accumulates (4, 8 or 16), for every query
 *           head of the KV head; registers grow with VE * GQA
 *   FKU     fp16 tiles: tokens per lane group per tile (1..8)
 *   PREFETCH  INT2 tiles, bit 0: the next tile's keys (codes, scales, page id) are loaded before
 *           the current tile's math; bit 1: a tile's value codes are loaded before its key math
 *           (where they fit in 32 registers). Registers grow with each. */
#define KV_SPEC_ATTN_SG_MIN 10
#define KV_SPEC_ATTN_KU 13
#define KV_SPEC_ATTN_VE 14
#define KV_SPEC_ATTN_FKU 18
#define KV_SPEC_ATTN_PREFETCH 19
/* attn_decode_rows (the CPU kernel) reuses id 10 with its own meaning:
 *   ROWS_TB tokens a round of its token loop, unrolled (loop iterations per row = tokens / TB) */
#define KV_SPEC_ROWS_TB 10
#define ATTN_N_SPEC 20 /* n_spec covering every id of kv_layout.h, kv_write.h and this file */

/* attn_decode's shared memory in floats, for workgroups of `wg` threads, subgroups of at least
 * `sgmin`, head_dim d, group G, page P, `gqa` query heads per KV head, the tuning constants
 * ku and ve, f16 (the packed-fp16 variant) and centered (a key-center table):
 *   q        [gqa][d] fp32 (fp32 variant, or with key centers), [gqa][d/2] fp16 pairs (f16)
 *   qsum     [gqa][d/G] group sums of q
 *   x        one region reused in turn: each subgroup's tile weights [SG * ku][gqa], the
 *            subgroups' value sums [wg / sgmin][max(SG * max(ve, 8), d)], the merge's lane sums
 *            [wg / (d/4)][d] and outputs [gqa][d]
 *   cb       key-center logits of the blocks a tile touches [wg / sgmin][ATTN_CB_MAX][gqa]
 *   ms/ls/bs each subgroup's max, sum and value offset [wg / sgmin][gqa]
 *   red      the merge's per-thread values [gqa][wg], part [gqa][16] */
#define ATTN_MAX2(a, b) ((a) > (b) ? (a) : (b))
#define ATTN_MIN2(a, b) ((a) < (b) ? (a) : (b))
#define ATTN_MIN_CENTER_BLOCK 16
/* key-center blocks a tile touches: tiles hold at most min(P, 128 * ku) tokens (subgroups of
 * at most 128), blocks are at least ATTN_MIN_CENTER_BLOCK positions */
#define ATTN_CB_MAX(P, ku) (ATTN_MIN2((P), 128 * (ku)) / ATTN_MIN_CENTER_BLOCK + 2)
#define ATTN_Q_FLOATS(gqa, d, f16, centered) (((f16) == 0 || (centered) != 0) ? (gqa) * (d) : 4)
#define ATTN_Q2_WORDS(gqa, d, f16) ((f16) != 0 ? (gqa) * (d) / 2 : 4)
#define ATTN_X_FLOATS(wg, sgmin, d, gqa, ku, ve)                                                        \
    ATTN_MAX2(ATTN_MAX2((wg) * (ku) * (gqa), ATTN_MAX2((wg) * ATTN_MAX2((ve), 8), (wg) / (sgmin) * (d))), \
              ATTN_MAX2((wg) / ((d) / 4) * (d), (gqa) * (d)))
#define ATTN_CB_FLOATS(wg, sgmin, P, gqa, ku, centered) ((centered) != 0 ? (wg) / (sgmin) * ATTN_CB_MAX(P, ku) * (gqa) : 1)
#define ATTN_SHARED_FLOATS(wg, sgmin, d, G, P, gqa, ku, ve, f16, centered)                                  \
    (ATTN_Q_FLOATS(gqa, d, f16, centered) + ATTN_Q2_WORDS(gqa, d, f16) + (gqa) * ((d) / (G)) +             \
     ATTN_X_FLOATS(wg, sgmin, d, gqa, ku, ve) + ATTN_CB_FLOATS(wg, sgmin, P, gqa, ku, centered) +           \
     3 * (wg) / (sgmin) * (gqa) + (gqa) * (wg) + (gqa) * 16 + 1)

/* attn_decode: one workgroup per (work item, KV head). 20 bytes. */
struct attn_decode_push {
    KV_U32 n_items;        /* items in the items buffer; the grid may overshoot it */
    KV_U32 max_int2_pages; /* row width of the INT2 page table (entries per sequence) */
    KV_U32 max_f16_pages;  /* row width of the fp16 page table */
    KV_F32 scale;          /* logit scale applied to q (usually 1/sqrt(d)) */
    KV_U32 q8_out;         /* 1: the merge also writes out's int8 blocks (bindings 12, 13); 0: not */
};

/* attn_decode_rows: one invocation per (row, query head), n_rows * n_head in all. 20 bytes. */
struct attn_rows_push {
    KV_U32 n_rows;         /* rows in the rows buffer */
    KV_U32 max_int2_pages; /* row width of the INT2 page table */
    KV_U32 max_f16_pages;  /* row width of the fp16 page table */
    KV_F32 scale;          /* logit scale applied to q */
    KV_U32 rot_base;       /* texel of the layer's R_V in the bound R_V buffer (d * d / 4 per matrix) */
};

#endif
