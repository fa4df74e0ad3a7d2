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
 * their loops short (tiles of an item over subgroups, items of a row strided over threads).
 */
#ifndef OSCAR_ATTN_ITEMS_H
#define OSCAR_ATTN_ITEMS_H

#include <stdint.h>

#include "common/attn_chunked.h"
#include "common/attn_decode_cm.h"
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

/* Sets an item's first page ids (page0..2: logical pages begin/P .. begin/P + 2 of its kind)
 * from `table` [max_pages], its sequence's page table of that kind (-1: none; past the table
 * too). ovk_attn_build_items leaves them -1. */
void ovk_attn_item_pages(struct kv_attn_item *item, uint32_t page, const int32_t *table, uint32_t max_pages);

/* ---- the decode kernel's shape per device ---- */
/* What the choice depends on. */
typedef struct ovk_attn_device {
    uint32_t min_subgroup, max_subgroup; /* subgroup sizes a compute kernel may run with */
    uint32_t max_workgroup;              /* invocations of a workgroup */
    uint32_t shared_bytes;               /* shared memory the kernel may use */
    int float16;                         /* packed fp16 arithmetic (shaderFloat16) */
    int idot;                            /* integer dot products enabled and the idot kernel built */
    int cpu;                             /* a CPU device (lavapipe): barriers and shared memory are
                                          * costly there, workgroups kept small */
    int texel;                           /* R32G32B32A32_UINT uniform texel buffers (ctx->texel_buffers) */
    int coopmat;                         /* 1: attn_decode_cm.coopmat runs here (16 x 16 x 16 fp16 matrices);
                                          * 2: only its scalar emulation attn_decode_cm_emu.f16 (fp16
                                          * arithmetic; tests and comparisons, never a default) */
    uint32_t cm_shared_bytes;            /* shared memory the cooperative-matrix kernel may use (the
                                          * device's limit: its walkers need more than the others) */
    int coopmat8;                        /* as coopmat, for attn_decode_cm8 (its products 16 x 8 x 16 with
                                          * the query heads along N): 1 runs here, 2 its emulation
                                          * attn_decode_cm8_emu.f16, 0 neither */
} ovk_attn_device;

/* Overrides (tuning, from the environment): 0 or -1 leave the choice. */
typedef struct ovk_attn_tuning {
    int kernel;       /* 0: chunked, 1: streaming, 2: rows (texel buffers), 3: cooperative matrices, -1: choice */
    int f16;          /* 0: the fp32 variant, 1: packed fp16 where the device has it, -1: choice */
    uint32_t wg, ku, ve, fku;  /* ku: the cooperative-matrix kernel's 16-token blocks a step (1, 2 or 4) */
    int prefetch;     /* KV_SPEC_ATTN_PREFETCH bits 0..3, -1: choice */
    int idot;         /* chunked kernel, INT2 keys: 1 integer dot products where enabled; 0 or -1: fp32 scores */
    uint32_t vu;      /* chunked kernel: value tokens a lane loads at once, 1..16; 0: choice (16 with integer-dot keys, else 8) */
    uint32_t cm_n;    /* cooperative matrices: 16 the 16 x 16 x 16 kernel, 8 the 16 x 8 x 16 one; 0: the choice */
} ovk_attn_tuning;

/* The kernel and its specialization constants (common/attn_push.h, common/attn_chunked.h). */
typedef struct ovk_attn_config {
    int stream;           /* 1: attn_decode (streaming subgroups), 0: attn_decode_chunked or _rows */
    int rows;             /* 1: attn_decode_rows (an invocation per row and query head, texel fetches) */
    int cm;               /* 1: attn_decode_cm.coopmat (cooperative matrices) or its emulation */
    const char *shader;   /* attn_decode[_chunked], with _f16 for packed fp16, .idot for integer dot keys; attn_decode_rows */
    const char *variant;  /* "chunked-fp32", "chunked-f16", "chunked-f16-idot", "stream-fp32", "stream-f16", "rows",
                           * "coopmat", "coopmat8" or their "-emu" */
    int idot;             /* chunked: the integer-dot variant */
    uint32_t wg;
    uint32_t sg_min, ku, ve, fku, prefetch;  /* streaming; sg_min and ku (its TT) the cooperative-matrix kernel's too */
    uint32_t item_tokens, u, vu;             /* chunked: its KV_SPEC_CH_* */
    uint32_t tb;                             /* rows: tokens a round (KV_SPEC_ROWS_TB) */
    uint32_t walkers;                        /* cooperative matrices: subgroups that walk an item */
    uint32_t shared_bytes;
} ovk_attn_config;

/* The one place that picks decode attention's kernel, variant and shape for a device. On a CPU
 * device with texel buffers (or where tune->kernel = 2 asks for it on any device with them):
 * attn_decode_rows, 8-invocation workgroups, 4 tokens a round (lavapipe: 0.14 against 1.9 ms a
 * call for SmolLM2-135M's shapes at 70 tokens, docs/kv-cache.md). Otherwise the
 * kernel: attn_decode_chunked (256 threads, U 1, VU 8 or 16, the longest chunk the shared memory
 * holds), which an H100 ran faster for the INT2 modes at 4K-128K and fp16 mode up to 32K, unless
 * tune->kernel = 1 or the chunk does not fit; else the streaming attn_decode. The arithmetic:
 * packed fp16 where the device has it (tune->f16 = 0 forces the fp32 fallback); with it, INT2
 * keys by integer dot products where tune->idot = 1 asks for them and the device has them (not
 * by default: see the comment in ovk_attn_pick). The streaming
 * kernel's shape: 128-thread workgroups, VE
 * from the GQA ratio (value sums VE * gqa per lane), KU so that a lane loads at most 32 value
 * words a tile, FKU 8 in fp16 mode (fp16_mode != 0: more bytes in flight) and 2 for the INT2
 * modes' short fp16 windows (registers, which the INT2 tiles need). tune->kernel = 3 asks for
 * attn_decode_cm (cooperative matrices; dev->coopmat 2: its scalar emulation), never chosen here
 * (slower than the chunked kernel on an H200 at batch 1, docs/attention-results.md; the cache asks
 * for it for its batched decode steps and its long ones, ovk_attn_cm_step below): 3
 * walking subgroups of the largest size and TT 1 (tune->wg and tune->ku set them), halved while
 * its shared memory does not fit dev->cm_shared_bytes, TT at most SG_MIN / 4; attn_decode_cm8
 * (the query heads along N = 8: 42 fewer registers and 6-8% faster on an H200) where
 * dev->coopmat8 matches dev->coopmat and gqa <= 8, unless tune->cm_n = 16 (where only the
 * emulations run, where tune->cm_n = 8 asks for it). Returns
 * OSCAR_ERROR_UNSUPPORTED (and a message) when no shape fits the device. */
oscar_status ovk_attn_pick(const ovk_attn_device *dev, uint32_t d, uint32_t G, uint32_t P, uint32_t gqa, int centered,
                           int fp16_mode, const ovk_attn_tuning *tune, ovk_attn_config *out);

/* Whether a decode step of `rows` rows that see `visible` tokens in all runs on the cooperative-
 * matrix kernel a cache keeps beside its own for such steps: ATTN_CM_BATCH_ROWS rows or more that
 * see batch_context tokens or fewer on average, or rows that see long_context tokens or more on
 * average (long_context 0: none); the thresholds in kv_cache_impl.h. */
#define ATTN_CM_BATCH_ROWS 16u
int ovk_attn_cm_step(uint64_t rows, uint64_t visible, uint32_t batch_context, uint32_t long_context);

/* Largest chunk attn_decode_chunked scores at once with `wg` threads, `gqa` query heads per KV
 * head, head_dim d, group G and page P within `shared_bytes` of shared memory (idot: the
 * integer-dot variant's): a multiple of 64 tokens, at most OSCAR_ATTN_MAX_ITEM_TOKENS; 0 when
 * not even 64 tokens fit. */
#define OSCAR_ATTN_MAX_ITEM_TOKENS 1024u
uint32_t ovk_attn_item_tokens(uint32_t d, uint32_t G, uint32_t P, uint32_t gqa, uint32_t wg, uint32_t shared_bytes, int idot);

/* Bytes of shared memory the streaming attn_decode declares for a configuration (ATTN_SHARED_FLOATS). */
uint32_t ovk_attn_shared_bytes(const ovk_attn_config *cfg, uint32_t d, uint32_t G, uint32_t P, uint32_t gqa, int centered);

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
