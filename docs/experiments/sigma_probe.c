/* Probe (session 9, not part of the build): how large is the INT2 key error in logit units?
 * Captures like oscar-calib (sequences of SEQ tokens, every 4th token's K rows kept), builds an
 * uncentered per-head OSCAR rotation from C_Q, quantizes each kept key (positions >= 64) at the
 * reference's clip 0.96 and prints per layer: the mean squared logit error E[(q·e)²]/d over the
 * query distribution (sigma2_err), the white-noise estimate Δ²/12 · tr(C_Q)/d from each row's
 * quantization step Δ (est), the mean squared logit E[(q·k)²]/d (logit_msq) and the largest
 * row error. Results: docs/quality.md, "Session 9". Builds like center_probe.c (both include probe_capture.h):
 *
 *   cc -O2 -o /tmp/sigma_probe docs/experiments/sigma_probe.c -Icalib -Iruntime -Iinclude \
 *      build/liboscar_calib.a build/liboscar.a -llapacke -lopenblas -lm -ldl -lpthread
 *   /tmp/sigma_probe MODEL.gguf calib.txt 8192 512      # ~1 min on 2 cores
 */
#include "probe_capture.h"

int main(int argc, char **argv)
{
    sample_set S;
    ovk_calib *cal = probe_capture(argc, argv, &S);
    uint32_t d = S.d, nkv = S.n_kv, nl = S.n_layer;

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
            CHECK(ovk_calib_covariance(cal, l, h, OSCAR_CALIB_KEYS, CQ));
            CHECK(ovk_rotation_build(OSCAR_ROTATION_OSCAR, d, CQ, R, NULL));
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
