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

/* The tile shape of attn_prefill.coopmat for subgroups of at most `max_sg` threads, workgroups
 * of at most `max_wg` threads and `shared_bytes` of shared memory: rows * gqa pairs in row
 * blocks of 16 (rows a multiple of 16 / gcd(16, gqa)), aiming at 64 pairs (4 row blocks, at
 * most 8) and then at the longest chunk (64, 32 or 16 tokens) that fits; fewer rows when nothing
 * fits. *wg = row blocks * max_sg. Returns the rows (0 with *rows = *chunk = *wg = 0 when no
 * shape fits or d is not a multiple of 16). */
uint32_t ovk_attn_prefill_cm_shape(uint32_t d, uint32_t gqa, uint32_t max_sg, uint32_t max_wg, uint32_t shared_bytes,
                                   uint32_t *rows, uint32_t *chunk, uint32_t *wg);

/* Builds the tiles of one call: runs of rows with the same sequence, at most `rows` long.
 * row_seq, row_n_visible [n_rows]; seq_sink, seq_flushed_end [n_seq] (indexed by row_seq; pass
 * zeros in fp16 mode). tiles_out [max_tiles] may be NULL to count. *n_tiles: tiles needed.
 * Returns OSCAR_ERROR_INVALID_ARGUMENT for rows = 0, a missing array or tiles_out too small. */
oscar_status ovk_attn_build_tiles(const uint32_t *row_seq, const uint32_t *row_n_visible, uint32_t n_rows,
                                    const uint32_t *seq_sink, const uint32_t *seq_flushed_end, uint32_t rows,
                                    struct kv_attn_tile *tiles_out, uint32_t max_tiles, uint32_t *n_tiles);

#endif
