/* Probe (session 14, not part of the build): the attention-output error of each layer with the
 * KV cache of a rotation file, on one held-out sequence, and how it moves when every INT2
 * token's logit is scaled by beta, or its value by gamma (the fp16 sink and recent windows
 * untouched), or with only the keys or only the values quantized.
 *
 * For each file, layer, query head and sampled query position t (every STRIDE-th from 512):
 *   o  = softmax(q·K/√d) V over positions 0..t, exact (fp32 capture, rotated by R_K / R_V);
 *   ô  = the same with rows outside the windows (the first 64, the last 256) quantized as the
 *        cache stores them (the file's clips, key feedback, refit), their logits times beta,
 *        their values times gamma;
 *   printed: Σ‖ô − o‖² / Σ‖o‖² per layer (first 6 layers) and its mean over layers, per (beta, gamma).
 * With PROBE_KCLIP=1 in the environment: the key clip sweep (kclip_sweep) instead; with
 * PROBE_KEYS=1 the key variants (keys_variants).
 * Centering is not modelled (use uncentered files).
 *
 *   cc -O2 -o /tmp/attn_probe docs/experiments/attn_probe.c -Icalib -Iruntime -Iinclude -Ishaders \
 *      build/liboscar_calib.a build/liboscar.a -llapacke -lopenblas -lm -ldl -lpthread
 *   /tmp/attn_probe MODEL.gguf EVAL.txt L STRIDE FILE.rot.gguf...
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_api.h"
#include "probe_capture.h" /* CHECK, the capture and INT2 headers */


#define SINK 64
#define RECENT 256
#define NB 8
static const double betas[NB] = {0.95, 1.0, 1.05, 1.0, 1.0, 1.0, 1.0, 1.0};  /* INT2 logits times beta */
static const double gammas[NB] = {1.0, 1.0, 1.0, 0.95, 0.9, 1.05, 1.0, 1.0}; /* INT2 values times gamma */
static const int side[NB] = {3, 3, 3, 3, 3, 3, 1, 2};                       /* quantized: 1 keys, 2 values, 3 both */

typedef struct capture_all {
    uint32_t nl, nh, nkv, d, L;
    float *q, *k, *v; /* [nl][L][nh|nkv][d] */
} capture_all;

static oscar_status keep(void *user, uint32_t layer, uint32_t pos0, uint32_t n, const float *q, const float *k,
                         const float *v)
{
    capture_all *C = user;
    size_t qr = (size_t)C->nh * C->d, kr = (size_t)C->nkv * C->d;
    memcpy(C->q + ((size_t)layer * C->L + pos0) * qr, q, n * qr * sizeof(float));
    memcpy(C->k + ((size_t)layer * C->L + pos0) * kr, k, n * kr * sizeof(float));
    memcpy(C->v + ((size_t)layer * C->L + pos0) * kr, v, n * kr * sizeof(float));
    return OSCAR_OK;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* y = x·R for one row of d */
static void rot(const float *x, const float *R, uint32_t d, float *y)
{
    for (uint32_t j = 0; j < d; j++) {
        double s = 0;
        for (uint32_t i = 0; i < d; i++) s += (double)x[i] * R[(size_t)i * d + j];
        y[j] = (float)s;
    }
}


/* o = Σ_j softmax(sc)_j v_j over j <= t (m: at least the largest sc), normalised */
static void weighted_output(const double *sc, double m, uint32_t t, const float *v, uint32_t d, double *o)
{
    double z = 0;
    for (uint32_t i = 0; i < d; i++) o[i] = 0;
    for (uint32_t j = 0; j <= t; j++) {
        double p = exp(sc[j] - m);
        z += p;
        for (uint32_t i = 0; i < d; i++) o[i] += p * v[(size_t)j * d + i];
    }
    for (uint32_t i = 0; i < d; i++) o[i] /= z;
}

/* exact scores s[0..t] of query qr over the rows kr, and the output o over vr; returns max s */
static double exact_attention(const float *qr, const float *kr, const float *vr, uint32_t t, uint32_t d, double *s,
                              double *o)
{
    double mx = -INFINITY;
    for (uint32_t j = 0; j <= t; j++) {
        double x = 0;
        for (uint32_t i = 0; i < d; i++) x += (double)qr[i] * kr[(size_t)j * d + i];
        s[j] = x / sqrt((double)d), mx = fmax(mx, s[j]);
    }
    weighted_output(s, mx, t, vr, d, o);
    return mx;
}

/* PROBE_KCLIP mode: for each layer, the keys-only output error (values exact) and the mean
 * squared logit error of the INT2 tokens at each key clip ratio of a grid, the file's
 * feedback kept; prints the file's ratio, the grid's best for each measure, and the errors. */
#define NR 11
static void kclip_sweep(const capture_all *C, const oscar_rotation_set *rs, uint32_t stride)
{
    uint32_t d = C->d, nl = C->nl, nh = C->nh, nkv = C->nkv, grp = nh / nkv, L = C->L;
    float ratios[NR + 1], scratch[256], qr[256];
    for (int r = 0; r < NR; r++) ratios[r] = 0.80f + 0.02f * r;
    float *kr = malloc((size_t)L * d * sizeof(float)), *vr = malloc((size_t)L * d * sizeof(float));
    float *kq = malloc((size_t)(NR + 1) * L * d * sizeof(float));
    double *s = malloc(L * sizeof(double)), *sq = malloc(L * sizeof(double));
    double sum_file = 0, sum_best = 0, sum_lbest = 0;
    for (uint32_t l = 0; l < nl; l++) {
        ratios[NR] = rs->clip_k[l];
        double err[NR + 1] = {0}, lerr[NR + 1] = {0}, norm = 0;
        for (uint32_t h = 0; h < nkv; h++) {
            size_t ro = ((size_t)l * rs->n_rot + (rs->n_rot > 1 ? h : 0)) * d * d;
            const float *RK = rs->rot_k + ro, *RV = rs->rot_v + ro;
            const float *F = rs->key_feedback ? rs->key_feedback + ro : NULL;
            for (uint32_t t = 0; t < L; t++) {
                rot(C->k + (((size_t)l * L + t) * nkv + h) * d, RK, d, kr + (size_t)t * d);
                rot(C->v + (((size_t)l * L + t) * nkv + h) * d, RV, d, vr + (size_t)t * d);
                for (int r = 0; r <= NR; r++) {
                    float tk = ovk_int2_clip_threshold(kr + (size_t)t * d, d, ratios[r], scratch);
                    float *out = kq + ((size_t)r * L + t) * d;
                    if (F) ovk_int2_fake_quantize_feedback(kr + (size_t)t * d, d, d, tk, F, out);
                    else ovk_int2_fake_quantize_tau(kr + (size_t)t * d, d, d, tk, out);
                }
            }
            for (uint32_t g = 0; g < grp; g++)
                for (uint32_t t = 512; t < L; t += stride) {
                    rot(C->q + (((size_t)l * L + t) * nh + h * grp + g) * d, RK, d, qr);
                    double o[256], oq[256], mx = exact_attention(qr, kr, vr, t, d, s, o);
                    for (uint32_t i = 0; i < d; i++) norm += o[i] * o[i];
                    for (int r = 0; r <= NR; r++) {
                        const float *K = kq + (size_t)r * L * d;
                        double m = mx;
                        for (uint32_t j = 0; j <= t; j++) {
                            sq[j] = s[j];
                            if (j < SINK || j + RECENT > t) continue;
                            double y = 0;
                            for (uint32_t i = 0; i < d; i++) y += (double)qr[i] * K[(size_t)j * d + i];
                            sq[j] = y / sqrt((double)d), m = fmax(m, sq[j]);
                            lerr[r] += (sq[j] - s[j]) * (sq[j] - s[j]);
                        }
                        weighted_output(sq, m, t, vr, d, oq);
                        for (uint32_t i = 0; i < d; i++) err[r] += (oq[i] - o[i]) * (oq[i] - o[i]);
                    }
                }
        }
        int best = 0, lbest = 0;
        for (int r = 1; r < NR; r++) {
            if (err[r] < err[best]) best = r;
            if (lerr[r] < lerr[lbest]) lbest = r;
        }
        printf("  layer %2u: file %.3f: %.5f | output-best %.2f: %.5f | logit-best %.2f: %.5f\n", l, ratios[NR],
               err[NR] / norm, ratios[best], err[best] / norm, ratios[lbest], err[lbest] / norm);
        fflush(stdout);
        sum_file += err[NR] / norm / nl, sum_best += err[best] / norm / nl, sum_lbest += err[lbest] / norm / nl;
    }
    printf("  mean keys-only output error: file %.5f, output-best %.5f, logit-best %.5f\n", sum_file, sum_best, sum_lbest);
    free(kr), free(vr), free(kq), free(s), free(sq);
}

/* PROBE_KEYS mode: keys-only output error (values exact) of the file's key quantization, with
 * variants: groups of 32 (two scales a key row), and the top 1 / 3 / 10% of the INT2 tokens by
 * their key's squared quantization error kept exact (as a store of outlier tokens in fp16
 * would), per layer and as the mean over layers. */
#define NV 6
static void keys_variants(const capture_all *C, const oscar_rotation_set *rs, uint32_t stride)
{
    static const char *names[NV] = {"file", "G=32", "top1%", "top3%", "top10%", "sink128"};
    static const double top[NV] = {0, 0, 0.01, 0.03, 0.10, 0};
    uint32_t d = C->d, nl = C->nl, nh = C->nh, nkv = C->nkv, grp = nh / nkv, L = C->L;
    float scratch[256], qr[256];
    float *kr = malloc((size_t)L * d * sizeof(float)), *vr = malloc((size_t)L * d * sizeof(float));
    float *kq = malloc((size_t)2 * L * d * sizeof(float)); /* [G = d, G = 32][L][d] */
    double *ke = malloc(L * sizeof(double)), *sorted = malloc(L * sizeof(double));
    double *s = malloc(L * sizeof(double)), *sq = malloc(L * sizeof(double));
    double tot[NV] = {0};
    for (uint32_t l = 0; l < nl; l++) {
        double err[NV] = {0}, norm = 0;
        for (uint32_t h = 0; h < nkv; h++) {
            size_t ro = ((size_t)l * rs->n_rot + (rs->n_rot > 1 ? h : 0)) * d * d;
            const float *RK = rs->rot_k + ro, *RV = rs->rot_v + ro;
            const float *F = rs->key_feedback ? rs->key_feedback + ro : NULL;
            for (uint32_t t = 0; t < L; t++) {
                float *y = kr + (size_t)t * d, *a = kq + (size_t)t * d, *b = kq + ((size_t)L + t) * d;
                rot(C->k + (((size_t)l * L + t) * nkv + h) * d, RK, d, y);
                rot(C->v + (((size_t)l * L + t) * nkv + h) * d, RV, d, vr + (size_t)t * d);
                float tk = ovk_int2_clip_threshold(y, d, rs->clip_k[l], scratch);
                if (F) ovk_int2_fake_quantize_feedback(y, d, d, tk, F, a), ovk_int2_fake_quantize_feedback(y, d, 32, tk, F, b);
                else ovk_int2_fake_quantize_tau(y, d, d, tk, a), ovk_int2_fake_quantize_tau(y, d, 32, tk, b);
                ke[t] = 0;
                for (uint32_t i = 0; i < d; i++) ke[t] += ((double)a[i] - y[i]) * ((double)a[i] - y[i]);
                sorted[t] = ke[t];
            }
            qsort(sorted + SINK, L - SINK, sizeof(double), cmpd);
            double thr[NV];
            for (int v = 0; v < NV; v++) thr[v] = top[v] > 0 ? sorted[SINK + (size_t)((1.0 - top[v]) * (L - SINK))] : INFINITY;
            for (uint32_t g = 0; g < grp; g++)
                for (uint32_t t = 512; t < L; t += stride) {
                    rot(C->q + (((size_t)l * L + t) * nh + h * grp + g) * d, RK, d, qr);
                    double o[256], oq[256], mx = exact_attention(qr, kr, vr, t, d, s, o);
                    for (uint32_t i = 0; i < d; i++) norm += o[i] * o[i];
                    for (int v = 0; v < NV; v++) {
                        const float *K = kq + (v == 1 ? (size_t)L * d : 0);
                        uint32_t sink = v == 5 ? 128 : SINK;
                        double m = mx;
                        for (uint32_t j = 0; j <= t; j++) {
                            sq[j] = s[j];
                            if (j < sink || j + RECENT > t || ke[j] >= thr[v]) continue;
                            double y = 0;
                            for (uint32_t i = 0; i < d; i++) y += (double)qr[i] * K[(size_t)j * d + i];
                            sq[j] = y / sqrt((double)d), m = fmax(m, sq[j]);
                        }
                        weighted_output(sq, m, t, vr, d, oq);
                        for (uint32_t i = 0; i < d; i++) err[v] += (oq[i] - o[i]) * (oq[i] - o[i]);
                    }
                }
        }
        for (int v = 0; v < NV; v++) tot[v] += err[v] / norm / nl;
    }
    printf("  mean keys-only output error:");
    for (int v = 0; v < NV; v++) printf(" %s %.5f", names[v], tot[v]);
    printf("\n");
    free(kr), free(vr), free(kq), free(ke), free(sorted), free(s), free(sq);
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s MODEL.gguf EVAL.txt L STRIDE FILE.rot.gguf...\n", argv[0]);
        return 2;
    }
    uint32_t L = (uint32_t)atoi(argv[3]), stride = (uint32_t)atoi(argv[4]);
    ovk_model_desc *desc;
    size_t need;
    int32_t *toks = probe_tokens(argv[1], argv[2], &desc, &need);
    const ovk_model_hparams *hp = &desc->hp;
    if (need < L) return fprintf(stderr, "text too short\n"), 1;

    capture_all C = {hp->n_layer, hp->n_head, hp->n_head_kv, hp->head_dim, L, NULL, NULL, NULL};
    uint32_t d = C.d, nl = C.nl, nh = C.nh, nkv = C.nkv, grp = nh / nkv;
    C.q = malloc((size_t)nl * L * nh * d * sizeof(float));
    C.k = malloc((size_t)nl * L * nkv * d * sizeof(float));
    C.v = malloc((size_t)nl * L * nkv * d * sizeof(float));
    ovk_capture_params kp = ovk_capture_params_default();
    kp.max_seq_len = L;
    kp.hook = keep;
    kp.hook_user = &C;
    ovk_capture *cap;
    CHECK(ovk_capture_create(desc, &kp, &cap));
    CHECK(ovk_capture_eval(cap, toks, L, 0, NULL));
    ovk_capture_destroy(cap);
    fprintf(stderr, "captured %u tokens\n", L);

    oscar_context_params cxp = oscar_context_params_default();
    oscar_context *ctx;
    CHECK(oscar_context_create(&cxp, &ctx));
    oscar_model_params mp = oscar_model_params_default();
    oscar_model *model;
    CHECK(oscar_model_load(ctx, argv[1], &mp, &model));

    float *kq = malloc((size_t)L * d * sizeof(float)), *vq = malloc((size_t)L * d * sizeof(float));
    float *kr = malloc((size_t)L * d * sizeof(float)), *vr = malloc((size_t)L * d * sizeof(float));
    double *s = malloc(L * sizeof(double)), *sq = malloc(L * sizeof(double));
    float scratch[256], qr[256];
    for (int fi = 5; fi < argc; fi++) {
        oscar_rotation_set *rs;
        CHECK(oscar_rotation_set_load(argv[fi], model, &rs));
        if (getenv("PROBE_KEYS")) {
            printf("%s: key variants\n", argv[fi]);
            keys_variants(&C, rs, stride);
            oscar_rotation_set_destroy(rs);
            continue;
        }
        if (getenv("PROBE_KCLIP")) {
            printf("%s: key clip sweep\n", argv[fi]);
            kclip_sweep(&C, rs, stride);
            oscar_rotation_set_destroy(rs);
            continue;
        }
        double tot[NB] = {0};
        printf("%s (clips K/V of layer 1: %.3f / %.3f, feedback %s, refit %u)\n", argv[fi], rs->clip_k[1], rs->clip_v[1],
               rs->key_feedback ? "yes" : "no", rs->refit_rounds);
        for (uint32_t l = 0; l < nl; l++) {
            double err[NB] = {0}, norm = 0;
            for (uint32_t h = 0; h < nkv; h++) {
                size_t ro = ((size_t)l * rs->n_rot + (rs->n_rot > 1 ? h : 0)) * d * d;
                const float *RK = rs->rot_k + ro, *RV = rs->rot_v + ro;
                const float *F = rs->key_feedback ? rs->key_feedback + ro : NULL;
                const float *M = rs->key_metric ? rs->key_metric + ro : NULL;
                for (uint32_t t = 0; t < L; t++) {
                    const float *k = C.k + (((size_t)l * L + t) * nkv + h) * d;
                    const float *v = C.v + (((size_t)l * L + t) * nkv + h) * d;
                    rot(k, RK, d, kr + (size_t)t * d);
                    rot(v, RV, d, vr + (size_t)t * d);
                    float tk = ovk_int2_clip_threshold(kr + (size_t)t * d, d, rs->clip_k[l], scratch);
                    float tv = ovk_int2_clip_threshold(vr + (size_t)t * d, d, rs->clip_v[l], scratch);
                    if (rs->refit_rounds && M)
                        ovk_int2_fake_quantize_refit(kr + (size_t)t * d, d, tk, F, M, rs->refit_rounds, kq + (size_t)t * d);
                    else if (F)
                        ovk_int2_fake_quantize_feedback(kr + (size_t)t * d, d, d, tk, F, kq + (size_t)t * d);
                    else
                        ovk_int2_fake_quantize_tau(kr + (size_t)t * d, d, d, tk, kq + (size_t)t * d);
                    if (rs->refit_rounds && M)
                        ovk_int2_fake_quantize_refit(vr + (size_t)t * d, d, tv, NULL, NULL, rs->refit_rounds, vq + (size_t)t * d);
                    else
                        ovk_int2_fake_quantize_tau(vr + (size_t)t * d, d, d, tv, vq + (size_t)t * d);
                }
                for (uint32_t g = 0; g < grp; g++) {
                    uint32_t qh = h * grp + g;
                    for (uint32_t t = 512; t < L; t += stride) {
                        rot(C.q + (((size_t)l * L + t) * nh + qh) * d, RK, d, qr);
                        double mx = -INFINITY, mq = -INFINITY;
                        for (uint32_t j = 0; j <= t; j++) {
                            int exact = j < SINK || j + RECENT > t;
                            const float *a = kr + (size_t)j * d, *b = exact ? a : kq + (size_t)j * d;
                            double x = 0, y = 0;
                            for (uint32_t i = 0; i < d; i++) x += (double)qr[i] * a[i], y += (double)qr[i] * b[i];
                            s[j] = x / sqrt((double)d), sq[j] = y / sqrt((double)d);
                            mx = fmax(mx, s[j]);
                            if (!exact) mq = fmax(mq, sq[j]);
                        }
                        double o[256] = {0}, z = 0;
                        for (uint32_t j = 0; j <= t; j++) {
                            double p = exp(s[j] - mx);
                            z += p;
                            for (uint32_t i = 0; i < d; i++) o[i] += p * vr[(size_t)j * d + i];
                        }
                        for (uint32_t i = 0; i < d; i++) o[i] /= z, norm += o[i] * o[i];
                        for (int b = 0; b < NB; b++) {
                            double oq[256] = {0}, zq = 0, m = fmax(mx, side[b] & 1 ? betas[b] * mq : mx);
                            for (uint32_t j = 0; j <= t; j++) {
                                int exact = j < SINK || j + RECENT > t;
                                double p = exp((exact || !(side[b] & 1) ? s[j] : betas[b] * sq[j]) - m);
                                const float *vv = (exact || !(side[b] & 2) ? vr : vq) + (size_t)j * d;
                                zq += p;
                                double pv = exact || !(side[b] & 2) ? p : p * gammas[b];
                                for (uint32_t i = 0; i < d; i++) oq[i] += pv * vv[i];
                            }
                            for (uint32_t i = 0; i < d; i++) {
                                double e = oq[i] / zq - o[i];
                                err[b] += e * e;
                            }
                        }
                    }
                }
            }
            if (l < 6) printf("  layer %2u:", l);
            for (int b = 0; b < NB; b++) {
                tot[b] += err[b] / norm / nl;
                if (l < 6) printf(" %.4f", err[b] / norm);
            }
            if (l < 6) printf("\n");
            fflush(stdout);
        }
        printf("  mean    :");
        for (int b = 0; b < NB; b++) printf(" %.4f", tot[b]);
        printf("   (beta/gamma/side");
        for (int b = 0; b < NB; b++) printf(" %.2f/%.2f/%c", betas[b], gammas[b], "-KVB"[side[b]]);
        printf(")\n");
        oscar_rotation_set_destroy(rs);
    }
    return 0;
}
