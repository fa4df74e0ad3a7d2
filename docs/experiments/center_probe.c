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
#include "probe_capture.h"

int main(int argc, char **argv)
{
    sample_set S;
    ovk_calib *cal = probe_capture(argc, argv, &S);
    uint32_t d = S.d, nkv = S.n_kv, nl = S.n_layer, seq = S.seq;

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
            CHECK(ovk_calib_covariance(cal, l, h, OSCAR_CALIB_KEYS, CQ));
            for (int kv = 0; kv < 2; kv++) {
                const float *rows = kv ? S.v : S.k;
                CHECK(ovk_calib_covariance(cal, l, h, kv ? OSCAR_CALIB_VALUES_PROXY : OSCAR_CALIB_KEYS, C));
                CHECK(ovk_rotation_build(OSCAR_ROTATION_OSCAR, d, C, R, NULL));
                rotated_metric(CQ, R, d, M);
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
                    int b = bucket_of(S.pos[at], edge, NB);
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
