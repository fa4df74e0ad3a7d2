/* The calibration capture (calib/capture.h: the reference forward pass with OpenBLAS matmul
 * and attention kernels) against the reference with its plain loops (runtime/ref/model_ref.h)
 * on generated models: post-RoPE q/k/v of every layer and token, and the logits, agree to
 * float32 rounding. Tolerance (stated in docs/calibration.md): for each
 * tensor, max |capture − ref| <= 1e-4 · max |ref| and the normalised squared error <= 1e-9.
 * The summation order differs (OpenBLAS sgemm vs the reference's 8-lane dot), so exact
 * equality is not expected; the measured worst is 2.6e-5 (logits of the 3-layer Q4_1 model), nse 6.5e-11.
 * Covers llama (F32 and Q4_1 weights, tied LM head), qwen2 (biases), qwen3 (q/k norms), chunks
 * that do not divide the sequence, a sequence fed in two calls, a rewind to position 0, and the
 * error statuses. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "ggml_types.h"
#include "model_desc.h"
#include "model_gen.h"
#include "model_ref.h"
#include "test_util.h"

#define T_SEQ 40 /* tokens per test sequence */

typedef struct store {
    uint32_t n_layer, q_dim, k_dim;
    float *q, *k, *v; /* [n_layer][T_SEQ][q_dim], [n_layer][T_SEQ][k_dim] x2 */
    int calls;
} store;

static void store_init(store *s, const ovk_model_hparams *hp)
{
    s->n_layer = hp->n_layer;
    s->q_dim = hp->n_head * hp->head_dim;
    s->k_dim = hp->n_head_kv * hp->head_dim;
    s->q = calloc((size_t)hp->n_layer * T_SEQ * s->q_dim, sizeof(float));
    s->k = calloc((size_t)hp->n_layer * T_SEQ * s->k_dim, sizeof(float));
    s->v = calloc((size_t)hp->n_layer * T_SEQ * s->k_dim, sizeof(float));
    s->calls = 0;
}

static void store_free(store *s)
{
    free(s->q);
    free(s->k);
    free(s->v);
}

/* Both forward passes hand out q, k, v through this hook (ovk_ref_qkv_hook). */
static oscar_status store_hook(void *user, uint32_t layer, uint32_t pos0, uint32_t n, const float *q, const float *k,
                             const float *v)
{
    store *s = user;
    s->calls++;
    memcpy(s->q + ((size_t)layer * T_SEQ + pos0) * s->q_dim, q, (size_t)n * s->q_dim * sizeof(float));
    memcpy(s->k + ((size_t)layer * T_SEQ + pos0) * s->k_dim, k, (size_t)n * s->k_dim * sizeof(float));
    memcpy(s->v + ((size_t)layer * T_SEQ + pos0) * s->k_dim, v, (size_t)n * s->k_dim * sizeof(float));
    return OSCAR_OK;
}

static oscar_status failing_hook(void *user, uint32_t layer, uint32_t pos0, uint32_t n, const float *q,
                                 const float *k, const float *v)
{
    (void)user; (void)pos0; (void)n; (void)q; (void)k; (void)v;
    return layer == 1 ? OSCAR_ERROR_INVALID_ARGUMENT : OSCAR_OK;
}

/* max |a − ref| / max |ref| over n values. */
static double rel_max(const float *a, const float *ref, size_t n)
{
    double md = 0.0, mr = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)ref[i]);
        if (!(d <= md)) md = d; /* NaN propagates */
        if (fabs((double)ref[i]) > mr) mr = fabs((double)ref[i]);
    }
    return mr > 0.0 ? md / mr : md;
}

static double worst_rel = 0.0, worst_nse = 0.0;

static void compare(const char *what, const char *name, const float *a, const float *ref, size_t n)
{
    double r = rel_max(a, ref, n), e = test_nse(a, ref, n);
    if (r > worst_rel || r != r) worst_rel = r;
    if (e > worst_nse || e != e) worst_nse = e;
    CHECK_MSG(r <= 1e-4 && e <= 1e-9, "%s %s: max rel %.3g, nse %.3g", what, name, r, e);
}

static void run_case(const char *what, const ovk_model_gen_params *gp)
{
    void *img = NULL;
    size_t size = 0;
    ovk_gguf *g = NULL;
    ovk_model_desc *desc = NULL;
    ovk_model_ref *ref = NULL;
    ovk_capture *cap = NULL;
    store rs, cs;
    float *lref = NULL, *lcap = NULL; /* [T_SEQ][n_vocab] */
    int32_t toks[T_SEQ];
    CHECK_OK(ovk_model_gen_write_memory(gp, &img, &size));
    CHECK_OK(ovk_gguf_open_memory(img, size, what, &g));
    CHECK_OK(ovk_model_desc_from_gguf(g, 1, &desc));
    if (!desc) goto done;
    const ovk_model_hparams *hp = &desc->hp;
    for (int t = 0; t < T_SEQ; t++) toks[t] = (int32_t)(test_rng_u32() % hp->n_vocab);
    store_init(&rs, hp);
    store_init(&cs, hp);
    lref = malloc((size_t)T_SEQ * hp->n_vocab * sizeof(float));
    lcap = malloc((size_t)T_SEQ * hp->n_vocab * sizeof(float));

    ovk_model_ref_params rp = ovk_model_ref_params_default();
    rp.n_ctx = 64;
    rp.qkv_hook = store_hook;
    rp.qkv_hook_user = &rs;
    CHECK_OK(ovk_model_ref_create(desc, &rp, &ref));
    CHECK_OK(ovk_model_ref_eval(ref, toks, T_SEQ, 0, lref, 1));

    ovk_capture_params cp = ovk_capture_params_default();
    cp.max_seq_len = 48;
    cp.chunk = 16; /* 24 = 16 + 8, then 16 */
    cp.want_logits = 1;
    cp.hook = store_hook;
    cp.hook_user = &cs;
    CHECK_OK(ovk_capture_create(desc, &cp, &cap));
    if (!cap) goto done;
    CHECK_OK(ovk_capture_eval(cap, toks, 24, 0, lcap));
    CHECK_OK(ovk_capture_eval(cap, toks + 24, T_SEQ - 24, 24, lcap + (size_t)24 * hp->n_vocab));
    CHECK(cs.calls == (int)hp->n_layer * 3);
    size_t nq = (size_t)hp->n_layer * T_SEQ * cs.q_dim, nk = (size_t)hp->n_layer * T_SEQ * cs.k_dim;
    compare(what, "q", cs.q, rs.q, nq);
    compare(what, "k", cs.k, rs.k, nk);
    compare(what, "v", cs.v, rs.v, nk);
    compare(what, "logits", lcap, lref, (size_t)T_SEQ * hp->n_vocab);

    /* a rewind: the same sequence again from position 0, in one call */
    memset(cs.q, 0, nq * sizeof(float));
    CHECK_OK(ovk_capture_eval(cap, toks, T_SEQ, 0, NULL));
    compare(what, "q (rewound)", cs.q, rs.q, nq);

    /* errors */
    int32_t bad = (int32_t)hp->n_vocab;
    CHECK_STATUS(ovk_capture_eval(cap, &bad, 1, 0, NULL), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_capture_eval(cap, toks, 10, 41, NULL), OSCAR_ERROR_INVALID_ARGUMENT); /* past n_past */
    CHECK_STATUS(ovk_capture_eval(cap, toks, 20, 30, NULL), OSCAR_ERROR_CONTEXT_FULL);
    CHECK_STATUS(ovk_capture_eval(cap, toks, 0, 0, NULL), OSCAR_ERROR_INVALID_ARGUMENT);
    ovk_capture_destroy(cap);
    cap = NULL;
    cp.want_logits = 0;
    cp.hook = failing_hook;
    CHECK_OK(ovk_capture_create(desc, &cp, &cap));
    CHECK_STATUS(ovk_capture_eval(cap, toks, 8, 0, lcap), OSCAR_ERROR_INVALID_ARGUMENT); /* no want_logits */
    CHECK_STATUS(ovk_capture_eval(cap, toks, 8, 0, NULL), OSCAR_ERROR_INVALID_ARGUMENT); /* the hook's */
    store_free(&rs);
    store_free(&cs);
done:
    free(lref);
    free(lcap);
    ovk_capture_destroy(cap);
    ovk_model_ref_destroy(ref);
    ovk_model_desc_destroy(desc);
    free(img);
}

int main(void)
{
    test_rng_seed(7);
    ovk_model_gen_params p = ovk_model_gen_params_default(OSCAR_ARCH_LLAMA);
    run_case("llama-f32", &p);

    p = ovk_model_gen_params_default(OSCAR_ARCH_LLAMA);
    p.weight_type = OSCAR_GGML_TYPE_Q4_1;
    p.embd_type = OSCAR_GGML_TYPE_Q8_0;
    p.tied_embeddings = 1;
    p.n_layer = 3;
    p.n_head = 6;
    p.n_head_kv = 2;
    p.head_dim = 32;
    p.n_embd = 96;
    p.n_ff = 160;
    p.seed = 3;
    run_case("llama-q4_1-tied", &p);

    p = ovk_model_gen_params_default(OSCAR_ARCH_QWEN2);
    p.seed = 4;
    run_case("qwen2", &p);

    p = ovk_model_gen_params_default(OSCAR_ARCH_QWEN3);
    p.seed = 5;
    run_case("qwen3", &p);

    printf("worst max-relative error %.3g, worst nse %.3g\n", worst_rel, worst_nse);
    return test_finish();
}
