/* Fast batched prefill for calibration capture (see capture.h). */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "error.h"
#include "model_ref.h"
#include "calib.h"

/* A weight matrix dequantized once: W [n_out][n_in] float, y = W x. */
typedef struct cap_matrix {
    float *w;                 /* [n_out][n_in] */
    uint32_t n_in, n_out;
} cap_matrix;

typedef struct cap_layer {
    float *attn_norm, *ffn_norm; /* [n_embd] */
    float *bq, *bk, *bv;         /* [q_dim], [k_dim], [k_dim] or NULL (qwen2) */
    float *q_norm, *k_norm;      /* [head_dim] or NULL (qwen3) */
    cap_matrix wq, wk, wv, wo, w_gate, w_up, w_down;
    float *k_cache, *v_cache;    /* [max_seq_len][n_head_kv][head_dim] */
} cap_layer;

struct ovk_capture {
    const ovk_model_desc *desc;
    ovk_capture_params p;
    uint32_t n_past;             /* positions of the current sequence evaluated */
    uint32_t q_dim, k_dim;       /* n_head*head_dim, n_head_kv*head_dim */
    cap_layer *layers;           /* [n_layer] */
    float *output_norm;          /* [n_embd] */
    cap_matrix output;           /* LM head, only with want_logits */
    uint64_t embd_row_bytes;     /* bytes of one quantized token_embd row */
    /* scratch, C = chunk */
    float *x, *xb, *proj;        /* [C][n_embd] residual, normed input, block output */
    float *q;                    /* [C][q_dim] */
    float *k, *v;                /* [C][k_dim] */
    float *att;                  /* [C][q_dim] attention output of every head */
    float *head_out;             /* [C][head_dim] one head's attention output */
    float *gate, *up;            /* [C][n_ff] */
};

ovk_capture_params ovk_capture_params_default(void)
{
    ovk_capture_params p;
    memset(&p, 0, sizeof p);
    p.max_seq_len = 2048;
    p.chunk = 256;
    return p;
}

/* ---- creation ------------------------------------------------------------------------------ */

/* Dequantizes a whole tensor of n elements into a new float array (NULL tensor: *out = NULL). */
static oscar_status load_vector(const ovk_gguf_tensor *t, uint64_t n, float **out)
{
    *out = NULL;
    if (!t) return OSCAR_OK;
    float *v = malloc(n * sizeof *v); /* [n] */
    if (!v) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "capture: out of memory for %s", t->name);
    oscar_status st = ovk_ggml_dequantize_row(t->type, t->data, v, n);
    if (st != OSCAR_OK) {
        free(v);
        return st;
    }
    *out = v;
    return OSCAR_OK;
}

/* Dequantizes matrix t ([n_in, n_out] in GGUF order) into m->w [n_out][n_in]. */
static oscar_status load_matrix(const ovk_gguf_tensor *t, cap_matrix *m)
{
    oscar_status st = OSCAR_OK;
    uint64_t row_bytes = 0;
    m->n_in = (uint32_t)t->ne[0];
    m->n_out = (uint32_t)t->ne[1];
    if ((st = ovk_ggml_row_size(t->type, m->n_in, &row_bytes)) != OSCAR_OK) return st;
    m->w = malloc((size_t)m->n_in * m->n_out * sizeof *m->w);
    if (!m->w)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "capture: out of memory for %s (%u x %u floats)", t->name,
                           m->n_out, m->n_in);
    for (uint32_t o = 0; o < m->n_out; o++) {
        st = ovk_ggml_dequantize_row(t->type, (const uint8_t *)t->data + (size_t)o * row_bytes,
                                       m->w + (size_t)o * m->n_in, m->n_in);
        if (st != OSCAR_OK) return st;
    }
    return OSCAR_OK;
}

oscar_status ovk_capture_create(const ovk_model_desc *desc, const ovk_capture_params *params,
                                  ovk_capture **out)
{
    oscar_status st = OSCAR_OK;
    ovk_capture *c = NULL;
    if (!out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_capture_create: out is NULL");
    *out = NULL;
    if (!desc) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_capture_create: desc is NULL");
    const ovk_model_hparams *hp = &desc->hp;
    if (hp->head_dim_v != hp->head_dim)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "capture: head_dim_v %u differs from head_dim %u", hp->head_dim_v,
                           hp->head_dim);
    c = calloc(1, sizeof *c);
    if (!c) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "capture: out of memory");
    c->desc = desc;
    c->p = params ? *params : ovk_capture_params_default();
    if (!c->p.max_seq_len) c->p.max_seq_len = 2048;
    if (!c->p.chunk) c->p.chunk = 256;
    if (c->p.max_seq_len > (1u << 20) || c->p.chunk > 8192)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "capture: max_seq_len %u or chunk %u out of range", c->p.max_seq_len,
                   c->p.chunk);
    c->q_dim = hp->n_head * hp->head_dim;
    c->k_dim = hp->n_head_kv * hp->head_dim;
    OSCAR_TRY(ovk_ggml_row_size(desc->token_embd->type, hp->n_embd, &c->embd_row_bytes));
    OSCAR_TRY(load_vector(desc->output_norm, hp->n_embd, &c->output_norm));
    if (c->p.want_logits) OSCAR_TRY(load_matrix(desc->output, &c->output));
    c->layers = calloc(hp->n_layer, sizeof *c->layers);
    if (!c->layers) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "capture: out of memory");
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        const ovk_model_layer *D = &desc->layers[il];
        cap_layer *L = &c->layers[il];
        OSCAR_TRY(load_vector(D->attn_norm, hp->n_embd, &L->attn_norm));
        OSCAR_TRY(load_vector(D->ffn_norm, hp->n_embd, &L->ffn_norm));
        OSCAR_TRY(load_vector(D->bq, c->q_dim, &L->bq));
        OSCAR_TRY(load_vector(D->bk, c->k_dim, &L->bk));
        OSCAR_TRY(load_vector(D->bv, c->k_dim, &L->bv));
        OSCAR_TRY(load_vector(D->q_norm, hp->head_dim, &L->q_norm));
        OSCAR_TRY(load_vector(D->k_norm, hp->head_dim, &L->k_norm));
        OSCAR_TRY(load_matrix(D->wq, &L->wq));
        OSCAR_TRY(load_matrix(D->wk, &L->wk));
        OSCAR_TRY(load_matrix(D->wv, &L->wv));
        OSCAR_TRY(load_matrix(D->wo, &L->wo));
        OSCAR_TRY(load_matrix(D->w_gate, &L->w_gate));
        OSCAR_TRY(load_matrix(D->w_up, &L->w_up));
        OSCAR_TRY(load_matrix(D->w_down, &L->w_down));
        L->k_cache = malloc((size_t)c->p.max_seq_len * c->k_dim * sizeof(float));
        L->v_cache = malloc((size_t)c->p.max_seq_len * c->k_dim * sizeof(float));
        if (!L->k_cache || !L->v_cache)
            OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "capture: out of memory for the KV buffer (%u positions)",
                       c->p.max_seq_len);
    }
    size_t C = c->p.chunk;
    c->x = malloc(C * hp->n_embd * sizeof(float));
    c->xb = malloc(C * hp->n_embd * sizeof(float));
    c->proj = malloc(C * hp->n_embd * sizeof(float));
    c->q = malloc(C * c->q_dim * sizeof(float));
    c->k = malloc(C * c->k_dim * sizeof(float));
    c->v = malloc(C * c->k_dim * sizeof(float));
    c->att = malloc(C * c->q_dim * sizeof(float));
    c->head_out = malloc(C * hp->head_dim * sizeof(float));
    c->gate = malloc(C * hp->n_ff * sizeof(float));
    c->up = malloc(C * hp->n_ff * sizeof(float));
    if (!c->x || !c->xb || !c->proj || !c->q || !c->k || !c->v || !c->att || !c->head_out || !c->gate || !c->up)
        OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "capture: out of memory for scratch (chunk %u)", c->p.chunk);
    *out = c;
    return OSCAR_OK;
fail:
    ovk_capture_destroy(c);
    return st;
}

void ovk_capture_destroy(ovk_capture *c)
{
    if (!c) return;
    if (c->layers) {
        for (uint32_t il = 0; il < c->desc->hp.n_layer; il++) {
            cap_layer *L = &c->layers[il];
            free(L->attn_norm); free(L->ffn_norm);
            free(L->bq); free(L->bk); free(L->bv);
            free(L->q_norm); free(L->k_norm);
            free(L->wq.w); free(L->wk.w); free(L->wv.w); free(L->wo.w);
            free(L->w_gate.w); free(L->w_up.w); free(L->w_down.w);
            free(L->k_cache); free(L->v_cache);
        }
        free(c->layers);
    }
    free(c->output_norm);
    free(c->output.w);
    free(c->x); free(c->xb); free(c->proj);
    free(c->q); free(c->k); free(c->v); free(c->att); free(c->head_out);
    free(c->gate); free(c->up);
    free(c);
}

/* ---- forward ------------------------------------------------------------------------------- */

/* y[n][n_out] = x[n][n_in] · Wᵀ. */
static void matmul(const cap_matrix *m, const float *x, float *y, uint32_t n)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)m->n_out, (int)m->n_in, 1.0f, x, (int)m->n_in,
                m->w, (int)m->n_in, 0.0f, y, (int)m->n_out);
}

/* One attention block for n tokens at pos0.. (c->x in, updated). */
static oscar_status attention_block(ovk_capture *c, uint32_t il, uint32_t n, uint32_t pos0)
{
    oscar_status st = OSCAR_OK;
    const ovk_model_hparams *hp = &c->desc->hp;
    cap_layer *L = &c->layers[il];
    uint32_t hd = hp->head_dim, group = hp->n_head / hp->n_head_kv;

    for (uint32_t t = 0; t < n; t++)
        ovk_rmsnorm(c->xb + (size_t)t * hp->n_embd, c->x + (size_t)t * hp->n_embd, L->attn_norm, hp->n_embd,
                      hp->norm_eps);
    matmul(&L->wq, c->xb, c->q, n);
    matmul(&L->wk, c->xb, c->k, n);
    matmul(&L->wv, c->xb, c->v, n);
    for (uint32_t t = 0; t < n; t++) {
        float *q = c->q + (size_t)t * c->q_dim; /* [n_head][hd] */
        float *k = c->k + (size_t)t * c->k_dim; /* [n_kv][hd] */
        float *v = c->v + (size_t)t * c->k_dim; /* [n_kv][hd] */
        uint32_t pos = pos0 + t;
        if (L->bq) for (uint32_t i = 0; i < c->q_dim; i++) q[i] += L->bq[i];
        if (L->bk) for (uint32_t i = 0; i < c->k_dim; i++) k[i] += L->bk[i];
        if (L->bv) for (uint32_t i = 0; i < c->k_dim; i++) v[i] += L->bv[i];
        for (uint32_t h = 0; h < hp->n_head; h++) {
            if (L->q_norm) ovk_rmsnorm(q + h * hd, q + h * hd, L->q_norm, hd, hp->norm_eps);
            ovk_rope_apply(q + h * hd, hd, hp->n_rot, hp->rope_type, c->desc->rope_theta, pos);
        }
        for (uint32_t h = 0; h < hp->n_head_kv; h++) {
            if (L->k_norm) ovk_rmsnorm(k + h * hd, k + h * hd, L->k_norm, hd, hp->norm_eps);
            ovk_rope_apply(k + h * hd, hd, hp->n_rot, hp->rope_type, c->desc->rope_theta, pos);
        }
    }
    if (c->p.hook) OSCAR_TRY(c->p.hook(c->p.hook_user, il, pos0, n, c->q, c->k, c->v));
    memcpy(L->k_cache + (size_t)pos0 * c->k_dim, c->k, (size_t)n * c->k_dim * sizeof(float));
    memcpy(L->v_cache + (size_t)pos0 * c->k_dim, c->v, (size_t)n * c->k_dim * sizeof(float));
    for (uint32_t h = 0; h < hp->n_head; h++) {
        uint32_t g = h / group;
        OSCAR_TRY(ovk_attention_causal(c->q + h * hd, c->q_dim, n, L->k_cache + g * hd, L->v_cache + g * hd,
                                         c->k_dim, pos0, hd, c->head_out));
        for (uint32_t t = 0; t < n; t++)
            memcpy(c->att + (size_t)t * c->q_dim + h * hd, c->head_out + (size_t)t * hd, hd * sizeof(float));
    }
    matmul(&L->wo, c->att, c->proj, n);
    for (size_t i = 0; i < (size_t)n * hp->n_embd; i++) c->x[i] += c->proj[i];
fail:
    return st;
}

/* One feed-forward block for n tokens (c->x in, updated). */
static void ffn_block(ovk_capture *c, uint32_t il, uint32_t n)
{
    const ovk_model_hparams *hp = &c->desc->hp;
    cap_layer *L = &c->layers[il];
    for (uint32_t t = 0; t < n; t++)
        ovk_rmsnorm(c->xb + (size_t)t * hp->n_embd, c->x + (size_t)t * hp->n_embd, L->ffn_norm, hp->n_embd,
                      hp->norm_eps);
    matmul(&L->w_gate, c->xb, c->gate, n);
    matmul(&L->w_up, c->xb, c->up, n);
    for (size_t i = 0; i < (size_t)n * hp->n_ff; i++) c->gate[i] = c->gate[i] / (1.0f + expf(-c->gate[i])) * c->up[i];
    matmul(&L->w_down, c->gate, c->proj, n);
    for (size_t i = 0; i < (size_t)n * hp->n_embd; i++) c->x[i] += c->proj[i];
}

oscar_status ovk_capture_eval(ovk_capture *c, const int32_t *tokens, uint32_t n, uint32_t pos0, float *logits)
{
    oscar_status st = OSCAR_OK;
    if (!c || !tokens || n == 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_capture_eval: NULL capture/tokens or n = 0");
    const ovk_model_hparams *hp = &c->desc->hp;
    if (pos0 > c->n_past)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_capture_eval: pos0 %u is past the %u positions "
                           "evaluated", pos0, c->n_past);
    if ((uint64_t)pos0 + n > c->p.max_seq_len)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_CONTEXT_FULL, "ovk_capture_eval: positions %u..%u exceed max_seq_len %u",
                           pos0, pos0 + n - 1, c->p.max_seq_len);
    if (logits && !c->p.want_logits)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_capture_eval: logits asked without want_logits");
    for (uint32_t t = 0; t < n; t++)
        if (tokens[t] < 0 || (uint32_t)tokens[t] >= hp->n_vocab)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_capture_eval: token %d at %u out of range "
                               "(n_vocab %u)", tokens[t], t, hp->n_vocab);
    const ovk_gguf_tensor *te = c->desc->token_embd;
    for (uint32_t c0 = 0; c0 < n; c0 += c->p.chunk) {
        uint32_t nb = n - c0 < c->p.chunk ? n - c0 : c->p.chunk;
        uint32_t p0 = pos0 + c0;
        for (uint32_t t = 0; t < nb; t++)
            OSCAR_TRY(ovk_ggml_dequantize_row(te->type,
                                                (const uint8_t *)te->data + (size_t)tokens[c0 + t] * c->embd_row_bytes,
                                                c->x + (size_t)t * hp->n_embd, hp->n_embd));
        c->n_past = p0; /* positions from p0 on are being overwritten */
        for (uint32_t il = 0; il < hp->n_layer; il++) {
            OSCAR_TRY(attention_block(c, il, nb, p0));
            ffn_block(c, il, nb);
        }
        c->n_past = p0 + nb;
        if (!logits) continue;
        for (uint32_t t = 0; t < nb; t++)
            ovk_rmsnorm(c->xb + (size_t)t * hp->n_embd, c->x + (size_t)t * hp->n_embd, c->output_norm, hp->n_embd,
                          hp->norm_eps);
        matmul(&c->output, c->xb, logits + (size_t)c0 * hp->n_vocab, nb);
    }
fail:
    return st;
}
