/* The KV cache end to end through the public API (include/oscar/kv.h): steps of prefill and
 * decode over several sequences, forks and frees, every mode. After each attention call the
 * GPU output is compared with the C reference computed over the cache's own contents (pools
 * and page tables copied back): normalised squared error <= 1e-5, so float rounding is the
 * kernels' only error. Independently, fp16 mode (and any rotated mode while every token is
 * still in the fp16 windows) must equal exact fp32 attention over the K/V the test appended
 * (<= 1e-4): this is what catches a rotation applied in the wrong orientation, since the test
 * uses a non-symmetric R. Every mode also runs on decode attention's cooperative-matrix kernel (or
 * its scalar emulation), whose fp16 inputs get a reference that rounds alike; where the device
 * runs that kernel, prompt steps of 16 rows and more through decode attention take it on their own
 * (the cooperative-matrix kernel of batched steps, ATTN_CM_BATCH_ROWS); and with page pools cut into zones (each
 * dispatch over one zone's window). Also: bad parameters, freed sequences, full context, page
 * exhaustion that leaves other sequences untouched, and memory accounting. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_ref.h"
#include "kv_cache.h"
#include "kv_cache_impl.h"
#include "kv_snapshot.h"
#include "oscar/experimental.h"
#include "kv_ref.h"
#include "test_gpu.h"

#define MAX_SEQ 4
#define MAX_CTX 400

typedef struct shape {
    uint32_t d, G, n_kv, gqa, page, sink, recent, flush;
} shape;

/* The test's own record of every appended K/V (fp32, unrotated), for exact attention. */
typedef struct history {
    float *k, *v;  /* [MAX_SEQ][MAX_CTX][n_kv][d] */
    uint32_t len[MAX_SEQ];
} history;

/* Exact attention of one row (fp64) over the history: out [n_head][d]. */
static void exact_attention(const history *h, const shape *s, uint32_t seq, uint32_t n_vis, const float *q, float scale,
                            float *out)
{
    uint32_t d = s->d, H = s->n_kv * s->gqa;
    double *w = malloc(sizeof(double) * n_vis);
    for (uint32_t hd = 0; hd < H; hd++) {
        uint32_t kvh = hd / s->gqa;
        double mx = -INFINITY, sum = 0;
        for (uint32_t t = 0; t < n_vis; t++) {
            const float *k = h->k + (((size_t)seq * MAX_CTX + t) * s->n_kv + kvh) * d;
            double dot = 0;
            for (uint32_t e = 0; e < d; e++) dot += (double)q[hd * d + e] * k[e];
            w[t] = dot * scale;
            if (w[t] > mx) mx = w[t];
        }
        for (uint32_t t = 0; t < n_vis; t++) sum += (w[t] = exp(w[t] - mx));
        for (uint32_t e = 0; e < d; e++) {
            double o = 0;
            for (uint32_t t = 0; t < n_vis; t++) o += w[t] * h->v[(((size_t)seq * MAX_CTX + t) * s->n_kv + kvh) * d + e];
            out[hd * d + e] = (float)(o / sum);
        }
    }
    free(w);
}

typedef struct run {
    oscar_context *ctx;
    oscar_kv_cache *cache;
    shape s;
    oscar_kv_mode mode;
    uint32_t n_layer;
    history h[2];               /* per layer */
    float *mean_v;              /* [n_layer][n_kv][d] centering vectors of V (OSCAR mode), or NULL */
    double worst_ref, worst_exact_f16; /* largest errors seen */
    int checked_exact;
} run;

static void fill_rows(float *x, size_t n, int outliers, uint32_t d)
{
    for (size_t i = 0; i < n; i++) {
        x[i] = test_rng_normal();
        if (outliers && (i % d) % 17 == 3) x[i] *= 12.0f; /* planted outlier channels */
    }
}

/* One step over seqs with n_new tokens each, every layer, checks included. */
static uint32_t batched_calls; /* attention calls that ran the cooperative-matrix kernel of batched steps */

static oscar_status do_step(run *r, uint32_t n_seqs, const int32_t *seqs, const uint32_t *n_new)
{
    const shape *s = &r->s;
    uint32_t d = s->d, H = s->n_kv * s->gqa, total = 0;
    for (uint32_t i = 0; i < n_seqs; i++) total += n_new[i];
    oscar_status st = oscar_kv_step_begin(r->cache, n_seqs, seqs, n_new);
    if (st != OSCAR_OK) return st;
    float *k = malloc(sizeof(float) * total * s->n_kv * d), *v = malloc(sizeof(float) * total * s->n_kv * d);
    float *q = malloc(sizeof(float) * total * H * d), *out = malloc(sizeof(float) * total * H * d);
    float *ref = malloc(sizeof(float) * total * H * d), *q_rot = malloc(sizeof(float) * total * H * d);
    float *out_ref = malloc(sizeof(float) * total * H * d);
    float *rk = malloc(sizeof(float) * s->n_kv * d * d), *rv = malloc(sizeof(float) * s->n_kv * d * d);
    uint32_t *row_seq = malloc(4 * total), *row_vis = malloc(4 * total);
    int only_f16 = 1; /* every visible position still in fp16 (exact comparison possible) */
    for (uint32_t l = 0; l < r->n_layer; l++) {
        fill_rows(k, (size_t)total * s->n_kv * d, 1, d);
        fill_rows(v, (size_t)total * s->n_kv * d, 0, d);
        fill_rows(q, (size_t)total * H * d, 0, d);
        uint32_t row = 0;
        for (uint32_t i = 0; i < n_seqs; i++) {
            for (uint32_t t = 0; t < n_new[i]; t++, row++) {
                uint32_t pos = r->h[l].len[seqs[i]] + t;
                memcpy(r->h[l].k + (((size_t)seqs[i] * MAX_CTX + pos) * s->n_kv) * d, k + (size_t)row * s->n_kv * d, 4 * s->n_kv * d);
                memcpy(r->h[l].v + (((size_t)seqs[i] * MAX_CTX + pos) * s->n_kv) * d, v + (size_t)row * s->n_kv * d, 4 * s->n_kv * d);
                row_seq[row] = (uint32_t)seqs[i];
                row_vis[row] = pos + 1;
            }
        }
        CHECK_OK(oscar_kv_append(r->cache, l, k, v));
        CHECK_OK(oscar_kv_attention(r->cache, l, q, out));
        /* (1) against the C reference over the cache's own contents */
        attn_ref_cache snap;
        CHECK_OK(ovk_kv_snapshot(r->cache, l, &snap));
        uint32_t n_rot = 1;
        CHECK_OK(ovk_kv_rotations(r->cache, l, rk, rv, &n_rot));
        int rotated = r->mode == OSCAR_KV_INT2_HADAMARD || r->mode == OSCAR_KV_INT2_ROTATED;
        if (rotated) kv_ref_rotate_rows(q, total, H, d, rk, n_rot > 1 ? s->gqa : H, 0, q_rot);
        else memcpy(q_rot, q, sizeof(float) * total * H * d);
        float scale = 1.0f / sqrtf((float)d);
        /* the streaming kernel's packed-fp16 variant scores INT2 keys against q rounded to fp16,
         * the chunked kernel's integer-dot variant against q in two levels of int8 (in a decode
         * step: a prefill step's tiles go to attn_prefill, which keeps q): a reference that
         * rounds alike (1e-5), and one with fp32 q (1e-4) */
        int f16 = strcmp(ovk_kv_attention_variant(r->cache), "stream-f16") == 0;
        int q8 = !r->cache->n_tiles && strcmp(ovk_kv_attention_variant(r->cache), "chunked-f16-idot") == 0;
        /* q, K, V and p in fp16; a decode step's INT2 rows as exact codes (attn_decode_cm) */
        int cm = strncmp(ovk_kv_attention_variant(r->cache), "coopmat", 7) == 0;
        if (r->cache->cm_step) batched_calls++;
        for (int pass = f16 || q8 || cm ? 0 : 1; pass < 2; pass++) {
            snap.q_f16_int2 = pass == 0 && f16;
            snap.q_q8_int2 = pass == 0 && q8;
            snap.f16_inputs = pass == 0 && cm;
            snap.int2_codes = pass == 0 && cm && !r->cache->n_tiles;
            CHECK_OK(attn_ref_attention(&snap, q_rot, row_seq, row_vis, total, H, scale, ref));
            if (rotated) {
                kv_ref_rotate_rows(ref, total, H, d, rv, n_rot > 1 ? s->gqa : H, 1, out_ref);
                memcpy(ref, out_ref, sizeof(float) * total * H * d);
            }
            if (r->mean_v) /* stored values are (v − μ_V)·R_V: attention adds μ_V back */
                for (size_t rh = 0; rh < (size_t)total * H; rh++)
                    for (uint32_t e = 0; e < d; e++) ref[rh * d + e] += r->mean_v[((size_t)l * s->n_kv + (rh % H) / s->gqa) * d + e];
            double e = test_nse(out, ref, (size_t)total * H * d);
            if (e > r->worst_ref && (pass == 0 || !(f16 || q8 || cm))) r->worst_ref = e;
            double bound = (f16 || q8 || cm) && pass == 1 ? 1e-4 : 1e-5;
            CHECK_MSG(e <= bound, "mode %s layer %u: GPU vs reference over the cache (%s q) NSE %.3g", oscar_kv_mode_name(r->mode),
                      l, pass == 1 ? "fp32" : f16 || cm ? "fp16" : "int8", e);
        }
        for (uint32_t i = 0; i < n_seqs; i++)
            if (snap.flushed_end[seqs[i]] > snap.sink[seqs[i]] && r->mode != OSCAR_KV_FP16) only_f16 = 0;
        ovk_kv_snapshot_free(&snap);
        /* (2) against exact attention while nothing is quantized */
        if (r->mode == OSCAR_KV_FP16 || only_f16) {
            for (uint32_t rr = 0; rr < total; rr++)
                exact_attention(&r->h[l], s, row_seq[rr], row_vis[rr], q + (size_t)rr * H * d, scale, ref + (size_t)rr * H * d);
            double ex = test_nse(out, ref, (size_t)total * H * d);
            if (ex > r->worst_exact_f16) r->worst_exact_f16 = ex;
            r->checked_exact++;
            CHECK_MSG(ex <= 1e-4, "mode %s layer %u: vs exact attention NSE %.3g (fp16 storage only)", oscar_kv_mode_name(r->mode), l, ex);
        }
    }
    for (uint32_t i = 0; i < n_seqs; i++)
        for (uint32_t l = 0; l < r->n_layer; l++) r->h[l].len[seqs[i]] += n_new[i];
    st = oscar_kv_step_end(r->cache);
    free(k), free(v), free(q), free(out), free(ref), free(q_rot), free(out_ref), free(rk), free(rv), free(row_seq), free(row_vis);
    return st;
}

static void fork_history(run *r, int32_t src, int32_t dst)
{
    for (uint32_t l = 0; l < r->n_layer; l++) {
        size_t row = (size_t)MAX_CTX * r->s.n_kv * r->s.d;
        memcpy(r->h[l].k + dst * row, r->h[l].k + src * row, row * 4);
        memcpy(r->h[l].v + dst * row, r->h[l].v + src * row, row * 4);
        r->h[l].len[dst] = r->h[l].len[src];
    }
}

static uint32_t max_zones; /* the most page-pool zones a scenario's cache had */

static void scenario(oscar_context *ctx, const shape *s, oscar_kv_mode mode, int per_head)
{
    run r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx, r.s = *s, r.mode = mode, r.n_layer = 2;
    oscar_kv_params p = oscar_kv_params_default();
    oscar_kv_experimental px = { 0 }; /* key centers, per head only */
    p.mode = mode;
    p.n_layer = r.n_layer, p.n_kv_head = s->n_kv, p.n_head = s->n_kv * s->gqa, p.head_dim = s->d, p.group_size = s->G;
    p.page_tokens = s->page, p.sink_tokens = s->sink, p.recent_tokens = s->recent, p.flush_tokens = s->flush;
    p.max_sequences = MAX_SEQ, p.max_context = MAX_CTX, p.max_step_tokens = 64;
    float *rot = NULL, *means = NULL, *centers = NULL;
    float clip_k[2] = { 0.96f, 0.9f }, clip_v[2] = { 0.92f, 1.0f };
    if (mode == OSCAR_KV_INT2_ROTATED) {
        uint32_t n = r.n_layer * (per_head ? s->n_kv : 1);
        rot = malloc(sizeof(float) * n * s->d * s->d * 2);
        test_random_orthogonal(rot, 2 * n, s->d);
        CHECK(rot[1] != rot[s->d]); /* not symmetric */
        p.rot_k = rot, p.rot_v = rot + (size_t)n * s->d * s->d, p.rot_per_head = per_head;
        p.clip_k = clip_k, p.clip_v = clip_v;
        /* centering vectors [K,V][n_layer][n_kv][d], large against the rows (unit normal): the
         * exact-attention check below sees whether they cancel (keys) and come back (values) */
        size_t nm = (size_t)r.n_layer * s->n_kv * s->d;
        means = malloc(sizeof(float) * 2 * nm);
        for (size_t i = 0; i < 2 * nm; i++) means[i] = 4.0f * test_rng_normal();
        p.mean_k = means, p.mean_v = means + nm;
        r.mean_v = means + nm;
        if (per_head) { /* and key centers per block of 16 positions, as large: they cancel too */
            uint32_t n_blocks = (MAX_CTX + 15) / 16;
            size_t nc = (size_t)r.n_layer * n_blocks * s->n_kv * s->d;
            centers = malloc(sizeof(float) * nc);
            for (size_t i = 0; i < nc; i++) centers[i] = 4.0f * test_rng_normal();
            px.key_centers = centers, px.key_center_block = 16, p.experimental = &px;
        }
    }
    oscar_status st = oscar_kv_cache_create(ctx, &p, &r.cache);
    CHECK_OK(st);
    if (st == OSCAR_OK && ovk_kv_n_zones(r.cache) > max_zones) max_zones = ovk_kv_n_zones(r.cache);
    free(rot);
    free(centers);
    if (st != OSCAR_OK) return;
    for (uint32_t l = 0; l < r.n_layer; l++) {
        r.h[l].k = calloc((size_t)MAX_SEQ * MAX_CTX * s->n_kv * s->d, 4);
        r.h[l].v = calloc((size_t)MAX_SEQ * MAX_CTX * s->n_kv * s->d, 4);
    }
    int32_t a, b, c;
    CHECK_OK(oscar_kv_seq_add(r.cache, &a));
    CHECK_OK(oscar_kv_seq_add(r.cache, &b));
    /* prefill a (chunk of 37), then b (1 token), then decode both, then a long-ish prefill */
    uint32_t n37 = 37, n1 = 1;
    CHECK_OK(do_step(&r, 1, &a, &n37));
    CHECK_OK(do_step(&r, 1, &b, &n1));
    int32_t ab[2] = { a, b };
    uint32_t ones[2] = { 1, 1 }, mixed[2] = { 3, 20 };
    for (int i = 0; i < 6; i++) CHECK_OK(do_step(&r, 2, ab, ones));
    CHECK_OK(do_step(&r, 2, ab, mixed));
    /* grow a through sink + recent + flush boundaries (INT2 region appears) */
    for (int i = 0; i < 4; i++) {
        uint32_t n = 29;
        CHECK_OK(do_step(&r, 1, &a, &n));
    }
    /* fork a into c; both continue differently; free b */
    CHECK_OK(oscar_kv_seq_fork(r.cache, a, &c));
    fork_history(&r, a, c);
    int32_t ac[2] = { a, c };
    uint32_t n_ac[2] = { 5, 11 };
    CHECK_OK(do_step(&r, 2, ac, n_ac));
    CHECK_OK(oscar_kv_seq_free(r.cache, b));
    for (int i = 0; i < 3; i++) CHECK_OK(do_step(&r, 2, ac, ones));
    uint32_t la, lc;
    CHECK_OK(oscar_kv_seq_length(r.cache, a, &la));
    CHECK_OK(oscar_kv_seq_length(r.cache, c, &lc));
    CHECK(la == r.h[0].len[a] && lc == r.h[0].len[c]);
    /* a freed sequence is refused */
    CHECK_STATUS(oscar_kv_step_begin(r.cache, 1, &b, &n1), OSCAR_ERROR_INVALID_STATE);
    oscar_kv_stats stats;
    CHECK_OK(oscar_kv_get_stats(r.cache, &stats));
    CHECK(stats.int2_tokens + stats.f16_tokens == la + lc);
    if (mode != OSCAR_KV_FP16) CHECK(stats.int2_tokens > 0);
    printf("d=%u G=%u kv=%u gqa=%u page=%u %-13s%s%s [%s]: worst NSE vs reference %.2e, vs exact (fp16 only) %.2e over %d calls, "
           "%.3f bits/elem\n", s->d, s->G, s->n_kv, s->gqa, s->page, oscar_kv_mode_name(mode), per_head ? " per-head" : "",
           p.experimental ? " key-centers" : "", ovk_kv_attention_variant(r.cache),
           r.worst_ref, r.worst_exact_f16, r.checked_exact, stats.bits_per_element);
    CHECK(r.checked_exact > 0);
    oscar_kv_cache_destroy(r.cache);
    for (uint32_t l = 0; l < r.n_layer; l++) free(r.h[l].k), free(r.h[l].v);
    free(means);
}

static void bad_input(oscar_context *ctx)
{
    oscar_kv_params p = oscar_kv_params_default();
    p.n_head = 4, p.n_kv_head = 2, p.head_dim = 64, p.max_context = 256, p.max_step_tokens = 32;
    oscar_kv_cache *c = NULL;
    oscar_kv_params q = p;
    oscar_kv_experimental qx = { 0 };
    q.head_dim = 96;
    CHECK_STATUS(oscar_kv_cache_create(ctx, &q, &c), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "head_dim 96") != NULL);
    q = p, q.group_size = 48;
    CHECK_STATUS(oscar_kv_cache_create(ctx, &q, &c), OSCAR_ERROR_INVALID_ARGUMENT);
    q = p, q.head_dim = 64, q.group_size = 128;
    CHECK_STATUS(oscar_kv_cache_create(ctx, &q, &c), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "does not divide") != NULL);
    q = p, q.n_head = 5;
    CHECK_STATUS(oscar_kv_cache_create(ctx, &q, &c), OSCAR_ERROR_INVALID_ARGUMENT);
    /* rotations: not orthogonal, NaN */
    float *rot = malloc(sizeof(float) * 64 * 64 * 2);
    test_random_orthogonal(rot, 2, 64);
    q = p, q.mode = OSCAR_KV_INT2_ROTATED, q.rot_k = rot, q.rot_v = rot + 64 * 64;
    CHECK_OK(oscar_kv_cache_create(ctx, &q, &c));
    oscar_kv_cache_destroy(c);
    rot[5] += 0.1f;
    CHECK_STATUS(oscar_kv_cache_create(ctx, &q, &c), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "not orthogonal") != NULL);
    rot[5] = NAN;
    CHECK_STATUS(oscar_kv_cache_create(ctx, &q, &c), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "not finite") != NULL);
    q.rot_v = NULL;
    CHECK_STATUS(oscar_kv_cache_create(ctx, &q, &c), OSCAR_ERROR_INVALID_ARGUMENT);
    /* centering vectors: only with rotations (mode oscar), finite */
    float *mean = calloc(2 * 64, sizeof(float)); /* [n_kv 2][d 64] */
    rot[5] = 0.0f;
    test_random_orthogonal(rot, 1, 64);
    q = p, q.mode = OSCAR_KV_INT2_HADAMARD, q.mean_k = mean;
    CHECK_STATUS(oscar_kv_cache_create(ctx, &q, &c), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "mean_k / mean_v need mode oscar") != NULL);
    q = p, q.mode = OSCAR_KV_INT2_ROTATED, q.rot_k = rot, q.rot_v = rot + 64 * 64, q.mean_v = mean;
    CHECK_OK(oscar_kv_cache_create(ctx, &q, &c));
    oscar_kv_cache_destroy(c);
    mean[64 + 7] = INFINITY;
    CHECK_STATUS(oscar_kv_cache_create(ctx, &q, &c), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "mean_v of layer 0, KV head 1, element 7 is not finite") != NULL);
    free(mean);
    /* key centers: mode oscar, blocks of at least 16 positions, finite */
    float *ctr = calloc(256 / 32 * 2 * 64, sizeof(float)); /* [n_layer 1][256 / 32 blocks][n_kv 2][d 64] */
    q = p, q.experimental = &qx, qx = (oscar_kv_experimental){ 0 }, q.mode = OSCAR_KV_INT2_HADAMARD, qx.key_centers = ctr, qx.key_center_block = 32;
    CHECK_STATUS(oscar_kv_cache_create(ctx, &q, &c), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "key_centers need mode oscar (not int2-hadamard)") != NULL);
    q = p, q.experimental = &qx, qx = (oscar_kv_experimental){ 0 }, q.mode = OSCAR_KV_INT2_ROTATED, q.rot_k = rot, q.rot_v = rot + 64 * 64, qx.key_centers = ctr, qx.key_center_block = 8;
    CHECK_STATUS(oscar_kv_cache_create(ctx, &q, &c), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "key_center_block >= 16 (not 8)") != NULL);
    qx.key_center_block = 0; /* no block at all: refused, not divided by */
    CHECK_STATUS(oscar_kv_cache_create(ctx, &q, &c), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "key_center_block >= 16 (not 0)") != NULL);
    qx.key_center_block = 32;
    CHECK_OK(oscar_kv_cache_create(ctx, &q, &c));
    oscar_kv_cache_destroy(c);
    ctr[(7 * 2 + 1) * 64 + 3] = NAN; /* block 7 (the last), KV head 1, element 3 */
    CHECK_STATUS(oscar_kv_cache_create(ctx, &q, &c), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "key_centers of layer 0, block 7, KV head 1, element 3 is not finite") != NULL);
    free(ctr);
    /* the refit: only in mode oscar, at most 8 rounds, its metric symmetric, finite and with it */
    float *met = calloc(64 * 64, sizeof(float)); /* [n_layer 1][n_rot 1][d 64][d 64] */
    for (int i = 0; i < 64; i++) met[i * 64 + i] = 1.0f;
    q = p, q.experimental = &qx, qx = (oscar_kv_experimental){ 0 }, q.mode = OSCAR_KV_INT2_HADAMARD, qx.refit_rounds = 3;
    CHECK_STATUS(oscar_kv_cache_create(ctx, &q, &c), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "refit_rounds / key_metric need mode oscar") != NULL);
    q = p, q.experimental = &qx, qx = (oscar_kv_experimental){ 0 }, q.mode = OSCAR_KV_INT2_ROTATED, q.rot_k = rot, q.rot_v = rot + 64 * 64, qx.refit_rounds = 3, qx.key_metric = met;
    CHECK_OK(oscar_kv_cache_create(ctx, &q, &c));
    oscar_kv_cache_destroy(c);
    qx.refit_rounds = 9;
    CHECK_STATUS(oscar_kv_cache_create(ctx, &q, &c), OSCAR_ERROR_INVALID_ARGUMENT);
    qx.refit_rounds = 0;
    CHECK_STATUS(oscar_kv_cache_create(ctx, &q, &c), OSCAR_ERROR_INVALID_ARGUMENT);
    qx.refit_rounds = 3;
    met[1] = 0.5f; /* (0, 1) without its (1, 0) */
    CHECK_STATUS(oscar_kv_cache_create(ctx, &q, &c), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "key_metric of layer 0 (head 0): element (0, 1) is not its transpose's") != NULL);
    met[64] = 0.5f;
    met[70] = NAN;
    CHECK_STATUS(oscar_kv_cache_create(ctx, &q, &c), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "element (1, 6) is not finite") != NULL);
    free(met);
    free(rot);
    float bad_clip[1] = { 1.5f };
    q = p, q.clip_k = bad_clip;
    CHECK_STATUS(oscar_kv_cache_create(ctx, &q, &c), OSCAR_ERROR_INVALID_ARGUMENT);
    oscar_kv_cache_destroy(NULL);

    /* a small budget: exhaustion fails the step and leaves the other sequence as it was */
    q = p;
    q.mode = OSCAR_KV_FP16, q.page_tokens = 16, q.max_sequences = 2;
    q.memory_budget = 6 * 4ull * KV_F16_PAGE_WORDS(2, 16, 64); /* 6 fp16 pages */
    CHECK_OK(oscar_kv_cache_create(ctx, &q, &c));
    if (!c) return;
    int32_t s1, s2;
    CHECK_OK(oscar_kv_seq_add(c, &s1));
    CHECK_OK(oscar_kv_seq_add(c, &s2));
    float *k = calloc(32 * 2 * 64, 4), *qq = calloc(32 * 4 * 64, 4), *o1 = calloc(32 * 4 * 64, 4), *o2 = calloc(32 * 4 * 64, 4);
    for (int i = 0; i < 32 * 2 * 64; i++) k[i] = test_rng_normal();
    for (int i = 0; i < 32 * 4 * 64; i++) qq[i] = test_rng_normal();
    uint32_t n16 = 16, n32 = 32, n1 = 1;
    CHECK_OK(oscar_kv_step_begin(c, 1, &s2, &n32)); /* s2: 2 pages */
    CHECK_OK(oscar_kv_append(c, 0, k, k));
    CHECK_OK(oscar_kv_attention(c, 0, qq, o1));
    CHECK_OK(oscar_kv_step_end(c));
    oscar_status st = OSCAR_OK;
    int steps = 0;
    while ((st = oscar_kv_step_begin(c, 1, &s1, &n16)) == OSCAR_OK && steps < 10) {
        CHECK_OK(oscar_kv_append(c, 0, k, k));
        CHECK_OK(oscar_kv_step_end(c));
        steps++;
    }
    CHECK_STATUS(st, OSCAR_ERROR_OUT_OF_PAGES);
    CHECK(steps == 4);
    oscar_kv_stats stats;
    CHECK_OK(oscar_kv_get_stats(c, &stats));
    CHECK(stats.f16_pages_used == 6 && stats.f16_pages_total == 6 && stats.max_context == 0);
    /* s2 still reads exactly what it had: its attention at the next position is unaffected by s1 */
    uint32_t len2;
    CHECK_OK(oscar_kv_seq_length(c, s2, &len2));
    CHECK(len2 == 32);
    CHECK_STATUS(oscar_kv_step_begin(c, 1, &s2, &n1), OSCAR_ERROR_OUT_OF_PAGES); /* needs a 3rd page */
    CHECK_OK(oscar_kv_seq_free(c, s1));
    CHECK_OK(oscar_kv_step_begin(c, 1, &s2, &n1));
    CHECK_OK(oscar_kv_append(c, 0, k, k));
    CHECK_OK(oscar_kv_attention(c, 0, qq, o2));
    CHECK_OK(oscar_kv_step_end(c));
    /* more tokens than the context holds */
    uint32_t big = 300, step_too_big = 40;
    CHECK_STATUS(oscar_kv_step_begin(c, 1, &s2, &big), OSCAR_ERROR_CONTEXT_FULL); /* > max_context */
    CHECK(strstr(oscar_last_error(), "max_context") != NULL);
    CHECK_STATUS(oscar_kv_step_begin(c, 1, &s2, &step_too_big), OSCAR_ERROR_INVALID_ARGUMENT); /* > max_step_tokens */
    /* calls outside a step */
    CHECK_STATUS(oscar_kv_append(c, 0, k, k), OSCAR_ERROR_INVALID_STATE);
    CHECK_STATUS(oscar_kv_step_end(c), OSCAR_ERROR_INVALID_STATE);
    oscar_kv_cache_destroy(c);
    free(k), free(qq), free(o1), free(o2);
}

static void accounting(void)
{
    /* Llama-3-8B shapes: 32 layers, 8 KV heads, d = 128, G = 128 */
    oscar_kv_params p = oscar_kv_params_default();
    p.n_layer = 32, p.n_head = 32, p.n_kv_head = 8, p.head_dim = 128;
    uint32_t fp16_tokens = 0, int2_tokens = 0;
    uint64_t budget = 8ull << 30;
    p.mode = OSCAR_KV_FP16;
    CHECK_OK(oscar_kv_max_context(&p, budget, &fp16_tokens));
    p.mode = OSCAR_KV_INT2_HADAMARD;
    CHECK_OK(oscar_kv_max_context(&p, budget, &int2_tokens));
    /* fp16: 128 KiB per token -> 65536 tokens in 8 GiB; INT2 at 2.25 bits: about 7x more */
    CHECK(fp16_tokens == 65536);
    double ratio = (double)int2_tokens / fp16_tokens;
    printf("8 GiB holds %u tokens in fp16, %u in int2 (%.2fx)\n", fp16_tokens, int2_tokens, ratio);
    CHECK(ratio > 6.9 && ratio < 16.0 / 2.25);
}

static const shape s64 = { 64, 64, 3, 3, 16, 16, 32, 8 };   /* SmolLM2-like: 9 query heads, 3 KV heads */
static const shape s128 = { 128, 128, 2, 4, 16, 16, 48, 8 };
static const shape s128g32 = { 128, 32, 1, 8, 32, 20, 40, 4 }; /* sink not a multiple of the page */
static const shape s128g1 = { 128, 64, 4, 1, 16, 16, 32, 8 };

/* A decode-attention variant the context's environment now asks for, over shapes that reach its
 * boundaries (GQA 3, 4, 8; G 32 to 128; key centers): first_mode on the SmolLM2-like shape (fp16
 * where the variant serves it), oscar with key centers, int2-hadamard with G 32. */
static void variant_scenarios(oscar_context *ctx, oscar_kv_mode first_mode)
{
    scenario(ctx, &s64, first_mode, 0);
    scenario(ctx, &s128, OSCAR_KV_INT2_ROTATED, 1);
    scenario(ctx, &s128g32, OSCAR_KV_INT2_HADAMARD, 0);
}

int main(void)
{
    oscar_context *ctx = test_gpu_context();
    test_rng_seed(7);
    accounting();
    bad_input(ctx);
    scenario(ctx, &s64, OSCAR_KV_FP16, 0);
    scenario(ctx, &s64, OSCAR_KV_INT2, 0);
    scenario(ctx, &s64, OSCAR_KV_INT2_HADAMARD, 0);
    scenario(ctx, &s64, OSCAR_KV_INT2_ROTATED, 0);
    scenario(ctx, &s128, OSCAR_KV_INT2_ROTATED, 1);
    scenario(ctx, &s128, OSCAR_KV_FP16, 0);
    scenario(ctx, &s128g32, OSCAR_KV_INT2_HADAMARD, 0);
    scenario(ctx, &s128g1, OSCAR_KV_INT2, 0);
    /* the integer-dot keys in the chunked kernel wherever the device runs them, accelerated or
     * not (on a CPU device the rows kernel would take the scenarios otherwise) */
    if (ctx->info.float16_arithmetic && ovk_variant_usable(ctx, "attn_decode_chunked_f16.idot")) {
        int saved = ctx->env.attn_idot, saved_kernel = ctx->env.attn_kernel;
        ctx->env.attn_idot = 1, ctx->env.attn_kernel = 0;
        variant_scenarios(ctx, OSCAR_KV_INT2); /* (fp16 mode never takes them) */
        ctx->env.attn_idot = saved, ctx->env.attn_kernel = saved_kernel;
    } else
        printf("integer-dot keys: skipped (no integer dot products or shaderFloat16, or not built)\n");
    /* decode attention on cooperative matrices (or their scalar emulation), key centers included */
    if (ovk_kv_attn_cm_device(ctx)) {
        int saved = ctx->env.attn_kernel;
        ctx->env.attn_kernel = 3;
        variant_scenarios(ctx, OSCAR_KV_FP16);
        ctx->env.attn_kernel = saved;
    } else
        printf("cooperative-matrix decode attention: skipped (no shaderFloat16, or not built)\n");
    /* steps of many rows at short contexts on the batched steps' kernel (cooperative matrices,
     * where the device runs them and the cache's own kernel is the chunked one): the prompt steps
     * of 16 rows and more go through decode attention when prefill attention is off, each against
     * the reference of the kernel that ran it */
    if (ovk_kv_attn_cm_device(ctx) == 1) {
        int saved = ctx->env.attn_prefill;
        ctx->env.attn_prefill = 0;
        batched_calls = 0;
        scenario(ctx, &s128, OSCAR_KV_INT2, 0);
        variant_scenarios(ctx, OSCAR_KV_INT2);
        ctx->env.attn_prefill = saved;
        CHECK_MSG(batched_calls > 0, "batched steps: no attention call ran the cooperative-matrix kernel");
        printf("batched steps: %u attention calls on the cooperative-matrix kernel\n", batched_calls);
    } else
        printf("batched steps on cooperative matrices: skipped (the device does not run the kernel itself)\n");
    /* page pools in zones, as on a device whose storage bindings are smaller than a pool: 256 KiB
     * bindings cut these caches' pools into several zones (the most is printed), each dispatch
     * over one zone's window */
    ctx->env.kv_zone_bytes = 256u << 10;
    /* and groups of slots, items and tiles at 256-byte offsets (a coarser alignment than this
     * device's, so the padding between them is exercised; still valid for the device) */
    VkDeviceSize saved_align = ctx->limits.minStorageBufferOffsetAlignment;
    ctx->limits.minStorageBufferOffsetAlignment = 256;
    max_zones = 0;
    variant_scenarios(ctx, OSCAR_KV_FP16);
    scenario(ctx, &s64, OSCAR_KV_INT2, 0);
    CHECK_MSG(max_zones > 1, "zones: the caches kept %u zone", max_zones);
    printf("zones: up to %u a pool\n", max_zones);
    ctx->env.kv_zone_bytes = 0;
    ctx->limits.minStorageBufferOffsetAlignment = saved_align;
    return test_gpu_finish(ctx);
}
