/* The KV cache's zones on the GPU (kv_pages.h cuts the page pools into zones that each fit one
 * storage binding; a sequence's pages all lie in its zone): each kernel that reads or writes the
 * pools is dispatched once a zone, over the window of the pools that zone's pages fill. For that
 * the step's append and flush slots, attention items and prefill tiles are grouped by zone, each
 * group starting at an element whose byte offset the device's storage-buffer alignment allows,
 * and the page ids the GPU sees (tables, slots, items) are zone-local. With one zone every group
 * is the whole array, in its order, and the ids are unchanged. */
#include <string.h>

#include "kv_cache_impl.h"

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b, b = t;
    }
    return a;
}

uint32_t ovk_kv_align_elems(const oscar_kv_cache *c, uint64_t elem_bytes)
{
    uint64_t align = c->ctx->limits.minStorageBufferOffsetAlignment ? c->ctx->limits.minStorageBufferOffsetAlignment : 1;
    return (uint32_t)(align / gcd64(align, elem_bytes));
}

/* Zeroes arr's elements of elem bytes from `at` up to the next multiple of align (padding that
 * no dispatch reads); returns that multiple, where the next group starts. */
static uint32_t pad_group(void *arr, size_t elem, uint32_t at, uint32_t align)
{
    uint32_t to = (at + align - 1) / align * align;
    memset((char *)arr + (size_t)at * elem, 0, (size_t)(to - at) * elem);
    return to;
}

static const kv_pool *pool_of(const oscar_kv_cache *c, uint32_t kind) { return kind == KV_ITEM_INT2 ? &c->book.int2 : &c->book.f16; }

ovk_binding ovk_kv_zone_pool(const oscar_kv_cache *c, uint32_t kind, uint32_t layer, uint32_t zone)
{
    const kv_pool *p = pool_of(c, kind);
    const ovk_buffer *buf = kind == KV_ITEM_INT2 ? &c->int2_pool[layer] : &c->f16_pool[layer];
    uint64_t bytes = kind == KV_ITEM_INT2 ? c->int2_page_bytes : c->f16_page_bytes, first = (uint64_t)zone * p->zone_pages;
    if (p->n_zones <= 1 || p->n_pages == 0) return (ovk_binding){ buf, 0, 0 }; /* the whole pool (none in fp16 mode) */
    return (ovk_binding){ buf, first * bytes, (uint64_t)p->zone_pages * bytes }; /* the cache's zones are whole */
}

static uint32_t zone_of_page(const oscar_kv_cache *c, uint32_t kind, uint32_t page) { return page / pool_of(c, kind)->zone_pages; }

int32_t ovk_kv_local_page(const oscar_kv_cache *c, uint32_t kind, int32_t page)
{
    const kv_pool *p = pool_of(c, kind);
    return page < 0 ? page : (int32_t)((uint32_t)page % p->zone_pages);
}

uint32_t ovk_kv_zone_slots(const oscar_kv_cache *c, const struct kv_token_slot *src, uint32_t n, int flush,
                           kv_zone_range *ranges, struct kv_token_slot *dst)
{
    uint32_t at = 0;
    for (uint32_t z = 0; z < ovk_kv_n_zones(c); z++) {
        ranges[z].first = at = pad_group(dst, sizeof *dst, at, c->slot_align);
        for (uint32_t i = 0; i < n; i++) {
            /* append: dst_page is fp16; flush: src_row is the fp16 page, dst_page the INT2 page */
            uint32_t f16_page = flush ? src[i].src_row : src[i].dst_page;
            if (zone_of_page(c, KV_ITEM_F16, f16_page) != z) continue;
            struct kv_token_slot s = src[i];
            if (flush) {
                s.src_row = (uint32_t)ovk_kv_local_page(c, KV_ITEM_F16, (int32_t)s.src_row);
                s.dst_page = (uint32_t)ovk_kv_local_page(c, KV_ITEM_INT2, (int32_t)s.dst_page);
            } else
                s.dst_page = (uint32_t)ovk_kv_local_page(c, KV_ITEM_F16, (int32_t)s.dst_page);
            dst[at++] = s;
        }
        ranges[z].count = at - ranges[z].first;
    }
    return at;
}

void ovk_kv_zone_items(oscar_kv_cache *c, struct kv_attn_item *scratch)
{
    uint32_t n_rows = c->book.plan.n_tokens;
    if (ovk_kv_n_zones(c) <= 1) {
        c->z_items[0] = (kv_zone_range){ 0, c->n_items };
        return;
    }
    /* a row's items are consecutive and of its sequence's zone: rows in turn, into their zone's group */
    uint32_t at = 0;
    for (uint32_t z = 0; z < ovk_kv_n_zones(c); z++) {
        c->z_items[z].first = at = pad_group(scratch, sizeof *scratch, at, c->item_align);
        for (uint32_t r = 0; r < n_rows; r++) {
            struct kv_attn_row *row = &c->h_rows[r];
            if (c->book.seqs[row->seq].zone != z) continue;
            uint32_t begin = at - c->z_items[z].first;
            for (uint32_t i = row->item_begin; i < row->item_end; i++) {
                struct kv_attn_item it = c->h_items[i];
                uint32_t kind = it.kind == KV_ITEM_INT2 ? KV_ITEM_INT2 : KV_ITEM_F16;
                it.page0 = ovk_kv_local_page(c, kind, it.page0);
                it.page1 = ovk_kv_local_page(c, kind, it.page1);
                it.page2 = ovk_kv_local_page(c, kind, it.page2);
                scratch[at++] = it;
            }
            row->item_begin = begin, row->item_end = at - c->z_items[z].first;
        }
        c->z_items[z].count = at - c->z_items[z].first;
    }
    memcpy(c->h_items, scratch, at * sizeof *scratch);
    c->n_items = at;
}

void ovk_kv_zone_tiles(oscar_kv_cache *c, struct kv_attn_tile *scratch)
{
    if (ovk_kv_n_zones(c) <= 1) {
        c->z_tiles[0] = (kv_zone_range){ 0, c->n_tiles };
        return;
    }
    uint32_t at = 0;
    for (uint32_t z = 0; z < ovk_kv_n_zones(c); z++) {
        c->z_tiles[z].first = at = pad_group(scratch, sizeof *scratch, at, c->tile_align);
        for (uint32_t t = 0; t < c->n_tiles; t++)
            if (c->book.seqs[c->h_tiles[t].seq].zone == z) scratch[at++] = c->h_tiles[t];
        c->z_tiles[z].count = at - c->z_tiles[z].first;
    }
    memcpy(c->h_tiles, scratch, at * sizeof *scratch);
    c->n_tiles = at;
}
