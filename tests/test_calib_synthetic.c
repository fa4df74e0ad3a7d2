/* Model-free test of the OSCAR calibrator (DESIGN.md §1) on synthetic Q/K/V of one layer:
 * keys with planted outlier channels, queries with an anisotropic covariance aligned with
 * them, values with their own anisotropy. Calibrate on one sample, measure INT2 errors on a
 * held-out sample for identity, Hadamard-only and OSCAR rotations, plus the unit checks of the
 * rotation math (Hadamard, bit reversal, eigendecomposition, orthogonality, group balance)
 * and the error statuses (non-power-of-two d, NaN rows, too few rows). */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "int2_quant.h"
#include "calib.h"
#include "orthogonal.h"
#include "test_util.h"

#define NH 8           /* query heads */
#define NKV 2          /* KV heads */
#define GRP (NH / NKV) /* query heads per KV head */
#define SEQ 512        /* tokens per synthetic sequence */
#define CAL_SEQS 4     /* calibration sequences (2048 tokens) */
#define N_OUT 3        /* planted outlier channels per KV head */
/* Error feedback of the key codes against nearest rounding, held-out logit error at the
 * reference clip (measured 0.39-0.51x on this data at d 64 and 128) */
#define FEEDBACK_BOUND 0.8
/* The least-squares refit (3 rounds; G = d), held-out at the reference clip: keys by feedback
 * and refit under their metric against feedback alone, logit error (measured 0.82x at d 64,
 * 0.80x at d 128); values' squared error against the min–max grid (0.86x, 0.89x). The clip
 * fit's objective at its fitted ratio with the refit against without: keys 0.67x, 0.67x
 * (their fitted clip drops to the grid's 0.80), values 0.90x, 0.95x. */
#define REFIT_ROUNDS 3u
#define REFIT_KEY_BOUND 0.9
#define REFIT_VALUE_BOUND 0.95
#define REFIT_VALUE_FIT_BOUND 0.99

/* ---- synthetic layer ------------------------------------------------------------------------ */

typedef struct synth {
    uint32_t d;
    double *qbasis;   /* [NKV][d][d] rows = orthonormal query directions, strongest first */
    double *qlam;     /* [NH][d] query variance along each direction */
    uint32_t out_ch[NKV][N_OUT];  /* outlier channels of the keys */
    double out_mean[NKV][N_OUT];  /* their mean (10-30x the base scale) */
    double *kstd;     /* [NKV][d] base key std per channel */
    double *vbasis;   /* [NKV][d][d] value directions */
    double *vlam;     /* [NKV][d] value variance per direction */
    double *vmean;    /* [NKV][d] value mean */
} synth;

/* Orthonormalises the rows of b [d][d] in place (modified Gram–Schmidt, in row order). */
static void gram_schmidt(double *b, uint32_t d)
{
    for (uint32_t i = 0; i < d; i++) {
        double *r = b + (size_t)i * d;
        for (uint32_t j = 0; j < i; j++) {
            const double *s = b + (size_t)j * d;
            double dot = 0.0;
            for (uint32_t x = 0; x < d; x++) dot += r[x] * s[x];
            for (uint32_t x = 0; x < d; x++) r[x] -= dot * s[x];
        }
        double nrm = 0.0;
        for (uint32_t x = 0; x < d; x++) nrm += r[x] * r[x];
        nrm = sqrt(nrm);
        for (uint32_t x = 0; x < d; x++) r[x] /= nrm;
    }
}

static void synth_init(synth *s, uint32_t d, uint64_t seed)
{
    test_rng_seed(seed);
    s->d = d;
    s->qbasis = malloc((size_t)NKV * d * d * sizeof(double));
    s->qlam = malloc((size_t)NH * d * sizeof(double));
    s->kstd = malloc((size_t)NKV * d * sizeof(double));
    s->vbasis = malloc((size_t)NKV * d * d * sizeof(double));
    s->vlam = malloc((size_t)NKV * d * sizeof(double));
    s->vmean = malloc((size_t)NKV * d * sizeof(double));
    for (uint32_t h = 0; h < NKV; h++) {
        /* outlier channels, distinct */
        for (uint32_t o = 0; o < N_OUT; o++) {
            uint32_t c;
            int dup;
            do {
                c = test_rng_u32() % d;
                dup = 0;
                for (uint32_t p = 0; p < o; p++) dup |= s->out_ch[h][p] == c;
            } while (dup);
            s->out_ch[h][o] = c;
            s->out_mean[h][o] = (test_rng_uniform() < 0.5f ? -1.0 : 1.0) * (10.0 + 20.0 * test_rng_uniform());
        }
        for (uint32_t j = 0; j < d; j++) s->kstd[h * d + j] = 0.5 + test_rng_uniform();
        /* query directions: the strongest ones lean on the outlier channels */
        double *b = s->qbasis + (size_t)h * d * d;
        for (size_t x = 0; x < (size_t)d * d; x++) b[x] = test_rng_normal() * 0.15;
        for (uint32_t o = 0; o < N_OUT; o++) b[(size_t)o * d + s->out_ch[h][o]] += 1.0;
        gram_schmidt(b, d);
        double *vb = s->vbasis + (size_t)h * d * d;
        for (size_t x = 0; x < (size_t)d * d; x++) vb[x] = test_rng_normal();
        gram_schmidt(vb, d);
        for (uint32_t i = 0; i < d; i++) s->vlam[h * d + i] = pow(10.0, -1.5 * i / (d - 1)); /* 1.5 decades */
        for (uint32_t j = 0; j < d; j++) s->vmean[h * d + j] = 0.0;
        for (uint32_t j = 0; j < d; j++) s->vmean[h * d + j] += 1.5 * vb[(size_t)(d / 2) * d + j]; /* mean along a weak direction */
    }
    for (uint32_t i = 0; i < NH; i++) {
        double scale = 0.7 + 0.6 * test_rng_uniform();
        /* a few dominant directions (aligned with the outlier channels), then 2.5 decades of decay */
        static const double top[N_OUT] = {1.0, 0.6, 0.4};
        for (uint32_t x = 0; x < d; x++)
            s->qlam[i * d + x] = scale * (x < N_OUT ? top[x] : 0.1 * pow(10.0, -2.5 * (x - N_OUT) / (d - 1 - N_OUT)));
    }
}

static void synth_free(synth *s)
{
    free(s->qbasis);
    free(s->qlam);
    free(s->kstd);
    free(s->vbasis);
    free(s->vlam);
    free(s->vmean);
}

/* Draws n tokens: q [n][NH][d], k and v [n][NKV][d]. Query scale 0.3 keeps softmax non-degenerate. */
static void synth_draw(const synth *s, uint32_t n, float *q, float *k, float *v)
{
    uint32_t d = s->d;
    double *g = malloc(d * sizeof *g);
    for (uint32_t t = 0; t < n; t++) {
        for (uint32_t i = 0; i < NH; i++) {
            const double *b = s->qbasis + (size_t)(i / GRP) * d * d;
            float *dst = q + ((size_t)t * NH + i) * d;
            for (uint32_t x = 0; x < d; x++) g[x] = test_rng_normal() * sqrt(s->qlam[i * d + x]) * 0.3;
            for (uint32_t j = 0; j < d; j++) {
                double acc = 0.0;
                for (uint32_t x = 0; x < d; x++) acc += g[x] * b[(size_t)x * d + j];
                dst[j] = (float)acc;
            }
        }
        for (uint32_t h = 0; h < NKV; h++) {
            float *kd = k + ((size_t)t * NKV + h) * d;
            for (uint32_t j = 0; j < d; j++) kd[j] = (float)(test_rng_normal() * s->kstd[h * d + j]);
            for (uint32_t o = 0; o < N_OUT; o++)
                kd[s->out_ch[h][o]] += (float)(s->out_mean[h][o] * (1.0 + 0.2 * test_rng_normal()));
            const double *vb = s->vbasis + (size_t)h * d * d;
            float *vd = v + ((size_t)t * NKV + h) * d;
            for (uint32_t x = 0; x < d; x++) g[x] = test_rng_normal() * sqrt(s->vlam[h * d + x]);
            for (uint32_t j = 0; j < d; j++) {
                double acc = s->vmean[h * d + j];
                for (uint32_t x = 0; x < d; x++) acc += g[x] * vb[(size_t)x * d + j];
                vd[j] = (float)acc;
            }
        }
    }
    free(g);
}

/* ---- held-out error metrics ------------------------------------------------------------------ */

/* Fake-quantizes rows of x [n][stride] (first d) after rotation by R (codes by error feedback
 * under F [d][d] when not NULL; with rounds > 0, G = d, refitted under M [d][d], NULL: the
 * identity), returns the rotated rows y and their reconstruction yq, both [n][d]. */
static void rotate_quantize(const float *x, uint32_t n, size_t stride, uint32_t d, uint32_t G, float r,
                            const float *R, const float *F, const float *M, uint32_t rounds, float *y, float *yq)
{
    float *scratch = malloc(d * sizeof *scratch);
    ovk_rotate_rows(x, n, stride, d, R, 0, y);
    for (uint32_t t = 0; t < n; t++) {
        const float *yt = y + (size_t)t * d;
        float tau = ovk_int2_clip_threshold(yt, d, r, scratch);
        if (rounds) ovk_int2_fake_quantize_refit(yt, d, tau, F, M, rounds, yq + (size_t)t * d);
        else if (F) ovk_int2_fake_quantize_feedback(yt, d, G, tau, F, yq + (size_t)t * d);
        else ovk_int2_fake_quantize_row(yt, d, G, r, yq + (size_t)t * d, scratch);
    }
    free(scratch);
}

/* Mean over held-out (q, k) pairs of (q·k − q·k̂)², every query head against every key of its
 * KV head, with q and k rotated by the same R (R0 + h·r_stride for KV head h); key codes by
 * error feedback under F (the same for every head) when not NULL, refitted under M for
 * rounds > 0 (rotate_quantize). */
static double key_logit_error(const float *q, const float *k, uint32_t n, uint32_t d, uint32_t G, float r,
                              const float *R0, size_t r_stride, const float *F, const float *M, uint32_t rounds)
{
    float *y = malloc((size_t)n * d * sizeof *y), *yq = malloc((size_t)n * d * sizeof *yq);
    float *qr = malloc((size_t)n * d * sizeof *qr), *D = malloc((size_t)n * n * sizeof *D);
    double sum = 0.0;
    for (uint32_t h = 0; h < NKV; h++) {
        const float *R = R0 + h * r_stride; /* this KV head's rotation */
        rotate_quantize(k + (size_t)h * d, n, (size_t)NKV * d, d, G, r, R, F, M, rounds, y, yq);
        for (size_t x = 0; x < (size_t)n * d; x++) yq[x] -= y[x]; /* error e = k̂ − k, rotated */
        for (uint32_t i = h * GRP; i < (h + 1) * GRP; i++) {
            ovk_rotate_rows(q + (size_t)i * d, n, (size_t)NH * d, d, R, 0, qr);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)d, 1.0f, qr, (int)d, yq, (int)d,
                        0.0f, D, (int)n);
            for (size_t x = 0; x < (size_t)n * n; x++) sum += (double)D[x] * D[x];
        }
    }
    free(y);
    free(yq);
    free(qr);
    free(D);
    return sum / ((double)NH * n * n);
}

/* Mean over held-out query rows of ‖o − ô‖², o = causal softmax(q kᵀ/√d) v, ô with v replaced
 * by its INT2 reconstruction v̂ = dequant(v·R)·Rᵀ (keys exact, to isolate the value error;
 * refitted under the identity for rounds > 0). */
static double value_output_error(const float *q, const float *k, const float *v, uint32_t n, uint32_t d, uint32_t G,
                                 float r, const float *R, uint32_t rounds)
{
    float *y = malloc((size_t)n * d * sizeof *y), *yq = malloc((size_t)n * d * sizeof *yq);
    float *vh = malloc((size_t)n * d * sizeof *vh), *kh = malloc((size_t)n * d * sizeof *kh);
    float *o = malloc((size_t)n * d * sizeof *o), *oh = malloc((size_t)n * d * sizeof *oh);
    double sum = 0.0;
    for (uint32_t h = 0; h < NKV; h++) {
        rotate_quantize(v + (size_t)h * d, n, (size_t)NKV * d, d, G, r, R, NULL, NULL, rounds, y, yq);
        ovk_rotate_rows(yq, n, d, d, R, 1, vh);
        for (uint32_t t = 0; t < n; t++) memcpy(kh + (size_t)t * d, k + ((size_t)t * NKV + h) * d, d * sizeof(float));
        for (uint32_t i = h * GRP; i < (h + 1) * GRP; i++) {
            CHECK_OK(ovk_attention_causal(q + (size_t)i * d, (size_t)NH * d, n, k + (size_t)h * d, v + (size_t)h * d,
                                            (size_t)NKV * d, 0, d, o));
            CHECK_OK(ovk_attention_causal(q + (size_t)i * d, (size_t)NH * d, n, kh, vh, d, 0, d, oh));
            for (size_t x = 0; x < (size_t)n * d; x++) sum += ((double)o[x] - oh[x]) * ((double)o[x] - oh[x]);
        }
    }
    free(y);
    free(yq);
    free(vh);
    free(kh);
    free(o);
    free(oh);
    return sum / ((double)NH * n);
}

/* Mean over held-out value rows (every KV head) of ‖y − ŷ‖², y = v·R, ŷ its INT2 reconstruction
 * (refitted under the identity for rounds > 0). */
static double value_row_error(const float *v, uint32_t n, uint32_t d, uint32_t G, float r, const float *R, uint32_t rounds)
{
    float *y = malloc((size_t)n * d * sizeof *y), *yq = malloc((size_t)n * d * sizeof *yq);
    double sum = 0.0;
    for (uint32_t h = 0; h < NKV; h++) {
        rotate_quantize(v + (size_t)h * d, n, (size_t)NKV * d, d, G, r, R, NULL, NULL, rounds, y, yq);
        for (size_t x = 0; x < (size_t)n * d; x++) sum += ((double)yq[x] - y[x]) * ((double)yq[x] - y[x]);
    }
    free(y);
    free(yq);
    return sum / ((double)NKV * n);
}

/* ---- unit checks ------------------------------------------------------------------------------ */

static void check_hadamard_and_permutation(uint32_t d)
{
    double *H = malloc((size_t)d * d * sizeof *H);
    uint32_t *perm = malloc(d * sizeof *perm);
    int *seen = calloc(d, sizeof *seen);
    CHECK_OK(ovk_hadamard_matrix(d, H));
    double orth = 0.0, sym = 0.0;
    for (uint32_t i = 0; i < d; i++)
        for (uint32_t j = 0; j < d; j++) {
            double s = 0.0;
            for (uint32_t r = 0; r < d; r++) s += H[(size_t)r * d + i] * H[(size_t)r * d + j];
            orth = fmax(orth, fabs(s - (i == j)));
            sym = fmax(sym, fabs(H[(size_t)i * d + j] - H[(size_t)j * d + i]));
        }
    CHECK_MSG(orth < 1e-12, "d %u: |H^T H - I| = %g", d, orth);
    CHECK_MSG(sym == 0.0, "d %u: H not symmetric (%g)", d, sym);
    /* mode int2-hadamard's float32 matrix is this one rounded, and its elements are the float32
     * ±1/sqrtf(d) bit for bit (the arithmetic the runtime had before both shared one formula) */
    float *Hf = malloc((size_t)d * d * sizeof *Hf);
    ovk_kv_hadamard(d, Hf);
    float s = 1.0f / sqrtf((float)d);
    int same = 1;
    for (size_t i = 0; i < (size_t)d * d; i++)
        if (Hf[i] != (float)H[i] || (Hf[i] != s && Hf[i] != -s)) same = 0;
    CHECK_MSG(same, "d %u: the float32 Hadamard matrix is not the float64 one rounded, or not +-1/sqrtf(d)", d);
    free(Hf);
    CHECK_OK(ovk_bit_reversal_permutation(d, perm));
    int is_perm = 1, involution = 1, automorphism = 1;
    for (uint32_t p = 0; p < d; p++) {
        if (perm[p] >= d || seen[perm[p]]++) is_perm = 0;
        else if (perm[perm[p]] != p) involution = 0;
    }
    if (is_perm)
        for (uint32_t i = 0; i < d; i++)
            for (uint32_t j = 0; j < d; j++)
                if (H[(size_t)perm[i] * d + perm[j]] != H[(size_t)i * d + j]) automorphism = 0;
    CHECK_MSG(is_perm, "d %u: bit reversal is not a permutation", d);
    CHECK_MSG(involution, "d %u: bit reversal is not an involution", d);
    CHECK_MSG(automorphism, "d %u: B H B != H, so U H P != U P H", d);
    free(H);
    free(perm);
    free(seen);
}

/* The scale of every power-of-two order the calibrator accepts: the float64 element rounded to
 * float32 is the float32 1/sqrtf(d), and -1/sqrtf(d) where popcount(i & j) is odd. */
static void check_hadamard_scales(void)
{
    for (uint32_t d = 1; d <= 4096; d *= 2) {
        float s = 1.0f / sqrtf((float)d);
        CHECK_MSG((float)ovk_hadamard_entry(d, 0, 0) == s && (d == 1 || (float)ovk_hadamard_entry(d, 1, 1) == -s),
                  "d %u: float64 Hadamard element rounds to %.9g, float32 1/sqrtf(d) is %.9g", d,
                  (double)(float)ovk_hadamard_entry(d, 0, 0), (double)s);
    }
}

static void check_rejections(void)
{
    double H[96 * 96];
    float R[96 * 96];
    CHECK_STATUS(ovk_hadamard_matrix(96, H), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "power of two") != NULL);
    CHECK_STATUS(ovk_rotation_build(OSCAR_ROTATION_HADAMARD, 96, NULL, R, NULL), OSCAR_ERROR_INVALID_ARGUMENT);
    ovk_calib_params p = ovk_calib_params_default();
    p.n_layer = 1;
    p.n_head = NH;
    p.n_kv_head = NKV;
    p.head_dim = 96;
    ovk_calib *cal = (ovk_calib *)&p; /* must be reset to NULL on failure */
    CHECK_STATUS(ovk_calib_create(&p, &cal), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(cal == NULL);
    p.head_dim = 64;
    p.n_head = 9; /* not a multiple of 2 KV heads */
    CHECK_STATUS(ovk_calib_create(&p, &cal), OSCAR_ERROR_INVALID_ARGUMENT);
    p.n_head = NH;
    p.group_size = 48;
    CHECK_STATUS(ovk_calib_create(&p, &cal), OSCAR_ERROR_INVALID_ARGUMENT);

    /* NaN / Inf rows, too few rows, sequence longer than max_seq_len */
    p.group_size = 0;
    p.max_seq_len = 64;
    CHECK_OK(ovk_calib_create(&p, &cal));
    uint32_t d = 64, n = 16;
    float *q = calloc((size_t)n * NH * d, sizeof *q), *k = calloc((size_t)n * NKV * d, sizeof *k),
          *v = calloc((size_t)n * NKV * d, sizeof *v);
    for (size_t x = 0; x < (size_t)n * NH * d; x++) q[x] = test_rng_normal();
    for (size_t x = 0; x < (size_t)n * NKV * d; x++) k[x] = test_rng_normal(), v[x] = test_rng_normal();
    k[(5 * NKV + 1) * d + 7] = NAN;
    CHECK_STATUS(ovk_calib_add(cal, 0, n, q, k, v), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(oscar_last_error(), "K value") && strstr(oscar_last_error(), "token 5"), "%s", oscar_last_error());
    CHECK(ovk_calib_tokens(cal, 0) == 0);
    k[(5 * NKV + 1) * d + 7] = 0.5f;
    q[3] = INFINITY;
    CHECK_STATUS(ovk_calib_add(cal, 0, n, q, k, v), OSCAR_ERROR_INVALID_ARGUMENT);
    q[3] = 0.5f;
    v[100] = -NAN;
    CHECK_STATUS(ovk_calib_add(cal, 0, n, q, k, v), OSCAR_ERROR_INVALID_ARGUMENT);
    v[100] = 0.5f;
    CHECK(ovk_calib_tokens(cal, 0) == 0);
    CHECK_OK(ovk_calib_add(cal, 0, n, q, k, v));
    CHECK(ovk_calib_tokens(cal, 0) == n);
    double *C = malloc((size_t)d * d * sizeof *C);
    CHECK_STATUS(ovk_calib_covariance(cal, 0, OSCAR_CALIB_ALL_HEADS, OSCAR_CALIB_KEYS, C), OSCAR_ERROR_INVALID_STATE);
    CHECK_MSG(strstr(oscar_last_error(), "too few calibration rows") != NULL, "%s", oscar_last_error());
    ovk_calib_result res;
    CHECK_STATUS(ovk_calib_solve(cal, OSCAR_ROTATION_OSCAR, OSCAR_CALIB_VALUES_PROXY, NULL, NULL, &res), OSCAR_ERROR_INVALID_STATE);
    CHECK(res.rot_k == NULL);
    for (int i = 0; i < 3; i++) CHECK_OK(ovk_calib_add(cal, 0, n, q, k, v)); /* 64 tokens: max_seq_len */
    CHECK_STATUS(ovk_calib_add(cal, 0, n, q, k, v), OSCAR_ERROR_CONTEXT_FULL);
    CHECK_OK(ovk_calib_begin_sequence(cal));
    CHECK_OK(ovk_calib_add(cal, 0, n, q, k, v));
    CHECK_OK(ovk_calib_covariance(cal, 0, OSCAR_CALIB_ALL_HEADS, OSCAR_CALIB_KEYS, C));
    CHECK_STATUS(ovk_calib_add(cal, 1, n, q, k, v), OSCAR_ERROR_INVALID_ARGUMENT); /* layer out of range */

    /* the loader-side check: non-orthogonal and non-finite rotations are rejected */
    float *Rk = malloc((size_t)d * d * sizeof *Rk);
    double dev;
    CHECK_OK(ovk_rotation_build(OSCAR_ROTATION_OSCAR, d, C, Rk, NULL));
    CHECK_OK(ovk_rotation_check(Rk, d, 1e-5, &dev));
    Rk[5 * d + 9] += 1e-2f;
    CHECK_STATUS(ovk_rotation_check(Rk, d, 1e-4, &dev), OSCAR_ERROR_BAD_FORMAT);
    CHECK(dev > 1e-3);
    Rk[5 * d + 9] = NAN;
    CHECK_STATUS(ovk_rotation_check(Rk, d, 1e-4, &dev), OSCAR_ERROR_BAD_FORMAT);
    CHECK(strstr(oscar_last_error(), "not finite") != NULL);
    free(Rk);
    free(C);
    free(q);
    free(k);
    free(v);
    ovk_calib_destroy(cal);
    ovk_calib_destroy(NULL);
}

/* Eigendecomposition reproduces C; R = U·H·P is orthogonal, spreads importance evenly over every
 * coordinate (diag(RᵀCR) = tr C/d, so each group of G gets share G/d), and puts the top d/G
 * eigen-directions on the within-group-constant patterns. */
static void check_rotation_math(const double *C, uint32_t d, uint32_t G)
{
    size_t dd = (size_t)d * d;
    double *U = malloc(dd * sizeof *U), *lam = malloc(d * sizeof *lam), *lam2 = malloc(d * sizeof *lam2);
    float *R = malloc(dd * sizeof *R), *Rn = malloc(dd * sizeof *Rn);
    CHECK_OK(ovk_eigh_descending(d, C, U, lam));
    double cmax = 0.0, rec = 0.0, orth = 0.0;
    int desc = 1;
    for (uint32_t i = 0; i + 1 < d; i++) desc &= lam[i] >= lam[i + 1];
    for (uint32_t i = 0; i < d; i++)
        for (uint32_t j = 0; j < d; j++) {
            double s = 0.0, o = 0.0;
            for (uint32_t x = 0; x < d; x++) {
                s += U[(size_t)i * d + x] * lam[x] * U[(size_t)j * d + x];
                o += U[(size_t)x * d + i] * U[(size_t)x * d + j];
            }
            cmax = fmax(cmax, fabs(C[(size_t)i * d + j]));
            rec = fmax(rec, fabs(s - C[(size_t)i * d + j]));
            orth = fmax(orth, fabs(o - (i == j)));
        }
    CHECK_MSG(desc, "d %u: eigenvalues not descending", d);
    CHECK_MSG(rec <= 1e-10 * cmax, "d %u: |C - U L U^T| = %g (|C| %g)", d, rec, cmax);
    CHECK_MSG(orth < 1e-10, "d %u: |U^T U - I| = %g", d, orth);
    CHECK_MSG(lam[0] / lam[d - 1] > 30.0, "d %u: target should be anisotropic (%g / %g)", d, lam[0], lam[d - 1]);

    CHECK_OK(ovk_rotation_build(OSCAR_ROTATION_OSCAR, d, C, R, lam2));
    CHECK(lam2[0] == lam[0] && lam2[d - 1] == lam[d - 1]);
    double dev = 1.0;
    CHECK_OK(ovk_rotation_check(R, d, 1e-5, &dev));
    CHECK_MSG(dev < 1e-5, "d %u: |R^T R - I| = %g", d, dev);
    double asym = 0.0;
    for (uint32_t i = 0; i < d; i++)
        for (uint32_t j = 0; j < d; j++) asym = fmax(asym, fabs(R[(size_t)i * d + j] - R[(size_t)j * d + i]));
    CHECK_MSG(asym > 1e-2, "d %u: R should not be symmetric (orientation test needs that)", d);

    /* importance per output coordinate j: (RᵀCR)_jj; with y = x·R the rows of R are indexed by
     * x. The transpose, applied by mistake, does not flatten it. */
    double share_min = INFINITY, share_max = 0.0, tr = 0.0, diag_t_min = INFINITY, diag_t_max = 0.0;
    for (uint32_t i = 0; i < d; i++) tr += C[(size_t)i * d + i];
    for (uint32_t g = 0; g < d / G; g++) {
        double share = 0.0;
        for (uint32_t j = g * G; j < (g + 1) * G; j++) {
            double m = 0.0, mt = 0.0;
            for (uint32_t a = 0; a < d; a++)
                for (uint32_t b = 0; b < d; b++) {
                    m += (double)R[(size_t)a * d + j] * C[(size_t)a * d + b] * R[(size_t)b * d + j];
                    mt += (double)R[(size_t)j * d + a] * C[(size_t)a * d + b] * R[(size_t)j * d + b];
                }
            share += m;
            diag_t_min = fmin(diag_t_min, mt);
            diag_t_max = fmax(diag_t_max, mt);
        }
        share_min = fmin(share_min, share / tr);
        share_max = fmax(share_max, share / tr);
    }
    printf("d %3u G %3u: group share of tr C max/min = %.6f (ideal %g each); transposed R: coord max/min %.1f\n",
           d, G, share_max / share_min, (double)G / d, diag_t_max / diag_t_min);
    CHECK_MSG(share_max / share_min < 1.0001, "d %u G %u: group shares %g..%g", d, G, share_min, share_max);
    CHECK_MSG(fabs(share_min - (double)G / d) < 1e-4, "d %u G %u: share %g, want %g", d, G, share_min, (double)G / d);
    CHECK_MSG(diag_t_max / diag_t_min > 1.5, "d %u: transposed R unexpectedly balanced too", d);

    /* the top d/G eigen-directions land on group-constant patterns (absorbed by each group's
     * min); without P only rank 0 does */
    CHECK_OK(ovk_rotation_build(OSCAR_ROTATION_OSCAR_NO_PERM, d, C, Rn, NULL));
    int const_perm = 1, const_noperm = 1;
    for (uint32_t r = 0; r < d / G; r++) {
        for (int which = 0; which < 2; which++) {
            const float *RR = which ? Rn : R;
            for (uint32_t g = 0; g < d / G; g++) {
                double lo = INFINITY, hi = -INFINITY;
                for (uint32_t j = g * G; j < (g + 1) * G; j++) {
                    double y = 0.0; /* (u_r · R)_j */
                    for (uint32_t a = 0; a < d; a++) y += U[(size_t)a * d + r] * RR[(size_t)a * d + j];
                    lo = fmin(lo, y);
                    hi = fmax(hi, y);
                }
                if (hi - lo > 1e-5) *(which ? &const_noperm : &const_perm) = 0;
            }
        }
    }
    CHECK_MSG(const_perm, "d %u G %u: top d/G directions are not group-constant after U H P", d, G);
    if (G < d) CHECK_MSG(!const_noperm, "d %u G %u: without P they should not all be", d, G);
    free(U);
    free(lam);
    free(lam2);
    free(R);
    free(Rn);
}

/* ---- the synthetic calibration ------------------------------------------------------------------- */

static int progress_calls;
static void on_progress(void *user, const char *stage, uint64_t done, uint64_t total)
{
    (void)user;
    (void)stage;
    progress_calls++;
    CHECK(done >= 1 && done <= total);
}

/* Feeds the CAL_SEQS calibration sequences (seeded as always, so every calibrator sees the same
 * rows), each in two chunks, the second attending to the first; q, k, v are scratch. */
static void feed_calibration(ovk_calib *cal, const synth *s, float *q, float *k, float *v)
{
    uint32_t d = s->d;
    test_rng_seed(7 + d);
    for (int sq = 0; sq < CAL_SEQS && cal; sq++) {
        synth_draw(s, SEQ, q, k, v);
        CHECK_OK(ovk_calib_begin_sequence(cal));
        CHECK_OK(ovk_calib_add(cal, 0, SEQ / 2, q, k, v));
        CHECK_OK(ovk_calib_add(cal, 0, SEQ / 2, q + (size_t)SEQ / 2 * NH * d, k + (size_t)SEQ / 2 * NKV * d,
                                 v + (size_t)SEQ / 2 * NKV * d));
    }
}

/* The refit's metric: symmetric, finite, mean diagonal 1. */
static void check_metric(const float *M, uint32_t d, const char *what)
{
    double diag = 0.0, asym = 0.0;
    int finite = 1;
    for (uint32_t i = 0; i < d; i++) {
        diag += M[(size_t)i * d + i];
        for (uint32_t j = 0; j < d; j++) {
            finite &= isfinite(M[(size_t)i * d + j]);
            asym = fmax(asym, fabs((double)M[(size_t)i * d + j] - M[(size_t)j * d + i]));
        }
    }
    CHECK_MSG(finite && asym == 0.0 && fabs(diag / d - 1.0) < 1e-6, "d %u %s: the metric's asymmetry %g, finite %d, "
              "mean diagonal %.9f (want 0, 1, 1)", d, what, asym, finite, diag / d);
}

static void run_synthetic(uint32_t d, uint32_t G)
{
    synth s;
    synth_init(&s, d, 1000 + d);
    ovk_calib_params p = ovk_calib_params_default();
    p.n_layer = 1;
    p.n_head = NH;
    p.n_kv_head = NKV;
    p.head_dim = d;
    p.group_size = G;
    p.max_seq_len = SEQ;
    p.progress = on_progress;
    ovk_calib *cal = NULL;
    CHECK_OK(ovk_calib_create(&p, &cal));
    if (!cal) return;
    float *q = malloc((size_t)SEQ * NH * d * sizeof *q), *k = malloc((size_t)SEQ * NKV * d * sizeof *k),
          *v = malloc((size_t)SEQ * NKV * d * sizeof *v);
    feed_calibration(cal, &s, q, k, v);
    CHECK(ovk_calib_get_params(cal)->refit_rounds == 0); /* the default */
    CHECK(ovk_calib_tokens(cal, 0) == (uint64_t)SEQ * CAL_SEQS);

    size_t dd = (size_t)d * d;
    double *CK = malloc(dd * sizeof *CK), *CVa = malloc(dd * sizeof *CVa), *CVb = malloc(dd * sizeof *CVb);
    CHECK_OK(ovk_calib_covariance(cal, 0, OSCAR_CALIB_ALL_HEADS, OSCAR_CALIB_KEYS, CK));
    CHECK_OK(ovk_calib_covariance(cal, 0, OSCAR_CALIB_ALL_HEADS, OSCAR_CALIB_VALUES_PROXY, CVa));
    CHECK_OK(ovk_calib_covariance(cal, 0, OSCAR_CALIB_ALL_HEADS, OSCAR_CALIB_VALUES_SCORES, CVb));
    check_rotation_math(CK, d, G);
    if (G == d) check_rotation_math(CK, d, d / 4);

    float *RI = malloc(dd * sizeof *RI), *RH = malloc(dd * sizeof *RH), *RK = malloc(dd * sizeof *RK),
          *RKn = malloc(dd * sizeof *RKn), *RVa = malloc(dd * sizeof *RVa), *RVb = malloc(dd * sizeof *RVb);
    CHECK_OK(ovk_rotation_build(OSCAR_ROTATION_IDENTITY, d, NULL, RI, NULL));
    CHECK_OK(ovk_rotation_build(OSCAR_ROTATION_HADAMARD, d, NULL, RH, NULL));
    CHECK_OK(ovk_rotation_build(OSCAR_ROTATION_OSCAR, d, CK, RK, NULL));
    CHECK_OK(ovk_rotation_build(OSCAR_ROTATION_OSCAR_NO_PERM, d, CK, RKn, NULL));
    CHECK_OK(ovk_rotation_build(OSCAR_ROTATION_OSCAR, d, CVa, RVa, NULL));
    CHECK_OK(ovk_rotation_build(OSCAR_ROTATION_OSCAR, d, CVb, RVb, NULL));
    float rk_fit = 0.0f, rv_fit = 0.0f;
    double ek_fit = 0.0, ev_fit = 0.0;
    CHECK_OK(ovk_calib_fit_clip(cal, 0, OSCAR_CALIB_ALL_HEADS, 0, RK, NULL, &rk_fit, &ek_fit));
    CHECK_OK(ovk_calib_fit_clip(cal, 0, OSCAR_CALIB_ALL_HEADS, 1, RVa, NULL, &rv_fit, &ev_fit));
    /* Hadamard with its own fitted clip, and per-KV-head OSCAR rotations */
    float rh_fit = 0.0f, rp_fit = 0.0f;
    float *RP = malloc(NKV * dd * sizeof *RP), *MP = malloc(NKV * dd * sizeof *MP); /* per head: R, refit metric */
    double *CKh = malloc(dd * sizeof *CKh);
    CHECK_OK(ovk_calib_fit_clip(cal, 0, OSCAR_CALIB_ALL_HEADS, 0, RH, NULL, &rh_fit, NULL));
    for (uint32_t h = 0; h < NKV; h++) {
        CHECK_OK(ovk_calib_covariance(cal, 0, h, OSCAR_CALIB_KEYS, CKh));
        CHECK_OK(ovk_rotation_build(OSCAR_ROTATION_OSCAR, d, CKh, RP + h * dd, NULL));
        CHECK_OK(ovk_key_metric_matrix(d, CKh, RP + h * dd, 0.01, MP + h * dd));
    }
    {
        float grid[21];
        double sums[21] = {0};
        uint64_t rows = 0;
        for (int i = 0; i < 21; i++) grid[i] = 0.80f + 0.01f * i;
        for (uint32_t h = 0; h < NKV; h++)
            CHECK_OK(ovk_calib_clip_curve(cal, 0, h, 0, RP + h * dd, NULL, MP + h * dd, NULL, grid, 21, sums, &rows));
        CHECK(rows == (uint64_t)NKV * p.reservoir_rows);
        int best = 0;
        for (int i = 1; i < 21; i++) if (sums[i] <= sums[best]) best = i;
        rp_fit = grid[best];
    }
    free(CKh);
    CHECK(rk_fit >= 0.80f && rk_fit <= 1.0f && rv_fit >= 0.80f && rv_fit <= 1.0f);

    /* held-out sample */
    test_rng_seed(99 + d);
    synth_draw(&s, SEQ, q, k, v);
    const float rK = OSCAR_CLIP_RATIO_K, rV = OSCAR_CLIP_RATIO_V;
    double kI = key_logit_error(q, k, SEQ, d, G, rK, RI, 0, NULL, NULL, 0);
    double kH = key_logit_error(q, k, SEQ, d, G, rK, RH, 0, NULL, NULL, 0);
    double kO = key_logit_error(q, k, SEQ, d, G, rK, RK, 0, NULL, NULL, 0);
    double kOn = key_logit_error(q, k, SEQ, d, G, rK, RKn, 0, NULL, NULL, 0);
    /* the fitted clips are fitted for the quantizer in use: with G = d the refit (nearest codes,
     * under each rotation's key metric), so they are measured with it, against it at r = 0.96 */
    uint32_t fr = ovk_calib_get_params(cal)->refit_rounds;
    float *MK = malloc(dd * sizeof *MK), *MH = malloc(dd * sizeof *MH);
    CHECK_OK(ovk_key_metric_matrix(d, CK, RK, 0.01, MK));
    CHECK_OK(ovk_key_metric_matrix(d, CK, RH, 0.01, MH));
    check_metric(MK, d, "ovk_key_metric_matrix");
    double kOr = fr ? key_logit_error(q, k, SEQ, d, G, rK, RK, 0, NULL, MK, fr) : kO;
    double kHr = fr ? key_logit_error(q, k, SEQ, d, G, rK, RH, 0, NULL, MH, fr) : kH;
    double kOf = key_logit_error(q, k, SEQ, d, G, rk_fit, RK, 0, NULL, MK, fr);
    double kHf = key_logit_error(q, k, SEQ, d, G, rh_fit, RH, 0, NULL, MH, fr);
    double kPf = key_logit_error(q, k, SEQ, d, G, rp_fit, RP, dd, NULL, MP, fr);
    /* the key codes by error feedback under the calibration's C_K, at the reference clip */
    float *F = malloc(dd * sizeof *F);
    CHECK_OK(ovk_key_feedback_matrix(d, CK, RK, 0.01, F));
    double kFb = key_logit_error(q, k, SEQ, d, G, rK, RK, 0, F, NULL, 0);
    int upper = 1;
    for (size_t i = 0; i < dd; i++) upper &= isfinite(F[i]) && (i % d > i / d || F[i] == 0.0f);
    CHECK_MSG(upper, "d %u: the feedback matrix is not finite and strictly upper triangular", d);
    /* with one group per row: the least-squares refit, keys (feedback codes) under their metric,
     * values under the identity */
    if (G == d) {
        double kFbR = key_logit_error(q, k, SEQ, d, G, rK, RK, 0, F, MK, REFIT_ROUNDS);
        double vS = value_row_error(v, SEQ, d, G, rV, RVa, 0), vSR = value_row_error(v, SEQ, d, G, rV, RVa, REFIT_ROUNDS);
        double vO = value_output_error(q, k, v, SEQ, d, G, rV, RVa, 0);
        double vOR = value_output_error(q, k, v, SEQ, d, G, rV, RVa, REFIT_ROUNDS);
        printf("d %3u G %3u refit x%u @ r=%.2f: keys feedback + refit %.4g (%.3fx feedback alone); values |y - y^|^2 "
               "refit %.4g (%.3fx min-max), |o - o^|^2 %.4g (%.3fx)\n", d, G, REFIT_ROUNDS, (double)rK, kFbR, kFbR / kFb,
               vSR, vSR / vS, vOR, vOR / vO);
        CHECK_MSG(kFbR <= REFIT_KEY_BOUND * kFb, "d %u: refit key error %g not <= %.2f x feedback alone %g", d, kFbR,
                  REFIT_KEY_BOUND, kFb);
        CHECK_MSG(vSR <= REFIT_VALUE_BOUND * vS, "d %u: refit value error %g not <= %.2f x min-max %g", d, vSR,
                  REFIT_VALUE_BOUND, vS);
    }
    double vI = value_output_error(q, k, v, SEQ, d, G, rV, RI, 0);
    double vH = value_output_error(q, k, v, SEQ, d, G, rV, RH, 0);
    double vA = value_output_error(q, k, v, SEQ, d, G, rV, RVa, 0);
    double vB = value_output_error(q, k, v, SEQ, d, G, rV, RVb, 0);
    double vAf = value_output_error(q, k, v, SEQ, d, G, rv_fit, RVa, fr);
    printf("d %3u G %3u keys  (q.k - q.k^)^2 @ r=%.2f: identity %.4g  hadamard %.4g  oscar %.4g (%.3fx H, %.4fx I)"
           "  oscar-noP %.4g\n", d, G, (double)rK, kI, kH, kO, kO / kH, kO / kI, kOn);
    printf("d %3u G %3u keys @ r=%.2f, codes by error feedback: oscar %.4g (%.3fx nearest)\n", d, G, (double)rK, kFb, kFb / kO);
    printf("d %3u G %3u keys, fitted clip each (refit x%u): hadamard r=%.2f %.4g (%.4g @ r=%.2f)  oscar r=%.2f %.4g "
           "(%.3fx H; %.4g @ r=%.2f)  oscar per-head r=%.2f %.4g (%.3fx H)\n", d, G, fr, (double)rh_fit, kHf, kHr,
           (double)rK, (double)rk_fit, kOf, kOf / kHf, kOr, (double)rK, (double)rp_fit, kPf, kPf / kHf);
    printf("d %3u G %3u values |o - o^|^2 @ r=%.2f: identity %.4g  hadamard %.4g  oscar(a) %.4g (%.3fx H)  "
           "oscar(b) %.4g (%.3fx H)  oscar(a)@fit r=%.2f %.4g (refit x%u)\n",
           d, G, (double)rV, vI, vH, vA, vA / vH, vB, vB / vH, (double)rv_fit, vAf, fr);

    /* Bounds from measurements (see the printed lines): at the reference clip OSCAR is
     * 0.84x Hadamard at G = d and 0.64x / 0.83x at G = d/4; with G < d the bit-reversal P puts
     * the top d/G directions on the group offsets. When Hadamard gets its own fitted clip too,
     * OSCAR's edge at G = d is gone on this data (0.86x at d 64, 1.2x at d 128), so that is
     * printed, not asserted. The value rotations are within ~15% of Hadamard either way. */
    CHECK_MSG(kO <= 0.9 * kH, "d %u G %u: OSCAR key error %g not <= 0.9 x Hadamard %g", d, G, kO, kH);
    if (G < d && d == 64) CHECK_MSG(kO <= 0.75 * kH, "d %u G %u: OSCAR key error %g not <= 0.75 x Hadamard %g", d, G, kO, kH);
    CHECK_MSG(kO <= 0.2 * kI, "d %u G %u: OSCAR key error %g not <= 0.2 x identity %g", d, G, kO, kI);
    CHECK_MSG(kOf <= 1.05 * kOr, "d %u G %u: fitted clip %.2f worse on held-out data (%g vs %g)", d, G, (double)rk_fit, kOf, kOr);
    CHECK_MSG(kHf <= 1.05 * kHr, "d %u G %u: fitted clip %.2f worse for Hadamard (%g vs %g)", d, G, (double)rh_fit, kHf, kHr);
    if (G < d) CHECK_MSG(kO <= kOn, "d %u G %u: bit reversal P should not hurt (%g vs %g without)", d, G, kO, kOn);
    else CHECK_MSG(fabs(kO - kOn) <= 1e-4 * kO, "d %u: with G = d, P cannot change the error (%g vs %g)", d, kO, kOn);
    CHECK_MSG(kFb <= FEEDBACK_BOUND * kO, "d %u G %u: error feedback %g not <= %.2f x nearest %g", d, G, kFb, FEEDBACK_BOUND, kO);
    CHECK_MSG(vA <= 1.25 * vH, "d %u G %u: OSCAR(a) value error %g far above Hadamard %g", d, G, vA, vH);
    CHECK_MSG(vB <= 1.25 * vH, "d %u G %u: OSCAR(b) value error %g far above Hadamard %g", d, G, vB, vH);

    /* solve every layer in one call */
    ovk_calib_result res;
    progress_calls = 0;
    CHECK_OK(ovk_calib_solve(cal, OSCAR_ROTATION_OSCAR, OSCAR_CALIB_VALUES_SCORES, NULL, NULL, &res));
    CHECK(progress_calls == 1);
    if (res.rot_k) {
        CHECK(res.n_layer == 1 && res.n_rot == 1 && res.head_dim == d);
        CHECK(memcmp(res.rot_k, RK, dd * sizeof *RK) == 0);
        CHECK(memcmp(res.rot_v, RVb, dd * sizeof *RVb) == 0);
        CHECK(res.clip_k[0] == rk_fit);
        CHECK(res.eig_k[0] >= res.eig_k[d - 1] && res.eig_k[d - 1] >= 0.0);
        CHECK(res.feedback_k == NULL);
        /* the refit's metric only with the refit (off by default; test_calib_cli checks it against
         * the core's) */
        CHECK(res.metric_k == NULL);
    }
    ovk_calib_result_free(&res);
    ovk_calib_result_free(&res);
    /* and with the key feedback: the same matrices as above */
    ovk_calib_destroy(cal);
    p.key_feedback = 1;
    cal = NULL;
    CHECK_OK(ovk_calib_create(&p, &cal));
    feed_calibration(cal, &s, q, k, v);
    if (cal) CHECK_OK(ovk_calib_solve(cal, OSCAR_ROTATION_OSCAR, OSCAR_CALIB_VALUES_PROXY, NULL, NULL, &res));
    if (cal && res.rot_k) {
        CHECK(res.feedback_k && memcmp(res.feedback_k, F, dd * sizeof *F) == 0);
        CHECK(res.clip_k[0] >= 0.80f && res.clip_k[0] <= 1.0f);
        CHECK(res.metric_k == NULL);
    }
    /* the clip fit quantizes with the refit: the objective at the fitted ratio against the same
     * calibration with refit_rounds = 0, in every path (keys with their feedback and metric in
     * the solve, the values' attention-output fit of the solve, ovk_calib_fit_clip's per-row
     * curve for keys and values) */
    if (G == d) {
        ovk_calib *cr[2] = {NULL, NULL}; /* refit_rounds 3, 0 */
        ovk_calib_result rr[2];
        double fk[2] = {0.0, 0.0}, fv[2] = {0.0, 0.0};
        float ratio;
        memset(rr, 0, sizeof rr);
        p.vfit_sequences = 2;
        for (int i = 0; i < 2; i++) {
            p.refit_rounds = i ? 0 : REFIT_ROUNDS;
            CHECK_OK(ovk_calib_create(&p, &cr[i]));
            feed_calibration(cr[i], &s, q, k, v);
            if (!cr[i]) continue;
            CHECK_OK(ovk_calib_solve(cr[i], OSCAR_ROTATION_OSCAR, OSCAR_CALIB_VALUES_PROXY, NULL, NULL, &rr[i]));
            CHECK_OK(ovk_calib_fit_clip(cr[i], 0, OSCAR_CALIB_ALL_HEADS, 0, RK, NULL, &ratio, &fk[i]));
            CHECK_OK(ovk_calib_fit_clip(cr[i], 0, OSCAR_CALIB_ALL_HEADS, 1, RVa, NULL, &ratio, &fv[i]));
        }
        if (rr[0].rot_k && rr[1].rot_k) {
            CHECK(rr[0].metric_k && rr[1].metric_k == NULL);
            printf("d %3u G %3u clip fit's objective with refit x%u / without: solve keys %.3f (r=%.2f vs %.2f), "
                   "values' output %.3f (r=%.2f vs %.2f); per row keys %.3f, values %.3f\n", d, G, REFIT_ROUNDS,
                   rr[0].err_k[0] / rr[1].err_k[0], (double)rr[0].clip_k[0], (double)rr[1].clip_k[0],
                   rr[0].err_v[0] / rr[1].err_v[0], (double)rr[0].clip_v[0], (double)rr[1].clip_v[0], fk[0] / fk[1],
                   fv[0] / fv[1]);
            CHECK_MSG(rr[0].err_k[0] <= REFIT_KEY_BOUND * rr[1].err_k[0], "d %u: solve's key clip error with refit %g not "
                      "<= %.2f x without %g", d, rr[0].err_k[0], REFIT_KEY_BOUND, rr[1].err_k[0]);
            /* the attention outputs average the rows' own errors out, and the refit's gain with them:
             * measured 0.94x at d 64 but 1.00x at d 128, so only that the fit saw the refit */
            CHECK_MSG(rr[0].err_v[0] != rr[1].err_v[0] && rr[0].err_v[0] <= 1.05 * rr[1].err_v[0], "d %u: solve's value "
                      "output error with refit %g, without %g: the same, or worse", d, rr[0].err_v[0], rr[1].err_v[0]);
            CHECK_MSG(fk[0] <= REFIT_KEY_BOUND * fk[1], "d %u: fit_clip's key error with refit %g not <= %.2f x without %g",
                      d, fk[0], REFIT_KEY_BOUND, fk[1]);
            CHECK_MSG(fv[0] <= REFIT_VALUE_FIT_BOUND * fv[1], "d %u: fit_clip's value error with refit %g not <= %.2f x "
                      "without %g", d, fv[0], REFIT_VALUE_FIT_BOUND, fv[1]);
        }
        for (int i = 0; i < 2; i++) {
            ovk_calib_result_free(&rr[i]);
            ovk_calib_destroy(cr[i]);
        }
        p.vfit_sequences = 0;
        p.refit_rounds = REFIT_ROUNDS;
    }
    ovk_calib_result_free(&res);
    free(F);
    free(MK);
    free(MH);
    free(MP);

    free(CK);
    free(CVa);
    free(CVb);
    free(RI);
    free(RH);
    free(RK);
    free(RKn);
    free(RP);
    free(RVa);
    free(RVb);
    free(q);
    free(k);
    free(v);
    ovk_calib_destroy(cal);
    synth_free(&s);
}

/* ovk_rope_spread_covariance against the average over positions written out: Rot(p)·C·Rot(p)ᵀ
 * for p = 0..span−1, normal and neox pairing, with and without unrotated dims. */
static void check_rope_spread(void)
{
    enum { D = 8, SPAN = 37 };
    float theta[D / 2] = { 1.0f, 0.3f, 0.05f, 0.002f };
    for (int neox = 0; neox < 2; neox++)
        for (uint32_t n_rot = 6; n_rot <= D; n_rot += 2) {
            double A[D * D], C[D * D], want[D * D] = { 0 };
            test_rng_seed(5 + n_rot + neox);
            for (int i = 0; i < D * D; i++) A[i] = test_rng_normal();
            for (int i = 0; i < D; i++) /* C = A Aᵀ */
                for (int j = 0; j < D; j++) {
                    double t = 0;
                    for (int k = 0; k < D; k++) t += A[i * D + k] * A[j * D + k];
                    C[i * D + j] = t;
                }
            for (int pos = 0; pos < SPAN; pos++) {
                double Rm[D * D] = { 0 }, T[D * D];
                for (int i = 0; i < D; i++) Rm[i * D + i] = 1.0;
                for (uint32_t i = 0; i < n_rot / 2; i++) {
                    uint32_t a = neox ? i : 2 * i, b = neox ? i + n_rot / 2 : 2 * i + 1;
                    double c = cos(pos * (double)theta[i]), sn = sin(pos * (double)theta[i]);
                    Rm[a * D + a] = c, Rm[a * D + b] = -sn, Rm[b * D + a] = sn, Rm[b * D + b] = c;
                }
                for (int i = 0; i < D; i++)
                    for (int j = 0; j < D; j++) {
                        double t = 0;
                        for (int k = 0; k < D; k++) t += Rm[i * D + k] * C[k * D + j];
                        T[i * D + j] = t;
                    }
                for (int i = 0; i < D; i++)
                    for (int j = 0; j < D; j++) {
                        double t = 0;
                        for (int k = 0; k < D; k++) t += T[i * D + k] * Rm[j * D + k];
                        want[i * D + j] += t / SPAN;
                    }
            }
            ovk_rope_spread_covariance(D, n_rot, neox, theta, SPAN, C);
            double worst = 0;
            for (int i = 0; i < D * D; i++) worst = fmax(worst, fabs(C[i] - want[i]));
            CHECK_MSG(worst < 1e-9, "rope spread (neox %d, n_rot %u): max |difference| %g from the written-out average",
                      neox, n_rot, worst);
        }
}

int main(void)
{
    check_rope_spread();
    check_hadamard_and_permutation(1);
    check_hadamard_and_permutation(2);
    check_hadamard_and_permutation(64);
    check_hadamard_and_permutation(128);
    check_hadamard_scales();
    check_rejections();
    run_synthetic(64, 64);
    run_synthetic(128, 128);
    run_synthetic(64, 16);
    run_synthetic(128, 32);
    return test_finish();
}
