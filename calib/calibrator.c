/* The calibrator object: float64 accumulators fed with batches of post-RoPE Q/K/V rows
 * (what is accumulated and why is documented in calib.h). */
#include <cblas.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "int2_quant.h"
#include "calib.h"

typedef struct calib_head { /* one (layer, KV head) */
    double *s_q;      /* [d][d] upper triangle: Σ q qᵀ over the query heads sharing this KV head */
    uint64_t n_q;     /* query rows summed into s_q */
    double *s_vp;     /* [d][d] upper: Σ w_t v_t v_tᵀ, proxy objective (a) */
    double w_sum;     /* Σ w_t of the rows in s_vp */
    double *s_s;      /* [d][d] upper: Σ o oᵀ, o = S·V rows (b); NULL when score_objective = 0 */
    uint64_t n_s;     /* o rows summed into s_s */
    float *res_k;     /* [reservoir_rows][d] sampled key rows */
    float *res_v;     /* [reservoir_rows][d] value rows of the same tokens */
    uint32_t *res_pos; /* [reservoir_rows] their positions in their sequences */
    uint32_t res_n;   /* rows held */
    uint64_t res_seen; /* rows offered so far (Algorithm R) */
    double *m_k;      /* [d] Σ of the pre-RoPE key rows given to ovk_calib_add_means */
    double *m_v;      /* [d] Σ of their value rows */
    uint64_t n_m;     /* rows in m_k, m_v */
} calib_head;

typedef struct calib_layer {
    calib_head *heads;  /* [n_kv_head] */
    uint64_t n_tokens;  /* tokens added */
    float *buf_k;       /* [proxy_buffer_tokens][n_kv_head][d] keys awaiting exact proxy weights */
    float *buf_v;       /* [proxy_buffer_tokens][n_kv_head][d] their values; both NULL once flushed */
    uint32_t buf_n;     /* tokens in buf_k/buf_v */
    int buf_flushed;    /* 1: the proxy path streams with the running C_Q */
    float *hist_k;      /* [max_seq_len][n_kv_head][d] keys of the current sequence (b) */
    float *hist_v;      /* [max_seq_len][n_kv_head][d] values of the current sequence (b) */
    uint32_t hist_n;    /* tokens of the current sequence (C_S) */
    uint32_t seq_pos;   /* tokens of the current sequence added so far (the next row's position) */
    float *vf_k;        /* [vfit_sequences][max_seq_len][n_kv_head][d] keys of the kept sequences */
    float *vf_v;        /* [vfit_sequences][max_seq_len][n_kv_head][d] their values */
    uint32_t *vf_n;     /* [vfit_sequences] tokens kept of each */
    float *vf_q;        /* [vfit_sequences][max_seq_len / stride][n_head][d] the kept query rows */
    uint32_t *vf_qpos;  /* [vfit_sequences][max_seq_len / stride] their positions */
    uint32_t *vf_nq;    /* [vfit_sequences] query rows kept of each */
} calib_layer;

struct ovk_calib {
    ovk_calib_params p; /* resolved: group_size != 0 */
    uint32_t d;           /* head_dim */
    uint32_t group;       /* query heads per KV head */
    calib_layer *layers;  /* [n_layer] */
    uint64_t rng;         /* xorshift64* state for the reservoirs */
    int64_t seq;          /* index of the current sequence: begin_sequence calls - 1 (rows added
                           * before the first call belong to sequence 0) */
};

/* ---- small helpers ----------------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* S (upper, [d][d]) += Σ_r a_r a_rᵀ over n rows of a (float64 [n][d]). */
static void syrk_add(double *S, const double *a, uint32_t n, uint32_t d)
{
    if (n == 0) return;
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)d, (int)n, 1.0, a, (int)d, 1.0, S, (int)d);
}

/* out = scale · S with the lower triangle mirrored from the upper one. */
static void sym_full(const double *S, uint32_t d, double scale, double *out)
{
    for (uint32_t i = 0; i < d; i++)
        for (uint32_t j = i; j < d; j++) {
            double x = S[(size_t)i * d + j] * scale;
            out[(size_t)i * d + j] = x;
            out[(size_t)j * d + i] = x;
        }
}

/* Adds n token rows (stride floats apart) of keys/values of one KV head to the proxy sum with
 * w_t = k_t CQ k_tᵀ. CQ: float64 [d][d] full symmetric. tmp_k, tmp_v: float64 [n][d]. */
static void proxy_accumulate(calib_head *hd, const float *k, const float *v, uint32_t n, size_t stride,
                             uint32_t d, const double *CQ, double *tmp_k, double *tmp_v, double *tmp_kc)
{
    if (n == 0) return;
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t j = 0; j < d; j++) {
            tmp_k[(size_t)t * d + j] = k[t * stride + j];
            tmp_v[(size_t)t * d + j] = v[t * stride + j];
        }
    /* kc = K·CQ, w_t = kc_t · k_t */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)d, (int)d, 1.0, tmp_k, (int)d, CQ,
                (int)d, 0.0, tmp_kc, (int)d);
    for (uint32_t t = 0; t < n; t++) {
        double w = 0.0;
        for (uint32_t j = 0; j < d; j++) w += tmp_kc[(size_t)t * d + j] * tmp_k[(size_t)t * d + j];
        if (!(w > 0.0)) w = 0.0; /* CQ is PSD; clamp rounding below zero */
        hd->w_sum += w;
        double sw = sqrt(w);
        for (uint32_t j = 0; j < d; j++) tmp_v[(size_t)t * d + j] *= sw;
    }
    syrk_add(hd->s_vp, tmp_v, n, d);
}

/* Weights the buffered tokens of a layer with the C_Q accumulated so far and frees the buffer. */
static oscar_status flush_proxy(ovk_calib *cal, calib_layer *L)
{
    oscar_status st = OSCAR_OK;
    uint32_t d = cal->d, nkv = cal->p.n_kv_head, n = L->buf_n;
    size_t nd = (size_t)(n ? n : 1) * d;
    double *CQ = malloc((size_t)d * d * sizeof *CQ); /* [d][d] */
    double *tk = malloc(nd * sizeof *tk), *tv = malloc(nd * sizeof *tv), *tkc = malloc(nd * sizeof *tkc); /* [n][d] */
    if (!CQ || !tk || !tv || !tkc) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "calibrator: proxy flush of %u tokens", n);
    for (uint32_t h = 0; h < nkv && n > 0; h++) {
        calib_head *hd = &L->heads[h];
        sym_full(hd->s_q, d, hd->n_q ? 1.0 / (double)hd->n_q : 0.0, CQ);
        proxy_accumulate(hd, L->buf_k + (size_t)h * d, L->buf_v + (size_t)h * d, n, (size_t)nkv * d, d, CQ, tk, tv, tkc);
    }
    free(L->buf_k);
    free(L->buf_v);
    L->buf_k = L->buf_v = NULL;
    L->buf_n = 0;
    L->buf_flushed = 1;
fail:
    free(CQ);
    free(tk);
    free(tv);
    free(tkc);
    return st;
}

/* Algorithm R: offers one (k, v) row to the reservoir of a head. */
static void reservoir_offer(ovk_calib *cal, calib_head *hd, const float *k, const float *v, uint32_t pos)
{
    uint32_t cap = cal->p.reservoir_rows, d = cal->d;
    uint64_t slot;
    hd->res_seen++;
    if (hd->res_n < cap) slot = hd->res_n++;
    else {
        slot = rng_next(&cal->rng) % hd->res_seen;
        if (slot >= cap) return;
    }
    memcpy(hd->res_k + slot * d, k, d * sizeof(float));
    memcpy(hd->res_v + slot * d, v, d * sizeof(float));
    hd->res_pos[slot] = pos;
}

/* Finds the first non-finite value of a [n][heads][d] tensor; returns 1 and its place. */
static int find_non_finite(const float *x, uint32_t n, uint32_t heads, uint32_t d, uint32_t *t, uint32_t *h,
                           uint32_t *j)
{
    size_t total = (size_t)n * heads * d;
    for (size_t i = 0; i < total; i++)
        if (!isfinite(x[i])) {
            *j = (uint32_t)(i % d);
            *h = (uint32_t)((i / d) % heads);
            *t = (uint32_t)(i / ((size_t)d * heads));
            return 1;
        }
    return 0;
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

ovk_calib_params ovk_calib_params_default(void)
{
    ovk_calib_params p;
    memset(&p, 0, sizeof p);
    p.grouping = OSCAR_CALIB_PER_LAYER;
    p.score_objective = 1;
    p.max_seq_len = 2048;
    p.proxy_buffer_tokens = 2048;
    p.reservoir_rows = 1024;
    p.clip_min = 0.80f;
    p.clip_max = 1.00f;
    p.clip_step = 0.01f;
    p.feedback_damp = 0.01;
    p.refit_rounds = 0; /* measured worse on SmolLM2 (docs/decisions.md): opt-in */
    p.seed = 0x05CA12C0FFEEULL;
    return p;
}

void ovk_calib_destroy(ovk_calib *cal)
{
    if (!cal) return;
    if (cal->layers) {
        for (uint32_t l = 0; l < cal->p.n_layer; l++) {
            calib_layer *L = &cal->layers[l];
            if (L->heads)
                for (uint32_t h = 0; h < cal->p.n_kv_head; h++) {
                    calib_head *hd = &L->heads[h];
                    free(hd->s_q);
                    free(hd->s_vp);
                    free(hd->s_s);
                    free(hd->res_k);
                    free(hd->res_v);
                    free(hd->res_pos);
                    free(hd->m_k);
                    free(hd->m_v);
                }
            free(L->heads);
            free(L->buf_k);
            free(L->buf_v);
            free(L->hist_k);
            free(L->hist_v);
            free(L->vf_k);
            free(L->vf_v);
            free(L->vf_n);
            free(L->vf_q);
            free(L->vf_qpos);
            free(L->vf_nq);
        }
        free(cal->layers);
    }
    free(cal);
}

oscar_status ovk_calib_create(const ovk_calib_params *params, ovk_calib **out)
{
    oscar_status st = OSCAR_OK;
    ovk_calib *cal = NULL;
    if (out) *out = NULL;
    if (!params || !out) OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_create: NULL params or out");
    ovk_calib_params p = *params;
    uint32_t d = p.head_dim;
    if (p.n_layer == 0 || p.n_head == 0 || p.n_kv_head == 0)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_create: n_layer %u, n_head %u, n_kv_head %u must be > 0",
                   p.n_layer, p.n_head, p.n_kv_head);
    if (p.n_head % p.n_kv_head != 0)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_create: n_head %u is not a multiple of n_kv_head %u",
                   p.n_head, p.n_kv_head);
    if (d == 0 || (d & (d - 1)) != 0 || d > OSCAR_CALIB_MAX_HEAD_DIM)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT,
                   "ovk_calib_create: head_dim %u is not a power of two in 1..%u (the Walsh-Hadamard "
                   "matrix needs d = 2^k)", d, OSCAR_CALIB_MAX_HEAD_DIM);
    if (p.group_size == 0) p.group_size = ovk_int2_default_group(d); /* the runtime's default (oscar_kv_params) */
    if (p.group_size > d || d % p.group_size != 0)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_create: group_size %u does not divide head_dim %u",
                   p.group_size, d);
    if (p.grouping != OSCAR_CALIB_PER_LAYER && p.grouping != OSCAR_CALIB_PER_HEAD)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_create: unknown grouping %d", (int)p.grouping);
    if (!(p.clip_min > 0.0f) || !(p.clip_max <= 1.0f) || !(p.clip_min <= p.clip_max) || !(p.clip_step > 0.0f))
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT,
                   "ovk_calib_create: clip grid %g..%g step %g must satisfy 0 < min <= max <= 1, step > 0",
                   (double)p.clip_min, (double)p.clip_max, (double)p.clip_step);
    if (p.refit_rounds > OSCAR_CALIB_MAX_REFIT_ROUNDS)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_create: refit_rounds %u above %u", p.refit_rounds,
                   OSCAR_CALIB_MAX_REFIT_ROUNDS);
    if (p.group_size < d) p.refit_rounds = 0; /* the refit fits one group per row */
    if ((p.key_feedback || p.refit_rounds) && !(p.feedback_damp > 0.0))
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_create: feedback_damp %g must be > 0", p.feedback_damp);
    if (p.reservoir_rows == 0)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_create: reservoir_rows must be > 0");
    if (p.key_center_block && !p.rope_theta)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_create: key_center_block %u needs rope_theta", p.key_center_block);
    if (p.score_objective && p.max_seq_len == 0)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_create: max_seq_len must be > 0 with score_objective");
    if (p.min_tokens == 0) p.min_tokens = d;
    if (p.vfit_query_stride == 0) /* about 128 queries a sequence, every 4th position at most */
        p.vfit_query_stride = p.max_seq_len / 128 > 4 ? p.max_seq_len / 128 : 4;
    if (p.vfit_sequences && p.max_seq_len == 0)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_create: max_seq_len must be > 0 with vfit_sequences");

    cal = calloc(1, sizeof *cal);
    if (!cal) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "ovk_calib_create");
    cal->p = p;
    cal->d = d;
    cal->group = p.n_head / p.n_kv_head;
    cal->rng = p.seed ? p.seed : 0x9E3779B97F4A7C15ULL;
    cal->seq = -1;
    cal->layers = calloc(p.n_layer, sizeof *cal->layers);
    if (!cal->layers) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "ovk_calib_create: %u layers", p.n_layer);
    size_t dd = (size_t)d * d, kv_row = (size_t)p.n_kv_head * d;
    for (uint32_t l = 0; l < p.n_layer; l++) {
        calib_layer *L = &cal->layers[l];
        L->heads = calloc(p.n_kv_head, sizeof *L->heads);
        if (!L->heads) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "ovk_calib_create: layer %u", l);
        for (uint32_t h = 0; h < p.n_kv_head; h++) {
            calib_head *hd = &L->heads[h];
            hd->s_q = calloc(dd, sizeof *hd->s_q);
            hd->s_vp = calloc(dd, sizeof *hd->s_vp);
            hd->s_s = p.score_objective ? calloc(dd, sizeof *hd->s_s) : NULL;
            hd->res_k = malloc((size_t)p.reservoir_rows * d * sizeof *hd->res_k);
            hd->res_v = malloc((size_t)p.reservoir_rows * d * sizeof *hd->res_v);
            hd->res_pos = malloc((size_t)p.reservoir_rows * sizeof *hd->res_pos);
            hd->m_k = calloc(d, sizeof *hd->m_k);
            hd->m_v = calloc(d, sizeof *hd->m_v);
            if (!hd->s_q || !hd->s_vp || (p.score_objective && !hd->s_s) || !hd->res_k || !hd->res_v || !hd->res_pos || !hd->m_k ||
                !hd->m_v)
                OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "ovk_calib_create: layer %u head %u", l, h);
        }
        if (p.proxy_buffer_tokens) {
            L->buf_k = malloc(p.proxy_buffer_tokens * kv_row * sizeof *L->buf_k);
            L->buf_v = malloc(p.proxy_buffer_tokens * kv_row * sizeof *L->buf_v);
            if (!L->buf_k || !L->buf_v)
                OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "ovk_calib_create: proxy buffer of %u tokens",
                           p.proxy_buffer_tokens);
        } else {
            L->buf_flushed = 1;
        }
        if (p.vfit_sequences) {
            size_t toks = (size_t)p.vfit_sequences * p.max_seq_len, nq = (size_t)p.vfit_sequences * (p.max_seq_len / p.vfit_query_stride + 1);
            L->vf_k = malloc(toks * kv_row * sizeof *L->vf_k);
            L->vf_v = malloc(toks * kv_row * sizeof *L->vf_v);
            L->vf_n = calloc(p.vfit_sequences, sizeof *L->vf_n);
            L->vf_q = malloc(nq * p.n_head * d * sizeof *L->vf_q);
            L->vf_qpos = malloc(nq * sizeof *L->vf_qpos);
            L->vf_nq = calloc(p.vfit_sequences, sizeof *L->vf_nq);
            if (!L->vf_k || !L->vf_v || !L->vf_n || !L->vf_q || !L->vf_qpos || !L->vf_nq)
                OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "ovk_calib_create: %u kept sequences of %u tokens",
                           p.vfit_sequences, p.max_seq_len);
        }
        if (p.score_objective) {
            L->hist_k = malloc(p.max_seq_len * kv_row * sizeof *L->hist_k);
            L->hist_v = malloc(p.max_seq_len * kv_row * sizeof *L->hist_v);
            if (!L->hist_k || !L->hist_v)
                OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "ovk_calib_create: history of %u tokens", p.max_seq_len);
        }
    }
    *out = cal;
    return OSCAR_OK;
fail:
    ovk_calib_destroy(cal);
    return st;
}

oscar_status ovk_calib_begin_sequence(ovk_calib *cal)
{
    if (!cal) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_begin_sequence: NULL calibrator");
    for (uint32_t l = 0; l < cal->p.n_layer; l++) cal->layers[l].hist_n = cal->layers[l].seq_pos = 0;
    cal->seq++;
    return OSCAR_OK;
}

uint64_t ovk_calib_tokens(const ovk_calib *cal, uint32_t layer)
{
    return cal && layer < cal->p.n_layer ? cal->layers[layer].n_tokens : 0;
}

const ovk_calib_params *ovk_calib_get_params(const ovk_calib *cal) { return cal ? &cal->p : NULL; }

/* ---- adding a batch ------------------------------------------------------------------------- */

oscar_status ovk_calib_add_means(ovk_calib *cal, uint32_t layer, uint32_t n_tokens, const float *k_pre,
                                   const float *v)
{
    if (!cal || (n_tokens && (!k_pre || !v)))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_add_means: NULL argument");
    if (layer >= cal->p.n_layer)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_add_means: layer %u of %u", layer, cal->p.n_layer);
    uint32_t d = cal->d, nkv = cal->p.n_kv_head, t, h, j;
    if (find_non_finite(k_pre, n_tokens, nkv, d, &t, &h, &j) || find_non_finite(v, n_tokens, nkv, d, &t, &h, &j))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT,
                           "ovk_calib_add_means: layer %u: non-finite value at token %u, KV head %u, dim %u", layer, t,
                           h, j);
    for (t = 0; t < n_tokens; t++)
        for (h = 0; h < nkv; h++) {
            calib_head *hd = &cal->layers[layer].heads[h];
            const float *kr = k_pre + ((size_t)t * nkv + h) * d, *vr = v + ((size_t)t * nkv + h) * d;
            for (j = 0; j < d; j++) hd->m_k[j] += kr[j], hd->m_v[j] += vr[j];
            hd->n_m++;
        }
    return OSCAR_OK;
}

oscar_status ovk_calib_mean(const ovk_calib *cal, uint32_t layer, uint32_t head, int values, double *out)
{
    if (!cal || !out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_mean: NULL argument");
    if (layer >= cal->p.n_layer || head >= cal->p.n_kv_head)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_mean: layer %u head %u out of range", layer, head);
    const calib_head *hd = &cal->layers[layer].heads[head];
    if (hd->n_m == 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "ovk_calib_mean: layer %u head %u has no rows for its mean", layer,
                           head);
    for (uint32_t j = 0; j < cal->d; j++) out[j] = (values ? hd->m_v[j] : hd->m_k[j]) / (double)hd->n_m;
    return OSCAR_OK;
}

oscar_status ovk_calib_add(ovk_calib *cal, uint32_t layer, uint32_t n_tokens, const float *q, const float *k,
                             const float *v)
{
    oscar_status st = OSCAR_OK;
    double *tmp = NULL, *tmp2 = NULL, *tmp3 = NULL; /* [n_tokens * group][d] float64 scratch */
    double *CQ = NULL;                              /* [d][d] running C_Q of one head */
    float *o = NULL;                                /* [n_tokens][d] attention output of one query head */
    if (!cal || !q || !k || !v) OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_add: NULL argument");
    if (layer >= cal->p.n_layer)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_add: layer %u out of range (n_layer %u)", layer,
                   cal->p.n_layer);
    if (n_tokens == 0) return OSCAR_OK;
    const uint32_t d = cal->d, nh = cal->p.n_head, nkv = cal->p.n_kv_head, grp = cal->group;
    calib_layer *L = &cal->layers[layer];
    {
        uint32_t t, h, j;
        if (find_non_finite(q, n_tokens, nh, d, &t, &h, &j))
            OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_add: non-finite Q value %g (layer %u, token %u, head %u, dim %u)",
                       (double)q[((size_t)t * nh + h) * d + j], layer, t, h, j);
        if (find_non_finite(k, n_tokens, nkv, d, &t, &h, &j))
            OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_add: non-finite K value %g (layer %u, token %u, kv head %u, dim %u)",
                       (double)k[((size_t)t * nkv + h) * d + j], layer, t, h, j);
        if (find_non_finite(v, n_tokens, nkv, d, &t, &h, &j))
            OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_add: non-finite V value %g (layer %u, token %u, kv head %u, dim %u)",
                       (double)v[((size_t)t * nkv + h) * d + j], layer, t, h, j);
    }
    if (cal->p.score_objective && (uint64_t)L->hist_n + n_tokens > cal->p.max_seq_len)
        OSCAR_FAIL(OSCAR_ERROR_CONTEXT_FULL,
                   "ovk_calib_add: layer %u sequence would reach %" PRIu64 " tokens, more than max_seq_len %u; "
                   "call ovk_calib_begin_sequence() between calibration sequences",
                   layer, (uint64_t)L->hist_n + n_tokens, cal->p.max_seq_len);

    size_t rows = (size_t)n_tokens * grp;
    tmp = malloc(rows * d * sizeof *tmp);
    tmp2 = malloc(rows * d * sizeof *tmp2);
    tmp3 = malloc(rows * d * sizeof *tmp3);
    CQ = malloc((size_t)d * d * sizeof *CQ);
    o = malloc((size_t)n_tokens * d * sizeof *o);
    if (!tmp || !tmp2 || !tmp3 || !CQ || !o)
        OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "ovk_calib_add: scratch for %u tokens", n_tokens);

    /* C_Q: rows of every query head of the group */
    for (uint32_t h = 0; h < nkv; h++) {
        calib_head *hd = &L->heads[h];
        size_t r = 0;
        for (uint32_t t = 0; t < n_tokens; t++)
            for (uint32_t i = h * grp; i < (h + 1) * grp; i++, r++) {
                const float *src = q + ((size_t)t * nh + i) * d;
                for (uint32_t j = 0; j < d; j++) tmp[r * d + j] = src[j];
            }
        syrk_add(hd->s_q, tmp, (uint32_t)rows, d);
        hd->n_q += rows;
    }

    /* C_V (a): buffer for exact weights, or stream with the running C_Q */
    size_t kv_row = (size_t)nkv * d;
    if (!L->buf_flushed && L->buf_n + (uint64_t)n_tokens <= cal->p.proxy_buffer_tokens) {
        memcpy(L->buf_k + L->buf_n * kv_row, k, n_tokens * kv_row * sizeof *k);
        memcpy(L->buf_v + L->buf_n * kv_row, v, n_tokens * kv_row * sizeof *v);
        L->buf_n += n_tokens;
    } else {
        if (!L->buf_flushed) OSCAR_TRY(flush_proxy(cal, L));
        for (uint32_t h = 0; h < nkv; h++) {
            calib_head *hd = &L->heads[h];
            sym_full(hd->s_q, d, 1.0 / (double)hd->n_q, CQ);
            proxy_accumulate(hd, k + (size_t)h * d, v + (size_t)h * d, n_tokens, kv_row, d, CQ, tmp, tmp2, tmp3);
        }
    }

    /* C_S (b): causal attention of the new queries over the sequence so far */
    if (cal->p.score_objective) {
        memcpy(L->hist_k + L->hist_n * kv_row, k, n_tokens * kv_row * sizeof *k);
        memcpy(L->hist_v + L->hist_n * kv_row, v, n_tokens * kv_row * sizeof *v);
        for (uint32_t h = 0; h < nkv; h++) {
            calib_head *hd = &L->heads[h];
            for (uint32_t i = h * grp; i < (h + 1) * grp; i++) {
                OSCAR_TRY(ovk_attention_causal(q + (size_t)i * d, (size_t)nh * d, n_tokens, L->hist_k + (size_t)h * d,
                                                 L->hist_v + (size_t)h * d, kv_row, L->hist_n, d, o));
                for (size_t x = 0; x < (size_t)n_tokens * d; x++) tmp[x] = o[x];
                syrk_add(hd->s_s, tmp, n_tokens, d);
                hd->n_s += n_tokens;
            }
        }
        L->hist_n += n_tokens;
    }

    /* the kept sequences of the value-clip fit: every K and V row (up to max_seq_len), every
     * stride-th query row */
    if (cal->seq < 0) cal->seq = 0;
    if (cal->p.vfit_sequences && cal->seq < (int64_t)cal->p.vfit_sequences) {
        uint32_t s = (uint32_t)cal->seq, T = cal->p.max_seq_len, stride = cal->p.vfit_query_stride;
        uint32_t q_cap = T / stride + 1;
        for (uint32_t t = 0; t < n_tokens && L->vf_n[s] < T; t++) {
            uint32_t pos = L->vf_n[s]++;
            size_t at = (size_t)s * T + pos;
            memcpy(L->vf_k + at * kv_row, k + (size_t)t * kv_row, kv_row * sizeof *k);
            memcpy(L->vf_v + at * kv_row, v + (size_t)t * kv_row, kv_row * sizeof *v);
            if (pos % stride == stride - 1 && L->vf_nq[s] < q_cap) {
                size_t qa = (size_t)s * q_cap + L->vf_nq[s]++;
                memcpy(L->vf_q + qa * nh * d, q + (size_t)t * nh * d, (size_t)nh * d * sizeof *q);
                L->vf_qpos[qa] = pos;
            }
        }
    }

    /* reservoirs */
    for (uint32_t h = 0; h < nkv; h++)
        for (uint32_t t = 0; t < n_tokens; t++)
            reservoir_offer(cal, &L->heads[h], k + (size_t)t * kv_row + (size_t)h * d, v + (size_t)t * kv_row + (size_t)h * d,
                            L->seq_pos + t);
    L->n_tokens += n_tokens;
    L->seq_pos += n_tokens;
fail:
    free(tmp);
    free(tmp2);
    free(tmp3);
    free(CQ);
    free(o);
    return st;
}

/* ---- reading results ------------------------------------------------------------------------- */

int ovk_calib_has_output_fit(const ovk_calib *cal)
{
    if (!cal || !cal->p.vfit_sequences) return 0;
    for (uint32_t l = 0; l < cal->p.n_layer; l++)
        for (uint32_t s = 0; s < cal->p.vfit_sequences; s++)
            if (cal->layers[l].vf_nq[s]) return 1;
    return 0;
}

oscar_status ovk_calib_kept_sequence(const ovk_calib *cal, uint32_t layer, uint32_t s, const float **k,
                                       const float **v, uint32_t *n, const float **q, const uint32_t **qpos,
                                       uint32_t *nq)
{
    if (!cal || layer >= cal->p.n_layer || s >= cal->p.vfit_sequences)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_kept_sequence: layer %u sequence %u out of range", layer, s);
    const calib_layer *L = &cal->layers[layer];
    uint32_t T = cal->p.max_seq_len, q_cap = T / cal->p.vfit_query_stride + 1;
    size_t kv_row = (size_t)cal->p.n_kv_head * cal->d;
    *k = L->vf_k + (size_t)s * T * kv_row;
    *v = L->vf_v + (size_t)s * T * kv_row;
    *n = L->vf_n[s];
    *q = L->vf_q + (size_t)s * q_cap * cal->p.n_head * cal->d;
    *qpos = L->vf_qpos + (size_t)s * q_cap;
    *nq = L->vf_nq[s];
    return OSCAR_OK;
}

/* Checks layer/head and that the layer has enough tokens. */
static oscar_status check_ready(const ovk_calib *cal, uint32_t layer, uint32_t head, const char *fn)
{
    if (!cal) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: NULL calibrator", fn);
    if (layer >= cal->p.n_layer)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: layer %u out of range (n_layer %u)", fn, layer, cal->p.n_layer);
    if (head != OSCAR_CALIB_ALL_HEADS && head >= cal->p.n_kv_head)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: KV head %u out of range (n_kv_head %u)", fn, head,
                           cal->p.n_kv_head);
    if (cal->layers[layer].n_tokens < cal->p.min_tokens)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE,
                           "%s: too few calibration rows: layer %u has %" PRIu64 " tokens, at least %u are needed "
                           "(params.min_tokens)", fn, layer, cal->layers[layer].n_tokens, cal->p.min_tokens);
    return OSCAR_OK;
}

oscar_status ovk_calib_covariance(ovk_calib *cal, uint32_t layer, uint32_t head, ovk_calib_target target,
                                    double *out)
{
    oscar_status st = check_ready(cal, layer, head, "ovk_calib_covariance");
    double *one = NULL; /* [d][d] one head's matrix */
    if (st != OSCAR_OK) return st;
    if (!out) OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_covariance: out is NULL");
    if (target == OSCAR_CALIB_VALUES_SCORES && !cal->p.score_objective)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_STATE, "ovk_calib_covariance: C_S was not accumulated (params.score_objective = 0)");
    if (target != OSCAR_CALIB_KEYS && target != OSCAR_CALIB_VALUES_PROXY && target != OSCAR_CALIB_VALUES_SCORES)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_covariance: unknown target %d", (int)target);
    uint32_t d = cal->d;
    calib_layer *L = &cal->layers[layer];
    if (target == OSCAR_CALIB_VALUES_PROXY && !L->buf_flushed) OSCAR_TRY(flush_proxy(cal, L));
    one = malloc((size_t)d * d * sizeof *one);
    if (!one) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "ovk_calib_covariance");
    uint32_t h0 = head == OSCAR_CALIB_ALL_HEADS ? 0 : head;
    uint32_t h1 = head == OSCAR_CALIB_ALL_HEADS ? cal->p.n_kv_head : head + 1;
    memset(out, 0, (size_t)d * d * sizeof *out);
    for (uint32_t h = h0; h < h1; h++) {
        const calib_head *hd = &L->heads[h];
        if (target == OSCAR_CALIB_KEYS) sym_full(hd->s_q, d, 1.0 / (double)hd->n_q, one);
        else if (target == OSCAR_CALIB_VALUES_SCORES) sym_full(hd->s_s, d, 1.0 / (double)hd->n_s, one);
        else {
            if (!(hd->w_sum > 0.0))
                OSCAR_FAIL(OSCAR_ERROR_INVALID_STATE,
                           "ovk_calib_covariance: layer %u KV head %u: every proxy weight k C_Q k^T is zero", layer, h);
            sym_full(hd->s_vp, d, 1.0 / hd->w_sum, one);
        }
        for (size_t i = 0; i < (size_t)d * d; i++) out[i] += one[i] / (double)(h1 - h0);
    }
fail:
    free(one);
    return st;
}

oscar_status ovk_calib_reservoir(const ovk_calib *cal, uint32_t layer, uint32_t head, const float **k,
                                   const float **v, uint32_t *n)
{
    if (!cal || layer >= cal->p.n_layer || head >= cal->p.n_kv_head || !k || !v || !n)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_calib_reservoir: bad layer %u / head %u or NULL output",
                           layer, head);
    const calib_head *hd = &cal->layers[layer].heads[head];
    *k = hd->res_k;
    *v = hd->res_v;
    *n = hd->res_n;
    return OSCAR_OK;
}

const uint32_t *ovk_calib_reservoir_positions(const ovk_calib *cal, uint32_t layer, uint32_t head)
{
    if (!cal || layer >= cal->p.n_layer || head >= cal->p.n_kv_head) return NULL;
    return cal->layers[layer].heads[head].res_pos;
}
