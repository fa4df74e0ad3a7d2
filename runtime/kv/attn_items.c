/* Work items of flash-decoding attention; the contract is in attn_items.h. */
#include <assert.h>

#include "attn_items.h"
#include "error.h"

static_assert(sizeof(struct attn_decode_push) == 16, "attn_decode_push must match the GLSL push block");

/* Appends the items of one range [begin, end) of `kind`, `split` tokens each; counts past
 * max_items without writing. */
static void add_range(uint32_t row, uint32_t kind, uint32_t begin, uint32_t end, uint32_t split,
                      struct kv_attn_item *items, uint32_t max_items, uint32_t *count)
{
    for (uint32_t b = begin; b < end;) {
        uint32_t e = end - b > split ? b + split : end;
        if (items && *count < max_items) items[*count] = (struct kv_attn_item){ row, kind, b, e };
        (*count)++;
        b = e;
    }
}

oscar_status ovk_attn_build_items(const uint32_t *row_seq, const uint32_t *row_n_visible, uint32_t n_rows,
                                    const uint32_t *seq_sink, const uint32_t *seq_flushed_end, uint32_t split,
                                    struct kv_attn_row *rows_out, struct kv_attn_item *items_out,
                                    uint32_t max_items, uint32_t *n_items)
{
    if (!n_items || split == 0 || (n_rows && (!row_seq || !row_n_visible || !seq_sink || !seq_flushed_end)))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "attention items: missing array or split = 0");
    uint32_t count = 0;
    for (uint32_t r = 0; r < n_rows; r++) {
        uint32_t seq = row_seq[r], n = row_n_visible[r];
        uint32_t sink = seq_sink[seq], flushed = seq_flushed_end[seq];
        uint32_t begin = count;
        uint32_t sink_end = sink < n ? sink : n;
        uint32_t int2_end = flushed < n ? flushed : n;
        uint32_t recent_begin = flushed > sink ? flushed : sink;
        add_range(r, KV_ITEM_F16, 0, sink_end, split, items_out, max_items, &count);
        if (int2_end > sink) add_range(r, KV_ITEM_INT2, 0, int2_end - sink, split, items_out, max_items, &count);
        add_range(r, KV_ITEM_F16, recent_begin, n, split, items_out, max_items, &count);
        if (count == begin) { /* nothing visible: one empty item, so the row's merge still runs (and writes 0) */
            if (items_out && count < max_items) items_out[count] = (struct kv_attn_item){ r, KV_ITEM_F16, 0, 0 };
            count++;
        }
        if (rows_out) rows_out[r] = (struct kv_attn_row){ seq, n, begin, count };
    }
    *n_items = count;
    if (items_out && count > max_items)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "attention items: %u needed, room for %u", count, max_items);
    return OSCAR_OK;
}

uint32_t ovk_attn_item_tokens(uint32_t d, uint32_t G, uint32_t P, uint32_t gqa, uint32_t wg, uint32_t shared_bytes)
{
    uint32_t best = 0;
    for (uint64_t item = 64; item <= OSCAR_ATTN_MAX_ITEM_TOKENS; item += 64)
        if (4ull * ATTN_SHARED_FLOATS(item, (uint64_t)gqa, (uint64_t)wg, (uint64_t)d, (uint64_t)G, (uint64_t)P) <= shared_bytes)
            best = (uint32_t)item;
    return best;
}
