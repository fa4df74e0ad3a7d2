/* Tiles of prefill attention; the contract is in attn_tiles.h. */
#include <assert.h>

#include "attn_tiles.h"
#include "error.h"

static_assert(sizeof(struct attn_prefill_push) == 16, "attn_prefill_push must match the GLSL push block");
static_assert(sizeof(struct kv_attn_tile) == 32, "kv_attn_tile must match the GLSL struct");

uint32_t ovk_attn_prefill_shape(uint32_t d, uint32_t gqa, uint32_t wg, uint32_t shared_bytes, uint32_t *rows,
                                  uint32_t *chunk)
{
    *rows = *chunk = 0;
    if (d < 4 || wg == 0 || wg % (d / 4)) return 0;
    for (uint32_t min_chunk = 8; min_chunk >= 4; min_chunk /= 2)
        for (uint64_t r = OSCAR_ATTN_PF_MAX_ROWS; r >= 1; r /= 2) {
            if (r * gqa * d > 64ull * wg) continue; /* accumulators per thread */
            for (uint64_t c = OSCAR_ATTN_PF_MAX_CHUNK; c >= min_chunk; c /= 2)
                if (4ull * ATTN_PF_SHARED_FLOATS(r, c, (uint64_t)gqa, (uint64_t)d) <= shared_bytes) {
                    *rows = (uint32_t)r, *chunk = (uint32_t)c;
                    return *rows;
                }
        }
    return 0;
}

uint64_t ovk_attn_prefill_cm_shared_bytes(uint32_t rows, uint32_t chunk, uint32_t gqa, uint32_t d)
{
    uint64_t m = (uint64_t)rows * gqa, qs = d / 4 + 2, ps = chunk / 4 + 2;
    uint64_t ss = m * chunk > 16ull * d ? m * chunk : 16ull * d;
    return 8 * (2ull * chunk * qs + m * ps) + 4 * (ss + 3 * m + ((rows + 3ull) & ~3ull));
}

uint32_t ovk_attn_prefill_cm_shape(uint32_t d, uint32_t gqa, uint32_t pairs, uint32_t max_sg, uint32_t max_wg,
                                   uint32_t shared_bytes, uint32_t *rows, uint32_t *chunk, uint32_t *wg)
{
    *rows = *chunk = *wg = 0;
    if (d == 0 || d % 16 || gqa == 0 || max_sg == 0 || pairs == 0) return 0;
    uint32_t g = 16, a = gqa; /* gcd(16, gqa) */
    while (a) {
        uint32_t t = g % a;
        g = a, a = t;
    }
    uint32_t unit = 16 / g; /* rows of a whole number of row blocks */
    uint32_t r0 = unit;
    while (r0 * gqa < pairs && (r0 + unit) * gqa <= 128) r0 += unit;
    for (uint32_t r = r0; r >= unit; r -= unit) {
        uint32_t blocks = r * gqa / 16;
        if (blocks > 8 || (uint64_t)blocks * max_sg > max_wg) continue;
        for (uint32_t c = 64; c >= 16; c /= 2)
            if (ovk_attn_prefill_cm_shared_bytes(r, c, gqa, d) <= shared_bytes) {
                *rows = r, *chunk = c, *wg = blocks * max_sg;
                return r;
            }
    }
    return 0;
}

oscar_status ovk_attn_build_tiles(const uint32_t *row_seq, const uint32_t *row_n_visible, uint32_t n_rows,
                                    const uint32_t *seq_sink, const uint32_t *seq_flushed_end, uint32_t rows,
                                    struct kv_attn_tile *tiles_out, uint32_t max_tiles, uint32_t *n_tiles)
{
    if (!n_tiles || rows == 0 || (n_rows && (!row_seq || !row_n_visible || !seq_sink || !seq_flushed_end)))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "attention tiles: missing array or rows = 0");
    uint32_t count = 0;
    for (uint32_t r = 0; r < n_rows;) {
        uint32_t seq = row_seq[r], e = r, nv = 0;
        while (e < n_rows && e - r < rows && row_seq[e] == seq) {
            if (row_n_visible[e] > nv) nv = row_n_visible[e];
            e++;
        }
        if (tiles_out && count < max_tiles)
            tiles_out[count] = (struct kv_attn_tile){ r, e - r, seq, nv, seq_sink[seq], seq_flushed_end[seq], 0, 0 };
        count++;
        r = e;
    }
    *n_tiles = count;
    if (tiles_out && count > max_tiles)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "attention tiles: %u needed, room for %u", count, max_tiles);
    return OSCAR_OK;
}

/* ---- split walks ---- */
/* The walk's ranges as the kernel's range_bounds: [b[i], e[i]) (e[i] <= b[i]: empty). */
static void walk_ranges(const struct kv_attn_tile *t, uint32_t b[3], uint32_t e[3])
{
    uint32_t nv = t->n_visible, sink = t->sink, fe = t->flushed_end;
    int tiered = fe > sink; /* fp16 mode passes sink = flushed_end = 0 */
    b[0] = 0, e[0] = tiered ? (sink < nv ? sink : nv) : nv;
    b[1] = sink, e[1] = tiered ? (fe < nv ? fe : nv) : 0;
    b[2] = fe > sink ? fe : sink, e[2] = tiered ? nv : 0;
}

uint32_t ovk_attn_walk_chunks(const struct kv_attn_tile *tile, uint32_t chunk)
{
    uint32_t b[3], e[3], n = 0;
    walk_ranges(tile, b, e);
    for (int i = 0; i < 3; i++) n += e[i] > b[i] ? (e[i] - b[i] + chunk - 1) / chunk : 0;
    return n;
}

/* First position of chunk k of the walk (its end for k = the walk's chunks). */
static uint32_t chunk_position(const struct kv_attn_tile *t, uint32_t chunk, uint32_t k)
{
    uint32_t b[3], e[3];
    walk_ranges(t, b, e);
    for (int i = 0; i < 3; i++) {
        uint32_t n = e[i] > b[i] ? (e[i] - b[i] + chunk - 1) / chunk : 0;
        if (k < n) return b[i] + k * chunk;
        k -= n;
    }
    return t->n_visible;
}

oscar_status ovk_attn_split_tiles(const struct kv_attn_tile *walks, uint32_t n_walks, uint32_t chunk, uint32_t n_kv,
                                  uint32_t split_below, uint32_t target_groups, uint32_t min_chunks, struct kv_attn_row *rows,
                                  struct kv_attn_tile *tiles_out, uint32_t max_tiles, uint32_t *n_tiles, uint32_t *n_items)
{
    if (!n_tiles || !n_items || chunk == 0 || n_kv == 0 || (n_walks && (!walks || !rows || !tiles_out)))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "split attention tiles: missing array, chunk = 0 or n_kv = 0");
    uint64_t total = 0;
    for (uint32_t i = 0; i < n_walks; i++) total += ovk_attn_walk_chunks(&walks[i], chunk);
    uint64_t pp = (total * n_kv + target_groups - 1) / (target_groups ? target_groups : 1);
    if (pp < min_chunks) pp = min_chunks;
    int split = min_chunks > 0 && (uint64_t)n_walks * n_kv < split_below;
    uint32_t count = 0, items = 0;
    for (uint32_t i = 0; i < n_walks; i++) {
        const struct kv_attn_tile *w = &walks[i];
        uint32_t W = ovk_attn_walk_chunks(w, chunk);
        uint64_t by_work = (W + pp - 1) / pp, by_min = min_chunks ? W / min_chunks : 0;
        uint32_t S = split && by_work > 1 && by_min > 1 ? (uint32_t)(by_work < by_min ? by_work : by_min) : 1;
        for (uint32_t r = w->row_begin; r < w->row_begin + w->n_rows; r++) {
            rows[r].item_begin = S > 1 ? items + (r - w->row_begin) * S : 0;
            rows[r].item_end = S > 1 ? rows[r].item_begin + S : 0;
        }
        if (S > 1) items += w->n_rows * S;
        for (uint32_t s = 0; s < S; s++, count++) {
            if (count >= max_tiles)
                OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "split attention tiles: room for %u", max_tiles);
            tiles_out[count] = *w;
            if (S == 1) continue;
            tiles_out[count].walk_begin = chunk_position(w, chunk, (uint32_t)((uint64_t)s * W / S));
            tiles_out[count].n_visible = chunk_position(w, chunk, (uint32_t)((uint64_t)(s + 1) * W / S));
            tiles_out[count].part = s + 1;
        }
    }
    *n_tiles = count;
    *n_items = items;
    return OSCAR_OK;
}
