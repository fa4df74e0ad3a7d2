/* Probe (session 13, not part of the build): how much more could the INT2 rows lose than the
 * shipped rounding does? For each layer and KV head, on held-out rows (odd samples, positions
 * >= 64) of the capture:
 *   keys, the logit error eᵀMe (M = Rᵀ C_Q R, C_Q RoPE-spread over 8192 positions, as the
 *   calibrator's feedback), at the best clip ratio of a grid per (layer, head) for each variant:
 *     nearest, error feedback (shipped), feedback with the best clip per row, and feedback with
 *     the row's min and scale refitted by least squares under M (codes kept, 1-3 rounds);
 *   values, the squared error: min-max (shipped), least-squares refit, 3 Lloyd rounds.
 *
 *   cc -O2 -o /tmp/rounding_probe docs/experiments/rounding_probe.c -Icalib -Iruntime -Iinclude \
 *      build/liboscar_calib.a build/liboscar.a -llapacke -lopenblas -lm -ldl -lpthread
 *   /tmp/rounding_probe MODEL.gguf calib.txt 20480 2048
 */
#include "probe_capture.h"
#include "model_desc.h"

#define NR 7
static const float ratios[NR] = {0.86f, 0.89f, 0.92f, 0.94f, 0.96f, 0.98f, 1.0f};

/* codes of y (d) on the grid a + b·{0..3} by error feedback F (NULL: nearest), in double */
static void grid_codes(const float *y, uint32_t d, double a, double b, const float *F, int *c)
{
    double x[256];
    for (uint32_t j = 0; j < d; j++) x[j] = y[j];
    for (uint32_t i = 0; i < d; i++) {
        double t = b > 0 ? (x[i] - a) / b : 0.0;
        int k = (int)floor(t + 0.5);
        c[i] = k < 0 ? 0 : k > 3 ? 3 : k;
        double e = x[i] - (a + b * c[i]);
        if (F)
            for (uint32_t j = i + 1; j < d; j++) x[j] -= e * F[i * d + j];
    }
}

/* (a, b) minimising (y − a1 − bc)ᵀ M (y − a1 − bc) (M NULL: identity); 0 when singular */
static int refit(const float *y, const int *c, uint32_t d, const double *M, double *a, double *b)
{
    double m11 = 0, m12 = 0, m22 = 0, r1 = 0, r2 = 0;
    for (uint32_t i = 0; i < d; i++) {
        double u = 1.0, w = c[i], yi = y[i];
        for (uint32_t j = 0; j < d; j++) {
            double mij = M ? M[i * d + j] : (i == j);
            if (mij == 0.0) continue;
            m11 += u * mij, m12 += u * mij * c[j], m22 += w * mij * c[j];
            r1 += u * mij * y[j], r2 += w * mij * y[j];
        }
        (void)yi;
    }
    double det = m11 * m22 - m12 * m12;
    if (!(fabs(det) > 1e-12 * (m11 * m22 + 1e-30))) return 0;
    *a = (r1 * m22 - r2 * m12) / det;
    *b = (m11 * r2 - m12 * r1) / det;
    return *b > 0;
}

static void dequant(const int *c, uint32_t d, double a, double b, float *out)
{
    for (uint32_t j = 0; j < d; j++) out[j] = (float)(a + b * c[j]);
}

/* the shipped grid of y at ratio r: clip, min, (max − min)/3 (fp32, no fp16 rounding) */
static void minmax_grid(const float *y, uint32_t d, float r, double *a, double *b, float *yc)
{
    float s[256];
    for (uint32_t j = 0; j < d; j++) s[j] = fabsf(y[j]);
    qsort(s, d, sizeof *s, cmpf);
    float tau = ovk_int2_clip_threshold_sorted(s, d, r), mn = INFINITY, mx = -INFINITY;
    for (uint32_t j = 0; j < d; j++) {
        yc[j] = y[j] < -tau ? -tau : y[j] > tau ? tau : y[j];
        mn = fminf(mn, yc[j]), mx = fmaxf(mx, yc[j]);
    }
    *a = mn, *b = (mx - mn) / 3.0;
}

int main(int argc, char **argv)
{
    sample_set S;
    ovk_calib *cal = probe_capture(argc, argv, &S);
    ovk_model_desc *desc;
    CHECK(ovk_model_desc_load(argv[1], &desc));
    uint32_t d = S.d, nkv = S.n_kv, nl = S.n_layer;
    size_t dd = (size_t)d * d;
    double *C = malloc(dd * sizeof *C), *M = malloc(dd * sizeof *M);
    float *R = malloc(dd * sizeof *R), *F = malloc(dd * sizeof *F);
    enum { KV_NEAR, KV_FB, KV_FB_ROW, KV_FB_LS1, KV_FB_LS3, NK };
    enum { V_MM, V_LS, V_LLOYD, NV };
    static const char *kname[NK] = {"nearest", "feedback", "feedback+row clip", "feedback+LS", "feedback+LS x3"};
    static const char *vname[NV] = {"min-max", "LS refit", "Lloyd x3"};
    double ktot[NK] = {0}, vtot[NV] = {0};
    for (uint32_t l = 0; l < nl; l++) {
        double lk[NK] = {0}, lv[NV] = {0};
        for (uint32_t h = 0; h < nkv; h++) {
            CHECK(ovk_calib_covariance(cal, l, h, OSCAR_CALIB_KEYS, C));
            CHECK(ovk_rotation_build(OSCAR_ROTATION_OSCAR, d, C, R, NULL));
            ovk_rope_spread_covariance(d, desc->hp.n_rot, desc->hp.rope_type == OSCAR_ROPE_NEOX, desc->rope_theta, 8192, C);
            CHECK(ovk_key_feedback_matrix(d, C, R, 0.01, F));
            rotated_metric(C, R, d, M);
            double kerr[NK][NR] = {{0}}, krow = 0.0, verr[NV][NR] = {{0}};
            float y[256], yc[256], yq[256];
            int c[256];
            for (int kv = 0; kv < 2; kv++) {
                if (kv) {
                    CHECK(ovk_calib_covariance(cal, l, h, OSCAR_CALIB_VALUES_PROXY, C));
                    CHECK(ovk_rotation_build(OSCAR_ROTATION_OSCAR, d, C, R, NULL));
                }
                for (uint32_t t = 1; t < S.n[l]; t += 2) {
                    size_t at = (size_t)l * S.cap + t;
                    if (S.pos[at] < 64) continue;
                    const float *x = (kv ? S.v : S.k) + (at * nkv + h) * d;
                    ovk_rotate_rows(x, 1, d, d, R, 0, y);
                    double best_row = INFINITY;
                    for (int r = 0; r < NR; r++) {
                        double a, b, a2, b2;
                        minmax_grid(y, d, ratios[r], &a, &b, yc);
                        if (!kv) {
                            grid_codes(yc, d, a, b, NULL, c), dequant(c, d, a, b, yq);
                            kerr[KV_NEAR][r] += werr(M, y, yq, d);
                            grid_codes(yc, d, a, b, F, c), dequant(c, d, a, b, yq);
                            double e = werr(M, y, yq, d);
                            kerr[KV_FB][r] += e;
                            best_row = fmin(best_row, e);
                            double e1 = e;
                            a2 = a, b2 = b;
                            for (int it = 0; it < 3; it++) {
                                if (!refit(y, c, d, M, &a2, &b2)) break;
                                dequant(c, d, a2, b2, yq);
                                double en = werr(M, y, yq, d);
                                if (en < e1) e1 = en;
                                if (it == 0) kerr[KV_FB_LS1][r] += e1;
                                grid_codes(y, d, a2, b2, F, c);
                            }
                            kerr[KV_FB_LS3][r] += e1;
                        } else {
                            grid_codes(yc, d, a, b, NULL, c), dequant(c, d, a, b, yq);
                            double e = werr(NULL, y, yq, d), e1 = e;
                            verr[V_MM][r] += e;
                            a2 = a, b2 = b;
                            for (int it = 0; it < 3; it++) {
                                if (!refit(y, c, d, NULL, &a2, &b2)) break;
                                dequant(c, d, a2, b2, yq);
                                double en = werr(NULL, y, yq, d);
                                if (en < e1) e1 = en;
                                if (it == 0) verr[V_LS][r] += e1;
                                grid_codes(y, d, a2, b2, NULL, c);
                            }
                            verr[V_LLOYD][r] += e1;
                        }
                    }
                    if (!kv) krow += best_row;
                }
            }
            for (int k = 0; k < NK; k++) {
                double m = INFINITY;
                for (int r = 0; r < NR; r++) m = fmin(m, kerr[k][r]);
                lk[k] += k == KV_FB_ROW ? krow : m;
            }
            for (int k = 0; k < NV; k++) {
                double m = INFINITY;
                for (int r = 0; r < NR; r++) m = fmin(m, verr[k][r]);
                lv[k] += m;
            }
        }
        printf("layer %2u  keys:", l);
        for (int k = 0; k < NK; k++) printf(" %.3f", lk[k] / lk[KV_FB]);
        printf("   values:");
        for (int k = 0; k < NV; k++) printf(" %.3f", lv[k] / lv[V_MM]);
        printf("\n");
        for (int k = 0; k < NK; k++) ktot[k] += lk[k] / lk[KV_FB];
        for (int k = 0; k < NV; k++) vtot[k] += lv[k] / lv[V_MM];
    }
    printf("mean over layers, keys relative to feedback (eᵀMe):\n");
    for (int k = 0; k < NK; k++) printf("  %-20s %.3f\n", kname[k], ktot[k] / nl);
    printf("values relative to min-max (squared error):\n");
    for (int k = 0; k < NV; k++) printf("  %-20s %.3f\n", vname[k], vtot[k] / nl);
    return 0;
}
