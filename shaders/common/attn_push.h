/* Push constants of the attention kernels (shaders/attn_decode.comp),
 * shared by C and GLSL like kv_layout.h: 32-bit fields only, sizes checked in
 * runtime/attn_items.c. */
#ifndef OSCAR_ATTN_PUSH_H
#define OSCAR_ATTN_PUSH_H

#include "common/kv_layout.h"

/* attn_decode's own specialization constant (ids 7..9 are the write path's, kv_write.h):
 * the tokens it scores at once (longer items go in chunks of this); its shared memory grows
 * with it. */
#define KV_SPEC_ITEM_TOKENS 10
/* tuning: tokens per thread per round of the scores (U) and per lane per step of the values
 * (VU); registers grow with both (ids 11, 12 are attn_prefill's) */
#define KV_SPEC_ATTN_U 13
#define KV_SPEC_ATTN_VU 14
#define ATTN_N_SPEC 18 /* n_spec covering every id of kv_layout.h, kv_write.h and this file */

/* attn_decode's shared memory in floats, for items of up to `item` tokens, GQA heads per
 * workgroup, `wg` threads, head_dim d, group G and page P: q [gqa][d], group sums of q
 * [gqa][d/G], scores/p [item][gqa] (also the [wg/(d/8)][d] lane sums and the merge's
 * [gqa][d] output), per-thread reduction values [gqa][wg], first-level results [gqa][16], the
 * item's page ids, a flag, and the key-center logits of the blocks an item's chunk touches
 * [item/16 + 2][gqa] (blocks are at least 16 positions). */
#define ATTN_MAX2(a, b) ((a) > (b) ? (a) : (b))
#define ATTN_ITEM_PAGES(item, P) ((item) / (P) + 2)
#define ATTN_P_FLOATS(item, gqa, wg, d) ATTN_MAX2(ATTN_MAX2((item) * (gqa), 8 * (wg)), (gqa) * (d))
#define ATTN_SHARED_FLOATS(item, gqa, wg, d, G, P) \
    ((gqa) * (d) + (gqa) * ((d) / (G)) + ATTN_P_FLOATS(item, gqa, wg, d) + (gqa) * (wg) + (gqa) * 16 + \
     ATTN_ITEM_PAGES(item, P) + 1 + ATTN_BIAS_FLOATS(item, gqa))
#define ATTN_MIN_CENTER_BLOCK 16
#define ATTN_BIAS_FLOATS(item, gqa) (((item) / ATTN_MIN_CENTER_BLOCK + 2) * (gqa))

/* attn_decode: one workgroup per (work item, KV head). 16 bytes. */
struct attn_decode_push {
    KV_U32 n_items;        /* items in the items buffer; the grid may overshoot it */
    KV_U32 max_int2_pages; /* row width of the INT2 page table (entries per sequence) */
    KV_U32 max_f16_pages;  /* row width of the fp16 page table */
    KV_F32 scale;          /* logit scale applied to q (usually 1/sqrt(d)) */
};

#endif
