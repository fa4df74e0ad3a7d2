/* Work items of flash-decoding attention; the contract is in attn_items.h. */
#include <assert.h>
#include <string.h>

#include "attn_items.h"
#include "error.h"

static_assert(sizeof(struct attn_decode_push) == 20, "attn_decode_push must match the GLSL push block");
static_assert(sizeof(struct attn_rows_push) == 20, "attn_rows_push must match the GLSL push block");

/* Appends the items of one range [begin, end) of `kind`, `split` tokens each; counts past
 * max_items without writing. */
static void add_range(uint32_t row, uint32_t seq, uint32_t kind, uint32_t begin, uint32_t end, uint32_t split,
                      struct kv_attn_item *items, uint32_t max_items, uint32_t *count)
{
    for (uint32_t b = begin; b < end;) {
        uint32_t e = end - b > split ? b + split : end;
        if (items && *count < max_items) items[*count] = (struct kv_attn_item){ row, kind, b, e, seq, -1, -1, -1 };
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
        add_range(r, seq, KV_ITEM_F16, 0, sink_end, split, items_out, max_items, &count);
        if (int2_end > sink) add_range(r, seq, KV_ITEM_INT2, 0, int2_end - sink, split, items_out, max_items, &count);
        add_range(r, seq, KV_ITEM_F16, recent_begin, n, split, items_out, max_items, &count);
        if (count == begin) { /* nothing visible: one empty item, so the row's merge still runs (and writes 0) */
            if (items_out && count < max_items) items_out[count] = (struct kv_attn_item){ r, KV_ITEM_F16, 0, 0, seq, -1, -1, -1 };
            count++;
        }
        if (rows_out) rows_out[r] = (struct kv_attn_row){ seq, n, begin, count };
    }
    *n_items = count;
    if (items_out && count > max_items)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "attention items: %u needed, room for %u", count, max_items);
    return OSCAR_OK;
}

void ovk_attn_item_pages(struct kv_attn_item *item, uint32_t page, const int32_t *table, uint32_t max_pages)
{
    int32_t *dst[KV_ITEM_PAGES] = { &item->page0, &item->page1, &item->page2 };
    for (uint32_t i = 0; i < KV_ITEM_PAGES; i++) {
        uint64_t lp = (uint64_t)item->begin / page + i;
        *dst[i] = lp < max_pages ? table[lp] : -1;
    }
}

/* ---- the decode kernel's shape ---- */
uint32_t ovk_attn_item_tokens(uint32_t d, uint32_t G, uint32_t P, uint32_t gqa, uint32_t wg, uint32_t shared_bytes, int idot)
{
    uint32_t best = 0;
    for (uint64_t item = 64; item <= OSCAR_ATTN_MAX_ITEM_TOKENS; item += 64)
        if (4ull * ATTN_CH_SHARED_FLOATS(item, (uint64_t)gqa, (uint64_t)wg, (uint64_t)d, (uint64_t)G, (uint64_t)P,
                                         (uint64_t)(idot != 0)) <= shared_bytes)
            best = (uint32_t)item;
    return best;
}

uint32_t ovk_attn_shared_bytes(const ovk_attn_config *cfg, uint32_t d, uint32_t G, uint32_t P, uint32_t gqa, int centered)
{
    uint64_t wg = cfg->wg, sgmin = cfg->sg_min, ku = cfg->ku, ve = cfg->ve;
    uint64_t f16 = strcmp(cfg->variant, "stream-f16") == 0;
    uint64_t floats = ATTN_SHARED_FLOATS(wg, sgmin, (uint64_t)d, (uint64_t)G, (uint64_t)P, (uint64_t)gqa, ku, ve, f16,
                                         (uint64_t)(centered != 0));
    return floats * 4 > UINT32_MAX ? UINT32_MAX : (uint32_t)(floats * 4);
}

static int is_pow2(uint32_t x) { return x && !(x & (x - 1)); }

oscar_status ovk_attn_pick(const ovk_attn_device *dev, uint32_t d, uint32_t G, uint32_t P, uint32_t gqa, int centered,
                           int fp16_mode, const ovk_attn_tuning *tune, ovk_attn_config *out)
{
    ovk_attn_config c = { 0 };
    int f16 = (tune->f16 >= 0 ? tune->f16 : 1) && dev->float16;
    /* the rows kernel: no shared memory, no barrier, fp32; a workgroup of 8 invocations (one
     * SIMD group of llvmpipe's), 4 tokens a round */
    if ((tune->kernel == 2 || (tune->kernel < 0 && dev->cpu)) && dev->texel) {
        c.rows = 1;
        c.shader = "attn_decode_rows";
        c.variant = "rows";
        c.wg = tune->wg ? tune->wg : 8;
        if (c.wg > dev->max_workgroup) c.wg = dev->max_workgroup;
        c.tb = tune->ku >= 1 && tune->ku <= 4 ? tune->ku : 4;
        *out = c;
        return OSCAR_OK;
    }
    /* the cooperative-matrix kernel where asked for and the device runs it (or its emulation):
     * walker subgroups of the largest size, TT 16-token blocks a step */
    if (tune->kernel == 3) {
        if (!dev->coopmat || (dev->coopmat == 2 && dev->min_subgroup < 4) || gqa > 16 || d % 64 || !G || d % G ||
            G % 16 || !is_pow2(dev->min_subgroup) || !is_pow2(dev->max_subgroup) || dev->max_subgroup < dev->min_subgroup)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "decode attention on cooperative matrices: not on this device "
                               "(16 x 16 x 16 fp16 matrices, subgroup sizes %u..%u), %u query heads per KV head (at most 16) or "
                               "head_dim %u (a multiple of 64) with group %u", dev->min_subgroup, dev->max_subgroup, gqa, d, G);
        c.cm = 1;
        /* the query heads along N = 8 where the device has those products: half the accumulator
         * and Q registers of N = 16; where only the emulations run, when asked for (tests: a new
         * emulated shape costs lavapipe minutes of compiling) */
        int n8 = tune->cm_n != 16 && gqa <= 8 && dev->coopmat8 == dev->coopmat && (dev->coopmat == 1 || tune->cm_n == 8);
        if (tune->cm_n == 8 && !n8)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "decode attention on 16 x 8 x 16 cooperative matrices: not on this "
                               "device, or %u query heads per KV head (at most 8)", gqa);
        c.shader = dev->coopmat == 1 ? (n8 ? "attn_decode_cm8.coopmat" : "attn_decode_cm.coopmat")
                                     : (n8 ? "attn_decode_cm8_emu.f16" : "attn_decode_cm_emu.f16");
        c.variant = dev->coopmat == 1 ? (n8 ? "coopmat8" : "coopmat") : (n8 ? "coopmat8-emu" : "coopmat-emu");
        c.sg_min = dev->min_subgroup;
        /* 3 walkers and TT 1 by default (the H200's best: 140.5-140.9 us at 128K against 164.0 with
         * 4 walkers and 160.3 with TT 2, whose 205 registers a thread cost more than its steps'
         * fixed costs saved; docs/attention-results.md); walkers and TT halve until the shared
         * memory fits, TT first; the workgroup is the walkers' subgroups, at least d/4 threads for
         * the merge */
        c.walkers = tune->wg ? (tune->wg / dev->max_subgroup ? tune->wg / dev->max_subgroup : 1) : 3;
        /* TT a power of two with a head's 4 TT softmax entries within the smallest subgroup */
        c.ku = tune->ku == 1 || tune->ku == 2 || tune->ku == 4 ? tune->ku : 1;
        while (c.ku > 1 && 4 * c.ku > c.sg_min) c.ku /= 2;
        for (;;) {
            c.wg = c.walkers * dev->max_subgroup;
            while (c.wg % (d / 4)) c.wg *= 2; /* the merge: a multiple of d/4 (both powers of two) */
            if (c.walkers > c.wg / c.sg_min) c.walkers = c.wg / c.sg_min;
            uint64_t bytes = ATTN_CM_SHARED_BYTES((uint64_t)c.wg, (uint64_t)c.walkers, (uint64_t)c.ku, (uint64_t)gqa, (uint64_t)d,
                                                  (uint64_t)G);
            c.shared_bytes = bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)bytes;
            if (c.shared_bytes <= dev->cm_shared_bytes || (c.ku == 1 && c.walkers == 1)) break;
            if (c.ku > 1) c.ku /= 2;
            else c.walkers /= 2;
        }
        if (c.shared_bytes > dev->cm_shared_bytes || c.wg > dev->max_workgroup || c.wg % (d / 4))
            OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "decode attention on cooperative matrices: head_dim %u with %u query "
                               "heads per KV head needs more than the %u bytes of shared memory or %u invocations the device "
                               "allows", d, gqa, dev->cm_shared_bytes, dev->max_workgroup);
        *out = c;
        return OSCAR_OK;
    }
    /* the chunked kernel where it fits, unless the streaming one is asked for */
    if (tune->kernel != 1) {
        /* 256 threads (two workgroups an SM on big GPUs); 64 on a CPU, where lavapipe runs a
         * workgroup as one thread switching between its SIMD groups at every barrier: 2.2-3x
         * faster there than 256 at 128 to 4K tokens, 1.7x faster than 128 (docs/kv-cache.md) */
        c.wg = tune->wg ? tune->wg : dev->cpu ? 64 : 256;
        if (c.wg > dev->max_workgroup || c.wg % (d / 4)) c.wg = 128;
        c.u = tune->ku >= 1 && tune->ku <= 4 ? tune->ku : 1;
        /* integer-dot keys only when asked for: with q in two levels of int8 they hold the accuracy
         * policy but take the kernel past 128 registers, slower than fp32 keys on an H100 */
        c.idot = f16 && !fp16_mode && d % 32 == 0 && tune->idot == 1 && dev->idot;
        /* 16 value tokens a lane in flight with integer-dot keys (the H100's best of 8, 12 and 16) */
        c.vu = tune->vu >= 1 && tune->vu <= 16 ? tune->vu : c.idot ? 16 : 8;
        c.item_tokens = ovk_attn_item_tokens(d, G, P, gqa, c.wg, dev->shared_bytes, c.idot);
        if (c.item_tokens && c.wg <= dev->max_workgroup && c.wg % (d / 4) == 0) {
            c.shader = c.idot ? "attn_decode_chunked_f16.idot" : f16 ? "attn_decode_chunked_f16" : "attn_decode_chunked";
            c.variant = c.idot ? "chunked-f16-idot" : f16 ? "chunked-f16" : "chunked-fp32";
            c.shared_bytes = 4 * ATTN_CH_SHARED_FLOATS(c.item_tokens, gqa, c.wg, d, G, P, c.idot);
            *out = c;
            return OSCAR_OK;
        }
        memset(&c, 0, sizeof c);
    }
    c.stream = 1;
    c.variant = f16 ? "stream-f16" : "stream-fp32";
    c.shader = f16 ? "attn_decode_f16" : "attn_decode";
    c.sg_min = dev->min_subgroup;
    if (!is_pow2(c.sg_min) || c.sg_min < 4 || dev->max_subgroup < c.sg_min)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "decode attention: subgroup sizes %u..%u (needs powers of two from 4)",
                           dev->min_subgroup, dev->max_subgroup);
    /* values: VE elements a lane for every query head; keys: a lane loads at most 32 value words a tile */
    c.ve = tune->ve == 4 || tune->ve == 8 || tune->ve == 16 ? tune->ve : gqa <= 2 ? 16 : gqa <= 4 ? 8 : 4;
    uint32_t ns = d / c.ve, ku = 32 / ns;
    c.ku = tune->ku >= 1 && tune->ku <= 4 ? tune->ku : ku < 1 ? 1 : ku > 2 ? 2 : ku;
    c.fku = tune->fku >= 1 && tune->fku <= 8 ? tune->fku : !fp16_mode ? 2 : d <= 128 ? 8 : 4;
    c.prefetch = tune->prefetch >= 0 && tune->prefetch <= 3 ? (uint32_t)tune->prefetch : 3;
    /* 128 threads (a multiple of d/4 for the merge and of the largest subgroup), halved while the
     * shared memory does not fit */
    uint32_t wg = tune->wg ? tune->wg : 128;
    uint32_t step = d / 4 > dev->max_subgroup ? d / 4 : dev->max_subgroup;
    if (wg % step) wg = (wg / step + 1) * step;
    for (c.wg = wg; c.wg >= step; c.wg /= 2) {
        if (c.wg > dev->max_workgroup || c.wg % step) continue;
        c.shared_bytes = ovk_attn_shared_bytes(&c, d, G, P, gqa, centered);
        if (c.shared_bytes <= dev->shared_bytes) break;
    }
    if (c.wg < step || c.wg > dev->max_workgroup || c.shared_bytes > dev->shared_bytes)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "decode attention: %u query heads per KV head of head_dim %u need more than "
                           "the %u bytes of shared memory or %u invocations the device allows", gqa, d, dev->shared_bytes,
                           dev->max_workgroup);
    *out = c;
    return OSCAR_OK;
}

int ovk_attn_cm_step(uint64_t rows, uint64_t visible, uint32_t batch_context, uint32_t long_context)
{
    return rows && ((rows >= ATTN_CM_BATCH_ROWS && visible <= rows * batch_context) ||
                    (long_context && visible >= rows * long_context));
}
