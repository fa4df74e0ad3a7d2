/* Host-side planning of flash-decoding attention: which work items (kv_attn_item) each query
 * row (kv_attn_row) is split into, and the grid shape of shaders/attn_decode.comp. Pure C, no
 * Vulkan: the cache (runtime) and the tests share it.
 *
 * Where the tokens of a sequence live (kv_layout.h): position p is INT2 when
 * sink <= p < flushed_end (INT2 index j = p - sink), fp16 otherwise. A row sees positions
 * [0, n_visible). Its items, in this order, each at most `split` tokens long:
 *   fp16  positions [0, min(sink, n_visible))                          (attention sinks)
 *   INT2  indices   [0, max(0, min(flushed_end, n_visible) - sink))    (quantized middle)
 *   fp16  positions [max(flushed_end, sink), n_visible)                (recent window)
 * Empty ranges produce no item; a row with n_visible = 0 gets one empty item (begin = end), so
 * every row has at least one item and attn_decode's merge (by the row's last workgroup) runs.
 * fp16 mode is sink = flushed_end = 0: the whole row is one fp16 range. flushed_end < sink
 * (nothing flushed yet, whichever way the cache counts it) means no INT2 range.
 *
 * Choosing split: enough items for the GPU (n_items * n_kv >= a few workgroups per compute
 * unit), and few enough items that the partials stay small (prefill rows see long contexts).
 * Lavapipe ends any shader loop after 65535 iterations per invocation: the kernels keep
 * their loops short (chunks of the item, items of a row strided over threads).
 */
#ifndef OSCAR_ATTN_ITEMS_H
#define OSCAR_ATTN_ITEMS_H

#include <stdint.h>

#include "common/attn_push.h"
#include "common/kv_layout.h"
#include "oscar/oscar.h"

/* Largest number of workgroups in one grid dimension every Vulkan device accepts. */
#define OSCAR_ATTN_MAX_GROUPS_X 65535u

/* Builds the rows and work items of one attention call.
 * row_seq, row_n_visible [n_rows]: each query row's sequence slot and causal limit.
 * seq_sink, seq_flushed_end [n_seq]: per sequence slot (indexed by row_seq), in positions.
 * split: largest item, in tokens (> 0).
 * rows_out [n_rows]: filled (seq, n_visible, item_begin, item_end); may be NULL when counting.
 * items_out [max_items]: filled in row order; NULL counts only.
 * *n_items: number of items (needed count when items_out is NULL).
 * Returns OSCAR_ERROR_INVALID_ARGUMENT for split = 0, a missing array, or items_out too small. */
oscar_status ovk_attn_build_items(const uint32_t *row_seq, const uint32_t *row_n_visible, uint32_t n_rows,
                                    const uint32_t *seq_sink, const uint32_t *seq_flushed_end, uint32_t split,
                                    struct kv_attn_row *rows_out, struct kv_attn_item *items_out,
                                    uint32_t max_items, uint32_t *n_items);

/* Largest chunk attn_decode scores at once with `wg` threads, `gqa` query heads per KV head,
 * head_dim d, group G and page P within `shared_bytes` of shared memory: a multiple of 64
 * tokens, at most OSCAR_ATTN_MAX_ITEM_TOKENS; 0 when not even 64 tokens fit (GQA too large for
 * the device). The pipeline takes it as its KV_SPEC_ITEM_TOKENS constant; longer items are
 * processed in chunks of it. */
#define OSCAR_ATTN_MAX_ITEM_TOKENS 1024u
uint32_t ovk_attn_item_tokens(uint32_t d, uint32_t G, uint32_t P, uint32_t gqa, uint32_t wg, uint32_t shared_bytes);

/* Grid covering n workgroups in x (at most OSCAR_ATTN_MAX_GROUPS_X) and z, with y as given:
 * the shaders compute their index as x + z * num_groups_x and skip indices >= n. */
static inline void ovk_attn_grid(uint32_t n, uint32_t y, uint32_t groups[3])
{
    uint32_t x = n < OSCAR_ATTN_MAX_GROUPS_X ? n : OSCAR_ATTN_MAX_GROUPS_X;
    if (x == 0) x = 1;
    groups[0] = x;
    groups[1] = y;
    groups[2] = (n + x - 1) / x;
    if (groups[2] == 0) groups[2] = 1;
}

#endif
