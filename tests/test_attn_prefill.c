/* shaders/attn_prefill.comp (query-tiled prefill attention with o·R_Vᵀ) against the C
 * reference (runtime/attn_ref.c) on random paged caches, built as tests/test_attn_decode.c
 * builds them: shuffled physical pages, forked sequences sharing pages, lengths at every
 * window and page boundary, several flush points (INT2 region anywhere, all or nothing), every
 * slot no row may read poisoned with fp16 NaN. Rows are prefill blocks: the last m tokens of
 * each sequence (n_visible = len - m + 1 .. len, so every row has its own causal limit), m
 * chosen so tiles are full, partial and single rows, plus one row that sees nothing.
 * GQA 1/3/4/8, d 64/128/256, G 32/64/128, all four modes, R_V per layer and per KV head,
 * random non-symmetric R_V (a transposed R_V fails), the tile shape the cache picks and small
 * forced shapes (many chunks, chunks shorter than a page), adversarial logits (q x300).
 * The call runs twice with the output poisoned in between. Bound: normalised squared error
 * <= 1e-5 against the reference over the same dequantized values.
 *
 * Every case but the forced tile shapes runs attn_prefill.coopmat too (its scalar emulation
 * attn_prefill_emu.f16, but for the long case, where the device has no cooperative matrices but
 * fp16 arithmetic), with
 * the shape the cache picks, under the accuracy policy (docs/accuracy.md): NSE <= 1e-5 against
 * the reference that rounds as the kernel does (attn_ref_cache.f16_inputs) and <= 1e-4 against
 * the exact one; adversarial cases against the first only. Then once more with its walks split
 * (ovk_attn_split_tiles with parts of at least a quarter of the longest walk, 16 chunks in the
 * long case, which the emulation then runs too) and merged by attn_prefill_merge, under the same
 * bounds (the merge reorders sums).
 * The split rule itself is checked in C (check_split_rule): which walks split, into how many
 * parts, and that the parts' chunks, walked as the kernel walks them, are the whole walk's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_ref.h"
#include "attn_tiles.h"
#include "attn_items.h"
#include "common/kv_write.h"
#include "half.h"
#include "attn_scene.h"
#include "test_accuracy.h"
#include "test_gpu.h"

#define POISON ATTN_SCENE_POISON
#define WG 128u

typedef struct attn_case {
    const char *name;
    uint32_t mode, d, G, P, nkv, gqa;
    uint32_t sink, recent;  /* window sizes (int2 modes) */
    float q_mul;            /* query magnitude: large values make logits overflow exp() */
    float mn_mul;           /* INT2 min magnitude */
    int rot_per_head;       /* rotated modes: one R_V per KV head (else one for the layer) */
    uint32_t rows, chunk;   /* forced tile shape; 0: ovk_attn_prefill_shape's */
    uint32_t long_len;      /* nonzero: one sequence of this length instead of the boundary list */
    uint32_t long_rows;     /* its prefill rows */
} attn_case;

/* The cooperative-matrix prefill kernel this device runs: the real one where it has 16 x 16 x 16
 * fp16 matrices, else the emulation where it has fp16 arithmetic, else NULL. */
static const char *cm_shader(oscar_context *ctx)
{
    if (!ctx->info.subgroup_shuffle) return NULL;
    const char *pick = ovk_pick_variant(ctx, "attn_prefill");
    if (pick && strcmp(pick, "attn_prefill.coopmat") == 0 && ovk_coopmat_has_f16_shape(ctx, 16, 16, 16)) return pick;
    return ovk_variant_usable(ctx, "attn_prefill_emu.f16") && ovk_max_subgroup_size(ctx) >= 4 ? "attn_prefill_emu.f16" : NULL;
}

/* ---- split walks: the planning rule in C ---- */
static uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }
static uint32_t max_u32(uint32_t a, uint32_t b) { return a > b ? a : b; }

/* The chunks the kernel walks for a tile (first position << 8 | tokens), as
 * common/attn_prefill_cm_body.glsl's range_bounds and next_chunk go; returns the count. */
static uint32_t kernel_chunks(const struct kv_attn_tile *t, uint32_t C, uint64_t *out, uint32_t max)
{
    uint32_t n = 0, nv = t->n_visible, sink = t->sink, fe = t->flushed_end;
    int tiered = fe > sink;
    for (uint32_t r = 0; r < 3; r++) {
        uint32_t b = max_u32(r == 0 ? 0 : r == 1 ? sink : max_u32(fe, sink), t->walk_begin);
        uint32_t e = !tiered ? (r == 0 ? nv : 0) : r == 0 ? min_u32(sink, nv) : r == 1 ? min_u32(fe, nv) : nv;
        for (uint32_t p = b; p < e; p += C)
            if (n < max) out[n++] = (uint64_t)p << 8 | min_u32(e - p, C);
    }
    return n;
}

/* One random step: walks of random rows and histories (fp16 mode, INT2 with windows, nothing
 * flushed yet, histories shorter than the sinks), split by a random rule. */
static void check_split_once(uint32_t C, uint32_t n_kv, uint32_t below, uint32_t target, uint32_t min_chunks, uint32_t max_len)
{
    enum { MAX_WALKS = 40, MAX_ROWS_T = 16 };
    struct kv_attn_tile walks[MAX_WALKS];
    struct kv_attn_row rows[MAX_WALKS * MAX_ROWS_T];
    uint32_t n_walks = 1 + test_rng_u32() % MAX_WALKS, n_rows = 0, max_rows = 0;
    uint64_t total = 0;
    for (uint32_t i = 0; i < n_walks; i++) {
        uint32_t nr = 1 + test_rng_u32() % MAX_ROWS_T, nv = test_rng_u32() % (max_len + 1);
        uint32_t kind = test_rng_u32() % 3, sink = kind ? (test_rng_u32() % 2 ? 4 : 64) : 0;
        uint32_t fe = kind == 1 ? sink + test_rng_u32() % (nv + 8) : kind == 2 ? sink : 0; /* kind 2: nothing flushed */
        walks[i] = (struct kv_attn_tile){ n_rows, nr, i, nv, sink, fe, 0, 0 };
        for (uint32_t r = 0; r < nr; r++) rows[n_rows + r] = (struct kv_attn_row){ i, nv, 7, 9 }; /* items overwritten */
        n_rows += nr;
        max_rows = max_u32(max_rows, nr);
        total += ovk_attn_walk_chunks(&walks[i], C);
    }
    uint32_t cap = (uint32_t)OVK_ATTN_SPLIT_MAX_TILES(n_walks, n_kv, target), n_tiles = 0, n_items = 0;
    struct kv_attn_tile *tiles = calloc(cap, sizeof *tiles);
    CHECK_OK(ovk_attn_split_tiles(walks, n_walks, C, n_kv, below, target, min_chunks, rows, tiles, cap, &n_tiles, &n_items));
    CHECK(n_items <= OVK_ATTN_SPLIT_MAX_ITEMS(max_rows, n_rows, n_kv, target));
    int split = min_chunks > 0 && (uint64_t)n_walks * n_kv < below;
    uint64_t pp = max_u32(min_chunks, (uint32_t)((total * n_kv + target - 1) / target));
    uint32_t at = 0, split_parts = 0, n_split = 0;
    uint8_t *item_seen = calloc(n_items + 1, 1);
    static uint64_t whole[8192], part[8192];
    for (uint32_t i = 0; i < n_walks; i++) {
        const struct kv_attn_tile *w = &walks[i];
        uint32_t W = ovk_attn_walk_chunks(w, C), nw = kernel_chunks(w, C, whole, 8192);
        CHECK(nw == W);
        uint64_t by_work = (W + pp - 1) / pp, by_min = min_chunks ? W / min_chunks : 0;
        uint32_t want_S = split && by_work > 1 && by_min > 1 ? (uint32_t)(by_work < by_min ? by_work : by_min) : 1, S = 0;
        while (at + S < n_tiles && tiles[at + S].row_begin == w->row_begin) S++;
        CHECK_MSG(S == want_S, "walk of %u chunks (C %u, n_kv %u, below %u, target %u, min %u): %u parts, want %u", W, C, n_kv,
                  below, target, min_chunks, S, want_S);
        if (S == 1) {
            CHECK(memcmp(&tiles[at], w, sizeof *w) == 0);
            for (uint32_t r = w->row_begin; r < w->row_begin + w->n_rows; r++) CHECK(rows[r].item_begin == 0 && rows[r].item_end == 0);
        } else {
            split_parts += S, n_split++;
            uint32_t got = 0;
            for (uint32_t s = 0; s < S; s++) { /* the parts' chunks, in order, are the walk's, W / S each (floor or ceil) */
                const struct kv_attn_tile *t = &tiles[at + s];
                CHECK(t->part == s + 1 && t->n_rows == w->n_rows && t->seq == w->seq && t->sink == w->sink &&
                      t->flushed_end == w->flushed_end);
                uint32_t np = kernel_chunks(t, C, part, 8192);
                CHECK_MSG(np >= W / S && np <= (W + S - 1) / S && np >= min_chunks && got + np <= nw &&
                              memcmp(part, whole + got, np * sizeof *part) == 0,
                          "part %u of %u: %u chunks from chunk %u of %u", s, S, np, got, nw);
                got += np;
            }
            CHECK(got == nw);
            for (uint32_t r = w->row_begin; r < w->row_begin + w->n_rows; r++) {
                CHECK(rows[r].item_end == rows[r].item_begin + S && rows[r].item_end <= n_items);
                for (uint32_t k = rows[r].item_begin; k < rows[r].item_end && k < n_items; k++) item_seen[k]++;
            }
        }
        at += S;
    }
    CHECK(at == n_tiles && split_parts - n_split <= target / n_kv);
    for (uint32_t k = 0; k < n_items; k++) CHECK(item_seen[k] == 1);
    free(item_seen);
    free(tiles);
}

static void check_split_rule(void)
{
    for (int i = 0; i < 400; i++) {
        static const uint32_t chunks[] = { 16, 32, 64 }, kvs[] = { 1, 2, 8 }, targets[] = { 64, 1024 }, mins[] = { 0, 1, 4, 64 };
        static const uint32_t belows[] = { 16, 128, 1024, UINT32_MAX }; /* the threshold apart from the target */
        check_split_once(chunks[i % 3], kvs[i / 3 % 3], belows[i / 72 % 4], targets[i / 9 % 2], mins[i / 18 % 4],
                         i % 2 ? 5000 : 200);
    }
    /* a 512-row step of Llama-3-8B's shape (8 KV heads, 16 rows a tile, chunks of 32): at 32K
     * history (fp16) 32 tiles give 256 workgroups, each walk in 4 parts of 256 chunks makes 1024;
     * the first step of a prompt (at most 512 tokens, 16 chunks) stays whole */
    struct kv_attn_tile walks[32], tiles[32 + 128];
    struct kv_attn_row rows[512];
    for (uint32_t len = 512; len <= 32768; len += 32768 - 512) {
        for (uint32_t i = 0; i < 32; i++) walks[i] = (struct kv_attn_tile){ 16 * i, 16, 0, len, 0, 0, 0, 0 }; /* fp16 */
        uint32_t n_tiles, n_items;
        CHECK_OK(ovk_attn_split_tiles(walks, 32, 32, 8, 1024, 1024, 64, rows, tiles, 32 + 128, &n_tiles, &n_items));
        CHECK_MSG(n_tiles == (len > 512 ? 128u : 32u) && n_items == (len > 512 ? 2048u : 0u), "%u tokens: %u tiles, %u items", len,
                  n_tiles, n_items);
        /* the cache's threshold (128 workgroups): 256 are enough, nothing splits */
        CHECK_OK(ovk_attn_split_tiles(walks, 32, 32, 8, 128, 1024, 64, rows, tiles, 32 + 128, &n_tiles, &n_items));
        CHECK_MSG(n_tiles == 32 && n_items == 0, "%u tokens below 128 workgroups: %u tiles, %u items", len, n_tiles, n_items);
    }
    uint32_t n_tiles, n_items;
    CHECK_STATUS(ovk_attn_split_tiles(walks, 32, 32, 8, 1024, 1024, 64, rows, tiles, 100, &n_tiles, &n_items), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_attn_split_tiles(walks, 32, 0, 8, 1024, 1024, 64, rows, tiles, 160, &n_tiles, &n_items), OSCAR_ERROR_INVALID_ARGUMENT);
}

/* ---- the kernels ---- */
/* The shared random cache (tests/support/attn_scene.h) for c, then this test's rows. */
static int scene_build(const attn_case *c, attn_scene *s)
{
    attn_scene_shape shape = { c->mode, c->d, c->G, c->P, c->nkv, c->sink, c->recent, c->mn_mul, c->long_len };
    attn_scene_build(&shape, s);

    /* rows: a prefill block at the end of every sequence, m = 1, 2, 3, 7, 16, 17, 33, 40,
     * ... rows (at most the sequence's length), then one row that sees nothing */
    static const uint32_t block[] = { 1, 2, 3, 7, 16, 17, 33, 40, 5, 31, 64, 9, 70 };
    uint32_t n = 1;
    for (uint32_t q = 0; q < s->n_seq; q++) {
        uint32_t m = c->long_len ? c->long_rows : block[q % 13];
        n += m < s->len[q] ? m : s->len[q];
    }
    s->row_seq = malloc(4 * n);
    s->row_n = malloc(4 * n);
    uint32_t r = 0;
    for (uint32_t q = 0; q < s->n_seq; q++) {
        uint32_t m = c->long_len ? c->long_rows : block[q % 13];
        if (m > s->len[q]) m = s->len[q];
        for (uint32_t k = 0; k < m; k++) {
            s->row_seq[r] = q;
            s->row_n[r++] = s->len[q] - m + 1 + k;
        }
    }
    s->row_seq[r] = 0;
    s->row_n[r++] = 0;
    s->n_rows = r;
    return 0;
}

/* The walk of the cooperative-matrix kernel `walk` (bindings b, tiles and partials replaced)
 * over `walks` [n_walks] cut into parts of at least a quarter of the longest walk (so that
 * some walks split, in up to 7 parts, and others stay whole; 16 chunks in the long case), then
 * attn_prefill_merge, as the cache records them, twice with the output and the partials
 * poisoned in between: the output into got [out_n]. */
static void split_case(oscar_context *ctx, const attn_case *c, const attn_scene *s, const ovk_pipeline *walk,
                       const ovk_binding b[11], const struct kv_attn_row *rows0, const struct kv_attn_tile *walks,
                       uint32_t n_walks, uint32_t chunk, float *got, size_t out_n)
{
    uint32_t n_head = c->nkv * c->gqa, d = c->d, target = 1u << 20, max_rows = 0, max_w = 0;
    for (uint32_t i = 0; i < n_walks; i++) {
        max_rows = max_u32(max_rows, walks[i].n_rows);
        max_w = max_u32(max_w, ovk_attn_walk_chunks(&walks[i], chunk));
    }
    uint32_t cap = (uint32_t)OVK_ATTN_SPLIT_MAX_TILES(n_walks, c->nkv, target), n_tiles = 0, n_items = 0;
    struct kv_attn_tile *tiles = calloc(cap, sizeof *tiles);
    struct kv_attn_row *rows = malloc(sizeof *rows * s->n_rows);
    memcpy(rows, rows0, sizeof *rows * s->n_rows);
    CHECK_OK(ovk_attn_split_tiles(walks, n_walks, chunk, c->nkv, UINT32_MAX, target, c->long_len ? 16 : max_u32(1, max_w / 4),
                                  rows, tiles, cap, &n_tiles, &n_items));
    CHECK_MSG(n_items > 0, "%s: no walk split", c->name);
    ovk_buffer b_tiles, b_rows, b_partials;
    uint64_t partial_bytes = (uint64_t)n_items * n_head * KV_PARTIAL_FLOATS(d) * 4;
    CHECK_OK(test_gpu_buffer_from(ctx, tiles, sizeof *tiles * n_tiles, &b_tiles));
    CHECK_OK(test_gpu_buffer_from(ctx, rows, sizeof *rows * s->n_rows, &b_rows));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, partial_bytes, &b_partials));
    ovk_binding wb[11];
    memcpy(wb, b, sizeof wb);
    wb[1] = (ovk_binding){ &b_rows, 0, 0 };
    wb[2] = (ovk_binding){ &b_tiles, 0, 0 };
    wb[10] = (ovk_binding){ &b_partials, 0, 0 };
    /* the merge: decode attention's interface, q, items and counters unread */
    ovk_binding mb[12] = { b[0], wb[1], wb[1], b[3], b[4], b[5], b[6], wb[10], b[7], b[8], wb[1], b[9] };
    ovk_pipeline_desc md = { .shader = "attn_prefill_merge", .n_buffers = 12, .push_size = sizeof(struct attn_decode_push),
                             .n_spec = ATTN_N_SPEC,
                             .spec = { /* WORKGROUP */ WG, /* HEAD_DIM */ d, /* GROUP */ c->G, /* PAGE */ c->P,
                                       /* N_KV */ c->nkv, /* GQA */ c->gqa, /* MODE */ c->mode,
                                       [KV_SPEC_ROT_PER_HEAD] = c->rot_per_head != 0 } };
    ovk_pipeline *merge = NULL;
    CHECK_OK(ovk_pipeline_get(ctx, &md, &merge));
    struct attn_prefill_push wp = { n_tiles, s->max_int2_pages, s->max_f16_pages, 1.0f / sqrtf((float)d) };
    struct attn_decode_push mp = { s->n_rows, s->max_int2_pages, s->max_f16_pages, wp.scale };
    uint32_t wg[3], mg[3];
    ovk_attn_grid(n_tiles, c->nkv, wg);
    ovk_attn_grid(s->n_rows, c->nkv, mg);
    const ovk_buffer *out = b[8].buffer;
    double t0 = test_now() * 1e3;
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    for (int run = 0; run < 2; run++) {
        ctx->vk.vkCmdFillBuffer(ctx->cmd.cb, out->buffer, 0, out->size, POISON);
        ctx->vk.vkCmdFillBuffer(ctx->cmd.cb, b_partials.buffer, 0, b_partials.size, POISON);
        ovk_cmd_barrier(ctx, &ctx->cmd);
        CHECK_OK(ovk_cmd_dispatch(ctx, &ctx->cmd, walk, wb, &wp, wg));
        ovk_cmd_barrier(ctx, &ctx->cmd);
        CHECK_OK(ovk_cmd_dispatch(ctx, &ctx->cmd, merge, mb, &mp, mg));
        ovk_cmd_barrier(ctx, &ctx->cmd);
    }
    CHECK_OK(ovk_cmd_submit_wait(ctx, &ctx->cmd));
    CHECK_OK(ovk_buffer_download(ctx, out, 0, got, sizeof *got * out_n));
    printf("split %-30s %u walks -> %u tiles, %u items  %.1f ms\n", c->name, n_walks, n_tiles, n_items,
           (test_now() * 1e3 - t0) / 2);
    ovk_buffer *bufs[] = { &b_tiles, &b_rows, &b_partials };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) ovk_buffer_destroy(ctx, bufs[i]);
    free(tiles);
    free(rows);
}

/* Runs one case: tiles of the case's shape, two calls, comparison with the reference. */
static void run_case(oscar_context *ctx, const attn_case *c)
{
    attn_scene s = { 0 };
    scene_build(c, &s);
    uint32_t d = c->d, n_head = c->nkv * c->gqa;
    float scale = 1.0f / sqrtf((float)d);
    size_t out_n = (size_t)s.n_rows * n_head * d;
    float *q = attn_scene_random_q(&s, n_head, c->q_mul);
    float *got = malloc(sizeof *got * out_n), *want = malloc(sizeof *want * out_n);

    uint32_t shared = ctx->info.max_shared_memory < 32768 ? ctx->info.max_shared_memory : 32768;
    uint32_t rows_pt = 0, chunk = 0;
    ovk_attn_prefill_shape(d, c->gqa, WG, shared, &rows_pt, &chunk);
    CHECK_MSG(rows_pt >= 1, "%s: no prefill shape for %u bytes of shared memory", c->name, shared);
    if (c->rows) rows_pt = c->rows, chunk = c->chunk;
    CHECK_MSG(4ull * ATTN_PF_SHARED_FLOATS(rows_pt, chunk, c->gqa, d) <= shared, "%s: shape %u x %u too big", c->name,
              rows_pt, chunk);

    /* rows (only seq and n_visible are read) and tiles */
    struct kv_attn_row *rows = calloc(s.n_rows, sizeof *rows);
    for (uint32_t r = 0; r < s.n_rows; r++) rows[r] = (struct kv_attn_row){ s.row_seq[r], s.row_n[r], 0, 0 };
    uint32_t *sink = calloc(s.n_seq, 4), *fe = calloc(s.n_seq, 4);
    if (c->mode != KV_MODE_FP16) {
        memcpy(sink, s.sink, 4 * s.n_seq);
        memcpy(fe, s.flushed, 4 * s.n_seq);
    }
    uint32_t n_tiles = 0;
    CHECK_OK(ovk_attn_build_tiles(s.row_seq, s.row_n, s.n_rows, sink, fe, rows_pt, NULL, 0, &n_tiles));
    struct kv_attn_tile *tiles = calloc(n_tiles, sizeof *tiles);
    CHECK_OK(ovk_attn_build_tiles(s.row_seq, s.row_n, s.n_rows, sink, fe, rows_pt, tiles, n_tiles, &n_tiles));
    uint32_t covered = 0;
    for (uint32_t i = 0; i < n_tiles; i++) {
        CHECK(tiles[i].row_begin == covered && tiles[i].n_rows >= 1 && tiles[i].n_rows <= rows_pt);
        for (uint32_t r = tiles[i].row_begin; r < tiles[i].row_begin + tiles[i].n_rows; r++)
            CHECK(s.row_seq[r] == tiles[i].seq && s.row_n[r] <= tiles[i].n_visible);
        covered += tiles[i].n_rows;
    }
    CHECK(covered == s.n_rows);

    attn_ref_cache rc = attn_scene_ref_cache(&s);
    CHECK_OK(attn_ref_attention(&rc, q, s.row_seq, s.row_n, s.n_rows, n_head, scale, want));

    /* R_V: the reference output is in the rotated basis; the kernel returns o·R_Vᵀ */
    uint32_t n_rot = c->rot_per_head ? c->nkv : 1;
    float *rot = attn_scene_random_rv(n_rot, d);
    /* centering vectors: OSCAR mode adds μ_V to its output; the other modes must ignore them */
    float *means = attn_scene_random_means(c->nkv, d);
    attn_scene_kernel_output(&s, want, c->gqa, rot, c->rot_per_head, means);
    ovk_buffer b_means;
    CHECK_OK(test_gpu_buffer_from(ctx, means, sizeof *means * 2 * c->nkv * d, &b_means));

    ovk_buffer b_q, b_rows, b_tiles, b_rot, b_out;
    attn_scene_buffers cache;
    CHECK_OK(test_gpu_buffer_from(ctx, q, sizeof *q * out_n, &b_q));
    CHECK_OK(test_gpu_buffer_from(ctx, rows, sizeof *rows * s.n_rows, &b_rows));
    CHECK_OK(test_gpu_buffer_from(ctx, tiles, sizeof *tiles * n_tiles, &b_tiles));
    CHECK_OK(attn_scene_upload(ctx, &s, &cache));
    CHECK_OK(test_gpu_buffer_from(ctx, rot, sizeof *rot * n_rot * d * d, &b_rot));
    CHECK_OK(test_gpu_buffer_from(ctx, NULL, sizeof *got * out_n, &b_out));
    CHECK_OK(ovk_buffer_fill(ctx, &b_out, 0, sizeof *got * out_n, POISON));

    ovk_pipeline_desc pdesc = { .shader = "attn_prefill", .n_buffers = 10, .push_size = sizeof(struct attn_prefill_push),
                                  .n_spec = ATTN_PF_N_SPEC,
                                  .spec = { /* WORKGROUP */ WG, /* HEAD_DIM */ d, /* GROUP */ c->G, /* PAGE */ c->P,
                                            /* N_KV */ c->nkv, /* GQA */ c->gqa, /* MODE */ c->mode,
                                            [KV_SPEC_ROT_PER_HEAD] = c->rot_per_head != 0,
                                            [KV_SPEC_PF_ROWS] = rows_pt, [KV_SPEC_PF_CHUNK] = chunk } };
    ovk_pipeline *pp = NULL;
    CHECK_OK(ovk_pipeline_get(ctx, &pdesc, &pp));
    if (pp) {
        ovk_binding b[10] = { { &b_q, 0, 0 }, { &b_rows, 0, 0 }, { &b_tiles, 0, 0 }, { &cache.int2_pool, 0, 0 },
                                { &cache.f16_pool, 0, 0 }, { &cache.int2_table, 0, 0 }, { &cache.f16_table, 0, 0 },
                                { &b_rot, 0, 0 }, { &b_out, 0, 0 }, { &b_means, 0, 0 } };
        struct attn_prefill_push push = { n_tiles, s.max_int2_pages, s.max_f16_pages, scale };
        uint32_t g[3];
        ovk_attn_grid(n_tiles, c->nkv, g);
        double t0 = (test_now() * 1e3);
        CHECK_OK(attn_scene_run_twice(ctx, pp, b, &push, g, &b_out));
        double ms = ((test_now() * 1e3) - t0) / 2;
        CHECK_OK(ovk_buffer_download(ctx, &b_out, 0, got, sizeof *got * out_n));

        size_t bad;
        double nse = attn_scene_nse(c->name, got, want, out_n, &bad);
        CHECK_MSG(bad == 0 && nse <= 1e-5, "%s: %zu non-finite, nse %.3g vs reference (%u rows, %u tiles of %u, chunk %u)",
                  c->name, bad, nse, s.n_rows, n_tiles, rows_pt, chunk);
        printf("attn_prefill %-30s rows %4u tiles %3u x %2u chunk %2u  nse %.3g  %.1f ms\n", c->name, s.n_rows, n_tiles,
               rows_pt, chunk, nse, ms);
    }
    /* the cooperative-matrix kernel, its tiles of its own shape */
    const char *cm = cm_shader(ctx);
    uint32_t cm_rows = 0, cm_chunk = 0, cm_wg = 0;
    /* (the emulation's rolled loops would pass lavapipe's 65535 loop iterations an invocation
     * over the long case's whole walk: there it runs the split walk only) */
    int emulated = cm && strcmp(cm, "attn_prefill_emu.f16") == 0, whole = !(emulated && c->long_len);
    if (cm && !c->rows)
        ovk_attn_prefill_cm_shape(d, c->gqa, OVK_ATTN_PF_CM_PAIRS, ovk_max_subgroup_size(ctx),
                                  ctx->info.max_workgroup_invocations, ctx->info.max_shared_memory, &cm_rows, &cm_chunk, &cm_wg);
    if (cm_rows) {
        uint32_t cm_tiles = 0;
        CHECK_OK(ovk_attn_build_tiles(s.row_seq, s.row_n, s.n_rows, sink, fe, cm_rows, NULL, 0, &cm_tiles));
        struct kv_attn_tile *t2 = calloc(cm_tiles, sizeof *t2);
        CHECK_OK(ovk_attn_build_tiles(s.row_seq, s.row_n, s.n_rows, sink, fe, cm_rows, t2, cm_tiles, &cm_tiles));
        ovk_buffer b_t2, b_unread;
        CHECK_OK(test_gpu_buffer_from(ctx, t2, sizeof *t2 * cm_tiles, &b_t2));
        CHECK_OK(test_gpu_buffer_from(ctx, NULL, 16, &b_unread));
        float *faithful = malloc(sizeof *faithful * out_n);
        rc.f16_inputs = 1;
        CHECK_OK(attn_ref_attention(&rc, q, s.row_seq, s.row_n, s.n_rows, n_head, scale, faithful));
        attn_scene_kernel_output(&s, faithful, c->gqa, rot, c->rot_per_head, means);
        pdesc.shader = cm;
        pdesc.n_buffers = 11;
        pdesc.spec[KV_SPEC_WORKGROUP] = cm_wg;
        pdesc.spec[KV_SPEC_PF_ROWS] = cm_rows;
        pdesc.spec[KV_SPEC_PF_CHUNK] = cm_chunk;
        CHECK_OK(ovk_pipeline_get(ctx, &pdesc, &pp));
        ovk_binding b[11] = { { &b_q, 0, 0 }, { &b_rows, 0, 0 }, { &b_t2, 0, 0 }, { &cache.int2_pool, 0, 0 },
                                { &cache.f16_pool, 0, 0 }, { &cache.int2_table, 0, 0 }, { &cache.f16_table, 0, 0 },
                                { &b_rot, 0, 0 }, { &b_out, 0, 0 }, { &b_means, 0, 0 }, { &b_unread, 0, 0 } };
        char what[128];
        int adversarial = c->q_mul > 10.0f || c->mn_mul > 10.0f;
        if (whole) {
            struct attn_prefill_push push = { cm_tiles, s.max_int2_pages, s.max_f16_pages, scale };
            uint32_t g[3];
            ovk_attn_grid(cm_tiles, c->nkv, g);
            CHECK_OK(attn_scene_run_twice(ctx, pp, b, &push, g, &b_out));
            CHECK_OK(ovk_buffer_download(ctx, &b_out, 0, got, sizeof *got * out_n));
            snprintf(what, sizeof what, "%s %s (%u x %u, chunk %u)", cm, c->name, cm_rows, c->gqa, cm_chunk);
            CHECK(test_check_accuracy(what, got, faithful, adversarial ? NULL : want, out_n));
        }
        split_case(ctx, c, &s, pp, b, rows, t2, cm_tiles, cm_chunk, got, out_n);
        snprintf(what, sizeof what, "%s split %s (%u x %u, chunk %u)", cm, c->name, cm_rows, c->gqa, cm_chunk);
        CHECK(test_check_accuracy(what, got, faithful, adversarial ? NULL : want, out_n));
        ovk_buffer_destroy(ctx, &b_t2);
        ovk_buffer_destroy(ctx, &b_unread);
        free(t2);
        free(faithful);
    }
    ovk_buffer *bufs[] = { &b_q, &b_rows, &b_tiles, &b_rot, &b_out, &b_means };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) ovk_buffer_destroy(ctx, bufs[i]);
    attn_scene_buffers_destroy(ctx, &cache);
    free(q); free(got); free(want); free(rows); free(tiles); free(rot); free(means); free(sink); free(fe);
    attn_scene_free(&s);
}

/* The shapes the cache picks for common models within 32 KB: rows per tile and chunk. */
static void check_shapes(void)
{
    static const uint32_t shapes[][4] = { /* d, gqa, expected rows, chunk */
        { 64, 1, 32, 32 }, { 64, 3, 16, 16 }, { 128, 1, 32, 8 }, { 128, 4, 8, 8 }, { 128, 8, 4, 8 }, { 256, 8, 1, 8 },
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        uint32_t r, ch;
        ovk_attn_prefill_shape(shapes[i][0], shapes[i][1], WG, 32768, &r, &ch);
        CHECK_MSG(r == shapes[i][2] && ch == shapes[i][3], "shape d %u gqa %u: %u rows x %u tokens", shapes[i][0],
                  shapes[i][1], r, ch);
        CHECK(4ull * ATTN_PF_SHARED_FLOATS(r, ch, shapes[i][1], shapes[i][0]) <= 32768);
    }
    /* the cooperative-matrix kernel's: d, gqa, pairs aimed at, subgroup, shared bytes -> rows, chunk, workgroup */
    static const uint32_t cm[][8] = {
        { 128, 4, 128, 32, 49152, 32, 32, 256 }, { 128, 4, 64, 32, 49152, 16, 32, 128 },
        { 128, 8, 128, 32, 49152, 16, 32, 256 }, { 64, 3, 128, 32, 49152, 32, 32, 192 },
        { 256, 8, 128, 32, 49152, 16, 16, 256 }, { 128, 4, 128, 8, 32768, 32, 16, 64 },
        { 128, 1, 128, 64, 49152, 128, 32, 512 }, { 128, 4, 128, 32, 20480, 12, 16, 96 }, /* fewer rows to fit */
    };
    for (size_t i = 0; i < sizeof cm / sizeof cm[0]; i++) {
        uint32_t r, ch, wg;
        ovk_attn_prefill_cm_shape(cm[i][0], cm[i][1], cm[i][2], cm[i][3], 1024, cm[i][4], &r, &ch, &wg);
        CHECK_MSG(r == cm[i][5] && ch == cm[i][6] && wg == cm[i][7], "coopmat shape d %u gqa %u pairs %u: %u rows x %u tokens, %u threads",
                  cm[i][0], cm[i][1], cm[i][2], r, ch, wg);
        CHECK(ovk_attn_prefill_cm_shared_bytes(r, ch, cm[i][1], cm[i][0]) <= cm[i][4]);
    }
    uint32_t r, ch, wg;
    CHECK(ovk_attn_prefill_cm_shape(100, 4, 128, 32, 49152, 49152, &r, &ch, &wg) == 0 && r == 0 && wg == 0); /* d not a multiple of 16 */
    CHECK(ovk_attn_prefill_cm_shape(128, 4, 128, 32, 16, 49152, &r, &ch, &wg) == 0);   /* a workgroup smaller than a subgroup */
    CHECK(ovk_attn_prefill_cm_shape(256, 8, 128, 32, 1024, 16384, &r, &ch, &wg) == 0); /* too little shared memory */
    CHECK(ovk_attn_prefill_cm_shape(128, 4, 0, 32, 1024, 49152, &r, &ch, &wg) == 0);   /* no pairs */
    CHECK(ovk_attn_prefill_shape(128, 1, 100, 32768, &r, &ch) == 0); /* wg not a multiple of d/4 */
    CHECK(ovk_attn_prefill_shape(256, 16, WG, 4096, &r, &ch) == 0 && r == 0 && ch == 0);
}

int main(void)
{
    oscar_context *ctx = test_gpu_context();
    test_rng_seed(11);
    check_shapes();
    check_split_rule();
    const uint32_t R = KV_MODE_ROTATED, F = KV_MODE_FP16, I = KV_MODE_INT2, H = KV_MODE_HADAMARD;
    const attn_case cases[] = {
        /* name                        mode d   G    P  nkv gqa sink rec q_mul mn  per-head rows chunk */
        { "oscar d128 G128 gqa1",       R, 128, 128, 32, 2, 1, 4, 24, 1.0f, 1.0f, 0 },
        { "oscar d128 G64 gqa4 perhead", R, 128, 64, 16, 2, 4, 4, 24, 1.0f, 1.0f, 1 },
        { "int2 d64 G32 gqa8",          I, 64, 32, 16, 1, 8, 8, 16, 1.0f, 1.0f, 0 },
        { "hadamard d64 G64 gqa3",      H, 64, 64, 32, 3, 3, 4, 24, 1.0f, 1.0f, 1 },
        { "oscar d128 G32 gqa8 P64",    R, 128, 32, 64, 1, 8, 64, 256, 1.0f, 1.0f, 0 },
        { "oscar d256 G128 gqa8",       R, 256, 128, 16, 1, 8, 4, 20, 1.0f, 1.0f, 0 },
        { "oscar d256 G64 gqa1",        R, 256, 64, 16, 2, 1, 4, 20, 1.0f, 1.0f, 1 },
        { "oscar d64 G64 P5 tile 3x4",  R, 64, 64, 5, 1, 2, 4, 12, 1.0f, 1.0f, 0, 3, 4 },
        { "oscar d128 gqa3 tile 5x8",   R, 128, 128, 8, 2, 3, 3, 5, 1.0f, 1.0f, 1, 5, 8 },
        { "int2 adversarial q x300",    R, 128, 64, 16, 2, 4, 4, 24, 300.0f, 1.0f, 1 },
        { "int2 adversarial mins x100", R, 64, 32, 16, 1, 3, 4, 24, 3.0f, 100.0f, 0 },
        { "fp16 d128 gqa4",             F, 128, 128, 32, 2, 4, 4, 24, 1.0f, 1.0f, 0 },
        { "fp16 d64 gqa3 tile 32x4",    F, 64, 64, 16, 3, 3, 4, 8, 1.0f, 1.0f, 0, 32, 4 },
        { "fp16 d256 gqa1",             F, 256, 128, 16, 1, 1, 4, 24, 1.0f, 1.0f, 0 },
        { "fp16 adversarial q x300",    F, 64, 64, 16, 2, 8, 4, 24, 300.0f, 1.0f, 0 },
        /* a long prefill chunk: 512 rows after 2500 tokens (SmolLM2 shapes) */
        { "oscar long 512 rows",        R, 64, 64, 64, 1, 3, 64, 256, 1.0f, 1.0f, 0, 0, 0, 3000, 512 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(ctx, &cases[i]);
    return test_gpu_finish(ctx);
}
