/* Host-side planning of prefill attention (shaders/attn_prefill.comp): the shape of its tiles
 * and chunks, and the tiles of a step. Pure C, no Vulkan: the cache (runtime) and the tests
 * share it.
 *
 * A tile is a run of up to `rows` consecutive query rows of one sequence; a sequence with one
 * row in the step is a tile of one row. One workgroup per (tile, KV head) loads each chunk of
 * the sequence's K and V once and uses it for every (row, query head) pair of the tile, so a
 * prefill chunk reads the history about `rows` times less often than one row at a time. */
#ifndef OSCAR_ATTN_TILES_H
#define OSCAR_ATTN_TILES_H

#include <stdint.h>

#include "common/attn_prefill.h"
#include "common/kv_layout.h"
#include "oscar/oscar.h"

#define OSCAR_ATTN_PF_MAX_ROWS 32u
#define OSCAR_ATTN_PF_MAX_CHUNK 64u

/* Rows per tile and tokens per chunk of attn_prefill with `wg` threads, `gqa` query heads per
 * KV head and head_dim d within `shared_bytes` of shared memory (ATTN_PF_SHARED_FLOATS): the
 * most rows (32, 16, ..., 1) for which a chunk of at least 8 tokens fits (else 4), then the
 * longest chunk (64, 32, ..., 4) that fits with them; the value accumulators
 * (rows * gqa * d / wg floats per thread) stay at most 64. Returns 0 (and *rows = *chunk = 0)
 * when nothing fits or wg is not a multiple of d/4; the cache then keeps attn_decode. */
uint32_t ovk_attn_prefill_shape(uint32_t d, uint32_t gqa, uint32_t wg, uint32_t shared_bytes, uint32_t *rows,
                                  uint32_t *chunk);

/* Shared memory of attn_prefill.coopmat (and its emulation) in bytes for `rows` rows per tile,
 * `chunk` tokens per chunk, gqa and d (common/attn_prefill_cm_body.glsl's arrays). */
uint64_t ovk_attn_prefill_cm_shared_bytes(uint32_t rows, uint32_t chunk, uint32_t gqa, uint32_t d);

/* The (row, query head) pairs a workgroup of attn_prefill.coopmat aims at: each dequantized chunk
 * of K and V then serves 128 rows of the matrices. */
#define OVK_ATTN_PF_CM_PAIRS 128u

/* The tile shape of attn_prefill.coopmat for subgroups of at most `max_sg` threads, workgroups
 * of at most `max_wg` threads and `shared_bytes` of shared memory: rows * gqa pairs in row
 * blocks of 16 (rows a multiple of 16 / gcd(16, gqa)), aiming at `pairs` pairs (at most 128,
 * 8 row blocks) and then at the longest chunk (64, 32 or 16 tokens) that fits; fewer rows when
 * nothing fits. *wg = row blocks * max_sg. Returns the rows (0 with *rows = *chunk = *wg = 0
 * when no shape fits, pairs is 0 or d is not a multiple of 16). */
uint32_t ovk_attn_prefill_cm_shape(uint32_t d, uint32_t gqa, uint32_t pairs, uint32_t max_sg, uint32_t max_wg,
                                   uint32_t shared_bytes, uint32_t *rows, uint32_t *chunk, uint32_t *wg);

/* Builds the tiles of one call: runs of rows with the same sequence, at most `rows` long.
 * row_seq, row_n_visible [n_rows]; seq_sink, seq_flushed_end [n_seq] (indexed by row_seq; pass
 * zeros in fp16 mode). tiles_out [max_tiles] may be NULL to count. *n_tiles: tiles needed.
 * Returns OSCAR_ERROR_INVALID_ARGUMENT for rows = 0, a missing array or tiles_out too small. */
oscar_status ovk_attn_build_tiles(const uint32_t *row_seq, const uint32_t *row_n_visible, uint32_t n_rows,
                                    const uint32_t *seq_sink, const uint32_t *seq_flushed_end, uint32_t rows,
                                    struct kv_attn_tile *tiles_out, uint32_t max_tiles, uint32_t *n_tiles);

/* ---- split walks (attn_prefill.coopmat and its emulation only) ----
 * A step with few tiles gives the GPU few workgroups (one per tile and KV head), each walking
 * the whole history. Where that is fewer than split_below, ovk_attn_split_tiles cuts long walks
 * into parts of whole chunks, aiming at target_groups workgroups, one workgroup per (part, KV head), and the parts' partials are
 * merged per row afterwards (shaders/attn_prefill_merge.comp). The rule, with W_t the chunks of
 * tile t's walk (ovk_attn_walk_chunks) and n_kv the KV heads:
 *   - no split when n_tiles * n_kv >= split_below or min_chunks = 0;
 *   - else, with pp = max(min_chunks, ceil(sum_t W_t * n_kv / target_groups)) the chunks a
 *     workgroup would walk at target_groups, tile t is cut into
 *     S_t = max(1, min(ceil(W_t / pp), floor(W_t / min_chunks))) parts of floor or ceil of
 *     W_t / S_t chunks, in walk order (S_t = 1: the tile stays whole).
 * So work is spread evenly (a tile's parts in proportion to its history), a part holds at least
 * min_chunks chunks (short prompts and decode never split), and the parts added, sum of
 * S_t - 1 < sum W_t / pp, are at most floor(target_groups / n_kv): the step ends with at most
 * about n_tiles * n_kv + target_groups workgroups, and OVK_ATTN_SPLIT_MAX_TILES and
 * OVK_ATTN_SPLIT_MAX_ITEMS bound its tiles and items for buffers sized once (the rows of split
 * tiles, at most min(step rows, rows * added parts), have one item more than their added parts). */

/* Chunks of `chunk` tokens in a tile's walk (ranges as the kernel cuts them: fp16 sinks, INT2
 * middle, fp16 recent window, each from its own first position). */
uint32_t ovk_attn_walk_chunks(const struct kv_attn_tile *tile, uint32_t chunk);

/* Tiles and items a split step may need at most: `walks` tiles of at most `rows` rows each,
 * `step_rows` rows in all. */
#define OVK_ATTN_SPLIT_MAX_TILES(walks, n_kv, target) ((uint64_t)(walks) + (target) / (n_kv))
#define OVK_ATTN_SPLIT_MAX_ITEMS(rows, step_rows, n_kv, target)                                        \
    ((uint64_t)(rows) * ((target) / (n_kv)) +                                                          \
     ((uint64_t)(step_rows) < (uint64_t)(rows) * ((target) / (n_kv)) ? (uint64_t)(step_rows)           \
                                                                     : (uint64_t)(rows) * ((target) / (n_kv))))

/* Cuts the whole walks walks[n_walks] (ovk_attn_build_tiles) by the rule above into tiles_out
 * [max_tiles] (a tile's parts consecutive, part = s + 1, walk_begin and n_visible the part's
 * positions; unsplit tiles as they were), and gives each row of a split tile its items:
 * rows[row].item_begin .. item_end, one per part, numbered from 0 over the step (rows of unsplit
 * tiles get item_begin = item_end = 0). rows [n_rows of the step] (seq and n_visible untouched).
 * *n_tiles: tiles written; *n_items: items (0: nothing split, no merge needed). Returns
 * OSCAR_ERROR_INVALID_ARGUMENT for chunk = 0, n_kv = 0, a missing array or tiles_out too small. */
oscar_status ovk_attn_split_tiles(const struct kv_attn_tile *walks, uint32_t n_walks, uint32_t chunk, uint32_t n_kv,
                                  uint32_t split_below, uint32_t target_groups, uint32_t min_chunks, struct kv_attn_row *rows,
                                  struct kv_attn_tile *tiles_out, uint32_t max_tiles, uint32_t *n_tiles, uint32_t *n_items);

#endif
