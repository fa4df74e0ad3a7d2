/* The paged KV cache: creation and checks, the kernels of a step (append, attention, flush),
 * fork copies, and memory accounting. Bookkeeping is kv_pages.c; layout is kv_layout.h. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_items.h"
#include "attn_tiles.h"
#include "common/attn_push.h"
#include "common/kv_write.h"
#include "half.h"
#include "int2_quant.h"
#include "kv_cache.h"

/* Workgroup sizes (any value works; these suit big GPUs and lavapipe alike). */
#define WG_WRITE 64u
#define WG_ATTN 128u   /* attn_prefill */
/* attn_decode: with 256 threads and one score row per thread (U = 1) the H200's compiler keeps
 * the fp16 variant at 128 registers, two workgroups per SM: 128K 146 us vs 176 us with 128
 * threads and U = 2 (docs/benchmarks.md, session 4). OSCAR_ATTN_WG, OSCAR_ATTN_U and
 * OSCAR_ATTN_VU override them. */
#define WG_ATTN_DECODE 256u
#define ATTN_DECODE_U 1
#define ATTN_DECODE_VU 8
#define WG_ROTATE 256u /* rotate_rows splits each output's sum over 256 / (d/4) threads */
/* Flash-decoding aims for about this many workgroups per attention call (items of at least
 * ATTN_MIN_SPLIT tokens; longer items run in chunks of the kernel's item size). The
 * environment variable OSCAR_ATTN_TARGET_GROUPS overrides it when the cache is created (for
 * tuning on a device). */
#ifndef OSCAR_ATTN_TARGET_GROUPS
#define OSCAR_ATTN_TARGET_GROUPS 256u
#endif
#define ATTN_MIN_SPLIT 64u
/* Items of the INT2 modes hold at least this many tokens (OSCAR_ATTN_MIN_SPLIT overrides it,
 * for every mode): at 4K context 128-token items (the target's) made int2 decode's step 4.90 ms
 * of GPU time on the H200, 192-token ones 4.70 (int2-hadamard 5.60 -> 5.57); fp16 mode keeps
 * 64, where 192 cost 0.03 ms (docs/benchmarks.md, session 10). Contexts from 8K up split
 * coarser anyway. */
#define ATTN_MIN_SPLIT_INT2 192u
/* items of one call stay about under this (each row adds up to 3 more: sink, INT2, recent
 * ranges split separately); their partials take n_head * (d + 4) floats each */
#define ATTN_MAX_ITEMS 4096u
/* 1: use attn_decode_f16 (INT2 value sums in packed fp16, scores fp32) where the device has
 * shaderFloat16; 0: attn_decode (all fp32). The environment variable OSCAR_ATTN_F16 (0 or 1)
 * overrides it when the cache is created. */
#ifndef OSCAR_ATTN_USE_F16
#define OSCAR_ATTN_USE_F16 1
#endif
/* attn_decode's sh_bias holds a chunk's key-center blocks for blocks no shorter than this */
static_assert(ATTN_MIN_CENTER_BLOCK == OSCAR_KEY_CENTER_BLOCK_MIN, "the shaders' shortest key-center block is the API's");
/* attn_decode's shared memory is kept within this (and the device's limit) */
#define ATTN_SHARED_BUDGET 32768u

struct oscar_kv_cache {
    oscar_context *ctx;
    oscar_kv_params p;          /* copy; rotation/clip pointers cleared */
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
    float *clip_k, *clip_v;     /* [n_layer] */
    ovk_buffer int2_table, f16_table; /* [max_seqs][max_pages] int32 */
    ovk_buffer slots;         /* [max_step_tokens] append slots, then flush slots */
    uint32_t flush_offset;      /* index of the first flush slot in `slots` */
    ovk_buffer rows, items;   /* kv_attn_row [max_step_tokens], kv_attn_item [items_cap] */
    uint32_t items_cap, n_items;
    uint32_t item_tokens;       /* attn_decode's largest item (its KV_SPEC_ITEM_TOKENS) */
    uint32_t target_groups;     /* workgroups an attention call aims for */
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
    ovk_pipeline *pl_append, *pl_flush, *pl_rot, *pl_decode;
    ovk_pipeline *pl_append_rope[3]; /* [KV_ROPE_*] kv_append with RoPE on load, got at first use */
    ovk_pipeline *pl_q_prep[3];      /* [KV_ROPE_*] rotate_rows preparing q with RoPE, got at first use */
    /* Prefill steps (a sequence with more than one new row) run attn_prefill over tiles of up
     * to pf_rows rows of one sequence instead of attn_decode over items. */
    ovk_pipeline *pl_prefill;  /* NULL: no tile shape fits (or OSCAR_ATTN_PREFILL=0); prefill runs attn_decode */
    uint32_t pf_rows, pf_chunk;  /* its KV_SPEC_PF_ROWS and KV_SPEC_PF_CHUNK */
    ovk_buffer tiles;          /* kv_attn_tile [max_step_tokens] */
    struct kv_attn_tile *h_tiles; /* [max_step_tokens] host copy */
    uint32_t n_tiles;            /* tiles of this step; 0: a decode step (items) */
    double last_gpu_ms;
};

OSCAR_API const char *oscar_kv_mode_name(oscar_kv_mode mode)
{
    switch (mode) {
    case OSCAR_KV_FP16: return "fp16";
    case OSCAR_KV_INT2: return "int2";
    case OSCAR_KV_INT2_HADAMARD: return "int2-hadamard";
    case OSCAR_KV_INT2_ROTATED: return "oscar";
    }
    return "unknown";
}

OSCAR_API oscar_kv_params oscar_kv_params_default(void)
{
    oscar_kv_params p;
    memset(&p, 0, sizeof p);
    p.mode = OSCAR_KV_INT2_HADAMARD;
    p.n_layer = 1, p.n_head = 1, p.n_kv_head = 1, p.head_dim = 128;
    p.page_tokens = 64, p.sink_tokens = 64, p.recent_tokens = 256, p.flush_tokens = 8;
    p.max_sequences = 1, p.max_context = 8192, p.max_step_tokens = 512;
    return p;
}

/* ---- checks -------------------------------------------------------------------------------- */
static int is_pow2(uint32_t x) { return x && !(x & (x - 1)); }

/* Fills defaults and checks the shape; names the first bad field. */
static oscar_status check_params(oscar_kv_params *p)
{
    if (p->group_size == 0) p->group_size = ovk_int2_default_group(p->head_dim);
    if (p->attn_scale == 0) p->attn_scale = 1.0f / sqrtf((float)p->head_dim);
    if ((unsigned)p->mode > OSCAR_KV_INT2_ROTATED) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: unknown mode %d", (int)p->mode);
    if (!is_pow2(p->head_dim) || p->head_dim < 64 || p->head_dim > KV_MAX_HEAD_DIM)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: head_dim %u is not a power of two in 64..256", p->head_dim);
    if (p->group_size != 32 && p->group_size != 64 && p->group_size != 128)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: group_size %u is not 32, 64 or 128", p->group_size);
    if (p->head_dim % p->group_size)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: group_size %u does not divide head_dim %u", p->group_size, p->head_dim);
    if (p->n_layer == 0 || p->n_kv_head == 0 || p->n_head == 0 || p->n_head % p->n_kv_head)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: n_head %u is not a positive multiple of n_kv_head %u (n_layer %u)",
                           p->n_head, p->n_kv_head, p->n_layer);
    if (p->n_head / p->n_kv_head > 16)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "KV cache: %u query heads per KV head (at most 16)", p->n_head / p->n_kv_head);
    if (p->page_tokens == 0 || p->page_tokens > 1024 || p->flush_tokens == 0 || p->max_sequences == 0 ||
        p->max_context == 0 || p->max_step_tokens == 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: page_tokens (1..1024), flush_tokens, max_sequences, "
                                                         "max_context and max_step_tokens must be positive");
    if (p->mode == OSCAR_KV_INT2_ROTATED && (!p->rot_k || !p->rot_v))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: mode oscar needs rot_k and rot_v");
    return OSCAR_OK;
}

/* Each R of a rotation set must be finite and orthogonal: max |RᵀR − I| below 1e-3. */
static oscar_status check_rotations(const float *r, uint32_t n, uint32_t d, const char *which)
{
    for (uint32_t m = 0; m < n; m++) {
        const float *R = r + (size_t)m * d * d;
        for (size_t i = 0; i < (size_t)d * d; i++)
            if (!isfinite(R[i]))
                OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "rotation %s[%u]: element (%zu, %zu) is not finite", which, m,
                                   i / d, i % d);
        double worst = 0;
        for (uint32_t i = 0; i < d; i++)
            for (uint32_t j = i; j < d; j++) {
                double s = 0;
                for (uint32_t k = 0; k < d; k++) s += (double)R[k * d + i] * R[k * d + j];
                double e = fabs(s - (i == j ? 1.0 : 0.0));
                if (e > worst) worst = e;
            }
        if (worst > 1e-3)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "rotation %s[%u] is not orthogonal: max |R^T R - I| = %.3g", which, m, worst);
    }
    return OSCAR_OK;
}

void ovk_kv_hadamard(uint32_t d, float *H)
{
    float s = 1.0f / sqrtf((float)d);
    for (uint32_t i = 0; i < d; i++)
        for (uint32_t j = 0; j < d; j++) H[i * d + j] = (__builtin_popcount(i & j) & 1) ? -s : s;
}

/* ---- creation ------------------------------------------------------------------------------ */
/* A pipeline description with the cache's shape in the shared specialization constants
 * (kv_layout.h, kv_write.h); callers add their own ids (n_spec covers up to 18). */
static ovk_pipeline_desc cache_desc(const oscar_kv_cache *c, const char *shader, uint32_t n_buffers, uint32_t push_size,
                                      uint32_t wg, uint32_t n_spec)
{
    ovk_pipeline_desc d = { .shader = shader, .n_buffers = n_buffers, .push_size = push_size, .n_spec = n_spec };
    d.spec[KV_SPEC_WORKGROUP] = wg;
    d.spec[KV_SPEC_HEAD_DIM] = c->p.head_dim;
    d.spec[KV_SPEC_GROUP] = c->p.group_size;
    d.spec[KV_SPEC_PAGE] = c->p.page_tokens;
    d.spec[KV_SPEC_N_KV] = c->p.n_kv_head;
    d.spec[KV_SPEC_GQA] = c->gqa;
    d.spec[KV_SPEC_MODE] = c->mode;
    d.spec[KV_SPEC_ROT_PER_HEAD] = c->n_rot > 1;
    d.spec[KV_SPEC_CENTER_BLOCK] = c->center_block;
    d.spec[KV_SPEC_SINK] = c->p.sink_tokens;
    return d;
}

static oscar_status get_pipeline(oscar_kv_cache *c, const char *shader, uint32_t n_buffers, uint32_t push_size,
                                 uint32_t wg, uint32_t extra_id, uint32_t extra_value, ovk_pipeline **out)
{
    ovk_pipeline_desc d = cache_desc(c, shader, n_buffers, push_size, wg, ATTN_N_SPEC);
    if (extra_id) d.spec[extra_id] = extra_value;
    return ovk_pipeline_get(c->ctx, &d, out);
}

/* attn_prefill's pipeline and tile buffers, with the largest tile shape that fits the shared
 * memory attention may use. Leaves pl_prefill NULL (prefill steps then run attn_decode) when
 * tiles would hold fewer than 2 rows, or when the environment variable OSCAR_ATTN_PREFILL is 0
 * (for comparisons). */
static oscar_status create_prefill(oscar_kv_cache *c)
{
    oscar_status st = OSCAR_OK;
    oscar_context *ctx = c->ctx;
    const char *env = getenv("OSCAR_ATTN_PREFILL");
    if (env && atoi(env) == 0) return OSCAR_OK;
    uint32_t budget = ctx->info.max_shared_memory < ATTN_SHARED_BUDGET ? ctx->info.max_shared_memory : ATTN_SHARED_BUDGET;
    if (!ovk_attn_prefill_shape(c->p.head_dim, c->gqa, WG_ATTN, budget, &c->pf_rows, &c->pf_chunk) || c->pf_rows < 2)
        return OSCAR_OK;
    uint32_t T = c->p.max_step_tokens;
    OSCAR_TRY(ovk_buffer_create(ctx, (uint64_t)T * sizeof(struct kv_attn_tile), OSCAR_BUFFER_DEVICE, &c->tiles));
    c->h_tiles = malloc((size_t)T * sizeof *c->h_tiles);
    if (!c->h_tiles) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    ovk_pipeline_desc d = cache_desc(c, "attn_prefill", 10, sizeof(struct attn_prefill_push), WG_ATTN, ATTN_PF_N_SPEC);
    d.spec[KV_SPEC_PF_ROWS] = c->pf_rows;
    d.spec[KV_SPEC_PF_CHUNK] = c->pf_chunk;
    OSCAR_TRY(ovk_pipeline_get(ctx, &d, &c->pl_prefill));
fail:
    return st;
}

/* fp16 pages the INT2 modes need for every sequence's windows at once: per sequence the sink
 * pages, the recent window with its flush batch and a partial page at each end, plus the
 * new tokens of one step (at most max_step_tokens over all sequences, one partial page each). */
static uint32_t f16_window_pool(const kv_book_config *c)
{
    uint32_t P = c->page;
    uint32_t per_seq = (c->sink + P - 1) / P + (c->recent + c->flush - 1 + P - 1) / P + 2;
    return c->max_seqs * per_seq + (c->max_step_tokens + P - 1) / P + c->max_seqs;
}

static void seq_sizes(const oscar_kv_params *p, uint32_t int2, uint64_t budget, uint64_t int2_page, uint64_t f16_page,
                      kv_book_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->page = p->page_tokens;
    cfg->sink = int2 ? p->sink_tokens : 0;
    cfg->recent = p->recent_tokens;
    cfg->flush = p->flush_tokens;
    cfg->int2 = int2;
    cfg->max_seqs = p->max_sequences;
    cfg->max_context = p->max_context;
    cfg->max_step_tokens = p->max_step_tokens;
    uint32_t i2, f16;
    kv_book_pages_for(cfg, p->max_context, &i2, &f16);
    if (!int2) {
        cfg->n_f16_pages = budget ? (uint32_t)(budget / f16_page) : f16 * p->max_sequences;
        return;
    }
    /* windows first (every sequence needs its fp16 pages), then INT2 */
    uint32_t w = f16_window_pool(cfg), all = f16 * p->max_sequences;
    cfg->n_f16_pages = w < all ? w : all;
    if (budget == 0) cfg->n_int2_pages = i2 * p->max_sequences;
    else {
        uint64_t f16_bytes = (uint64_t)cfg->n_f16_pages * f16_page;
        cfg->n_int2_pages = budget > f16_bytes ? (uint32_t)((budget - f16_bytes) / int2_page) : 0;
    }
}

OSCAR_API oscar_status oscar_kv_cache_create(oscar_context *ctx, const oscar_kv_params *params, oscar_kv_cache **out)
{
    oscar_status st = OSCAR_OK;
    oscar_kv_cache *c = NULL;
    float *rot = NULL;
    if (!ctx || !params || !out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_cache_create: NULL argument");
    *out = NULL;
    oscar_kv_params p = *params;
    OSCAR_TRY(check_params(&p));
    uint32_t d = p.head_dim, L = p.n_layer;
    uint32_t n_rot = p.mode == OSCAR_KV_INT2_ROTATED && p.rot_per_head ? p.n_kv_head : 1;
    if (p.mode == OSCAR_KV_INT2_ROTATED) {
        OSCAR_TRY(check_rotations(p.rot_k, L * n_rot, d, "rot_k"));
        OSCAR_TRY(check_rotations(p.rot_v, L * n_rot, d, "rot_v"));
    }
    if (p.key_feedback && p.mode != OSCAR_KV_INT2_ROTATED)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: key_feedback needs mode oscar, not %s",
                           oscar_kv_mode_name(p.mode));
    for (size_t m = 0; p.key_feedback && m < (size_t)L * n_rot; m++)
        for (size_t i = 0; i < (size_t)d * d; i++) {
            float f = p.key_feedback[m * d * d + i];
            if (!isfinite(f) || (i / d >= i % d && f != 0.0f))
                OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: key_feedback of layer %zu (head %zu): element (%zu, %zu) "
                                   "is %s", m / n_rot, m % n_rot, i / d, i % d, isfinite(f) ? "not 0 on or below the diagonal" : "not finite");
        }
    if ((p.refit_rounds || p.key_metric) && p.mode != OSCAR_KV_INT2_ROTATED)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: refit_rounds / key_metric need mode oscar, not %s",
                           oscar_kv_mode_name(p.mode));
    if (p.refit_rounds > 8 || (p.refit_rounds && p.group_size != d) || (p.key_metric && !p.refit_rounds))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: refit_rounds %u must be at most 8, needs group_size %u equal "
                           "to head_dim %u, and key_metric needs it", p.refit_rounds, p.group_size, d);
    for (size_t i = 0; p.key_metric && i < (size_t)L * n_rot * d * d; i++) {
        size_t m = i / ((size_t)d * d), r = i / d % d, c = i % d;
        if (!isfinite(p.key_metric[i]) || p.key_metric[i] != p.key_metric[(m * d + c) * d + r])
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: key_metric of layer %zu (head %zu): element (%zu, %zu) is %s",
                               m / n_rot, m % n_rot, r, c, isfinite(p.key_metric[i]) ? "not its transpose's" : "not finite");
    }
    if ((p.mean_k || p.mean_v) && p.mode != OSCAR_KV_INT2_ROTATED)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: mean_k / mean_v need mode oscar, not %s",
                           oscar_kv_mode_name(p.mode));
    for (size_t i = 0; i < (size_t)L * p.n_kv_head * d; i++)
        if ((p.mean_k && !isfinite(p.mean_k[i])) || (p.mean_v && !isfinite(p.mean_v[i])))
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: %s of layer %zu, KV head %zu, element %zu is not finite",
                               p.mean_k && !isfinite(p.mean_k[i]) ? "mean_k" : "mean_v", i / ((size_t)p.n_kv_head * d),
                               i / d % p.n_kv_head, i % d);
    if (p.key_centers && (p.mode != OSCAR_KV_INT2_ROTATED || p.key_center_block < OSCAR_KEY_CENTER_BLOCK_MIN))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: key_centers need mode oscar (not %s) and key_center_block "
                           ">= %u (not %u)", oscar_kv_mode_name(p.mode), OSCAR_KEY_CENTER_BLOCK_MIN, p.key_center_block);
    uint32_t n_blocks = p.key_centers ? (uint32_t)(((uint64_t)p.max_context + p.key_center_block - 1) / p.key_center_block) : 0;
    for (size_t i = 0; i < (size_t)L * n_blocks * p.n_kv_head * d; i++)
        if (!isfinite(p.key_centers[i]))
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: key_centers of layer %zu, block %zu, KV head %zu, element %zu "
                               "is not finite", i / ((size_t)n_blocks * p.n_kv_head * d), i / ((size_t)p.n_kv_head * d) % n_blocks,
                               i / d % p.n_kv_head, i % d);
    for (uint32_t l = 0; l < L; l++)
        if ((p.clip_k && !(p.clip_k[l] > 0 && p.clip_k[l] <= 1)) || (p.clip_v && !(p.clip_v[l] > 0 && p.clip_v[l] <= 1)))
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: clip ratio of layer %u is not in (0, 1]", l);

    c = calloc(1, sizeof *c);
    if (!c) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    c->ctx = ctx;
    c->p = p;
    c->mode = (uint32_t)p.mode; /* OSCAR_KV_* equal KV_MODE_* */
    c->gqa = p.n_head / p.n_kv_head;
    c->n_rot = n_rot;
    uint32_t int2 = p.mode != OSCAR_KV_FP16;
    c->int2_page_bytes = 4ull * KV_INT2_PAGE_WORDS(p.n_kv_head, p.page_tokens, d, p.group_size);
    c->f16_page_bytes = 4ull * KV_F16_PAGE_WORDS(p.n_kv_head, p.page_tokens, d);

    kv_book_config cfg;
    seq_sizes(&p, int2, p.memory_budget / L, c->int2_page_bytes, c->f16_page_bytes, &cfg);
    if (cfg.n_f16_pages == 0 || (int2 && cfg.n_int2_pages == 0 && p.max_context > cfg.sink + cfg.recent))
        OSCAR_FAIL(OSCAR_ERROR_OUT_OF_DEVICE_MEMORY, "KV cache: memory_budget %llu bytes holds no page (fp16 pages need %llu bytes per layer)",
                   (unsigned long long)p.memory_budget, (unsigned long long)c->f16_page_bytes);
    uint64_t limit = c->ctx->info.max_storage_buffer_range;
    if ((uint64_t)cfg.n_int2_pages * c->int2_page_bytes > limit || (uint64_t)cfg.n_f16_pages * c->f16_page_bytes > limit)
        OSCAR_FAIL(OSCAR_ERROR_UNSUPPORTED, "KV cache: a layer's page pool (%llu INT2 / %llu fp16 bytes) exceeds the device's "
                   "storage-buffer limit of %llu bytes; lower max_context, max_sequences or memory_budget",
                   (unsigned long long)cfg.n_int2_pages * c->int2_page_bytes,
                   (unsigned long long)cfg.n_f16_pages * c->f16_page_bytes, (unsigned long long)limit);
    OSCAR_TRY(kv_book_init(&c->book, &cfg));

    /* page pools */
    c->int2_pool = calloc(L, sizeof *c->int2_pool);
    c->f16_pool = calloc(L, sizeof *c->f16_pool);
    if (!c->int2_pool || !c->f16_pool) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    for (uint32_t l = 0; l < L; l++) {
        OSCAR_TRY(ovk_buffer_create(ctx, (uint64_t)cfg.n_int2_pages * c->int2_page_bytes, OSCAR_BUFFER_DEVICE, &c->int2_pool[l]));
        OSCAR_TRY(ovk_buffer_create(ctx, (uint64_t)cfg.n_f16_pages * c->f16_page_bytes, OSCAR_BUFFER_DEVICE, &c->f16_pool[l]));
    }

    /* rotations: the given set, or Hadamard for every layer, or identity (unused) */
    size_t rot_floats = (size_t)L * n_rot * d * d;
    rot = malloc(rot_floats * sizeof *rot);
    if (!rot) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    OSCAR_TRY(ovk_buffer_create(ctx, rot_floats * 4, OSCAR_BUFFER_DEVICE, &c->rot_k));
    OSCAR_TRY(ovk_buffer_create(ctx, rot_floats * 4, OSCAR_BUFFER_DEVICE, &c->rot_v));
    if (p.mode == OSCAR_KV_INT2_ROTATED) {
        OSCAR_TRY(ovk_buffer_upload(ctx, &c->rot_k, 0, p.rot_k, rot_floats * 4));
        OSCAR_TRY(ovk_buffer_upload(ctx, &c->rot_v, 0, p.rot_v, rot_floats * 4));
    } else {
        for (uint32_t m = 0; m < L * n_rot; m++) {
            if (p.mode == OSCAR_KV_INT2_HADAMARD) ovk_kv_hadamard(d, rot + (size_t)m * d * d);
            else for (uint32_t i = 0; i < d * d; i++) rot[(size_t)m * d * d + i] = (i / d == i % d) ? 1.0f : 0.0f;
        }
        OSCAR_TRY(ovk_buffer_upload(ctx, &c->rot_k, 0, rot, rot_floats * 4));
        OSCAR_TRY(ovk_buffer_upload(ctx, &c->rot_v, 0, rot, rot_floats * 4));
    }
    c->clip_k = malloc(L * sizeof *c->clip_k);
    c->clip_v = malloc(L * sizeof *c->clip_v);
    if (!c->clip_k || !c->clip_v) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    for (uint32_t l = 0; l < L; l++) {
        c->clip_k[l] = p.clip_k ? p.clip_k[l] : OSCAR_CLIP_RATIO_K;
        c->clip_v[l] = p.clip_v ? p.clip_v[l] : OSCAR_CLIP_RATIO_V;
    }
    {   /* centering vectors: per layer K then V, zeros where none are given; then the rotated key
         * centers, c_b·R_K of each block and KV head, rounded to fp16 (kv_append subtracts and the
         * attention adds back these same values) */
        size_t per = (size_t)p.n_kv_head * d;
        c->center_block = p.key_centers ? p.key_center_block : 0;
        c->means_words = (uint32_t)((2 * per + n_blocks * per / 2 + 63) / 64 * 64);
        size_t words = (size_t)L * c->means_words;
        uint32_t *m = calloc(words, sizeof *m);
        if (!m) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        for (uint32_t l = 0; l < L; l++) {
            uint32_t *ml = m + (size_t)l * c->means_words;
            if (p.mean_k) memcpy(ml, p.mean_k + (size_t)l * per, per * sizeof *m);
            if (p.mean_v) memcpy(ml + per, p.mean_v + (size_t)l * per, per * sizeof *m);
            for (size_t b = 0; b < n_blocks; b++)
                for (uint32_t h = 0; h < p.n_kv_head; h++) {
                    const float *x = p.key_centers + (((size_t)l * n_blocks + b) * p.n_kv_head + h) * d;
                    const float *R = p.rot_k + ((size_t)l * n_rot + (n_rot > 1 ? h : 0)) * d * d;
                    uint32_t *dst = ml + 2 * per + (b * p.n_kv_head + h) * d / 2; /* KV_CENTER_TABLE_OFF */
                    double y[KV_MAX_HEAD_DIM] = { 0 }; /* x·R, R read row by row */
                    for (uint32_t i = 0; i < d; i++)
                        for (uint32_t j = 0; j < d; j++) y[j] += (double)x[i] * R[(size_t)i * d + j];
                    for (uint32_t j = 0; j < d; j++) dst[j / 2] |= (uint32_t)ovk_f32_to_f16((float)y[j]) << (j % 2 * 16);
                }
        }
        st = ovk_buffer_create(ctx, words * 4, OSCAR_BUFFER_DEVICE, &c->means);
        if (st == OSCAR_OK) st = ovk_buffer_upload(ctx, &c->means, 0, m, words * 4);
        free(m);
        if (st != OSCAR_OK) goto fail;
    }
    {   /* key error feedback (a 16-byte buffer the flush never reads when there is none) */
        uint64_t bytes = p.key_feedback ? (uint64_t)L * n_rot * d * d * 4 : 16;
        st = ovk_buffer_create(ctx, bytes, OSCAR_BUFFER_DEVICE, &c->feedback);
        if (st == OSCAR_OK && p.key_feedback) st = ovk_buffer_upload(ctx, &c->feedback, 0, p.key_feedback, bytes);
        if (st != OSCAR_OK) goto fail;
        c->key_feedback = p.key_feedback ? (n_rot > 1 ? 2 : 1) : 0;
    }
    {   /* keys' refit metric (likewise) */
        uint64_t bytes = p.key_metric ? (uint64_t)L * n_rot * d * d * 4 : 16;
        st = ovk_buffer_create(ctx, bytes, OSCAR_BUFFER_DEVICE, &c->metric);
        if (st == OSCAR_OK && p.key_metric) st = ovk_buffer_upload(ctx, &c->metric, 0, p.key_metric, bytes);
        if (st != OSCAR_OK) goto fail;
        c->key_metric = p.key_metric ? (n_rot > 1 ? 2 : 1) : 0;
    }
    c->p.rot_k = c->p.rot_v = NULL;
    c->p.key_feedback = c->p.key_metric = NULL;
    c->p.clip_k = c->p.clip_v = NULL;
    c->p.mean_k = c->p.mean_v = c->p.key_centers = NULL;

    /* tables and per-step buffers */
    uint64_t table_bytes = (uint64_t)p.max_sequences * c->book.max_pages * 4;
    OSCAR_TRY(ovk_buffer_create(ctx, table_bytes, OSCAR_BUFFER_DEVICE, &c->int2_table));
    OSCAR_TRY(ovk_buffer_create(ctx, table_bytes, OSCAR_BUFFER_DEVICE, &c->f16_table));
    uint32_t T = p.max_step_tokens;
    c->flush_offset = T;
    uint64_t max_flush = (uint64_t)T + (uint64_t)p.max_sequences * (p.recent_tokens + p.flush_tokens);
    OSCAR_TRY(ovk_buffer_create(ctx, (T + max_flush) * sizeof(struct kv_token_slot), OSCAR_BUFFER_DEVICE, &c->slots));
    OSCAR_TRY(ovk_buffer_create(ctx, (uint64_t)T * sizeof(struct kv_attn_row), OSCAR_BUFFER_DEVICE, &c->rows));
    uint64_t row_bytes = (uint64_t)T * p.n_head * d * 4;
    OSCAR_TRY(ovk_buffer_create(ctx, row_bytes, OSCAR_BUFFER_DEVICE, &c->q_rot));
    OSCAR_TRY(ovk_buffer_create(ctx, (uint64_t)T * p.n_kv_head * 4, OSCAR_BUFFER_DEVICE, &c->counters));
    OSCAR_TRY(ovk_buffer_fill(ctx, &c->counters, 0, (uint64_t)T * p.n_kv_head * 4, 0));
    OSCAR_TRY(ovk_buffer_create(ctx, row_bytes, OSCAR_BUFFER_DEVICE, &c->q_dev));
    OSCAR_TRY(ovk_buffer_create(ctx, row_bytes, OSCAR_BUFFER_STAGING, &c->io_q));
    OSCAR_TRY(ovk_buffer_create(ctx, row_bytes, OSCAR_BUFFER_READBACK, &c->io_out));
    uint64_t kv_bytes = (uint64_t)T * p.n_kv_head * d * 4;
    OSCAR_TRY(ovk_buffer_create(ctx, kv_bytes, OSCAR_BUFFER_STAGING, &c->io_k));
    OSCAR_TRY(ovk_buffer_create(ctx, kv_bytes, OSCAR_BUFFER_STAGING, &c->io_v));
    c->h_rows = malloc(T * sizeof *c->h_rows);
    c->h_row_vis = malloc(T * sizeof *c->h_row_vis);
    c->h_seq_sink = malloc(p.max_sequences * sizeof *c->h_seq_sink);
    c->h_seq_fe = malloc(p.max_sequences * sizeof *c->h_seq_fe);
    if (!c->h_rows || !c->h_row_vis || !c->h_seq_sink || !c->h_seq_fe) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");

    OSCAR_TRY(ovk_cmd_init(ctx, &c->cmd));
    OSCAR_TRY(get_pipeline(c, "kv_append", 9, sizeof(struct kv_append_push), WG_WRITE, KV_SPEC_INPUT_F16, 0, &c->pl_append));
    OSCAR_TRY(get_pipeline(c, "kv_flush", 5, sizeof(struct kv_flush_push), WG_WRITE, 0, 0, &c->pl_flush));
    OSCAR_TRY(get_pipeline(c, "rotate_rows", 5, sizeof(struct kv_rotate_push), WG_ROTATE, KV_SPEC_TRANSPOSE, 0, &c->pl_rot));
    uint32_t wg_dec = WG_ATTN_DECODE; /* OSCAR_ATTN_WG: 64..1024, a multiple of d/4 */
    {
        const char *wg_env = getenv("OSCAR_ATTN_WG");
        long w = wg_env ? strtol(wg_env, NULL, 10) : 0;
        if (w >= 64 && w <= 1024 && w % (d / 4) == 0) wg_dec = (uint32_t)w;
        if (wg_dec > ctx->limits.maxComputeWorkGroupSize[0] || wg_dec > ctx->limits.maxComputeWorkGroupInvocations)
            wg_dec = WG_ATTN; /* every device runs 128 */
        uint32_t budget = ctx->info.max_shared_memory < ATTN_SHARED_BUDGET ? ctx->info.max_shared_memory : ATTN_SHARED_BUDGET;
        if (WG_ATTN % (d / 4)) /* then wg_dec (WG_ATTN, 256 or a checked multiple of d/4) passes too */
            OSCAR_FAIL(OSCAR_ERROR_UNSUPPORTED, "KV cache: head_dim %u too large for %u-thread attention", d, WG_ATTN);
        c->item_tokens = ovk_attn_item_tokens(d, c->p.group_size, c->p.page_tokens, c->gqa, wg_dec, budget);
        if (c->item_tokens == 0)
            OSCAR_FAIL(OSCAR_ERROR_UNSUPPORTED, "KV cache: %u query heads per KV head need more than the %u bytes of shared "
                       "memory attention may use on this device", c->gqa, budget);
        const char *env = getenv("OSCAR_ATTN_TARGET_GROUPS");
        long tg = env ? strtol(env, NULL, 10) : 0;
        c->target_groups = tg > 0 && tg < (1l << 20) ? (uint32_t)tg : OSCAR_ATTN_TARGET_GROUPS;
        env = getenv("OSCAR_ATTN_MIN_SPLIT"); /* tuning: a floor on the tokens of an item */
        long ms = env ? strtol(env, NULL, 10) : 0;
        c->min_split = ms > 0 && ms <= 65536 && ms % ATTN_MIN_SPLIT == 0 ? (uint32_t)ms
                       : p.mode == OSCAR_KV_FP16                                 ? ATTN_MIN_SPLIT
                                                                                 : ATTN_MIN_SPLIT_INT2;
    }
    const char *f16_env = getenv("OSCAR_ATTN_F16");
    int use_f16 = (f16_env ? atoi(f16_env) != 0 : OSCAR_ATTN_USE_F16) && ctx->info.float16_arithmetic;
    {
        /* tuning knobs for device sweeps: OSCAR_ATTN_U (1..8), OSCAR_ATTN_VU (1..16), OSCAR_ATTN_WG above */
        const char *u_env = getenv("OSCAR_ATTN_U"), *vu_env = getenv("OSCAR_ATTN_VU");
        long u = u_env ? strtol(u_env, NULL, 10) : ATTN_DECODE_U, vu = vu_env ? strtol(vu_env, NULL, 10) : ATTN_DECODE_VU;
        ovk_pipeline_desc pd = cache_desc(c, use_f16 ? "attn_decode_f16" : "attn_decode", 12,
                                            sizeof(struct attn_decode_push), wg_dec, ATTN_N_SPEC);
        pd.spec[KV_SPEC_ITEM_TOKENS] = c->item_tokens;
        pd.spec[KV_SPEC_ATTN_U] = u >= 1 && u <= 8 ? (uint32_t)u : ATTN_DECODE_U;
        pd.spec[KV_SPEC_ATTN_VU] = vu >= 1 && vu <= 16 ? (uint32_t)vu : ATTN_DECODE_VU;
        OSCAR_TRY(ovk_pipeline_get(ctx, &pd, &c->pl_decode));
    }
    OSCAR_TRY(create_prefill(c));
    free(rot);
    *out = c;
    return OSCAR_OK;
fail:
    free(rot);
    oscar_kv_cache_destroy(c);
    return st;
}

OSCAR_API void oscar_kv_cache_destroy(oscar_kv_cache *c)
{
    if (!c) return;
    oscar_context *ctx = c->ctx;
    ovk_cmd_release(ctx, &c->cmd);
    for (uint32_t l = 0; c->int2_pool && l < c->p.n_layer; l++) ovk_buffer_destroy(ctx, &c->int2_pool[l]);
    for (uint32_t l = 0; c->f16_pool && l < c->p.n_layer; l++) ovk_buffer_destroy(ctx, &c->f16_pool[l]);
    free(c->int2_pool);
    free(c->f16_pool);
    ovk_buffer *bufs[] = { &c->rot_k, &c->rot_v, &c->means, &c->feedback, &c->metric, &c->int2_table, &c->f16_table, &c->slots, &c->rows, &c->items,
                             &c->partials, &c->q_rot, &c->counters, &c->q_dev, &c->staging, &c->io_k, &c->io_v, &c->io_q, &c->io_out,
                             &c->tiles };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) ovk_buffer_destroy(ctx, bufs[i]);
    free(c->clip_k), free(c->clip_v);
    free(c->copies), free(c->copy_dst);
    free(c->h_rows), free(c->h_items), free(c->h_row_vis), free(c->h_seq_sink), free(c->h_seq_fe);
    free(c->h_tiles);
    kv_book_free(&c->book);
    free(c);
}

/* ---- sequences ----------------------------------------------------------------------------- */
OSCAR_API oscar_status oscar_kv_seq_add(oscar_kv_cache *c, int32_t *seq)
{
    if (!c || !seq) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_seq_add: NULL argument");
    return kv_book_seq_add(&c->book, seq);
}

OSCAR_API oscar_status oscar_kv_seq_free(oscar_kv_cache *c, int32_t seq)
{
    if (!c) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_seq_free: NULL cache");
    return kv_book_seq_free(&c->book, seq);
}

OSCAR_API oscar_status oscar_kv_seq_length(const oscar_kv_cache *c, int32_t seq, uint32_t *len)
{
    if (!c || !len) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_seq_length: NULL argument");
    if (seq < 0 || (uint32_t)seq >= c->p.max_sequences || !c->book.seqs[seq].active)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "sequence %d does not exist", (int)seq);
    *len = c->book.seqs[seq].len;
    return OSCAR_OK;
}

OSCAR_API oscar_status oscar_kv_seq_fork(oscar_kv_cache *c, int32_t src, int32_t *dst)
{
    oscar_status st = OSCAR_OK;
    if (!c || !dst) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_seq_fork: NULL argument");
    if (c->book.plan.active) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "cannot fork inside a step");
    OSCAR_TRY(kv_book_seq_fork(&c->book, src, dst));
    if (c->book.n_copies == 0) return OSCAR_OK;
    OSCAR_TRY(ovk_cmd_begin(c->ctx, &c->cmd));
    for (uint32_t i = 0; i < c->book.n_copies; i++) {
        const kv_page_copy *pc = &c->book.copies[i];
        uint64_t bytes = pc->kind == KV_ITEM_INT2 ? c->int2_page_bytes : c->f16_page_bytes;
        for (uint32_t l = 0; l < c->p.n_layer; l++) {
            const ovk_buffer *pool = pc->kind == KV_ITEM_INT2 ? &c->int2_pool[l] : &c->f16_pool[l];
            ovk_cmd_copy(c->ctx, &c->cmd, pool, pc->src * bytes, pool, pc->dst * bytes, bytes);
        }
    }
    st = ovk_cmd_submit_wait(c->ctx, &c->cmd);
    if (st != OSCAR_OK) kv_book_seq_free(&c->book, *dst);
fail:
    return st;
}

/* ---- steps --------------------------------------------------------------------------------- */
uint32_t ovk_kv_step_tokens(const oscar_kv_cache *c) { return c->book.plan.active ? c->book.plan.n_tokens : 0; }

/* A prefill step (some sequence has more than one new row) with attn_prefill available: its
 * rows (sequence, causal limit; no items) and tiles, *done = 1. Otherwise n_tiles = 0 and
 * *done = 0 (items as usual). h_seq_sink, h_seq_fe and h_row_vis are filled. */
static oscar_status plan_prefill(oscar_kv_cache *c, int *done)
{
    oscar_status st = OSCAR_OK;
    const kv_step_plan *pl = &c->book.plan;
    *done = 0;
    c->n_tiles = 0;
    int prefill = 0;
    for (uint32_t r = 1; r < pl->n_tokens && !prefill; r++) prefill = pl->row_seq[r] == pl->row_seq[r - 1];
    if (!c->pl_prefill || !prefill) return OSCAR_OK;
    for (uint32_t r = 0; r < pl->n_tokens; r++) c->h_rows[r] = (struct kv_attn_row){ pl->row_seq[r], c->h_row_vis[r], 0, 0 };
    OSCAR_TRY(ovk_attn_build_tiles(pl->row_seq, c->h_row_vis, pl->n_tokens, c->h_seq_sink, c->h_seq_fe, c->pf_rows,
                                     c->h_tiles, c->p.max_step_tokens, &c->n_tiles));
    c->n_items = 0;
    *done = 1;
fail:
    return st;
}

/* Builds the attention rows and items of the planned step (pre-step INT2 boundary). */
static oscar_status plan_attention(oscar_kv_cache *c)
{
    oscar_status st = OSCAR_OK;
    const kv_step_plan *pl = &c->book.plan;
    uint64_t visible = 0;
    for (uint32_t s = 0; s < c->p.max_sequences; s++) {
        const kv_seq *q = &c->book.seqs[s];
        c->h_seq_sink[s] = c->book.cfg.sink;
        c->h_seq_fe[s] = q->flushed_end;
    }
    for (uint32_t r = 0; r < pl->n_tokens; r++) {
        c->h_row_vis[r] = pl->row_pos[r] + 1;
        visible += c->h_row_vis[r];
    }
    int prefill;
    OSCAR_TRY(plan_prefill(c, &prefill));
    if (prefill) return OSCAR_OK;
    /* split so the call has about target_groups workgroups, and at most ATTN_MAX_ITEMS items
     * (their partials) even when a prefill chunk's rows each see a long context */
    uint64_t split = visible * c->p.n_kv_head / c->target_groups;
    uint64_t min_split = (visible + ATTN_MAX_ITEMS / 2 - 1) / (ATTN_MAX_ITEMS / 2);
    if (split < min_split) split = min_split;
    split = (split + ATTN_MIN_SPLIT - 1) / ATTN_MIN_SPLIT * ATTN_MIN_SPLIT;
    if (split < c->min_split) split = c->min_split;
    if (split > UINT32_MAX / 2) split = UINT32_MAX / 2;
    uint32_t n_items = 0;
    OSCAR_TRY(ovk_attn_build_items(pl->row_seq, c->h_row_vis, pl->n_tokens, c->h_seq_sink, c->h_seq_fe, (uint32_t)split,
                                     NULL, NULL, 0, &n_items));
    if (n_items > c->items_cap) { /* grow (rarely: the split keeps the count near the target) */
        uint32_t cap = n_items + n_items / 2;
        ovk_buffer_destroy(c->ctx, &c->items);
        ovk_buffer_destroy(c->ctx, &c->partials);
        free(c->h_items);
        c->items_cap = 0;
        c->h_items = malloc((size_t)cap * sizeof *c->h_items);
        if (!c->h_items) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        OSCAR_TRY(ovk_buffer_create(c->ctx, (uint64_t)cap * sizeof *c->h_items, OSCAR_BUFFER_DEVICE, &c->items));
        OSCAR_TRY(ovk_buffer_create(c->ctx, (uint64_t)cap * c->p.n_head * KV_PARTIAL_FLOATS(c->p.head_dim) * 4,
                                      OSCAR_BUFFER_DEVICE, &c->partials));
        c->items_cap = cap;
    }
    OSCAR_TRY(ovk_attn_build_items(pl->row_seq, c->h_row_vis, pl->n_tokens, c->h_seq_sink, c->h_seq_fe, (uint32_t)split,
                                     c->h_rows, c->h_items, c->items_cap, &c->n_items));
fail:
    return st;
}

/* Bytes the staging buffer needs for a step with the current item capacity. */
static uint64_t staging_bytes(const oscar_kv_cache *c)
{
    return 2ull * c->p.max_sequences * c->book.max_pages * 4 + c->slots.size + c->rows.size +
           (uint64_t)c->items_cap * sizeof(struct kv_attn_item) + c->tiles.size;
}

/* Queues `bytes` from `src` to dst+offset through the staging buffer at *at. */
static void stage(oscar_kv_cache *c, uint64_t *at, const ovk_buffer *dst, uint64_t offset, const void *src, uint64_t bytes)
{
    if (bytes == 0) return;
    memcpy((char *)c->staging.mapped + *at, src, bytes);
    c->copies[c->n_copies] = (VkBufferCopy){ .srcOffset = *at, .dstOffset = offset, .size = bytes };
    c->copy_dst[c->n_copies++] = dst;
    *at += (bytes + 15) & ~15ull;
}

oscar_status ovk_kv_upload_step(oscar_kv_cache *c)
{
    oscar_status st = OSCAR_OK;
    kv_book *b = &c->book;
    const kv_step_plan *pl = &b->plan;
    uint32_t need = 2 * c->p.max_sequences + 5;
    if (c->staging.size < staging_bytes(c) + 16 * need) {
        ovk_buffer_destroy(c->ctx, &c->staging);
        OSCAR_TRY(ovk_buffer_create(c->ctx, staging_bytes(c) + 16 * need, OSCAR_BUFFER_STAGING, &c->staging));
    }
    if (c->max_copies < need) {
        free(c->copies), free(c->copy_dst);
        c->copies = malloc(need * sizeof *c->copies);
        c->copy_dst = malloc(need * sizeof *c->copy_dst);
        if (!c->copies || !c->copy_dst) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        c->max_copies = need;
    }
    uint64_t at = 0, row_bytes = (uint64_t)b->max_pages * 4;
    if (c->n_copies) /* the last step's uploads were never recorded: send every table again */
        for (uint32_t s = 0; s < c->p.max_sequences; s++) b->seqs[s].dirty = 1;
    c->n_copies = 0;
    for (uint32_t s = 0; s < c->p.max_sequences; s++) {
        kv_seq *q = &b->seqs[s];
        if (!q->dirty) continue;
        stage(c, &at, &c->int2_table, s * row_bytes, q->int2_pages, row_bytes);
        stage(c, &at, &c->f16_table, s * row_bytes, q->f16_pages, row_bytes);
        q->dirty = 0;
    }
    stage(c, &at, &c->slots, 0, pl->append, pl->n_tokens * sizeof *pl->append);
    stage(c, &at, &c->slots, (uint64_t)c->flush_offset * sizeof *pl->flush, pl->flush, pl->n_flush * sizeof *pl->flush);
    stage(c, &at, &c->rows, 0, c->h_rows, pl->n_tokens * sizeof *c->h_rows);
    stage(c, &at, &c->items, 0, c->h_items, c->n_items * sizeof *c->h_items);
    stage(c, &at, &c->tiles, 0, c->h_tiles, c->n_tiles * sizeof *c->h_tiles);
fail:
    return st;
}

/* Records the staged uploads of the step (once) ahead of the first kernel that reads them. */
static void record_uploads(oscar_kv_cache *c, ovk_cmd *cmd)
{
    if (c->n_copies == 0) return;
    for (uint32_t i = 0; i < c->n_copies; i++)
        c->ctx->vk.vkCmdCopyBuffer(cmd->cb, c->staging.buffer, c->copy_dst[i]->buffer, 1, &c->copies[i]);
    c->n_copies = 0;
}

OSCAR_API oscar_status oscar_kv_step_begin(oscar_kv_cache *c, uint32_t n_seqs, const int32_t *seqs, const uint32_t *n_new)
{
    oscar_status st = OSCAR_OK;
    if (!c || !seqs || !n_new) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_step_begin: NULL argument");
    OSCAR_TRY(kv_book_step_plan(&c->book, n_seqs, seqs, n_new));
    if ((st = plan_attention(c)) != OSCAR_OK || (st = ovk_kv_upload_step(c)) != OSCAR_OK) ovk_kv_cancel_step(c);
fail:
    return st;
}

static oscar_status check_step(const oscar_kv_cache *c, uint32_t layer, const char *what)
{
    if (!c->book.plan.active) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "%s outside a step (call oscar_kv_step_begin)", what);
    if (layer >= c->p.n_layer) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: layer %u of %u", what, layer, c->p.n_layer);
    return OSCAR_OK;
}

/* KV_SPEC_ROPE of a RoPE description (NULL: none). */
static uint32_t rope_spec(const ovk_kv_rope *rope)
{
    if (!rope) return KV_ROPE_NONE;
    return rope->type == OSCAR_ROPE_NEOX ? KV_ROPE_NEOX : KV_ROPE_NORMAL;
}

/* The layer's centering vectors, [K,V][n_kv][d] fp32, and key-center table (kv_append,
 * attn_decode, attn_prefill). */
static ovk_binding mean_binding(oscar_kv_cache *c, uint32_t layer)
{
    uint64_t bytes = 4ull * c->means_words;
    ovk_binding b = { &c->means, layer * bytes, bytes };
    return b;
}

/* The append dispatch (no barrier): K rows get RoPE on load when rope is given (fp32 rows only). */
static oscar_status dispatch_append(oscar_kv_cache *c, ovk_cmd *cmd, uint32_t layer, const ovk_binding *k,
                                    const ovk_binding *v, int input_f16, const ovk_kv_rope *rope)
{
    ovk_pipeline *p = c->pl_append;
    if (input_f16 && rope) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: RoPE on load needs fp32 rows");
    if (input_f16) {
        oscar_status st = get_pipeline(c, "kv_append", 9, sizeof(struct kv_append_push), WG_WRITE, KV_SPEC_INPUT_F16, 1, &p);
        if (st != OSCAR_OK) return st;
    } else if (rope) {
        ovk_pipeline **slot = &c->pl_append_rope[rope_spec(rope)];
        if (!*slot) {
            oscar_status st = get_pipeline(c, "kv_append", 9, sizeof(struct kv_append_push), WG_WRITE, KV_SPEC_ROPE,
                                           rope_spec(rope), slot);
            if (st != OSCAR_OK) return st;
        }
        p = *slot;
    }
    uint64_t rot_bytes = (uint64_t)c->n_rot * c->p.head_dim * c->p.head_dim * 4;
    ovk_binding slots = { &c->slots, 0, c->book.plan.n_tokens * sizeof(struct kv_token_slot) };
    ovk_binding b[9] = { *k, *v, { &c->rot_k, layer * rot_bytes, rot_bytes }, { &c->rot_v, layer * rot_bytes, rot_bytes },
                           slots, { &c->f16_pool[layer], 0, 0 }, mean_binding(c, layer),
                           rope ? rope->pos : slots, rope ? rope->inv_freq : slots }; /* unread without RoPE */
    struct kv_append_push push = { c->book.plan.n_tokens, rope ? rope->n_rot : 0 };
    uint32_t n = push.n_tokens;
    uint32_t groups[3] = { n < 65535 ? n : 65535, c->p.n_kv_head, 2 };
    return ovk_cmd_dispatch(c->ctx, cmd, p, b, &push, groups);
}

oscar_status ovk_kv_record_append(oscar_kv_cache *c, ovk_cmd *cmd, uint32_t layer, const ovk_binding *k,
                                    const ovk_binding *v, int input_f16)
{
    oscar_status st = check_step(c, layer, "append");
    if (st != OSCAR_OK) return st;
    record_uploads(c, cmd);
    ovk_cmd_barrier(c->ctx, cmd);
    return dispatch_append(c, cmd, layer, k, v, input_f16, NULL);
}

/* attn_prefill over the step's tiles: one workgroup per (tile, KV head), o·R_Vᵀ (+ μ_V) included. */
static oscar_status record_prefill(oscar_kv_cache *c, ovk_cmd *cmd, uint32_t layer, const ovk_binding *q,
                                   const ovk_binding *out)
{
    uint64_t rot_bytes = (uint64_t)c->n_rot * c->p.head_dim * c->p.head_dim * 4;
    struct attn_prefill_push pp = { c->n_tiles, c->book.max_pages, c->book.max_pages, c->p.attn_scale };
    ovk_binding b[10] = { *q, { &c->rows, 0, 0 }, { &c->tiles, 0, 0 }, { &c->int2_pool[layer], 0, 0 },
                            { &c->f16_pool[layer], 0, 0 }, { &c->int2_table, 0, 0 }, { &c->f16_table, 0, 0 },
                            { &c->rot_v, layer * rot_bytes, rot_bytes }, *out, mean_binding(c, layer) };
    uint32_t groups[3];
    ovk_attn_grid(c->n_tiles, c->p.n_kv_head, groups);
    return ovk_cmd_dispatch(c->ctx, cmd, c->pl_prefill, b, &pp, groups);
}

/* q_out = RoPE(q) (when rope is given), times R_K in the rotated modes: rotate_rows, no barrier.
 * *done: 1 when it recorded that (attention then reads q_out), 0 when there was nothing to do
 * (no rotation, no RoPE: attention reads q). */
static oscar_status dispatch_q_prep(oscar_kv_cache *c, ovk_cmd *cmd, uint32_t layer, const ovk_binding *q,
                                    const ovk_kv_rope *rope, const ovk_binding *q_out, int *done)
{
    uint32_t n_rows = c->book.plan.n_tokens, d = c->p.head_dim, H = c->p.n_head;
    uint64_t rot_bytes = (uint64_t)c->n_rot * d * d * 4;
    int rotated = c->mode == KV_MODE_HADAMARD || c->mode == KV_MODE_ROTATED;
    *done = 0;
    if (!rotated && !rope) return OSCAR_OK;
    ovk_pipeline *p = c->pl_rot;
    if (rope) {
        ovk_pipeline **slot = &c->pl_q_prep[rope_spec(rope)];
        if (!*slot) {
            ovk_pipeline_desc pd = cache_desc(c, "rotate_rows", 5, sizeof(struct kv_rotate_push), WG_ROTATE, ATTN_N_SPEC);
            pd.spec[KV_SPEC_TRANSPOSE] = rotated ? 0 : 2; /* 2: RoPE alone */
            pd.spec[KV_SPEC_ROPE] = rope_spec(rope);
            oscar_status st = ovk_pipeline_get(c->ctx, &pd, slot);
            if (st != OSCAR_OK) return st;
        }
        p = *slot;
    }
    /* query head h uses the R of its KV head */
    struct kv_rotate_push rp = { n_rows, H, c->n_rot > 1 ? c->gqa : H, rope ? rope->n_rot : 0 };
    ovk_binding rk = { &c->rot_k, layer * rot_bytes, rot_bytes };
    ovk_binding b[5] = { *q, rk, *q_out, rope ? rope->pos : rk, rope ? rope->inv_freq : rk }; /* unread without RoPE */
    uint32_t groups[3] = { n_rows * H < 65535 ? n_rows * H : 65535, 1, 1 };
    *done = 1;
    return ovk_cmd_dispatch(c->ctx, cmd, p, b, &rp, groups);
}

/* The attention dispatch over q as attention reads it (RoPE'd, rotated): attn_prefill in a
 * prefill step, else flash-decoding, whose last workgroup of each (row, KV head) merges and
 * applies R_Vᵀ. No barrier. */
static oscar_status dispatch_attention(oscar_kv_cache *c, ovk_cmd *cmd, uint32_t layer, const ovk_binding *q,
                                       const ovk_binding *out)
{
    if (c->n_tiles) return record_prefill(c, cmd, layer, q, out);
    uint64_t rot_bytes = (uint64_t)c->n_rot * c->p.head_dim * c->p.head_dim * 4;
    struct attn_decode_push dp = { c->n_items, c->book.max_pages, c->book.max_pages, c->p.attn_scale };
    ovk_binding b[12] = { *q, { &c->rows, 0, 0 }, { &c->items, 0, 0 }, { &c->int2_pool[layer], 0, 0 },
                            { &c->f16_pool[layer], 0, 0 }, { &c->int2_table, 0, 0 }, { &c->f16_table, 0, 0 },
                            { &c->partials, 0, 0 }, { &c->rot_v, layer * rot_bytes, rot_bytes }, *out,
                            { &c->counters, 0, 0 }, mean_binding(c, layer) };
    uint32_t groups[3];
    ovk_attn_grid(c->n_items, c->p.n_kv_head, groups);
    return ovk_cmd_dispatch(c->ctx, cmd, c->pl_decode, b, &dp, groups);
}

oscar_status ovk_kv_record_attention(oscar_kv_cache *c, ovk_cmd *cmd, uint32_t layer, const ovk_binding *q,
                                       const ovk_binding *out)
{
    oscar_status st = check_step(c, layer, "attention");
    if (st != OSCAR_OK) return st;
    ovk_binding q_rot = { &c->q_rot, 0, (uint64_t)c->book.plan.n_tokens * c->p.n_head * c->p.head_dim * 4 };
    int prepared = 0;
    record_uploads(c, cmd);
    ovk_cmd_barrier(c->ctx, cmd);
    OSCAR_TRY(dispatch_q_prep(c, cmd, layer, q, NULL, &q_rot, &prepared));
    if (prepared) ovk_cmd_barrier(c->ctx, cmd);
    st = dispatch_attention(c, cmd, layer, prepared ? &q_rot : q, out);
fail:
    return st;
}

oscar_status ovk_kv_record_append_attention(oscar_kv_cache *c, ovk_cmd *cmd, uint32_t layer, const ovk_binding *q,
                                              const ovk_binding *k, const ovk_binding *v, const ovk_binding *out,
                                              const ovk_kv_rope *rope)
{
    oscar_status st = check_step(c, layer, "append");
    if (st != OSCAR_OK) return st;
    if (rope && (rope->n_rot % 2 || rope->n_rot > c->p.head_dim))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: RoPE over %u of %u dims (must be even and fit)",
                           rope->n_rot, c->p.head_dim);
    ovk_binding q_rot = { &c->q_rot, 0, (uint64_t)c->book.plan.n_tokens * c->p.n_head * c->p.head_dim * 4 };
    int prepared = 0;
    record_uploads(c, cmd);
    ovk_cmd_barrier(c->ctx, cmd);
    OSCAR_TRY(dispatch_q_prep(c, cmd, layer, q, rope, &q_rot, &prepared));
    OSCAR_TRY(dispatch_append(c, cmd, layer, k, v, 0, rope));
    ovk_cmd_barrier(c->ctx, cmd);
    st = dispatch_attention(c, cmd, layer, prepared ? &q_rot : q, out);
fail:
    return st;
}

oscar_status ovk_kv_record_flush(oscar_kv_cache *c, ovk_cmd *cmd, uint32_t layer)
{
    oscar_status st = check_step(c, layer, "flush");
    if (st != OSCAR_OK || c->book.plan.n_flush == 0) return st;
    uint32_t n = c->book.plan.n_flush;
    uint64_t fb_bytes = (uint64_t)c->n_rot * c->p.head_dim * c->p.head_dim * 4;
    ovk_binding fb = c->key_feedback ? (ovk_binding){ &c->feedback, layer * fb_bytes, fb_bytes } : (ovk_binding){ &c->feedback, 0, 0 };
    ovk_binding mb = c->key_metric ? (ovk_binding){ &c->metric, layer * fb_bytes, fb_bytes } : (ovk_binding){ &c->metric, 0, 0 };
    ovk_binding b[5] = { { &c->slots, (uint64_t)c->flush_offset * sizeof(struct kv_token_slot), n * sizeof(struct kv_token_slot) },
                           { &c->f16_pool[layer], 0, 0 }, { &c->int2_pool[layer], 0, 0 }, fb, mb };
    struct kv_flush_push push = { n, c->clip_k[layer], c->clip_v[layer], c->key_feedback, c->p.refit_rounds, c->key_metric };
    uint32_t groups[3] = { n < 65535 ? n : 65535, c->p.n_kv_head, 2 };
    record_uploads(c, cmd);
    ovk_cmd_barrier(c->ctx, cmd);
    OSCAR_TRY(ovk_cmd_dispatch(c->ctx, cmd, c->pl_flush, b, &push, groups));
fail:
    return st;
}

void ovk_kv_commit_step(oscar_kv_cache *c) { kv_book_step_commit(&c->book); }

void ovk_kv_cancel_step(oscar_kv_cache *c)
{
    const kv_step_plan *pl = &c->book.plan;
    if (!pl->active) return;
    for (uint32_t i = 0; i < pl->n_seqs; i++) c->book.seqs[pl->seqs[i]].dirty = 1; /* tables back as they were */
    kv_book_step_cancel(&c->book);
}

/* ---- public step API: one submission per call, timed ---------------------------------------- */
static oscar_status submit_timed(oscar_kv_cache *c, int t0)
{
    int t1 = ovk_cmd_timestamp(c->ctx, &c->cmd);
    oscar_status st = ovk_cmd_submit_wait(c->ctx, &c->cmd);
    double ns = 0;
    if (st == OSCAR_OK && t0 >= 0 && t1 >= 0 && ovk_cmd_elapsed_ns(c->ctx, &c->cmd, t0, t1, &ns) == OSCAR_OK)
        c->last_gpu_ms = ns * 1e-6;
    return st;
}

OSCAR_API oscar_status oscar_kv_append(oscar_kv_cache *c, uint32_t layer, const float *k, const float *v)
{
    oscar_status st = OSCAR_OK;
    if (!c || !k || !v) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_append: NULL argument");
    OSCAR_TRY(check_step(c, layer, "oscar_kv_append"));
    size_t bytes = (size_t)c->book.plan.n_tokens * c->p.n_kv_head * c->p.head_dim * 4;
    memcpy(c->io_k.mapped, k, bytes);
    memcpy(c->io_v.mapped, v, bytes);
    OSCAR_TRY(ovk_cmd_begin(c->ctx, &c->cmd));
    int t0 = ovk_cmd_timestamp(c->ctx, &c->cmd);
    ovk_binding bk = { &c->io_k, 0, bytes }, bv = { &c->io_v, 0, bytes };
    st = ovk_kv_record_append(c, &c->cmd, layer, &bk, &bv, 0);
    oscar_status st2 = submit_timed(c, t0);
    if (st == OSCAR_OK) st = st2;
fail:
    return st;
}

OSCAR_API oscar_status oscar_kv_attention(oscar_kv_cache *c, uint32_t layer, const float *q, float *out)
{
    oscar_status st = OSCAR_OK;
    if (!c || !q || !out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_attention: NULL argument");
    OSCAR_TRY(check_step(c, layer, "oscar_kv_attention"));
    size_t bytes = (size_t)c->book.plan.n_tokens * c->p.n_head * c->p.head_dim * 4;
    memcpy(c->io_q.mapped, q, bytes);
    OSCAR_TRY(ovk_cmd_begin(c->ctx, &c->cmd));
    ovk_cmd_copy(c->ctx, &c->cmd, &c->io_q, 0, &c->q_dev, 0, bytes);
    /* timed: the attention kernels only; q is read from device memory, out written to the
     * host-visible readback buffer (n_rows x n_head x d floats, small) */
    int t0 = ovk_cmd_timestamp(c->ctx, &c->cmd);
    ovk_binding bq = { &c->q_dev, 0, bytes }, bo = { &c->io_out, 0, bytes };
    st = ovk_kv_record_attention(c, &c->cmd, layer, &bq, &bo);
    oscar_status st2 = OSCAR_OK;
    if (st == OSCAR_OK) ovk_cmd_host_barrier(c->ctx, &c->cmd);
    st2 = submit_timed(c, t0);
    if (st == OSCAR_OK) st = st2;
    if (st == OSCAR_OK) {
        if (!c->io_out.host_coherent) {
            VkMappedMemoryRange r = { .sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, .memory = c->io_out.memory, .size = VK_WHOLE_SIZE };
            c->ctx->vk.vkInvalidateMappedMemoryRanges(c->ctx->device, 1, &r);
        }
        memcpy(out, c->io_out.mapped, bytes);
    }
fail:
    return st;
}

OSCAR_API oscar_status oscar_kv_step_end(oscar_kv_cache *c)
{
    oscar_status st = OSCAR_OK;
    if (!c) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_step_end: NULL cache");
    if (!c->book.plan.active) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "oscar_kv_step_end without oscar_kv_step_begin");
    if (c->book.plan.n_flush) {
        OSCAR_TRY(ovk_cmd_begin(c->ctx, &c->cmd));
        int t0 = ovk_cmd_timestamp(c->ctx, &c->cmd);
        for (uint32_t l = 0; l < c->p.n_layer && st == OSCAR_OK; l++) st = ovk_kv_record_flush(c, &c->cmd, l);
        oscar_status st2 = submit_timed(c, t0);
        if (st == OSCAR_OK) st = st2;
        if (st != OSCAR_OK) goto fail;
    }
    ovk_kv_commit_step(c);
fail:
    return st;
}

/* ---- accounting ---------------------------------------------------------------------------- */
OSCAR_API oscar_status oscar_kv_get_stats(const oscar_kv_cache *c, oscar_kv_stats *s)
{
    if (!c || !s) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_get_stats: NULL argument");
    memset(s, 0, sizeof *s);
    const kv_book *b = &c->book;
    uint32_t L = c->p.n_layer, P = c->p.page_tokens;
    s->mode = c->p.mode;
    s->page_tokens = P;
    s->int2_pages_total = b->int2.n_pages;
    s->int2_pages_used = b->int2.n_pages - b->int2.n_free;
    s->f16_pages_total = b->f16.n_pages;
    s->f16_pages_used = b->f16.n_pages - b->f16.n_free;
    s->int2_bytes_per_token = c->int2_page_bytes * L / P;
    s->f16_bytes_per_token = c->f16_page_bytes * L / P;
    s->bytes_total = (uint64_t)L * (b->int2.n_pages * c->int2_page_bytes + b->f16.n_pages * c->f16_page_bytes);
    s->bytes_used = (uint64_t)L * (s->int2_pages_used * c->int2_page_bytes + s->f16_pages_used * c->f16_page_bytes);
    for (uint32_t q = 0; q < c->p.max_sequences; q++) {
        const kv_seq *sq = &b->seqs[q];
        if (!sq->active) continue;
        uint64_t n_int2 = b->cfg.int2 && sq->flushed_end > b->cfg.sink ? sq->flushed_end - b->cfg.sink : 0;
        s->int2_tokens += n_int2;
        s->f16_tokens += sq->len - n_int2;
    }
    uint64_t tokens = s->int2_tokens + s->f16_tokens;
    if (tokens)
        s->bits_per_element = (double)s->bytes_used * 8.0 / ((double)tokens * L * 2 * c->p.n_kv_head * c->p.head_dim);
    /* longest new sequence: fp16 window pages first, then INT2 pages */
    uint32_t lo = 0, hi = c->p.max_context;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2, i2, f;
        kv_book_pages_for(&b->cfg, mid, &i2, &f);
        if (i2 <= b->int2.n_free && f <= b->f16.n_free) lo = mid;
        else hi = mid - 1;
    }
    s->max_context = lo;
    s->last_gpu_ms = c->last_gpu_ms;
    return OSCAR_OK;
}

OSCAR_API oscar_status oscar_kv_max_context(const oscar_kv_params *params, uint64_t budget, uint32_t *max_tokens)
{
    oscar_status st = OSCAR_OK;
    if (!params || !max_tokens) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_kv_max_context: NULL argument");
    oscar_kv_params p = *params;
    p.max_context = UINT32_MAX / 2;
    p.max_sequences = 1;
    OSCAR_TRY(check_params(&p));
    uint32_t d = p.head_dim;
    uint64_t i2b = 4ull * KV_INT2_PAGE_WORDS(p.n_kv_head, p.page_tokens, d, p.group_size) * p.n_layer;
    uint64_t f16b = 4ull * KV_F16_PAGE_WORDS(p.n_kv_head, p.page_tokens, d) * p.n_layer;
    kv_book_config cfg;
    seq_sizes(&p, p.mode != OSCAR_KV_FP16, 0, 0, 0, &cfg);
    uint32_t lo = 0, hi = UINT32_MAX / 2;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2, i2, f;
        kv_book_pages_for(&cfg, mid, &i2, &f);
        if ((uint64_t)i2 * i2b + (uint64_t)f * f16b <= budget) lo = mid;
        else hi = mid - 1;
    }
    *max_tokens = lo;
fail:
    return st;
}

/* ---- test hooks ---------------------------------------------------------------------------- */
#include "attn_ref.h"

oscar_status ovk_kv_snapshot(oscar_kv_cache *c, uint32_t layer, attn_ref_cache *out)
{
    oscar_status st = OSCAR_OK;
    memset(out, 0, sizeof *out);
    const kv_book *b = &c->book;
    uint32_t S = c->p.max_sequences;
    uint32_t *int2 = malloc(c->int2_pool[layer].size), *f16 = malloc(c->f16_pool[layer].size);
    int32_t *t_int2 = malloc((size_t)S * b->max_pages * 4), *t_f16 = malloc((size_t)S * b->max_pages * 4);
    uint32_t *sink = malloc(S * 4), *fe = malloc(S * 4), *means = malloc(4ull * c->means_words);
    out->int2_pool = int2, out->f16_pool = f16, out->int2_table = t_int2, out->f16_table = t_f16;
    out->sink = sink, out->flushed_end = fe, out->means = means;
    if (!int2 || !f16 || !t_int2 || !t_f16 || !sink || !fe || !means) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    OSCAR_TRY(ovk_buffer_download(c->ctx, &c->means, 4ull * layer * c->means_words, means, 4ull * c->means_words));
    if (c->center_block) out->key_centers = means + 2 * c->p.n_kv_head * c->p.head_dim, out->center_block = c->center_block;
    OSCAR_TRY(ovk_buffer_download(c->ctx, &c->int2_pool[layer], 0, int2, c->int2_pool[layer].size));
    OSCAR_TRY(ovk_buffer_download(c->ctx, &c->f16_pool[layer], 0, f16, c->f16_pool[layer].size));
    OSCAR_TRY(ovk_buffer_download(c->ctx, &c->int2_table, 0, t_int2, (size_t)S * b->max_pages * 4));
    OSCAR_TRY(ovk_buffer_download(c->ctx, &c->f16_table, 0, t_f16, (size_t)S * b->max_pages * 4));
    for (uint32_t s = 0; s < S; s++) {
        sink[s] = b->cfg.sink;
        fe[s] = b->seqs[s].flushed_end;
    }
    out->mode = c->mode;
    out->head_dim = c->p.head_dim;
    out->group = c->p.group_size;
    out->page = c->p.page_tokens;
    out->n_kv = c->p.n_kv_head;
    out->n_int2_pages = b->int2.n_pages;
    out->n_f16_pages = b->f16.n_pages;
    out->max_int2_pages = out->max_f16_pages = b->max_pages;
    out->n_seq = S;
    return OSCAR_OK;
fail:
    ovk_kv_snapshot_free(out);
    return st;
}

void ovk_kv_snapshot_free(attn_ref_cache *s)
{
    free((void *)s->int2_pool), free((void *)s->f16_pool), free((void *)s->int2_table), free((void *)s->f16_table);
    free((void *)s->sink), free((void *)s->flushed_end), free((void *)s->means);
    memset(s, 0, sizeof *s);
}

oscar_status ovk_kv_rotations(oscar_kv_cache *c, uint32_t layer, float *rot_k, float *rot_v, uint32_t *n_rot)
{
    oscar_status st = OSCAR_OK;
    uint64_t bytes = (uint64_t)c->n_rot * c->p.head_dim * c->p.head_dim * 4;
    if (rot_k) OSCAR_TRY(ovk_buffer_download(c->ctx, &c->rot_k, layer * bytes, rot_k, bytes));
    if (rot_v) OSCAR_TRY(ovk_buffer_download(c->ctx, &c->rot_v, layer * bytes, rot_v, bytes));
    if (n_rot) *n_rot = c->n_rot;
fail:
    return st;
}
