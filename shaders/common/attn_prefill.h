/* Prefill attention (shaders/attn_prefill.comp): its tile struct, push constants, own
 * specialization constants and shared-memory size, shared by C and GLSL like kv_layout.h
 * (32-bit fields only; C checks the sizes in runtime/kv/attn_tiles.c).
 *
 * A tile is a run of up to ROWS query rows of one sequence (usually consecutive new tokens of
 * a prefill chunk). One workgroup per (tile, KV head) walks the sequence's visible tokens in
 * chunks of CHUNK tokens, loads each chunk's K and V once into shared memory (fp32) and uses
 * them for all ROWS x GQA (row, query head) pairs of the tile. */
#ifndef OSCAR_ATTN_PREFILL_H
#define OSCAR_ATTN_PREFILL_H

#include "common/kv_layout.h"

/* Specialization-constant ids of attn_prefill (after kv_layout.h's 0..6, kv_write.h's 7..9
 * and attn_decode's 10). */
#define KV_SPEC_PF_ROWS 11  /* ROWS: query rows per tile (1..32) */
#define KV_SPEC_PF_CHUNK 12 /* CHUNK: tokens loaded into shared memory at once */
#define ATTN_PF_N_SPEC 18   /* n_spec covering every id attn_prefill reads */

/* attn_prefill's shared memory in floats for `rows` rows per tile, `chunk` tokens per chunk,
 * gqa query heads per KV head and head_dim d: q (then the output o) [rows*gqa][d], K
 * [chunk][d + 4] (rows padded against bank conflicts), V [chunk][d], scores/p
 * [rows*gqa][chunk], running max, sum and rescale factor [rows*gqa] each, causal limits [rows]. */
#define ATTN_PF_SHARED_FLOATS(rows, chunk, gqa, d) \
    ((rows) * (gqa) * (d) + (chunk) * ((d) + 4) + (chunk) * (d) + (rows) * (gqa) * (chunk) + 3 * (rows) * (gqa) + (rows))

/* One tile: rows [row_begin, row_begin + n_rows) of the step, all of sequence `seq`. Where
 * the sequence's tokens live (kv_layout.h): INT2 for sink <= p < flushed_end (set both to 0
 * in fp16 mode), fp16 otherwise. The workgroup walks positions [walk_begin, n_visible).
 *
 * A whole walk (part = 0): walk_begin = 0, n_visible = the largest causal limit of the tile's
 * rows; the workgroup writes the output. A part of a split walk (part = s + 1, only
 * attn_prefill.coopmat and its emulation take these; attn_prefill.comp reads neither field):
 * positions [walk_begin, n_visible), both the first positions of chunks of the whole walk (or
 * its end), so that the part's chunks are the whole walk's; the workgroup writes the partial
 * (m, l, unnormalised o) of row r of the tile to item rows[row_begin + r].item_begin + s, and
 * attn_prefill_merge combines the row's items (ovk_attn_split_tiles, runtime/kv/attn_tiles.h).
 * 32 bytes. */
struct kv_attn_tile {
    KV_U32 row_begin;
    KV_U32 n_rows;       /* 1..ROWS */
    KV_U32 seq;          /* sequence slot: index into the page tables */
    KV_U32 n_visible;    /* end of the walk: max over the tile's rows of kv_attn_row.n_visible, or the part's end */
    KV_U32 sink;         /* positions */
    KV_U32 flushed_end;
    KV_U32 walk_begin;   /* first position of the walk (0 unless a part of a split walk) */
    KV_U32 part;         /* 0: the whole walk; s + 1: part s of a split walk */
};

/* attn_prefill push constants: one workgroup per (tile, KV head). 16 bytes. */
struct attn_prefill_push {
    KV_U32 n_tiles;        /* tiles in the tiles buffer; the grid may overshoot it */
    KV_U32 max_int2_pages; /* row width of the INT2 page table */
    KV_U32 max_f16_pages;  /* row width of the fp16 page table */
    KV_F32 scale;          /* logit scale applied to q (usually 1/sqrt(d)) */
};

#endif
