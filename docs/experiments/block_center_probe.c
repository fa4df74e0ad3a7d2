/* Probe (session 17, not part of the build): would a key center that follows the position do
 * better than the session-wide constant? For keys only. Captures like center_probe.c (per-head
 * OSCAR rotations, sequences of SEQ tokens, every 4th token's rows with their position), takes
 * the pre-RoPE key mean of the even samples at positions >= 64, and scores the odd samples' INT2
 * error E[(q·e)²] per position bucket, relative to uncentered keys, for centers
 *   c = RoPE_p(μ) averaged over 64..8191 (the runtime's constant for an 8K session),
 *   c = RoPE_p(μ) averaged over the aligned block of B positions holding p (B = 256, 64, 16),
 *   c = RoPE_p(μ) itself (B = 1),
 * each at the best of three clip ratios. A block center needs the attention to add q·c_block back
 * per block (no longer one constant per query); this probe says whether that is worth building.
 *
 *   cc -O2 -o /tmp/block_center_probe docs/experiments/block_center_probe.c -Icalib -Iruntime \
 *      -Iinclude build/liboscar_calib.a build/liboscar.a -llapacke -lopenblas -lm -ldl -lpthread
 *   /tmp/block_center_probe MODEL.gguf eval.txt 16384 8192
 */
#include "model_ref.h" /* ovk_rope_average */
#include "probe_capture.h"

enum { NB = 4, NM = 6, NR = 3 };
static const uint32_t edge[NB + 1] = {64, 512, 2048, 4096, 8192};
static const uint32_t block[NM] = {0, 0, 256, 64, 16, 1}; /* mode 0: none, 1: the 8K constant */
static const float ratio[NR] = {0.90f, 0.95f, 0.98f};

/* RoPE (adjacent pairs, angles theta [d/2]) of pre-RoPE vector m, averaged over positions
 * p0..p1-1: the runtime's ovk_rope_average */
static void rope_avg(const double *m, uint32_t d, const float *theta, uint32_t p0, uint32_t p1, double *out)
{
    float mf[256] = {0}, of[256];
    for (uint32_t j = 0; j < d; j++) mf[j] = (float)m[j];
    ovk_rope_average(mf, d, d, OSCAR_ROPE_NORMAL, theta, p0, p1, of);
    for (uint32_t j = 0; j < d; j++) out[j] = of[j];
}

int main(int argc, char **argv)
{
    sample_set S;
    ovk_calib *cal = probe_capture(argc, argv, &S);
    uint32_t d = S.d, nkv = S.n_kv, nl = S.n_layer;
    const double theta = 100000.0;
    float angles[128]; /* radians per position of each pair */
    for (uint32_t i = 0; i < d / 2; i++) angles[i] = (float)pow(theta, -2.0 * i / d);
    size_t dd = (size_t)d * d;
    double *CQ = malloc(dd * sizeof *CQ), *M = malloc(dd * sizeof *M);
    float *R = malloc(dd * sizeof *R);
    static double tot[NB][NM][NR];
    for (uint32_t l = 0; l < nl; l++) {
        for (uint32_t h = 0; h < nkv; h++) {
            CHECK(ovk_calib_covariance(cal, l, h, OSCAR_CALIB_KEYS, CQ));
            CHECK(ovk_rotation_build(OSCAR_ROTATION_OSCAR, d, CQ, R, NULL));
            rotated_metric(CQ, R, d, M);
            double mu[256] = {0}; /* pre-RoPE mean of the even samples */
            uint32_t n = 0;
            for (uint32_t t = 0; t < S.n[l]; t += 2) {
                size_t at = (size_t)l * S.cap + t;
                uint32_t p = S.pos[at];
                if (p < 64) continue;
                const float *x = S.k + (at * nkv + h) * d;
                n++;
                for (uint32_t i = 0; i < d / 2; i++) {
                    double th = p * pow(theta, -2.0 * i / d), c = cos(th), sn = sin(th);
                    mu[2 * i] += x[2 * i] * c + x[2 * i + 1] * sn;
                    mu[2 * i + 1] += -x[2 * i] * sn + x[2 * i + 1] * c;
                }
            }
            for (uint32_t j = 0; j < d; j++) mu[j] /= n;
            double c8k[256];
            rope_avg(mu, d, angles, 64, 8192, c8k);
            for (uint32_t t = 1; t < S.n[l]; t += 2) {
                size_t at = (size_t)l * S.cap + t;
                uint32_t p = S.pos[at];
                int b = bucket_of(p, edge, NB);
                if (b == NB) continue;
                const float *x = S.k + (at * nkv + h) * d;
                for (int m = 0; m < NM; m++) {
                    double c[256] = {0};
                    if (m == 1) memcpy(c, c8k, d * sizeof *c);
                    if (m >= 2) {
                        uint32_t p0 = p / block[m] * block[m];
                        rope_avg(mu, d, angles, p0, p0 + block[m], c);
                    }
                    float y[256], yq[256];
                    for (uint32_t j = 0; j < d; j++) {
                        double s = 0.0;
                        for (uint32_t i = 0; i < d; i++) s += (x[i] - c[i]) * R[i * d + j];
                        y[j] = (float)s;
                    }
                    for (int r = 0; r < NR; r++) {
                        fq(y, d, ratio[r], yq);
                        tot[b][m][r] += werr(M, y, yq, d);
                    }
                }
            }
        }
        fprintf(stderr, "layer %u\n", l);
    }
    printf("key error E[(q.e)^2] relative to uncentered keys at its best ratio; (best ratio)\n");
    printf("positions    | 8K constant | block 256   | block 64    | block 16    | exact R(p)mu\n");
    for (int b = 0; b < NB; b++) {
        double base = tot[b][0][0];
        for (int r = 1; r < NR; r++) base = fmin(base, tot[b][0][r]);
        printf("%5u..%-5u", edge[b], edge[b + 1] - 1);
        for (int m = 1; m < NM; m++) {
            int best = 0;
            for (int r = 1; r < NR; r++) if (tot[b][m][r] < tot[b][m][best]) best = r;
            printf(" | %.3f (%.2f)", tot[b][m][best] / base, ratio[best]);
        }
        printf("\n");
    }
    return 0;
}
