/* Probe (session 9, not part of the build): how large is the INT2 key error in logit units?
 * Captures like oscar-calib (sequences of SEQ tokens, every 4th token's K rows kept), builds an
 * uncentered per-head OSCAR rotation from C_Q, quantizes each kept key (positions >= 64) at the
 * reference's clip 0.96 and prints per layer: the mean squared logit error E[(q·e)²]/d over the
 * query distribution (sigma2_err), the white-noise estimate Δ²/12 · tr(C_Q)/d from each row's
 * quantization step Δ (est), the mean squared logit E[(q·k)²]/d (logit_msq) and the largest
 * row error. Results: docs/quality.md, "Session 9". Builds like center_probe.c:
 *
 *   cc -O2 -o /tmp/sigma_probe docs/experiments/sigma_probe.c -Icalib -Iruntime -Iinclude \
 *      build/liboscar_calib.a build/liboscar.a -llapacke -lopenblas -lm -ldl -lpthread
 *   /tmp/sigma_probe MODEL.gguf calib.txt 8192 512      # ~1 min on 2 cores
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "int2_quant.h"
#include "model_desc.h"
#include "oscar_calib.h"
#include "tokenizer.h"

#define CHECK(x)                                                                      \
    do {                                                                              \
        oscar_status s_ = (x);                                                        \
        if (s_ != OSCAR_OK) {                                                         \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, oscar_last_error());   \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

/* every 4th token's K and V rows of every layer, with its position */
typedef struct sample_set {
    oscar_calib *cal;
    uint32_t n_layer, n_kv, d, cap, *n; /* n [n_layer] */
    float *k, *v;                       /* [n_layer][cap][n_kv][d] */
    uint32_t *pos;                      /* [n_layer][cap] */
} sample_set;

static oscar_status hook(void *user, uint32_t layer, uint32_t pos0, uint32_t n, const float *q, const float *k,
                         const float *v)
{
    sample_set *S = user;
    size_t row = (size_t)S->n_kv * S->d;
    for (uint32_t t = 0; t < n; t++) {
        if ((pos0 + t) % 4 != 0 || S->n[layer] == S->cap) continue;
        size_t at = (size_t)layer * S->cap + S->n[layer]++;
        memcpy(S->k + at * row, k + t * row, row * sizeof(float));
        memcpy(S->v + at * row, v + t * row, row * sizeof(float));
        S->pos[at] = pos0 + t;
    }
    return oscar_calib_add(S->cal, layer, n, q, k, v);
}

static int cmpf(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}


/* fake-quantizes row y (d) at ratio r into yq */
static void fq(const float *y, uint32_t d, float r, float *yq)
{
    float s[256];
    for (uint32_t j = 0; j < d; j++) s[j] = fabsf(y[j]);
    qsort(s, d, sizeof *s, cmpf);
    oscar_int2_fake_quantize_tau(y, d, d, oscar_int2_clip_threshold_sorted(s, d, r), yq);
}

/* weighted error of e under M (keys) or plain (values) */
static double werr(const double *M, const float *y, const float *yq, uint32_t d)
{
    double e[256], s = 0.0;
    for (uint32_t j = 0; j < d; j++) e[j] = (double)yq[j] - y[j];
    if (!M) {
        for (uint32_t j = 0; j < d; j++) s += e[j] * e[j];
        return s;
    }
    for (uint32_t i = 0; i < d; i++) {
        double t = 0.0;
        for (uint32_t j = 0; j < d; j++) t += M[i * d + j] * e[j];
        s += e[i] * t;
    }
    return s;
}

int main(int argc, char **argv)
{
    if (argc < 3) return 2;
    uint64_t want = argc > 3 ? strtoull(argv[3], NULL, 10) : 20000;
    uint32_t seq = argc > 4 ? (uint32_t)atoi(argv[4]) : 8192;
    oscar_model_desc *desc;
    CHECK(oscar_model_desc_load(argv[1], &desc));
    const oscar_model_hparams *hp = &desc->hp;
    oscar_tokenizer *tok;
    CHECK(oscar_model_tokenizer_create(desc->gguf, &tok));
    FILE *f = fopen(argv[2], "rb");
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    len = len > 600000 ? 600000 : len;
    char *text = malloc((size_t)len);
    if (fread(text, 1, (size_t)len, f) != (size_t)len) return 1;
    fclose(f);
    size_t need = 0;
    CHECK(oscar_tokenizer_encode(tok, text, (size_t)len, 0, 0, NULL, 0, &need));
    int32_t *toks = malloc(need * sizeof *toks);
    CHECK(oscar_tokenizer_encode(tok, text, (size_t)len, 0, 0, toks, need, &need));
    if (need < want) want = need;

    oscar_calib_params cp = oscar_calib_params_default();
    cp.n_layer = hp->n_layer;
    cp.n_head = hp->n_head;
    cp.n_kv_head = hp->n_head_kv;
    cp.head_dim = hp->head_dim;
    cp.grouping = OSCAR_CALIB_PER_HEAD;
    cp.score_objective = 0;
    cp.max_seq_len = seq;
    oscar_calib *cal;
    CHECK(oscar_calib_create(&cp, &cal));
    uint32_t d = hp->head_dim, nkv = hp->n_head_kv, nl = hp->n_layer;
    sample_set S = {cal, nl, nkv, d, (uint32_t)(want / 4 + 8), NULL, NULL, NULL, NULL};
    S.n = calloc(nl, sizeof *S.n);
    S.k = malloc((size_t)nl * S.cap * nkv * d * sizeof(float));
    S.v = malloc((size_t)nl * S.cap * nkv * d * sizeof(float));
    S.pos = malloc((size_t)nl * S.cap * sizeof *S.pos);
    oscar_capture_params kp = oscar_capture_params_default();
    kp.max_seq_len = seq;
    kp.chunk = 256;
    kp.hook = hook;
    kp.hook_user = &S;
    oscar_capture *cap;
    CHECK(oscar_capture_create(desc, &kp, &cap));
    for (uint64_t at = 0; at < want; at += seq) {
        uint32_t n = want - at < seq ? (uint32_t)(want - at) : seq;
        CHECK(oscar_calib_begin_sequence(cal));
        CHECK(oscar_capture_eval(cap, toks + at, n, 0, NULL));
        fprintf(stderr, "%llu/%llu\n", (unsigned long long)(at + n), (unsigned long long)want);
    }
    oscar_capture_destroy(cap);


    size_t dd = (size_t)d * d;
    double *C = malloc(dd * sizeof *C), *CQ = malloc(dd * sizeof *CQ);
    float *R = malloc(dd * sizeof *R);
    float *yq = malloc(d * sizeof *yq), *y = malloc(d * sizeof *y);
    /* per layer: sigma^2 of the logit error (q.e/sqrt(d))^2 averaged over queries and keys, rotated
       per head, ratio 0.96, and the logit variance E[(q.k)^2]/d for scale; also the uniform-error
       estimate sum_g delta^2/12 * E|q|^2/d */
    for (uint32_t l = 0; l < nl; l++) {
        double s_err = 0, s_log = 0, s_est = 0; uint64_t cnt = 0;
        double e_max = 0;
        for (uint32_t h = 0; h < nkv; h++) {
            CHECK(oscar_calib_covariance(cal, l, h, OSCAR_CALIB_KEYS, CQ));
            CHECK(oscar_rotation_build(OSCAR_ROTATION_OSCAR, d, CQ, R, NULL));
            double trq = 0; for (uint32_t i = 0; i < d; i++) trq += CQ[i * d + i];
            /* M = R^T CQ R */
            double *M = malloc(dd * sizeof *M);
            for (uint32_t i = 0; i < d; i++) for (uint32_t j = 0; j < d; j++) {
                double s = 0; for (uint32_t a = 0; a < d; a++) for (uint32_t b = 0; b < d; b++) s += R[a*d+i]*CQ[a*d+b]*R[b*d+j];
                M[i*d+j] = s; }
            for (uint32_t t = 0; t < S.n[l]; t++) {
                size_t at = (size_t)l * S.cap + t;
                if (S.pos[at] < 64) continue;
                const float *x = S.k + (at * nkv + h) * d;
                for (uint32_t j = 0; j < d; j++) { double s = 0; for (uint32_t a = 0; a < d; a++) s += x[a] * R[a*d+j]; y[j] = (float)s; }
                fq(y, d, 0.96f, yq);
                double we = werr(M, y, yq, d) / d;
                double lg = 0; for (uint32_t i = 0; i < d; i++) for (uint32_t j = 0; j < d; j++) lg += x[i]*CQ[i*d+j]*x[j];
                float mn = 1e30f, mx = -1e30f; for (uint32_t j = 0; j < d; j++) { if (yq[j] < mn) mn = yq[j]; if (yq[j] > mx) mx = yq[j]; }
                double delta = (mx - mn) / 3.0;
                s_est += delta * delta / 12.0 * trq / d;
                s_err += we; s_log += lg / d; cnt++;
                if (we > e_max) e_max = we;
            }
            free(M);
        }
        printf("layer %2u  sigma2_err %.4f  est %.4f  logit_msq %.3f  max_err %.3f\n", l, s_err / cnt, s_est / cnt, s_log / cnt, e_max);
    }
    return 0;
}
