/* Calibration capture: the reference forward pass with OpenBLAS kernels (see capture.h). */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "capture.h"
#include "error.h"

struct ovk_capture {
    ovk_capture_params p;
    ovk_model_ref *ref;          /* the forward pass, its KV cache [max_seq_len] and scratch [chunk] */
    float *head_out;             /* [chunk][head_dim] one head's attention output */
};

ovk_capture_params ovk_capture_params_default(void)
{
    ovk_capture_params p;
    memset(&p, 0, sizeof p);
    p.max_seq_len = 2048;
    p.chunk = 256;
    return p;
}

/* ---- kernels ------------------------------------------------------------------------------- */

/* y[n][n_out] = x[n][n_in] · wᵀ, w [n_out][n_in] (ovk_ref_matmul). */
static void blas_matmul(void *user, const float *w, uint32_t n_out, uint32_t n_in, const float *x, uint32_t n,
                        float *y)
{
    (void)user;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n_out, (int)n_in, 1.0f, x, (int)n_in, w,
                (int)n_in, 0.0f, y, (int)n_out);
}

/* Causal attention of a chunk (ovk_ref_attention), one query head at a time: head h reads the
 * columns of KV head h / (n_head / n_head_kv) of the cache, its output [n][head_dim] lands in
 * columns h·head_dim.. of out [n][n_head·head_dim]. */
static oscar_status blas_attention(void *user, const ovk_model_hparams *hp, uint32_t n, uint32_t pos0,
                                   const float *q, const float *k, const float *v, float *out)
{
    oscar_status st = OSCAR_OK;
    ovk_capture *c = user;
    uint32_t hd = hp->head_dim, group = hp->n_head / hp->n_head_kv;
    size_t q_dim = (size_t)hp->n_head * hd, k_dim = (size_t)hp->n_head_kv * hd;
    for (uint32_t h = 0; h < hp->n_head; h++) {
        uint32_t g = h / group;
        OSCAR_TRY(ovk_attention_causal(q + h * hd, q_dim, n, k + g * hd, v + g * hd, k_dim, pos0, hd, c->head_out));
        for (uint32_t t = 0; t < n; t++)
            memcpy(out + t * q_dim + h * hd, c->head_out + (size_t)t * hd, hd * sizeof(float));
    }
fail:
    return st;
}

/* ---- the object ---------------------------------------------------------------------------- */

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
    c->p = params ? *params : ovk_capture_params_default();
    if (!c->p.max_seq_len) c->p.max_seq_len = 2048;
    if (!c->p.chunk) c->p.chunk = 256;
    if (c->p.max_seq_len > (1u << 20) || c->p.chunk > 8192)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "capture: max_seq_len %u or chunk %u out of range", c->p.max_seq_len,
                   c->p.chunk);
    c->head_out = malloc((size_t)c->p.chunk * hp->head_dim * sizeof(float));
    if (!c->head_out) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "capture: out of memory for scratch (chunk %u)", c->p.chunk);

    ovk_model_ref_params rp = ovk_model_ref_params_default();
    rp.n_ctx = c->p.max_seq_len;
    rp.max_batch = c->p.chunk;
    rp.predequantize = 1;
    rp.vocab_on_the_fly = !c->p.want_logits;
    rp.qkv_hook = c->p.hook;
    rp.qkv_hook_user = c->p.hook_user;
    rp.matmul = blas_matmul;
    rp.attention = blas_attention;
    rp.attention_user = c;
    OSCAR_TRY(ovk_model_ref_create(desc, &rp, &c->ref));
    *out = c;
    return OSCAR_OK;
fail:
    ovk_capture_destroy(c);
    return st;
}

void ovk_capture_destroy(ovk_capture *c)
{
    if (!c) return;
    ovk_model_ref_destroy(c->ref);
    free(c->head_out);
    free(c);
}

oscar_status ovk_capture_eval(ovk_capture *c, const int32_t *tokens, uint32_t n, uint32_t pos0, float *logits)
{
    if (!c) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_capture_eval: capture is NULL");
    if (logits && !c->p.want_logits)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_capture_eval: logits asked without want_logits");
    return ovk_model_ref_eval(c->ref, tokens, n, pos0, logits, 1);
}
