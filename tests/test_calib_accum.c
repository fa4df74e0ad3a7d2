/* The calibrator's accumulators against naive float64 references on a small random layer:
 * C_K (GQA pooling), C_V (a) (exact while the stream fits the proxy buffer, close after it
 * streams), C_S (b) (chunked feeding equals one-shot feeding; ovk_attention_causal against a
 * naive causal softmax), the reservoir (rows and positions), the value clip's attention-output
 * curve (against a naive float64 sum over the kept sequences' queries), and the key clip curve
 * with key centers per block of positions. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "int2_quant.h"
#include "model_ref.h" /* ovk_rope_average */
#include "calib.h"
#include "test_util.h"

#define D 16
#define NH 6
#define NKV 2
#define GRP (NH / NKV)
#define T 96   /* tokens per sequence */
#define NSEQ 3

static double max_rel(const double *a, const double *b, size_t n)
{
    double m = 0.0, s = 0.0;
    for (size_t i = 0; i < n; i++) {
        m = fmax(m, fabs(a[i] - b[i]));
        s = fmax(s, fabs(b[i]));
    }
    return s > 0.0 ? m / s : m;
}

/* The test's calibrator shape: n_layer layers of NH query and NKV KV heads of D, sequences of T. */
static ovk_calib_params test_params(uint32_t n_layer, uint32_t reservoir_rows)
{
    ovk_calib_params p = ovk_calib_params_default();
    p.n_layer = n_layer;
    p.n_head = NH;
    p.n_kv_head = NKV;
    p.head_dim = D;
    p.max_seq_len = T;
    p.reservoir_rows = reservoir_rows;
    return p;
}

/* Naive causal softmax weights p[0..pos] of one query row (position pos) of head i over kv head h. */
static void naive_probs(const float *q, const float *k, uint32_t pos, uint32_t i, uint32_t h, double *p)
{
    double mx = -INFINITY, sum = 0.0;
    for (uint32_t j = 0; j <= pos; j++) {
        double dot = 0.0;
        for (uint32_t x = 0; x < D; x++) dot += (double)q[((size_t)pos * NH + i) * D + x] * k[((size_t)j * NKV + h) * D + x];
        p[j] = dot / sqrt((double)D);
        mx = fmax(mx, p[j]);
    }
    for (uint32_t j = 0; j <= pos; j++) sum += p[j] = exp(p[j] - mx);
    for (uint32_t j = 0; j <= pos; j++) p[j] /= sum;
}

/* Naive causal attention of one query row (position pos) of head i over kv head h. */
static void naive_attn(const float *q, const float *k, const float *v, uint32_t pos, uint32_t i, uint32_t h, double *o)
{
    double p[T];
    naive_probs(q, k, pos, i, h, p);
    for (uint32_t x = 0; x < D; x++) o[x] = 0.0;
    for (uint32_t j = 0; j <= pos; j++)
        for (uint32_t x = 0; x < D; x++) o[x] += p[j] * v[((size_t)j * NKV + h) * D + x];
}

/* ovk_calib_clip_curve_output on the first VF_SEQ sequences (identity R, a constant center)
 * against the naive sum of ‖Σ_j p_j (fq(v_j − c) − (v_j − c))‖² over the kept queries (every
 * VF_STRIDE-th position, every head of the group) over the INT2 tokens (past the sink, before
 * the recent window), fq the min–max grid (rounds 0) or its least-squares refit (refit_rounds);
 * and its refusal when nothing was kept. */
#define VF_SEQ 2
#define VF_STRIDE 5
#define VF_SINK 3
#define VF_RECENT 20
static void check_output_curve(const float *q, const float *k, const float *v, uint32_t rounds)
{
    static const float ratios[2] = { 0.85f, 1.0f };
    float R[D * D] = {0}, center[NKV * D];
    for (uint32_t i = 0; i < D; i++) R[i * D + i] = 1.0f;
    for (uint32_t i = 0; i < NKV * D; i++) center[i] = 0.25f;
    for (uint32_t h = 0; h <= NKV; h++) { /* h == NKV: every head */
        uint32_t h0 = h == NKV ? 0 : h, h1 = h == NKV ? NKV : h + 1;
        double want[2] = {0, 0};
        uint64_t want_rows = 0;
        for (uint32_t sq = 0; sq < VF_SEQ; sq++) {
            const float *qs = q + (size_t)sq * T * NH * D, *ks = k + (size_t)sq * T * NKV * D, *vs = v + (size_t)sq * T * NKV * D;
            for (uint32_t hh = h0; hh < h1; hh++) {
                static float e[2][T][D];
                for (int r = 0; r < 2; r++)
                    for (uint32_t j = 0; j < T; j++) {
                        float x[D], y[D], scratch[D];
                        for (uint32_t a = 0; a < D; a++) x[a] = vs[((size_t)j * NKV + hh) * D + a] - 0.25f;
                        if (rounds)
                            ovk_int2_fake_quantize_refit(x, D, ovk_int2_clip_threshold(x, D, ratios[r], scratch), NULL,
                                                           NULL, rounds, y);
                        else ovk_int2_fake_quantize_row(x, D, D, ratios[r], y, scratch);
                        for (uint32_t a = 0; a < D; a++) e[r][j][a] = j < VF_SINK ? 0.0f : y[a] - x[a];
                    }
                for (uint32_t pos = VF_STRIDE - 1; pos < T; pos += VF_STRIDE) {
                    if (pos <= VF_SINK + VF_RECENT) continue; /* no INT2 token in sight */
                    for (uint32_t i = hh * GRP; i < (hh + 1) * GRP; i++, want_rows++) {
                        double pj[T];
                        naive_probs(qs, ks, pos, i, hh, pj);
                        for (int r = 0; r < 2; r++)
                            for (uint32_t a = 0; a < D; a++) {
                                double o = 0.0;
                                for (uint32_t j = 0; j < pos - VF_RECENT; j++) o += pj[j] * e[r][j][a];
                                want[r] += o * o;
                            }
                    }
                }
            }
        }
        for (int kept = 0; kept < 2; kept++) {
            ovk_calib_params p = test_params(1, 16);
            p.score_objective = 0;
            p.vfit_sequences = kept ? VF_SEQ : 0;
            p.vfit_query_stride = VF_STRIDE;
            p.vfit_sink = VF_SINK;
            p.vfit_recent = VF_RECENT;
            p.refit_rounds = rounds;
            ovk_calib *cal = NULL;
            CHECK_OK(ovk_calib_create(&p, &cal));
            if (!cal) return;
            for (uint32_t sq = 0; sq < NSEQ; sq++) { /* the third sequence is not kept */
                CHECK_OK(ovk_calib_begin_sequence(cal));
                size_t t0 = (size_t)sq * T;
                CHECK_OK(ovk_calib_add(cal, 0, 50, q + t0 * NH * D, k + t0 * NKV * D, v + t0 * NKV * D));
                t0 += 50;
                CHECK_OK(ovk_calib_add(cal, 0, T - 50, q + t0 * NH * D, k + t0 * NKV * D, v + t0 * NKV * D));
            }
            double got[2] = {0, 0};
            uint64_t rows = 0;
            uint32_t head = h == NKV ? OSCAR_CALIB_ALL_HEADS : h;
            if (!kept) {
                CHECK(!ovk_calib_has_output_fit(cal));
                CHECK_STATUS(ovk_calib_clip_curve_output(cal, 0, head, R, center, ratios, 2, got, &rows),
                             OSCAR_ERROR_INVALID_STATE);
            } else {
                CHECK(ovk_calib_has_output_fit(cal));
                CHECK_OK(ovk_calib_clip_curve_output(cal, 0, head, R, center, ratios, 2, got, &rows));
                double e0 = fabs(got[0] - want[0]) / want[0], e1 = fabs(got[1] - want[1]) / want[1];
                printf("output curve head %u, refit x%u: %.6g %.6g (naive %.6g %.6g), %llu queries\n", head, rounds, got[0],
                       got[1], want[0], want[1], (unsigned long long)rows);
                CHECK_MSG(rows == want_rows && e0 < 1e-4 && e1 < 1e-4, "output curve head %u, refit x%u: rel. error %.2e %.2e, "
                          "rows %llu vs %llu", head, rounds, e0, e1, (unsigned long long)rows, (unsigned long long)want_rows);
            }
            ovk_calib_destroy(cal);
        }
    }
}

/* The key clip curve with params.key_center_block = B (center: a pre-RoPE mean): each reservoir
 * key at position p is centered by RoPE(mean) averaged over its block. With B >= T every position
 * is in block 0, so the curve equals the constant-center curve with c = that average over
 * [0, B), to the bit; with B = 16 the centers differ by block and so does the curve. */
static void check_block_centers(const float *q, const float *k, const float *v)
{
    float theta[D / 2], mean[NKV * D], c0[NKV * D], R[D * D] = {0};
    for (uint32_t i = 0; i < D / 2; i++) theta[i] = powf(100.0f, -2.0f * i / D);
    for (uint32_t i = 0; i < NKV * D; i++) mean[i] = 3.0f * test_rng_normal();
    for (uint32_t i = 0; i < D; i++) R[i * D + i] = 1.0f;
    static const float ratios[3] = {0.8f, 0.9f, 1.0f};
    double sums[3][3] = {{0}}; /* [constant, B = 128, B = 16][ratio] */
    for (int run = 0; run < 3; run++) {
        ovk_calib_params p = test_params(1, 64);
        p.rope_theta = theta, p.rope_n_rot = D, p.key_center_block = run == 0 ? 0 : run == 1 ? 128 : 16;
        ovk_calib *cal;
        CHECK_OK(ovk_calib_create(&p, &cal));
        for (uint32_t s = 0; s < NSEQ; s++) {
            CHECK_OK(ovk_calib_begin_sequence(cal));
            CHECK_OK(ovk_calib_add(cal, 0, T, q + (size_t)s * T * NH * D, k + (size_t)s * T * NKV * D, v + (size_t)s * T * NKV * D));
        }
        for (uint32_t h = 0; h < NKV; h++) {
            ovk_rope_average(mean + h * D, D, D, OSCAR_ROPE_NORMAL, theta, 0, 128, c0 + h * D);
            uint64_t rows = 0;
            CHECK_OK(ovk_calib_clip_curve(cal, 0, h, 0, R, NULL, NULL, run ? mean : c0, ratios, 3, sums[run], &rows));
            CHECK(rows == 64);
        }
        ovk_calib_destroy(cal);
        if (run == 2) { /* without RoPE angles the block centers cannot be computed */
            p.rope_theta = NULL;
            CHECK_STATUS(ovk_calib_create(&p, &cal), OSCAR_ERROR_INVALID_ARGUMENT);
        }
    }
    CHECK_MSG(!memcmp(sums[0], sums[1], sizeof sums[0]), "blocks of 128 >= T: %.9g vs constant %.9g", sums[1][1], sums[0][1]);
    CHECK_MSG(fabs(sums[2][1] - sums[1][1]) > 1e-6 * sums[1][1], "blocks of 16 gave the curve of one block (%.9g)", sums[2][1]);
}

int main(void)
{
    test_rng_seed(42);
    size_t nq = (size_t)NSEQ * T * NH * D, nk = (size_t)NSEQ * T * NKV * D;
    float *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k), *v = malloc(nk * sizeof *v);
    for (size_t i = 0; i < nq; i++) q[i] = test_rng_normal() * (1.0f + (i % D == 3) * 4.0f);
    for (size_t i = 0; i < nk; i++) k[i] = test_rng_normal() + (i % D == 5) * 6.0f, v[i] = test_rng_normal() * 0.5f + 0.3f;

    /* naive references, per KV head, then mean over heads */
    double CK[D * D] = {0}, CV[D * D] = {0}, CS[D * D] = {0};
    for (uint32_t h = 0; h < NKV; h++) {
        double cq[D * D] = {0}, cv[D * D] = {0}, cs[D * D] = {0}, wsum = 0.0, o[D];
        for (uint32_t t = 0; t < NSEQ * T; t++)
            for (uint32_t i = h * GRP; i < (h + 1) * GRP; i++)
                for (uint32_t a = 0; a < D; a++)
                    for (uint32_t b = 0; b < D; b++)
                        cq[a * D + b] += (double)q[((size_t)t * NH + i) * D + a] * q[((size_t)t * NH + i) * D + b];
        for (int x = 0; x < D * D; x++) cq[x] /= (double)NSEQ * T * GRP;
        for (uint32_t t = 0; t < NSEQ * T; t++) {
            const float *kt = k + ((size_t)t * NKV + h) * D, *vt = v + ((size_t)t * NKV + h) * D;
            double w = 0.0;
            for (uint32_t a = 0; a < D; a++)
                for (uint32_t b = 0; b < D; b++) w += kt[a] * cq[a * D + b] * kt[b];
            wsum += w;
            for (uint32_t a = 0; a < D; a++)
                for (uint32_t b = 0; b < D; b++) cv[a * D + b] += w * vt[a] * vt[b];
        }
        for (uint32_t sq = 0; sq < NSEQ; sq++) {
            const float *qs = q + (size_t)sq * T * NH * D, *ks = k + (size_t)sq * T * NKV * D, *vs = v + (size_t)sq * T * NKV * D;
            for (uint32_t i = h * GRP; i < (h + 1) * GRP; i++)
                for (uint32_t pos = 0; pos < T; pos++) {
                    naive_attn(qs, ks, vs, pos, i, h, o);
                    for (uint32_t a = 0; a < D; a++)
                        for (uint32_t b = 0; b < D; b++) cs[a * D + b] += o[a] * o[b];
                }
        }
        for (int x = 0; x < D * D; x++) {
            CK[x] += cq[x] / NKV;
            CV[x] += cv[x] / wsum / NKV;
            CS[x] += cs[x] / ((double)NSEQ * T * GRP) / NKV;
        }
    }

    /* feed in uneven chunks: 40 + 56 tokens per sequence */
    for (int variant = 0; variant < 2; variant++) {
        ovk_calib_params p = test_params(2, 50);
        p.proxy_buffer_tokens = variant == 0 ? NSEQ * T : 100; /* exact vs streaming after 100 tokens */
        ovk_calib *cal = NULL;
        CHECK_OK(ovk_calib_create(&p, &cal));
        if (!cal) break;
        for (uint32_t sq = 0; sq < NSEQ; sq++) {
            CHECK_OK(ovk_calib_begin_sequence(cal));
            uint32_t cut[3] = {0, 40, T};
            for (int c = 0; c < 2; c++) {
                size_t t0 = (size_t)sq * T + cut[c];
                uint32_t n = cut[c + 1] - cut[c];
                CHECK_OK(ovk_calib_add(cal, 1, n, q + t0 * NH * D, k + t0 * NKV * D, v + t0 * NKV * D));
            }
        }
        CHECK(ovk_calib_tokens(cal, 1) == NSEQ * T && ovk_calib_tokens(cal, 0) == 0);
        double C[D * D];
        CHECK_OK(ovk_calib_covariance(cal, 1, OSCAR_CALIB_ALL_HEADS, OSCAR_CALIB_KEYS, C));
        double eK = max_rel(C, CK, D * D);
        CHECK_OK(ovk_calib_covariance(cal, 1, OSCAR_CALIB_ALL_HEADS, OSCAR_CALIB_VALUES_PROXY, C));
        double eV = max_rel(C, CV, D * D);
        CHECK_OK(ovk_calib_covariance(cal, 1, OSCAR_CALIB_ALL_HEADS, OSCAR_CALIB_VALUES_SCORES, C));
        double eS = max_rel(C, CS, D * D);
        printf("variant %d (proxy buffer %u): rel. error C_K %.2e  C_V(a) %.2e  C_S(b) %.2e\n", variant,
               p.proxy_buffer_tokens, eK, eV, eS);
        CHECK_MSG(eK < 1e-9, "C_K %g", eK);
        CHECK_MSG(eS < 1e-5, "C_S %g", eS); /* float32 attention */
        if (variant == 0) CHECK_MSG(eV < 1e-9, "C_V exact path %g", eV);
        else CHECK_MSG(eV < 0.1, "C_V streaming path %g", eV);
        CHECK_STATUS(ovk_calib_covariance(cal, 0, OSCAR_CALIB_ALL_HEADS, OSCAR_CALIB_KEYS, C), OSCAR_ERROR_INVALID_STATE);

        /* reservoir: full, rows are real rows of the right head */
        const float *rk, *rv;
        uint32_t n = 0;
        CHECK_OK(ovk_calib_reservoir(cal, 1, 1, &rk, &rv, &n));
        CHECK(n == 50);
        const uint32_t *rpos = ovk_calib_reservoir_positions(cal, 1, 1);
        CHECK(rpos && !ovk_calib_reservoir_positions(cal, 2, 0));
        int found_all = 1;
        for (uint32_t r = 0; r < n && rpos; r++) {
            int found = 0;
            for (uint32_t t = 0; t < NSEQ * T && !found; t++)
                found = memcmp(rk + (size_t)r * D, k + ((size_t)t * NKV + 1) * D, D * sizeof(float)) == 0 &&
                        memcmp(rv + (size_t)r * D, v + ((size_t)t * NKV + 1) * D, D * sizeof(float)) == 0 &&
                        rpos[r] == t % T; /* its position in its sequence */
            found_all &= found;
        }
        CHECK(found_all);
        ovk_calib_destroy(cal);
    }
    check_output_curve(q, k, v, 0);
    check_output_curve(q, k, v, 3); /* the default refit with G = D */
    check_block_centers(q, k, v);
    free(q);
    free(k);
    free(v);
    return test_finish();
}
