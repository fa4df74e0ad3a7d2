/* Shared by the probes (center_probe.c, sigma_probe.c, rounding_probe.c, attn_probe.c; not part
 * of the build): the capture of oscar-calib (per-head calibrator, sequences of `seq` tokens) with
 * every 4th token's K and V rows kept with their position, the INT2 helpers they score with, and
 * the model and text loading (probe_tokens). Functions are static inline: each probe uses some. */
#ifndef PROBE_CAPTURE_H
#define PROBE_CAPTURE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "int2_quant.h"
#include "model_desc.h"
#include "calib.h"
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
    ovk_calib *cal;
    uint32_t n_layer, n_kv, d, seq, cap, *n; /* seq: tokens per sequence; n [n_layer] */
    float *k, *v;                       /* [n_layer][cap][n_kv][d] */
    uint32_t *pos;                      /* [n_layer][cap] */
} sample_set;

static inline oscar_status hook(void *user, uint32_t layer, uint32_t pos0, uint32_t n, const float *q,
                                const float *k, const float *v)
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
    return ovk_calib_add(S->cal, layer, n, q, k, v);
}

static inline int cmpf(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}


/* fake-quantizes row y (d) at ratio r into yq */
static inline void fq(const float *y, uint32_t d, float r, float *yq)
{
    float s[256];
    for (uint32_t j = 0; j < d; j++) s[j] = fabsf(y[j]);
    qsort(s, d, sizeof *s, cmpf);
    ovk_int2_fake_quantize_tau(y, d, d, ovk_int2_clip_threshold_sorted(s, d, r), yq);
}

/* The bucket b of position p, edge[b] <= p < edge[b + 1] (edge [nb + 1] ascending); nb if none. */
static inline int bucket_of(uint32_t p, const uint32_t *edge, int nb)
{
    int b = 0;
    while (b < nb && !(p >= edge[b] && p < edge[b + 1])) b++;
    return b;
}

/* M = Rᵀ C R [d][d]: the logit-error weight of a key error in the rotated basis (C: C_Q) */
static inline void rotated_metric(const double *C, const float *R, uint32_t d, double *M)
{
    for (uint32_t i = 0; i < d; i++)
        for (uint32_t j = 0; j < d; j++) {
            double s = 0.0;
            for (uint32_t a = 0; a < d; a++)
                for (uint32_t b = 0; b < d; b++) s += R[a * d + i] * C[a * d + b] * R[b * d + j];
            M[i * d + j] = s;
        }
}

/* weighted error of e under M (keys) or plain (values) */
static inline double werr(const double *M, const float *y, const float *yq, uint32_t d)
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

/* The model's description (*desc) and the tokens of the first 600000 bytes of the text file
 * (*n of them; exits 1 when the file cannot be read). */
static inline int32_t *probe_tokens(const char *model, const char *path, ovk_model_desc **desc, size_t *n)
{
    CHECK(ovk_model_desc_load(model, desc));
    ovk_tokenizer *tok;
    CHECK(ovk_model_tokenizer_create((*desc)->gguf, &tok));
    FILE *f = fopen(path, "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0) exit(1);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    len = len > 600000 ? 600000 : len;
    char *text = malloc((size_t)len);
    if (fread(text, 1, (size_t)len, f) != (size_t)len) exit(1);
    fclose(f);
    *n = 0;
    CHECK(ovk_tokenizer_encode(tok, text, (size_t)len, 0, 0, NULL, 0, n));
    int32_t *toks = malloc(*n * sizeof *toks);
    CHECK(ovk_tokenizer_encode(tok, text, (size_t)len, 0, 0, toks, *n, n));
    free(text);
    ovk_tokenizer_destroy(tok);
    return toks;
}

/* The probes' command line, MODEL.gguf TEXT [TOKENS (20000)] [SEQ (8192)]: runs the model over
 * the first TOKENS tokens (at most) of TEXT in sequences of SEQ, feeding a per-head calibrator
 * (returned) and the sample set S. Exits 2 on a short command line. */
static inline ovk_calib *probe_capture(int argc, char **argv, sample_set *out_S)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.gguf TEXT [TOKENS] [SEQ]\n", argv[0]);
        exit(2);
    }
    uint64_t want = argc > 3 ? strtoull(argv[3], NULL, 10) : 20000;
    uint32_t seq = argc > 4 ? (uint32_t)atoi(argv[4]) : 8192;
    ovk_model_desc *desc;
    size_t need;
    int32_t *toks = probe_tokens(argv[1], argv[2], &desc, &need);
    const ovk_model_hparams *hp = &desc->hp;
    if (need < want) want = need;

    ovk_calib_params cp = ovk_calib_params_default();
    cp.n_layer = hp->n_layer;
    cp.n_head = hp->n_head;
    cp.n_kv_head = hp->n_head_kv;
    cp.head_dim = hp->head_dim;
    cp.grouping = OSCAR_CALIB_PER_HEAD;
    cp.score_objective = 0;
    cp.max_seq_len = seq;
    ovk_calib *cal;
    CHECK(ovk_calib_create(&cp, &cal));
    uint32_t d = hp->head_dim, nkv = hp->n_head_kv, nl = hp->n_layer;
    sample_set S = {cal, nl, nkv, d, seq, (uint32_t)(want / 4 + 8), NULL, NULL, NULL, NULL};
    S.n = calloc(nl, sizeof *S.n);
    S.k = malloc((size_t)nl * S.cap * nkv * d * sizeof(float));
    S.v = malloc((size_t)nl * S.cap * nkv * d * sizeof(float));
    S.pos = malloc((size_t)nl * S.cap * sizeof *S.pos);
    ovk_capture_params kp = ovk_capture_params_default();
    kp.max_seq_len = seq;
    kp.chunk = 256;
    kp.hook = hook;
    kp.hook_user = &S;
    ovk_capture *cap;
    CHECK(ovk_capture_create(desc, &kp, &cap));
    for (uint64_t at = 0; at < want; at += seq) {
        uint32_t n = want - at < seq ? (uint32_t)(want - at) : seq;
        CHECK(ovk_calib_begin_sequence(cal));
        CHECK(ovk_capture_eval(cap, toks + at, n, 0, NULL));
        fprintf(stderr, "%llu/%llu\n", (unsigned long long)(at + n), (unsigned long long)want);
    }
    ovk_capture_destroy(cap);
    *out_S = S;
    return cal;
}

#endif
