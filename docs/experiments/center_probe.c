/* Probe (session 7, not part of the build): how much does subtracting a constant mean from the
 * keys and values cut the INT2 error the calibrator minimises, and which constant works at
 * long positions? Captures like oscar-calib (per-head OSCAR rotations, sequences of SEQ tokens),
 * keeps every 4th token's K/V rows with their position, estimates means from the even samples
 * and scores the odd ones per position bucket: query-weighted key error E[(q·e)²] and
 * proxy-weighted value error, centered relative to uncentered, for means from positions
 * 64..511 (post-RoPE), 64..SEQ-1 (post-RoPE), and the pre-RoPE mean of 64..511 RoPE-averaged
 * over 64..8191 and 64..2047 (what the runtime does). Results: docs/kv-cache.md, "Centering".
 *
 *   cc -O2 -o /tmp/center_probe docs/experiments/center_probe.c -Icalib -Iruntime -Iinclude \
 *      build/liboscar_calib.a build/liboscar.a -llapacke -lopenblas -lm -ldl -lpthread
 *   /tmp/center_probe MODEL.gguf calib.txt 24576 8192      # ~10 min on 2 cores
 *   /tmp/center_probe MODEL.gguf calib.txt 20480 512       # positions < 512 only, ~2 min
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
    double *C = malloc(dd * sizeof *C), *M = malloc(dd * sizeof *M), *CQ = malloc(dd * sizeof *CQ);
    float *R = malloc(dd * sizeof *R);
    /* evaluation buckets of position; means: 0 none, 1 from positions 64..511, 2 from 64..seq */
    enum { NB = 4, NM = 5 };
    static const uint32_t edge[NB + 1] = {64, 512, 2048, 4096, 1u << 30};
    double tot[2][NB][NM] = {{{0}}};
    double energy[2][NB][2] = {{{0}}}; /* Σ w‖y‖² uncentered, centered by the mean of 64..511 */
    for (uint32_t l = 0; l < nl; l++) {
        for (uint32_t h = 0; h < nkv; h++) {
            CHECK(oscar_calib_covariance(cal, l, h, OSCAR_CALIB_KEYS, CQ));
            for (int kv = 0; kv < 2; kv++) {
                const float *rows = kv ? S.v : S.k;
                CHECK(oscar_calib_covariance(cal, l, h, kv ? OSCAR_CALIB_VALUES_PROXY : OSCAR_CALIB_KEYS, C));
                CHECK(oscar_rotation_build(OSCAR_ROTATION_OSCAR, d, C, R, NULL));
                for (uint32_t i = 0; i < d; i++)
                    for (uint32_t j = 0; j < d; j++) {
                        double s = 0.0;
                        for (uint32_t a = 0; a < d; a++)
                            for (uint32_t b = 0; b < d; b++) s += R[a * d + i] * CQ[a * d + b] * R[b * d + j];
                        M[i * d + j] = s;
                    }
                /* means from even samples (unrotated), then rotated */
                double mu[NM][256] = {{0}};
                uint32_t cnt[NM] = {0};
                for (uint32_t t = 0; t < S.n[l]; t += 2) {
                    size_t at = (size_t)l * S.cap + t;
                    uint32_t p = S.pos[at];
                    if (p < 64) continue;
                    const float *x = rows + (at * nkv + h) * d;
                    for (int m = 1; m < NM; m++) {
                        if (m == 1 && p >= 512) continue;
                        cnt[m]++;
                        for (uint32_t j = 0; j < d; j++) mu[m][j] += x[j];
                    }
                }
                /* 3, 4: the pre-RoPE mean of positions 64..511, RoPE'd and averaged over
                 * positions 64..8191 (3) or 64..2047 (4); keys only (values: as 1) */
                double pre[256] = {0};
                uint32_t npre = 0;
                for (uint32_t t = 0; t < S.n[l]; t += 2) {
                    size_t at = (size_t)l * S.cap + t;
                    uint32_t p = S.pos[at];
                    if (p < 64 || p >= 512) continue;
                    const float *x = rows + (at * nkv + h) * d;
                    npre++;
                    for (uint32_t i = 0; i < d / 2; i++) {
                        double th = p * pow(100000.0, -2.0 * i / d), c = cos(th), sn = sin(th);
                        double a = x[2 * i], b = x[2 * i + 1];
                        pre[2 * i] += a * c + b * sn;      /* rotate by -th */
                        pre[2 * i + 1] += -a * sn + b * c;
                    }
                }
                for (int m = 3; m < NM; m++) {
                    uint32_t L = m == 3 ? 8192 : 2048;
                    for (uint32_t j = 0; j < d; j++) mu[m][j] = 0.0;
                    if (kv) { memcpy(mu[m], mu[1], sizeof mu[1]); cnt[m] = cnt[1]; continue; }
                    for (uint32_t p = 64; p < L; p++)
                        for (uint32_t i = 0; i < d / 2; i++) {
                            double th = p * pow(100000.0, -2.0 * i / d), c = cos(th), sn = sin(th);
                            double a = pre[2 * i] / npre, b = pre[2 * i + 1] / npre;
                            mu[m][2 * i] += a * c - b * sn;
                            mu[m][2 * i + 1] += a * sn + b * c;
                        }
                    cnt[m] = L - 64;
                }
                float mr[NM][256];
                for (int m = 0; m < NM; m++)
                    for (uint32_t j = 0; j < d; j++) {
                        double s = 0.0;
                        for (uint32_t i = 0; i < d; i++) s += (cnt[m] ? mu[m][i] / cnt[m] : 0.0) * R[i * d + j];
                        mr[m][j] = (float)s;
                    }
                for (uint32_t t = 1; t < S.n[l]; t += 2) {
                    size_t at = (size_t)l * S.cap + t;
                    uint32_t p = S.pos[at];
                    int b = 0;
                    while (b < NB && !(p >= edge[b] && p < edge[b + 1])) b++;
                    if (b == NB) continue;
                    const float *x = rows + (at * nkv + h) * d;
                    const float *xk = S.k + (at * nkv + h) * d;
                    double w = 1.0;
                    if (kv) {
                        w = 0.0;
                        for (uint32_t i = 0; i < d; i++)
                            for (uint32_t j = 0; j < d; j++) w += xk[i] * CQ[i * d + j] * xk[j];
                    }
                    float y[256], yc[256], yq[256];
                    for (uint32_t j = 0; j < d; j++) {
                        double s = 0.0;
                        for (uint32_t i = 0; i < d; i++) s += x[i] * R[i * d + j];
                        y[j] = (float)s;
                    }
                    for (uint32_t j = 0; j < d; j++) {
                        energy[kv][b][0] += w * y[j] * y[j];
                        energy[kv][b][1] += w * (y[j] - mr[1][j]) * (y[j] - mr[1][j]);
                    }
                    for (int m = 0; m < NM; m++) {
                        for (uint32_t j = 0; j < d; j++) yc[j] = y[j] - mr[m][j];
                        fq(yc, d, kv ? 0.88f : 0.89f, yq);
                        tot[kv][b][m] += w * werr(kv ? NULL : M, yc, yq, d);
                    }
                }
            }
        }
    }
    for (int kv = 0; kv < 2; kv++)
        for (int b = 0; b < NB; b++)
            if (energy[kv][b][0] > 0)
                printf("%s positions %u..%u: energy left after centering by the mean of 64..511 %.3f; error with mean 64..511 %.3f, 64..%u %.3f, rope-avg 8192 %.3f, 2048 %.3f\n",
                   kv ? "V" : "K", edge[b], edge[b + 1] - 1, energy[kv][b][1] / energy[kv][b][0], tot[kv][b][1] / tot[kv][b][0], seq,
                   tot[kv][b][2] / tot[kv][b][0], tot[kv][b][3] / tot[kv][b][0], tot[kv][b][4] / tot[kv][b][0]);
    return 0;
}
