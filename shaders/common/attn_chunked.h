/* Specialization constants and shared-memory size of attn_decode_chunked (the workgroup-wide
 * kernel, common/attn_chunked_body.glsl), shared by C and GLSL like kv_layout.h. Its ids reuse
 * numbers of attn_push.h with this kernel's own meaning (each pipeline fills its own). */
#ifndef OSCAR_ATTN_CHUNKED_H
#define OSCAR_ATTN_CHUNKED_H

#include "common/attn_push.h"

/* the tokens it scores at once (longer items go in chunks of this); its shared memory grows
 * with it */
#define KV_SPEC_CH_ITEM_TOKENS 10
/* tokens per thread per round of the scores (U) and per lane per step of the values (VU);
 * registers grow with both */
#define KV_SPEC_CH_U 13
#define KV_SPEC_CH_VU 14

/* its shared memory in floats, for items of up to `item` tokens, GQA heads per workgroup, `wg`
 * threads, head_dim d, group G and page P: q [gqa][d], group sums of q [gqa][d/G], scores/p
 * [item][gqa] (also the [wg/(d/8)][d] lane sums and the merge's [gqa][d] output), per-thread
 * reduction values [gqa][wg], first-level results [gqa][16], the item's page ids, a flag, and
 * the key-center logits of the blocks an item's chunk touches [item/16 + 2][gqa] (blocks are at
 * least 16 positions). */
#define ATTN_CH_ITEM_PAGES(item, P) ((item) / (P) + 2)
#define ATTN_CH_P_FLOATS(item, gqa, wg, d) ATTN_MAX2(ATTN_MAX2((item) * (gqa), 8 * (wg)), (gqa) * (d))
#define ATTN_CH_BIAS_FLOATS(item, gqa) (((item) / ATTN_MIN_CENTER_BLOCK + 2) * (gqa))
/* the integer-dot variant (idot != 0) adds q as two levels of int8 [2][gqa][d/4] words and its
 * blocks' scales and sums [gqa][d/32] each */
#define ATTN_CH_IDOT_FLOATS(gqa, d, idot) ((idot) != 0 ? (gqa) * (d) / 2 + 2 * (gqa) * ((d) / 32) : 0)
#define ATTN_CH_SHARED_FLOATS(item, gqa, wg, d, G, P, idot)                                                    \
    ((gqa) * (d) + (gqa) * ((d) / (G)) + ATTN_CH_P_FLOATS(item, gqa, wg, d) + (gqa) * (wg) + (gqa) * 16 +      \
     ATTN_CH_ITEM_PAGES(item, P) + 1 + ATTN_CH_BIAS_FLOATS(item, gqa) + ATTN_CH_IDOT_FLOATS(gqa, d, idot))

#endif
