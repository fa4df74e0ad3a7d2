/* The KV cache's own view of itself: the object, its tuning constants and the helpers its
 * files share (kv_create.c: checks, sizing, buffers and pipelines; kv_step.c: sequences, step
 * planning and recording). Not for other rooms: they use kv_cache.h. */
#ifndef OVK_KV_CACHE_IMPL_H
#define OVK_KV_CACHE_IMPL_H

#include <assert.h>

#include "attn_items.h"
#include "attn_tiles.h"
#include "common/attn_push.h"
#include "common/kv_write.h"
#include "kv_cache.h"
#include "oscar/experimental.h"

/* Workgroup sizes (any value works; these suit big GPUs and lavapipe alike, but WG_ROTATE). */
#define WG_WRITE 64u
#define WG_APPEND_ROT 128u /* kv_append in the rotated modes: all load R; with 32 pairs, 4 tokens a pass */
#define APPEND_SHARED_BYTES 40960u /* kv_append, rotated modes: the most shared memory a workgroup takes */
#define APPEND_TOKEN_GROUPS 256u /* kv_append, rotated modes: token groups (each loads its part of R once) */
#define WG_ATTN 128u   /* attn_prefill */
#define WG_TEXEL 8u     /* kv_append_texel, rotate_rows_texel: an invocation a row (one SIMD group of llvmpipe's) */
#define WG_ROTATE 256u /* rotate_rows splits each output's sum over 256 / (d/4) threads; on a CPU
                        * d/4 threads, a whole sum each (oscar_kv_cache.wg_rotate: 4.7x faster on lavapipe) */
/* Decode attention aims for about this many workgroups per call (OSCAR_ATTN_TARGET_GROUPS
 * overrides it when the cache is created): the chunked kernel 256 (two 256-thread workgroups an
 * SM), the streaming one 768 (at 128K an item of about 1.4K tokens, 22 tiles over a workgroup's
 * subgroups; 768 beat 512, 1024 and 2048 on an H100 at 32K and 128K). Items hold at least
 * ATTN_MIN_SPLIT tokens (a multiple of a page, so INT2 items start on page boundaries), in the
 * INT2 modes more (OSCAR_ATTN_MIN_SPLIT overrides both): the chunked kernel's 4K step was
 * fastest with 192-token items on an H200, and with 512 once its keys were scored by integer
 * dot products (H100, q in one level of int8: 19.4 against 20.7 us at 4K, 25.1 against 28.2 at
 * 8K); the streaming
 * kernel's four 64-token tiles give each subgroup of a 128-thread workgroup one. */
#define ATTN_CHUNKED_TARGET_GROUPS 256u
#define ATTN_STREAM_TARGET_GROUPS 768u
#define ATTN_MIN_SPLIT 64u
/* the rows kernel walks a whole row in one invocation: items only separate storage kinds */
#define ATTN_ROWS_MIN_SPLIT (1u << 30)
#define ATTN_CHUNKED_MIN_SPLIT_INT2 192u
#define ATTN_CHUNKED_IDOT_MIN_SPLIT_INT2 512u
#define ATTN_STREAM_MIN_SPLIT_INT2 256u
/* the cooperative-matrix kernel (OSCAR_ATTN_KERNEL=coopmat, not a default): 512 workgroups of
 * three walkers, INT2 items of at least 256 tokens, each walker a few 16-token steps at 4K */
#define ATTN_CM_TARGET_GROUPS 512u
#define ATTN_CM_MIN_SPLIT_INT2 256u
/* A decode step of at least ATTN_CM_BATCH_ROWS (attn_items.h) rows whose rows see
 * ATTN_CM_BATCH_CONTEXT tokens or fewer on average runs the cooperative-matrix kernel where the device has it (an INT2 mode,
 * the chunked kernel the cache's own). On an H200, int2, us a call, cooperative matrices against
 * the chunked kernel: 32 rows of 4K 199.0 against 219.5, of 8K 343.6 against 338.6, of 16K 582.4
 * against 558.7; 16 rows of 4K (oscar) 123.8 against 127.7; one row is the chunked kernel's at
 * every context (docs/attention-results.md). With the heads along N = 8 (attn_decode_cm8), 6-8%
 * faster, the rows go up to ATTN_CM8_BATCH_CONTEXT (32 rows of 32K: 949.4-951.8 against
 * 1,006.2-1,007.5), and a step of any rows that see ATTN_CM8_LONG_CONTEXT tokens or more on
 * average takes it too: one row of 48K 65.2 against 58.4, of 64K 77.5 against 73.1, of 96K
 * 104.3 against 104.9, of 128K 129.4-129.7 against 133.0. */
#define ATTN_CM_BATCH_CONTEXT 6144u
#define ATTN_CM8_BATCH_CONTEXT 32768u
#define ATTN_CM8_LONG_CONTEXT 98304u
/* items of one call stay about under this (each row adds up to 3 more: sink, INT2, recent
 * ranges split separately); their partials take n_head * (d + 4) floats each */
#define ATTN_MAX_ITEMS 4096u
/* Prefill steps on attn_prefill.coopmat split long walks (ovk_attn_split_tiles) when their tiles
 * give fewer than ATTN_PF_SPLIT_BELOW workgroups, towards ATTN_PF_TARGET_GROUPS (a few per SM on
 * big GPUs), into parts of at least ATTN_PF_MIN_PART_CHUNKS chunks (OSCAR_ATTN_PREFILL_SPLIT
 * overrides it; 0: never). On an H100 (a 16K prompt of a Llama-3-8B) splitting gained 7% with
 * steps of 128 rows (64 workgroups) and lost 10% with 256 (128), 15% with 512 at 32K: parts cost
 * their partials, their merge and L2 locality, so only steps far below one workgroup per SM
 * split (docs/performance.md). */
#define ATTN_PF_SPLIT_BELOW 128u
#define ATTN_PF_TARGET_GROUPS 1024u
#define ATTN_PF_MIN_PART_CHUNKS 64u
/* attn_decode's sh_cb holds a tile's key-center blocks for blocks no shorter than this */
static_assert(ATTN_MIN_CENTER_BLOCK == OSCAR_KEY_CENTER_BLOCK_MIN, "the shaders' shortest key-center block is the API's");
/* attn_decode's shared memory is kept within this (and the device's limit) */
#define ATTN_SHARED_BUDGET 32768u

/* A zone's group of a step's array (kv_zones.c): elements [first, first + count). */
typedef struct kv_zone_range {
    uint32_t first, count;
} kv_zone_range;

struct oscar_kv_cache {
    oscar_context *ctx;
    oscar_kv_params p;          /* copy; its pointers cleared */
    uint32_t mode;              /* KV_MODE_* */
    uint32_t gqa, n_rot;
    kv_book book;
    uint64_t int2_page_bytes, f16_page_bytes;  /* one layer */
    ovk_buffer *int2_pool;    /* [n_layer] each [n_int2_pages][KV_INT2_PAGE_WORDS] words */
    ovk_buffer *f16_pool;     /* [n_layer] each [n_f16_pages][KV_F16_PAGE_WORDS] words */
    ovk_buffer rot_k, rot_v;  /* [n_layer][n_rot][d][d] fp32, y = x·R */
    ovk_buffer means;         /* [n_layer][means_words] words: [K,V][n_kv][d] fp32 centering vectors (zeros
                                 * unless given), then [n_center_blocks][n_kv][d/2] fp16 pairs of rotated key
                                 * centers (kv_write.h, KV_CENTER_TABLE_OFF) */
    uint32_t means_words;       /* a layer's part of `means`, padded to 256 bytes */
    uint32_t center_block;      /* KV_SPEC_CENTER_BLOCK: positions per key-center block, 0: none */
    ovk_buffer feedback;      /* [n_layer][n_rot][d][d] fp32 key error feedback; 16 bytes unread when none */
    uint32_t key_feedback;      /* kv_flush_push.key_feedback: 0 none, 1 per layer, 2 per KV head */
    ovk_buffer metric;        /* [n_layer][n_rot][d][d] fp32 keys' refit metric; 16 bytes unread when none */
    uint32_t key_metric;        /* kv_flush_push.key_metric: 0 identity, 1 per layer, 2 per KV head */
    uint32_t refit_rounds;      /* kv_flush_push.refit_rounds (oscar_kv_experimental) */
    float *clip_k, *clip_v;     /* [n_layer] */
    ovk_buffer int2_table, f16_table; /* [max_seqs][max_pages] int32 */
    ovk_buffer slots;         /* [max_step_tokens] append slots, then flush slots */
    uint32_t flush_offset;      /* index of the first flush slot in `slots` */
    ovk_buffer rows, items;   /* kv_attn_row [max_step_tokens], kv_attn_item [items_cap] */
    uint32_t items_cap, n_items;
    uint32_t target_groups;     /* workgroups an attention call aims for */
    uint32_t wg_rotate;         /* rotate_rows' threads: WG_ROTATE, or d/4 on a CPU device */
    uint32_t append_pairs;      /* kv_append, rotated modes: output pairs a workgroup (ovk_kv_append_pairs) */
    int write_texel;            /* kv_append_texel and rotate_rows_texel instead of kv_append and rotate_rows:
                                 * a CPU device with texel buffers (ovk_kv_append_pipeline) */
    uint32_t min_split;         /* tokens an attention item holds at least (a multiple of ATTN_MIN_SPLIT) */
    ovk_buffer partials;      /* [items_cap][n_head][d + 2] fp32 */
    ovk_buffer q_rot;         /* [max_step_tokens][n_head][d] fp32 scratch */
    ovk_buffer counters;      /* [max_step_tokens][n_kv_head] uint32: attn_decode's merge counters, 0 between calls */
    ovk_buffer q_dev;         /* [max_step_tokens][n_head][d] fp32: the public API's q, device-local */
    ovk_buffer io_k, io_v, io_q, io_out; /* host-visible staging of the public API */
    struct kv_attn_row *h_rows;   /* [max_step_tokens] host copies */
    struct kv_attn_item *h_items; /* [items_cap] */
    uint32_t *h_seq_sink, *h_seq_fe, *h_row_vis; /* scratch for planning */
    /* Per-step uploads: staged here by step_begin, copied into the device buffers at the start
     * of the step's first recorded command (so a step costs no extra submission). */
    ovk_buffer staging;       /* host-visible: [tables | slots | rows | items] */
    VkBufferCopy *copies;       /* [n_copies] regions of the pending upload */
    const ovk_buffer **copy_dst; /* [n_copies] */
    uint32_t n_copies, max_copies;
    ovk_cmd cmd;
    /* oscar/vulkan.h: the descriptor sets of commands recorded into the application's command
     * buffers (reset at each step_begin), and whether this step's flush was recorded there */
    ovk_cmd ext_cmd;
    int ext_flushed;
    ovk_pipeline *pl_append, *pl_rot; /* kv_append and rotate_rows without RoPE, got at first use */
    ovk_pipeline *pl_flush, *pl_decode;
    ovk_attn_config attn;              /* pl_decode's kernel, variant and shape (ovk_attn_pick) */
    /* The cooperative-matrix kernel of batched decode steps at short contexts (ATTN_CM_BATCH_ROWS)
     * and, on 16 x 8 x 16 matrices, of steps at long ones: NULL, or attn_decode_cm[8].coopmat with
     * its configuration, split sizing and the average contexts it takes (cm_long_context 0:
     * none); cm_step: this step's attention runs it (plan_attention) */
    ovk_pipeline *pl_decode_cm;
    ovk_attn_config attn_cm;
    uint32_t cm_target_groups, cm_min_split;
    uint32_t cm_batch_context, cm_long_context;
    int cm_step;
    ovk_pipeline *pl_append_rope[3]; /* [KV_ROPE_*] kv_append with RoPE on load, got at first use */
    ovk_pipeline *pl_q_prep[3];      /* [KV_ROPE_*] rotate_rows preparing q with RoPE, got at first use */
    /* Prefill steps (a sequence with more than one new row) run attn_prefill (attn_prefill.coopmat
     * where the device has fp16 cooperative matrices) over tiles of up to pf_rows rows of one
     * sequence instead of attn_decode over items. */
    ovk_pipeline *pl_prefill;  /* NULL: no tile shape fits (or OSCAR_ATTN_PREFILL=0); prefill runs attn_decode */
    uint32_t pf_rows, pf_chunk;  /* its KV_SPEC_PF_ROWS and KV_SPEC_PF_CHUNK */
    ovk_buffer tiles;          /* kv_attn_tile [tiles_cap] */
    struct kv_attn_tile *h_tiles; /* [tiles_cap] host copy */
    uint32_t tiles_cap;          /* max_step_tokens, plus the parts of split walks (OVK_ATTN_SPLIT_MAX_TILES) */
    uint32_t n_tiles;            /* tiles of this step; 0: a decode step (items) */
    /* Split walks (attn_prefill.coopmat only): parts of long walks write partials, and
     * attn_prefill_merge combines each row's (ovk_attn_split_tiles). */
    uint32_t pf_split_chunks;    /* chunks a part holds at least; 0: walks never split */
    uint32_t pf_split_below;     /* steps of fewer workgroups split: ATTN_PF_SPLIT_BELOW; UINT32_MAX (any
                                  * step) with OSCAR_ATTN_PREFILL_SPLIT=N >= 1 */
    struct kv_attn_tile *h_walks; /* [max_step_tokens] the step's whole walks, before splitting */
    ovk_buffer pf_partials;    /* [pf_items_cap][n_head][d + 4] fp32 (m, l, -, -, O): the parts' partials
                                 * (16 bytes, unread, where walks never split) */
    uint32_t pf_items_cap;       /* OVK_ATTN_SPLIT_MAX_ITEMS(pf_rows, rows of a split step, n_kv_head, pf_target) */
    uint32_t pf_target;          /* workgroups a split step aims at: ATTN_PF_TARGET_GROUPS, halved until
                                  * the partials of its most parts fit one storage binding */
    uint32_t n_pf_items;         /* items of this step's split walks; 0: no merge */
    ovk_pipeline *pl_prefill_merge; /* attn_prefill_merge; NULL where walks never split */
    /* Zones (kv_pages.h; kv_zones.c): each kernel over the pools is dispatched once a zone, over
     * that zone's group of the step's slots, items or tiles and its window of the pools. */
    uint32_t slot_align, item_align, tile_align; /* elements a group starts at a multiple of */
    kv_zone_range *z_append, *z_flush, *z_items, *z_tiles; /* [n_zones] this step's groups */
    struct kv_token_slot *h_slots; /* [T + max flush + padding] the step's slots by zone, zone-local ids */
    int32_t *h_table;             /* [max_pages] one page-table row with zone-local ids */
    struct kv_attn_item *h_items_z; /* [items_cap] scratch of the grouping */
    struct kv_attn_tile *h_tiles_z; /* [tiles_cap] likewise */
    double last_gpu_ms;
};

/* ---- zones (kv_zones.c) ---- */
/* Zones of the cache's pools (both pools have the same number, at least 1). */
static inline uint32_t ovk_kv_n_zones(const oscar_kv_cache *c) { return c->book.f16.n_zones; }
/* Elements of elem_bytes each that make one step of the storage-buffer offset alignment. */
uint32_t ovk_kv_align_elems(const oscar_kv_cache *c, uint64_t elem_bytes);
/* The binding of zone `zone`'s window of layer `layer`'s pool of kind KV_ITEM_INT2 or KV_ITEM_F16
 * (the whole pool with one zone). */
ovk_binding ovk_kv_zone_pool(const oscar_kv_cache *c, uint32_t kind, uint32_t layer, uint32_t zone);
/* A page id as the GPU sees it: local to its zone (negative ids unchanged). */
int32_t ovk_kv_local_page(const oscar_kv_cache *c, uint32_t kind, int32_t page);
/* src [n] append slots (flush = 0) or flush slots grouped by zone into dst with zone-local page
 * ids, ranges [n_zones]; returns the elements written (padding included). */
uint32_t ovk_kv_zone_slots(const oscar_kv_cache *c, const struct kv_token_slot *src, uint32_t n, int flush,
                           kv_zone_range *ranges, struct kv_token_slot *dst);
/* Groups h_items by zone (through scratch [n_items + zones * (item_align - 1)]) with zone-local page ids,
 * each row's item range relative to its group; sets z_items and n_items. */
void ovk_kv_zone_items(oscar_kv_cache *c, struct kv_attn_item *scratch);
/* Groups h_tiles by zone (through scratch [tiles_cap]); sets z_tiles and n_tiles (padding included). */
void ovk_kv_zone_tiles(oscar_kv_cache *c, struct kv_attn_tile *scratch);

/* A pipeline description with the cache's shape in the shared specialization constants
 * (kv_layout.h, kv_write.h); callers add their own ids (n_spec covers up to 18). */
ovk_pipeline_desc ovk_kv_cache_desc(const oscar_kv_cache *c, const char *shader, uint32_t n_buffers, uint32_t push_size,
                                    uint32_t wg, uint32_t n_spec);
/* The cache's pipeline of `shader`, with one extra specialization constant when extra_id != 0. */
/* kv_append's pipeline with specialization constant `id` set to `value` (0: none), and
 * rotate_rows' for TRANSPOSE and ROPE: their texel shapes where c->write_texel. */
oscar_status ovk_kv_append_pipeline(oscar_kv_cache *c, uint32_t id, uint32_t value, ovk_pipeline **out);
/* kv_append's output pairs a workgroup in the rotated modes: the most, halving from d/2, whose
 * columns of R (d x 2 pairs floats) and up to four input rows fit in APPEND_SHARED_BYTES and the
 * device's shared memory. */
uint32_t ovk_kv_append_pairs(uint32_t d, uint32_t shared_bytes);
oscar_status ovk_kv_rotate_pipeline(oscar_kv_cache *c, uint32_t transpose, uint32_t rope, ovk_pipeline **out);
oscar_status ovk_kv_get_pipeline(oscar_kv_cache *c, const char *shader, uint32_t n_buffers, uint32_t push_size,
                                 uint32_t wg, uint32_t extra_id, uint32_t extra_value, ovk_pipeline **out);

#endif
