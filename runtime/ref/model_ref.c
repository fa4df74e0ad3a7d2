/* Reference forward pass in plain C, float32 (see model_ref.h for the maths). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "model_ref.h"

/* A weight matrix [n_out][n_in]: floats when pre-dequantized, else the GGUF rows. */
typedef struct ref_matrix {
    const ovk_gguf_tensor *t;
    float *f;                 /* [n_out][n_in] or NULL (dequantize rows on the fly) */
    int shared;               /* 1: f belongs to another ref_matrix (tied embeddings) */
    uint32_t n_in, n_out;
    uint64_t row_bytes;       /* bytes of one quantized row */
} ref_matrix;

typedef struct ref_layer {
    float *attn_norm;         /* [n_embd] */
    float *ffn_norm;          /* [n_embd] */
    float *bq, *bk, *bv;      /* [q_dim], [k_dim], [v_dim] or NULL */
    float *q_norm, *k_norm;   /* [head_dim] or NULL */
    ref_matrix wq, wk, wv, wo, w_gate, w_up, w_down;
    float *k_cache;           /* [n_ctx][n_head_kv][head_dim] */
    float *v_cache;           /* [n_ctx][n_head_kv][head_dim_v] */
} ref_layer;

struct ovk_model_ref {
    const ovk_model_desc *desc;
    ovk_model_ref_params params;
    uint32_t n_ctx, n_past, max_batch;
    uint32_t q_dim, k_dim, v_dim, o_dim; /* n_head*head_dim, n_kv*head_dim, n_kv*head_dim_v, n_head*head_dim_v */
    ref_matrix token_embd, output;
    float *output_norm;       /* [n_embd] */
    ref_layer *layers;        /* [n_layer] */
    /* scratch, B = max_batch */
    float *x;                 /* [B][n_embd] residual stream */
    float *xb;                /* [B][n_embd] normed input of a sub-block */
    float *proj;              /* [B][n_embd] output of Wo / Wdown */
    float *q;                 /* [B][q_dim] */
    float *k;                 /* [B][k_dim] */
    float *v;                 /* [B][v_dim] */
    float *att;               /* [B][o_dim] attention output */
    float *gate, *up;         /* [B][n_ff] */
    float *scores;            /* [n_ctx] attention weights of one head */
    float *row;               /* [max n_in] one dequantized weight row (on-the-fly mode) */
};

ovk_model_ref_params ovk_model_ref_params_default(void)
{
    ovk_model_ref_params p;
    memset(&p, 0, sizeof p);
    p.predequantize = 1;
    return p;
}

/* ---- small kernels -------------------------------------------------------------------------- */

/* Dot product with 8 independent partial sums, combined in a fixed order: the result depends
 * only on a and b, never on the caller or the batch. The lanes are independent, so GCC and
 * Clang vectorize the inner loop at -O2 without reassociating anything. (size_t indices
 * matter: with uint32_t ones GCC must allow for wrap-around and emits gathers; with 16 lanes
 * GCC 12's -O2 cost model gives up.) */
static float dot(const float *a, const float *b, uint32_t n)
{
    float acc[8] = {0};
    size_t n_main = n - n % 8;
    for (size_t i = 0; i < n_main; i += 8)
        for (size_t j = 0; j < 8; j++) acc[j] += a[i + j] * b[i + j];
    for (size_t i = n_main; i < n; i++) acc[0] += a[i] * b[i];
    return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

void ovk_rmsnorm(float *y, const float *x, const float *w, uint32_t n, float eps)
{
    float ss = 0.0f;
    for (uint32_t i = 0; i < n; i++) ss += x[i] * x[i];
    float inv = 1.0f / sqrtf(ss / (float)n + eps);
    for (uint32_t i = 0; i < n; i++) y[i] = x[i] * inv * w[i];
}

uint32_t ovk_argmax(const float *x, uint32_t n)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (x[i] > x[best] || (x[best] != x[best] && x[i] == x[i])) best = i;
    return best;
}

static void silu_mul(float *g, const float *u, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* Row o of a matrix as floats: the pre-dequantized row, or dequantized into `scratch`. */
static const float *matrix_row(const ref_matrix *m, uint32_t o, float *scratch)
{
    if (m->f) return m->f + (size_t)o * m->n_in;
    const uint8_t *src = (const uint8_t *)m->t->data + (size_t)o * m->row_bytes;
    /* Cannot fail: type and row length were checked by model_desc. */
    (void)ovk_ggml_dequantize_row(m->t->type, src, scratch, m->n_in);
    return scratch;
}

/* y[t][o] = sum_i W[o][i] * x[t][i] for t < n: the caller's kernel for a matrix held as floats
 * when one is set, else plain loops that fetch each weight row once per batch. */
static void matmul(const ovk_model_ref *r, const ref_matrix *m, const float *x, float *y, uint32_t n)
{
    if (r->params.matmul && m->f) {
        r->params.matmul(r->params.matmul_user, m->f, m->n_out, m->n_in, x, n, y);
        return;
    }
    for (uint32_t o = 0; o < m->n_out; o++) {
        const float *w = matrix_row(m, o, r->row);
        for (uint32_t t = 0; t < n; t++) y[(size_t)t * m->n_out + o] = dot(w, x + (size_t)t * m->n_in, m->n_in);
    }
}

/* ---- creation ------------------------------------------------------------------------------ */

/* Dequantizes a whole (small) tensor into a new float array of n elements. */
static oscar_status load_vector(const ovk_gguf_tensor *t, uint64_t n, float **out)
{
    *out = NULL;
    if (!t) return OSCAR_OK;
    float *v = malloc(n * sizeof *v);
    if (!v) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "model_ref: out of memory for %s", t->name);
    oscar_status st = ovk_ggml_dequantize_row(t->type, t->data, v, n);
    if (st != OSCAR_OK) {
        free(v);
        return st;
    }
    *out = v;
    return OSCAR_OK;
}

static oscar_status load_matrix(const ovk_gguf_tensor *t, int predequantize, ref_matrix *m)
{
    oscar_status st = OSCAR_OK;
    m->t = t;
    m->n_in = (uint32_t)t->ne[0];
    m->n_out = (uint32_t)t->ne[1];
    if ((st = ovk_ggml_row_size(t->type, m->n_in, &m->row_bytes)) != OSCAR_OK) return st;
    if (!predequantize) return OSCAR_OK;
    m->f = malloc((size_t)m->n_in * m->n_out * sizeof *m->f);
    if (!m->f)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "model_ref: out of memory for %s (%u x %u floats)",
                           t->name, m->n_out, m->n_in);
    for (uint32_t o = 0; o < m->n_out; o++) {
        st = ovk_ggml_dequantize_row(t->type, (const uint8_t *)t->data + (size_t)o * m->row_bytes,
                                       m->f + (size_t)o * m->n_in, m->n_in);
        if (st != OSCAR_OK) return st;
    }
    return OSCAR_OK;
}

static void free_matrix(ref_matrix *m)
{
    if (!m->shared) free(m->f);
    m->f = NULL;
}

oscar_status ovk_model_ref_create(const ovk_model_desc *desc, const ovk_model_ref_params *params,
                                    ovk_model_ref **out)
{
    oscar_status st = OSCAR_OK;
    ovk_model_ref *r = NULL;
    if (!out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_model_ref_create: out is NULL");
    *out = NULL;
    if (!desc) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_model_ref_create: desc is NULL");
    const ovk_model_hparams *hp = &desc->hp;
    r = calloc(1, sizeof *r);
    if (!r) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "model_ref: out of memory");
    r->desc = desc;
    r->params = params ? *params : ovk_model_ref_params_default();
    r->n_ctx = r->params.n_ctx;
    if (!r->n_ctx) r->n_ctx = hp->n_ctx_train && hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096;
    r->max_batch = r->params.max_batch ? r->params.max_batch : 32;
    if (r->n_ctx > (1u << 24) || r->max_batch > 8192)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "model_ref: n_ctx %u or max_batch %u out of range", r->n_ctx,
                   r->max_batch);
    r->q_dim = hp->n_head * hp->head_dim;
    r->k_dim = hp->n_head_kv * hp->head_dim;
    r->v_dim = hp->n_head_kv * hp->head_dim_v;
    r->o_dim = hp->n_head * hp->head_dim_v;
    int pre = r->params.predequantize;
    int pre_vocab = pre && !r->params.vocab_on_the_fly;

    OSCAR_TRY(load_matrix(desc->token_embd, pre_vocab, &r->token_embd));
    if (hp->tied_embeddings) {
        r->output = r->token_embd;
        r->output.shared = 1;
    } else {
        OSCAR_TRY(load_matrix(desc->output, pre_vocab, &r->output));
    }
    OSCAR_TRY(load_vector(desc->output_norm, hp->n_embd, &r->output_norm));
    r->layers = calloc(hp->n_layer, sizeof *r->layers);
    if (!r->layers) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "model_ref: out of memory");
    uint32_t max_in = hp->n_embd > hp->n_ff ? hp->n_embd : hp->n_ff;
    if (r->o_dim > max_in) max_in = r->o_dim;
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        const ovk_model_layer *D = &desc->layers[il];
        ref_layer *L = &r->layers[il];
        OSCAR_TRY(load_vector(D->attn_norm, hp->n_embd, &L->attn_norm));
        OSCAR_TRY(load_vector(D->ffn_norm, hp->n_embd, &L->ffn_norm));
        OSCAR_TRY(load_vector(D->bq, r->q_dim, &L->bq));
        OSCAR_TRY(load_vector(D->bk, r->k_dim, &L->bk));
        OSCAR_TRY(load_vector(D->bv, r->v_dim, &L->bv));
        OSCAR_TRY(load_vector(D->q_norm, hp->head_dim, &L->q_norm));
        OSCAR_TRY(load_vector(D->k_norm, hp->head_dim, &L->k_norm));
        OSCAR_TRY(load_matrix(D->wq, pre, &L->wq));
        OSCAR_TRY(load_matrix(D->wk, pre, &L->wk));
        OSCAR_TRY(load_matrix(D->wv, pre, &L->wv));
        OSCAR_TRY(load_matrix(D->wo, pre, &L->wo));
        OSCAR_TRY(load_matrix(D->w_gate, pre, &L->w_gate));
        OSCAR_TRY(load_matrix(D->w_up, pre, &L->w_up));
        OSCAR_TRY(load_matrix(D->w_down, pre, &L->w_down));
        L->k_cache = calloc((size_t)r->n_ctx * r->k_dim, sizeof *L->k_cache);
        L->v_cache = calloc((size_t)r->n_ctx * r->v_dim, sizeof *L->v_cache);
        if (!L->k_cache || !L->v_cache)
            OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "model_ref: out of memory for the KV cache (%u positions)",
                       r->n_ctx);
    }
    size_t B = r->max_batch;
    r->x = malloc(B * hp->n_embd * sizeof(float));
    r->xb = malloc(B * hp->n_embd * sizeof(float));
    r->proj = malloc(B * hp->n_embd * sizeof(float));
    r->q = malloc(B * r->q_dim * sizeof(float));
    r->k = malloc(B * r->k_dim * sizeof(float));
    r->v = malloc(B * r->v_dim * sizeof(float));
    r->att = malloc(B * r->o_dim * sizeof(float));
    r->gate = malloc(B * hp->n_ff * sizeof(float));
    r->up = malloc(B * hp->n_ff * sizeof(float));
    r->scores = malloc((size_t)r->n_ctx * sizeof(float));
    r->row = malloc((size_t)max_in * sizeof(float));
    if (!r->x || !r->xb || !r->proj || !r->q || !r->k || !r->v || !r->att || !r->gate || !r->up || !r->scores ||
        !r->row)
        OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "model_ref: out of memory for scratch buffers");
    *out = r;
    return OSCAR_OK;
fail:
    ovk_model_ref_destroy(r);
    return st;
}

void ovk_model_ref_destroy(ovk_model_ref *r)
{
    if (!r) return;
    free_matrix(&r->token_embd);
    free_matrix(&r->output);
    free(r->output_norm);
    if (r->layers) {
        for (uint32_t il = 0; il < r->desc->hp.n_layer; il++) {
            ref_layer *L = &r->layers[il];
            free(L->attn_norm); free(L->ffn_norm);
            free(L->bq); free(L->bk); free(L->bv);
            free(L->q_norm); free(L->k_norm);
            free_matrix(&L->wq); free_matrix(&L->wk); free_matrix(&L->wv); free_matrix(&L->wo);
            free_matrix(&L->w_gate); free_matrix(&L->w_up); free_matrix(&L->w_down);
            free(L->k_cache); free(L->v_cache);
        }
        free(r->layers);
    }
    free(r->x); free(r->xb); free(r->proj);
    free(r->q); free(r->k); free(r->v); free(r->att);
    free(r->gate); free(r->up); free(r->scores); free(r->row);
    free(r);
}

void ovk_model_ref_reset(ovk_model_ref *r) { if (r) r->n_past = 0; }
uint32_t ovk_model_ref_n_past(const ovk_model_ref *r) { return r ? r->n_past : 0; }
uint32_t ovk_model_ref_n_ctx(const ovk_model_ref *r) { return r ? r->n_ctx : 0; }

void ovk_model_ref_kv_cache(ovk_model_ref *r, uint32_t layer, float **k, float **v)
{
    int ok = r && layer < r->desc->hp.n_layer;
    if (k) *k = ok ? r->layers[layer].k_cache : NULL;
    if (v) *v = ok ? r->layers[layer].v_cache : NULL;
}

/* ---- forward ------------------------------------------------------------------------------- */

/* The plain-loop attention of n tokens at pos0.. over layer il's cache (the maths of
 * ovk_ref_attention): r->q in, r->att out. */
static void attention_loops(ovk_model_ref *r, uint32_t il, uint32_t n, uint32_t pos0)
{
    const ovk_model_hparams *hp = &r->desc->hp;
    const ref_layer *L = &r->layers[il];
    uint32_t hd = hp->head_dim, hdv = hp->head_dim_v, group = hp->n_head / hp->n_head_kv;
    float scale = 1.0f / sqrtf((float)hd);
    for (uint32_t t = 0; t < n; t++) {
        uint32_t pos = pos0 + t;
        for (uint32_t h = 0; h < hp->n_head; h++) {
            const float *q = r->q + (size_t)t * r->q_dim + h * hd;
            uint32_t g = h / group;
            float mx = -INFINITY;
            for (uint32_t j = 0; j <= pos; j++) {
                float s = dot(q, L->k_cache + (size_t)j * r->k_dim + g * hd, hd) * scale;
                r->scores[j] = s;
                if (s > mx) mx = s;
            }
            float sum = 0.0f;
            for (uint32_t j = 0; j <= pos; j++) {
                r->scores[j] = expf(r->scores[j] - mx);
                sum += r->scores[j];
            }
            float inv = 1.0f / sum;
            float *o = r->att + (size_t)t * r->o_dim + h * hdv;
            for (uint32_t d = 0; d < hdv; d++) o[d] = 0.0f;
            for (uint32_t j = 0; j <= pos; j++) {
                const float *vj = L->v_cache + (size_t)j * r->v_dim + g * hdv;
                float p = r->scores[j] * inv;
                for (uint32_t d = 0; d < hdv; d++) o[d] += p * vj[d];
            }
        }
    }
}

/* One attention block for n tokens at pos0.. (r->x in, r->x updated). */
static oscar_status attention_block(ovk_model_ref *r, uint32_t il, uint32_t n, uint32_t pos0)
{
    oscar_status st = OSCAR_OK;
    const ovk_model_hparams *hp = &r->desc->hp;
    ref_layer *L = &r->layers[il];
    uint32_t hd = hp->head_dim;

    for (uint32_t t = 0; t < n; t++)
        ovk_rmsnorm(r->xb + (size_t)t * hp->n_embd, r->x + (size_t)t * hp->n_embd, L->attn_norm, hp->n_embd,
                      hp->norm_eps);
    matmul(r, &L->wq, r->xb, r->q, n);
    matmul(r, &L->wk, r->xb, r->k, n);
    matmul(r, &L->wv, r->xb, r->v, n);

    for (uint32_t t = 0; t < n; t++) {
        float *q = r->q + (size_t)t * r->q_dim; /* [n_head][hd] */
        float *k = r->k + (size_t)t * r->k_dim; /* [n_kv][hd] */
        float *v = r->v + (size_t)t * r->v_dim; /* [n_kv][hdv] */
        uint32_t pos = pos0 + t;
        if (L->bq) for (uint32_t i = 0; i < r->q_dim; i++) q[i] += L->bq[i];
        if (L->bk) for (uint32_t i = 0; i < r->k_dim; i++) k[i] += L->bk[i];
        if (L->bv) for (uint32_t i = 0; i < r->v_dim; i++) v[i] += L->bv[i];
        for (uint32_t h = 0; h < hp->n_head; h++) {
            if (L->q_norm) ovk_rmsnorm(q + h * hd, q + h * hd, L->q_norm, hd, hp->norm_eps);
            ovk_rope_apply(q + h * hd, hd, hp->n_rot, hp->rope_type, r->desc->rope_theta, pos);
        }
        for (uint32_t h = 0; h < hp->n_head_kv; h++) {
            if (L->k_norm) ovk_rmsnorm(k + h * hd, k + h * hd, L->k_norm, hd, hp->norm_eps);
            ovk_rope_apply(k + h * hd, hd, hp->n_rot, hp->rope_type, r->desc->rope_theta, pos);
        }
    }
    if (r->params.qkv_hook) OSCAR_TRY(r->params.qkv_hook(r->params.qkv_hook_user, il, pos0, n, r->q, r->k, r->v));
    for (uint32_t t = 0; r->params.kv_transform && t < n; t++)
        r->params.kv_transform(r->params.kv_transform_user, il, pos0 + t, r->k + (size_t)t * r->k_dim,
                               r->v + (size_t)t * r->v_dim);
    memcpy(L->k_cache + (size_t)pos0 * r->k_dim, r->k, (size_t)n * r->k_dim * sizeof(float));
    memcpy(L->v_cache + (size_t)pos0 * r->v_dim, r->v, (size_t)n * r->v_dim * sizeof(float));

    if (r->params.attention)
        OSCAR_TRY(r->params.attention(r->params.attention_user, hp, n, pos0, r->q, L->k_cache, L->v_cache, r->att));
    else
        attention_loops(r, il, n, pos0);
    matmul(r, &L->wo, r->att, r->proj, n);
    for (size_t i = 0; i < (size_t)n * hp->n_embd; i++) r->x[i] += r->proj[i];
fail:
    return st;
}

static void ffn_block(ovk_model_ref *r, uint32_t il, uint32_t n)
{
    const ovk_model_hparams *hp = &r->desc->hp;
    ref_layer *L = &r->layers[il];
    for (uint32_t t = 0; t < n; t++)
        ovk_rmsnorm(r->xb + (size_t)t * hp->n_embd, r->x + (size_t)t * hp->n_embd, L->ffn_norm, hp->n_embd,
                      hp->norm_eps);
    matmul(r, &L->w_gate, r->xb, r->gate, n);
    matmul(r, &L->w_up, r->xb, r->up, n);
    silu_mul(r->gate, r->up, n * hp->n_ff);
    matmul(r, &L->w_down, r->gate, r->proj, n);
    for (size_t i = 0; i < (size_t)n * hp->n_embd; i++) r->x[i] += r->proj[i];
}

oscar_status ovk_model_ref_eval(ovk_model_ref *r, const int32_t *tokens, uint32_t n, uint32_t pos0,
                                  float *logits, int all_logits)
{
    oscar_status st = OSCAR_OK;
    if (!r || !tokens || n == 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_model_ref_eval: NULL model/tokens or n = 0");
    const ovk_model_hparams *hp = &r->desc->hp;
    if (pos0 > r->n_past)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_model_ref_eval: pos0 %u is past n_past %u", pos0,
                           r->n_past);
    if ((uint64_t)pos0 + n > r->n_ctx)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_CONTEXT_FULL, "ovk_model_ref_eval: positions %u..%u exceed n_ctx %u", pos0,
                           pos0 + n - 1, r->n_ctx);
    for (uint32_t t = 0; t < n; t++)
        if (tokens[t] < 0 || (uint32_t)tokens[t] >= hp->n_vocab)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_model_ref_eval: token %d at %u out of range "
                               "(n_vocab %u)", tokens[t], t, hp->n_vocab);

    for (uint32_t c0 = 0; c0 < n; c0 += r->max_batch) {
        uint32_t nb = n - c0 < r->max_batch ? n - c0 : r->max_batch;
        for (uint32_t t = 0; t < nb; t++) {
            const float *e = matrix_row(&r->token_embd, (uint32_t)tokens[c0 + t], r->row);
            memcpy(r->x + (size_t)t * hp->n_embd, e, hp->n_embd * sizeof(float));
        }
        r->n_past = pos0 + c0; /* positions from here on are being overwritten */
        for (uint32_t il = 0; il < hp->n_layer; il++) {
            OSCAR_TRY(attention_block(r, il, nb, pos0 + c0));
            ffn_block(r, il, nb);
        }
        r->n_past = pos0 + c0 + nb;
        if (!logits) continue;
        if (all_logits) {
            for (uint32_t t = 0; t < nb; t++)
                ovk_rmsnorm(r->xb + (size_t)t * hp->n_embd, r->x + (size_t)t * hp->n_embd, r->output_norm,
                              hp->n_embd, hp->norm_eps);
            matmul(r, &r->output, r->xb, logits + (size_t)c0 * hp->n_vocab, nb);
        } else if (c0 + nb == n) {
            ovk_rmsnorm(r->xb, r->x + (size_t)(nb - 1) * hp->n_embd, r->output_norm, hp->n_embd, hp->norm_eps);
            matmul(r, &r->output, r->xb, logits, 1);
        }
    }
fail:
    return st;
}

oscar_status ovk_model_ref_generate_greedy(ovk_model_ref *r, const int32_t *prompt, uint32_t n_prompt,
                                             uint32_t n_gen, int (*is_stop)(void *stop_user, int32_t token),
                                             void *stop_user, int32_t *out, uint32_t *n_out)
{
    oscar_status st = OSCAR_OK;
    float *logits = NULL; /* [n_vocab] */
    if (n_out) *n_out = 0;
    if (!r || !prompt || !n_prompt || (n_gen && !out))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_model_ref_generate_greedy: bad arguments");
    uint32_t n_vocab = r->desc->hp.n_vocab;
    logits = malloc((size_t)n_vocab * sizeof *logits);
    if (!logits) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "generate: out of memory");
    ovk_model_ref_reset(r);
    OSCAR_TRY(ovk_model_ref_eval(r, prompt, n_prompt, 0, logits, 0));
    for (uint32_t i = 0; i < n_gen; i++) {
        int32_t tok = (int32_t)ovk_argmax(logits, n_vocab);
        out[i] = tok;
        if (n_out) *n_out = i + 1;
        if (is_stop && is_stop(stop_user, tok)) break;
        if (i + 1 < n_gen) OSCAR_TRY(ovk_model_ref_eval(r, &tok, 1, r->n_past, logits, 0));
    }
fail:
    free(logits);
    return st;
}
