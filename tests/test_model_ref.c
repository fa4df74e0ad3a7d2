/* Model description, reference forward pass and random model generator.
 *
 * 1. Generated models of every architecture x weight type load with the hyperparameters they
 *    were written with, run, and decode greedily to more than one distinct token.
 * 2. The float reference matches an independent double-precision forward pass written here
 *    (RoPE as complex rotations, GQA by index arithmetic); RoPE is checked by hand on a known
 *    vector for both pairings.
 * 3. Prefill (all tokens at once, in chunks of any size) and decode (token by token) give
 *    identical logits; on-the-fly dequantization (of every weight, or of the vocabulary
 *    matrices only) equals pre-dequantized weights; the hooks see post-RoPE K/V equal to what
 *    the cache holds, a K/V transform takes effect, and a failing hook stops the evaluation.
 * 4. Bad files: truncated, missing tensor, wrong shape, unsupported architecture, unsupported
 *    tensor type, missing key, unsupported RoPE scaling -> the right status and a message
 *    naming the problem.
 * 5. With OSCAR_SMOLLM2_GGUF set: SmolLM2-135M greedy continuation of "The capital of France
 *    is" contains "Paris"; prints the text and tokens/s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gguf.h"
#include "model_desc.h"
#include "model_gen.h"
#include "model_ref.h"
#include "test_proc.h"
#include "test_util.h"
#include "tokenizer.h"

static const char *tmp_dir; /* the test's scratch folder */

/* ---- 1. generated models ------------------------------------------------------------------- */

static void check_generated(ovk_arch arch, uint32_t type, int tied)
{
    ovk_model_gen_params p = ovk_model_gen_params_default(arch);
    p.weight_type = p.embd_type = type;
    p.tied_embeddings = tied;
    p.seed = 7 + type;
    if (ovk_ggml_type_get(type)->block_size == 256) {
        p.n_embd = 256;
        p.n_head = 4;
        p.n_head_kv = 2;
        p.head_dim = 64;
        p.n_ff = 512;
    } else if (arch == OSCAR_ARCH_QWEN3) {
        p.head_dim = 32; /* q_dim 128 != n_embd 64: key_length is written */
    }
    char name[64];
    snprintf(name, sizeof name, "gen_%s_%s_%d.gguf", ovk_arch_name(arch), ovk_ggml_type_name(type), tied);
    const char *path = test_tmp_path(name);
    CHECK_OK(ovk_model_gen_write(&p, path));
    ovk_model_desc *m = NULL;
    CHECK_OK(ovk_model_desc_load(path, &m));
    if (!m) return;
    const ovk_model_hparams *hp = &m->hp;
    CHECK(hp->arch == arch);
    CHECK(hp->n_layer == p.n_layer && hp->n_embd == p.n_embd && hp->n_ff == p.n_ff);
    CHECK(hp->n_head == p.n_head && hp->n_head_kv == p.n_head_kv);
    CHECK(hp->head_dim == p.head_dim && hp->head_dim_v == p.head_dim && hp->n_rot == p.head_dim);
    CHECK(hp->n_vocab == p.n_vocab && hp->n_ctx_train == p.n_ctx_train);
    CHECK(hp->norm_eps == p.norm_eps && hp->rope_freq_base == p.rope_freq_base);
    CHECK(hp->rope_type == (arch == OSCAR_ARCH_LLAMA ? OSCAR_ROPE_NORMAL : OSCAR_ROPE_NEOX));
    CHECK(hp->tied_embeddings == tied && (tied ? m->output == m->token_embd : m->output != m->token_embd));
    CHECK(hp->has_qkv_bias == (arch == OSCAR_ARCH_QWEN2) && hp->has_qk_norm == (arch == OSCAR_ARCH_QWEN3));
    CHECK(m->layers[1].wq->type == type && m->token_embd->type == type);
    CHECK((m->layers[0].bq != NULL) == (arch == OSCAR_ARCH_QWEN2));
    CHECK((m->layers[0].q_norm != NULL) == (arch == OSCAR_ARCH_QWEN3));
    CHECK(m->fingerprint != 0 && m->fingerprint == ovk_model_fingerprint(m));

    /* Same parameters, same file: same fingerprint. Another seed: another fingerprint. */
    ovk_model_desc *m2 = NULL;
    CHECK_OK(ovk_model_gen_write(&p, test_tmp_path("gen_again.gguf")));
    CHECK_OK(ovk_model_desc_load(test_tmp_path("gen_again.gguf"), &m2));
    if (m2) CHECK(m2->fingerprint == m->fingerprint);
    ovk_model_desc_destroy(m2);
    m2 = NULL;
    p.seed += 1000;
    CHECK_OK(ovk_model_gen_write(&p, test_tmp_path("gen_again.gguf")));
    CHECK_OK(ovk_model_desc_load(test_tmp_path("gen_again.gguf"), &m2));
    if (m2) CHECK(m2->fingerprint != m->fingerprint);
    ovk_model_desc_destroy(m2);

    /* Tokenizer from the file's arrays, then greedy decoding. */
    ovk_tokenizer *tok = NULL;
    CHECK_OK(ovk_model_tokenizer_create(m->gguf, &tok));
    int32_t prompt[32], gen[16];
    size_t n_prompt = 0;
    const char *text = "<|im_start|>user\nthe capital of France is Paris<|im_end|>";
    if (tok) {
        CHECK_OK(ovk_tokenizer_encode(tok, text, strlen(text), 1, 1, prompt, 32, &n_prompt));
        CHECK(n_prompt > 5 && n_prompt < 32 && prompt[0] == 1 && prompt[n_prompt - 1] == 2);
        char back[128];
        size_t len = 0;
        CHECK_OK(ovk_tokenizer_decode(tok, prompt, n_prompt, 1, 0, back, sizeof back, &len));
        CHECK(len == strlen(text) && !memcmp(back, text, len));
        CHECK(ovk_tokenizer_find(tok, "\xC4\xA0Paris", 7) >= 0);
    }
    ovk_model_ref *r = NULL;
    CHECK_OK(ovk_model_ref_create(m, NULL, &r));
    if (r && n_prompt) {
        uint32_t n_gen = 0;
        CHECK_OK(ovk_model_ref_generate_greedy(r, prompt, (uint32_t)n_prompt, 16, NULL, NULL, gen, &n_gen));
        CHECK(n_gen == 16);
        int distinct = 0;
        for (uint32_t i = 0; i < n_gen; i++) {
            int seen = 0;
            for (uint32_t j = 0; j < i; j++) seen |= gen[j] == gen[i];
            distinct += !seen;
        }
        CHECK_MSG(distinct >= 3, "%s: greedy decoding gave only %d distinct tokens", name, distinct);
        CHECK(ovk_model_ref_n_past(r) == n_prompt + 15);
    }
    ovk_model_ref_destroy(r);
    ovk_tokenizer_destroy(tok);
    ovk_model_desc_destroy(m);
}

/* ---- 2. independent double-precision forward pass ------------------------------------------ */

static const float *tdata(const ovk_gguf *g, const char *fmt, int il)
{
    char name[96];
    snprintf(name, sizeof name, fmt, il);
    const ovk_gguf_tensor *t = ovk_gguf_find_tensor(g, name);
    if (!t) return NULL;
    CHECK(t->type == OSCAR_GGML_TYPE_F32);
    return t->data;
}

/* y[o] = sum_i W[o*n_in + i] x[i] (+ b[o]) */
static void nmatvec(const float *W, const float *b, const double *x, double *y, int n_in, int n_out)
{
    for (int o = 0; o < n_out; o++) {
        double s = b ? b[o] : 0.0;
        for (int i = 0; i < n_in; i++) s += (double)W[(size_t)o * n_in + i] * x[i];
        y[o] = s;
    }
}

static void nrmsnorm(double *y, const double *x, const float *w, int n, double eps)
{
    double ss = 0;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    double inv = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++) y[i] = x[i] * inv * w[i];
}

/* RoPE as multiplication of complex pairs by e^{i pos theta_j}. */
static void nrope(double *x, int n_rot, int neox, double base, double scale, int pos)
{
    int half = n_rot / 2;
    for (int j = 0; j < half; j++) {
        double theta = pow(base, -2.0 * j / n_rot) / scale;
        double complex_re = cos(pos * theta), complex_im = sin(pos * theta);
        int a = neox ? j : 2 * j, b = neox ? j + half : 2 * j + 1;
        double re = x[a], im = x[b];
        x[a] = re * complex_re - im * complex_im;
        x[b] = re * complex_im + im * complex_re;
    }
}

/* Logits [n][n_vocab] for tokens at positions 0..n-1, in double. */
static void naive_forward(const ovk_model_desc *m, const int32_t *tokens, int n, double *logits)
{
    const ovk_gguf *g = m->gguf;
    const ovk_model_hparams *hp = &m->hp;
    int E = (int)hp->n_embd, H = (int)hp->n_head, KV = (int)hp->n_head_kv, D = (int)hp->head_dim;
    int F = (int)hp->n_ff, V = (int)hp->n_vocab, NL = (int)hp->n_layer;
    double eps = hp->norm_eps, scale = hp->rope_scaling == OSCAR_ROPE_SCALING_LINEAR ? hp->rope_scale_factor : 1.0;
    int neox = hp->arch != OSCAR_ARCH_LLAMA;
    double *kc = calloc((size_t)NL * n * KV * D, sizeof *kc), *vc = calloc((size_t)NL * n * KV * D, sizeof *vc);
    double *x = calloc(E, sizeof *x), *h = calloc(E, sizeof *h), *q = calloc(H * D, sizeof *q);
    double *o = calloc(H * D, sizeof *o), *t1 = calloc(F > E ? F : E, sizeof *t1), *t2 = calloc(F, sizeof *t2);
    double *att = calloc(n, sizeof *att);
    const float *emb = tdata(g, "token_embd.weight", 0);
    const float *out = tdata(g, "output.weight", 0);
    if (!out) out = emb;
    for (int p = 0; p < n; p++) {
        for (int i = 0; i < E; i++) x[i] = emb[(size_t)tokens[p] * E + i];
        for (int l = 0; l < NL; l++) {
            double *kp = kc + ((size_t)l * n + p) * KV * D, *vp = vc + ((size_t)l * n + p) * KV * D;
            nrmsnorm(h, x, tdata(g, "blk.%d.attn_norm.weight", l), E, eps);
            nmatvec(tdata(g, "blk.%d.attn_q.weight", l), tdata(g, "blk.%d.attn_q.bias", l), h, q, E, H * D);
            nmatvec(tdata(g, "blk.%d.attn_k.weight", l), tdata(g, "blk.%d.attn_k.bias", l), h, kp, E, KV * D);
            nmatvec(tdata(g, "blk.%d.attn_v.weight", l), tdata(g, "blk.%d.attn_v.bias", l), h, vp, E, KV * D);
            const float *qn = tdata(g, "blk.%d.attn_q_norm.weight", l), *kn = tdata(g, "blk.%d.attn_k_norm.weight", l);
            for (int hh = 0; hh < H; hh++) {
                if (qn) nrmsnorm(q + hh * D, q + hh * D, qn, D, eps);
                nrope(q + hh * D, (int)hp->n_rot, neox, hp->rope_freq_base, scale, p);
            }
            for (int hh = 0; hh < KV; hh++) {
                if (kn) nrmsnorm(kp + hh * D, kp + hh * D, kn, D, eps);
                nrope(kp + hh * D, (int)hp->n_rot, neox, hp->rope_freq_base, scale, p);
            }
            for (int hh = 0; hh < H; hh++) {
                int kvh = hh * KV / H; /* GQA: H/KV consecutive query heads per KV head */
                double mx = -1e300, sum = 0;
                for (int j = 0; j <= p; j++) {
                    const double *kj = kc + ((size_t)l * n + j) * KV * D + kvh * D;
                    double s = 0;
                    for (int d = 0; d < D; d++) s += q[hh * D + d] * kj[d];
                    att[j] = s / sqrt((double)D);
                    if (att[j] > mx) mx = att[j];
                }
                for (int j = 0; j <= p; j++) sum += (att[j] = exp(att[j] - mx));
                for (int d = 0; d < D; d++) {
                    double s = 0;
                    for (int j = 0; j <= p; j++) s += att[j] / sum * vc[((size_t)l * n + j) * KV * D + kvh * D + d];
                    o[hh * D + d] = s;
                }
            }
            nmatvec(tdata(g, "blk.%d.attn_output.weight", l), NULL, o, t1, H * D, E);
            for (int i = 0; i < E; i++) x[i] += t1[i];
            nrmsnorm(h, x, tdata(g, "blk.%d.ffn_norm.weight", l), E, eps);
            nmatvec(tdata(g, "blk.%d.ffn_gate.weight", l), NULL, h, t1, E, F);
            nmatvec(tdata(g, "blk.%d.ffn_up.weight", l), NULL, h, t2, E, F);
            for (int i = 0; i < F; i++) t1[i] = t1[i] / (1.0 + exp(-t1[i])) * t2[i];
            nmatvec(tdata(g, "blk.%d.ffn_down.weight", l), NULL, t1, h, F, E);
            for (int i = 0; i < E; i++) x[i] += h[i];
        }
        nrmsnorm(h, x, tdata(g, "output_norm.weight", 0), E, eps);
        nmatvec(out, NULL, h, logits + (size_t)p * V, E, V);
    }
    free(kc); free(vc); free(x); free(h); free(q); free(o); free(t1); free(t2); free(att);
}

static void check_vs_naive(ovk_arch arch, uint32_t n_rot, const char *scaling, int tied)
{
    ovk_model_gen_params p = ovk_model_gen_params_default(arch);
    p.n_layer = 2;
    p.n_embd = 32;
    p.n_head = 4;
    p.n_head_kv = 2;
    p.head_dim = 8;
    p.n_ff = 64;
    p.n_rot = n_rot;
    p.rope_freq_base = 100.0f; /* fast rotations make orientation errors visible in a few steps */
    p.tied_embeddings = tied;
    p.seed = 99;
    if (scaling) {
        p.rope_scaling = scaling;
        p.rope_scale_factor = 2.0f;
    }
    const char *path = test_tmp_path("naive.gguf");
    CHECK_OK(ovk_model_gen_write(&p, path));
    ovk_model_desc *m = NULL;
    ovk_model_ref *r = NULL;
    CHECK_OK(ovk_model_desc_load(path, &m));
    if (!m) return;
    CHECK_OK(ovk_model_ref_create(m, NULL, &r));
    enum { N = 5 };
    const int32_t tokens[N] = {1, 77, 300, 5, 77};
    uint32_t V = m->hp.n_vocab;
    float *lf = malloc(sizeof(float) * N * V);
    double *ld = malloc(sizeof(double) * N * V);
    if (r) CHECK_OK(ovk_model_ref_eval(r, tokens, N, 0, lf, 1));
    naive_forward(m, tokens, N, ld);
    double max_err = 0, max_ref = 0;
    for (size_t i = 0; i < (size_t)N * V; i++) {
        double e = fabs(lf[i] - ld[i]);
        if (e > max_err) max_err = e;
        if (fabs(ld[i]) > max_ref) max_ref = fabs(ld[i]);
    }
    CHECK_MSG(max_err <= 1e-4 * max_ref && max_ref > 0.5, "%s n_rot %u %s: max |float - double| %g, max |logit| %g",
              ovk_arch_name(arch), n_rot, scaling ? scaling : "", max_err, max_ref);
    /* The other RoPE pairing must disagree with the naive pass, or this test proves nothing. */
    if (r) {
        m->hp.rope_type = m->hp.rope_type == OSCAR_ROPE_NEOX ? OSCAR_ROPE_NORMAL : OSCAR_ROPE_NEOX;
        ovk_model_ref_reset(r);
        CHECK_OK(ovk_model_ref_eval(r, tokens, N, 0, lf, 1));
        double err2 = 0;
        for (size_t i = (size_t)(N - 1) * V; i < (size_t)N * V; i++)
            if (fabs(lf[i] - ld[i]) > err2) err2 = fabs(lf[i] - ld[i]);
        CHECK_MSG(err2 > 100 * max_err + 1e-3, "swapped RoPE pairing not detected (%g vs %g)", err2, max_err);
    }
    free(lf);
    free(ld);
    ovk_model_ref_destroy(r);
    ovk_model_desc_destroy(m);
}

static void check_rope_by_hand(void)
{
    /* head_dim 4, base 10000: theta = {1, 10000^(-1/2) = 0.01}; x = (1, 2, 3, 4) at pos 1. */
    const float theta[2] = {1.0f, 0.01f};
    float x[4] = {1, 2, 3, 4};
    double c1 = cos(1.0), s1 = sin(1.0), c2 = cos(0.01), s2 = sin(0.01);
    ovk_rope_apply(x, 4, 4, OSCAR_ROPE_NORMAL, theta, 1);
    double want_n[4] = {1 * c1 - 2 * s1, 1 * s1 + 2 * c1, 3 * c2 - 4 * s2, 3 * s2 + 4 * c2};
    for (int i = 0; i < 4; i++) CHECK_MSG(fabs(x[i] - want_n[i]) < 1e-6, "normal rope x[%d] %g want %g", i, x[i], want_n[i]);
    float y[4] = {1, 2, 3, 4};
    ovk_rope_apply(y, 4, 4, OSCAR_ROPE_NEOX, theta, 1);
    double want_x[4] = {1 * c1 - 3 * s1, 2 * c2 - 4 * s2, 1 * s1 + 3 * c1, 2 * s2 + 4 * c2};
    for (int i = 0; i < 4; i++) CHECK_MSG(fabs(y[i] - want_x[i]) < 1e-6, "neox rope y[%d] %g want %g", i, y[i], want_x[i]);
    /* Partial rotation: dims >= n_rot pass unchanged; position 0 is the identity. */
    float z[4] = {1, 2, 3, 4};
    ovk_rope_apply(z, 4, 2, OSCAR_ROPE_NORMAL, theta, 3);
    CHECK(z[2] == 3 && z[3] == 4 && fabsf(z[0] - (float)(cos(3.0) - 2 * sin(3.0))) < 1e-6);
    float w[4] = {1, 2, 3, 4};
    ovk_rope_apply(w, 4, 4, OSCAR_ROPE_NEOX, theta, 0);
    CHECK(w[0] == 1 && w[1] == 2 && w[2] == 3 && w[3] == 4);

    /* The loaded model's table: theta_i = base^(-2i/n_rot), / factor for linear scaling. */
    ovk_model_gen_params p = ovk_model_gen_params_default(OSCAR_ARCH_LLAMA);
    p.rope_freq_base = 10000.0f;
    p.rope_scaling = "linear";
    p.rope_scale_factor = 4.0f;
    CHECK_OK(ovk_model_gen_write(&p, test_tmp_path("rope.gguf")));
    ovk_model_desc *m = NULL;
    CHECK_OK(ovk_model_desc_load(test_tmp_path("rope.gguf"), &m));
    if (m) {
        CHECK(m->hp.rope_scaling == OSCAR_ROPE_SCALING_LINEAR && m->hp.rope_scale_factor == 4.0f);
        for (uint32_t i = 0; i < m->hp.n_rot / 2; i++) {
            double want = pow(10000.0, -2.0 * i / m->hp.n_rot) / 4.0;
            CHECK_MSG(fabs(m->rope_theta[i] - want) <= 1e-6 * want, "theta[%u] %g want %g", i, m->rope_theta[i], want);
        }
    }
    ovk_model_desc_destroy(m);

    /* llama3 scaling: short wavelengths keep theta, long ones are divided by the factor. */
    p.rope_scaling = "llama3";
    p.rope_scale_factor = 8.0f;
    p.rope_orig_ctx = 64;
    p.head_dim = 16;
    CHECK_OK(ovk_model_gen_write(&p, test_tmp_path("rope3.gguf")));
    m = NULL;
    CHECK_OK(ovk_model_desc_load(test_tmp_path("rope3.gguf"), &m));
    if (m) {
        uint32_t half = m->hp.n_rot / 2;
        double th0 = 1.0, thl = pow(10000.0, -2.0 * (half - 1) / m->hp.n_rot);
        CHECK(m->hp.rope_scaling == OSCAR_ROPE_SCALING_LLAMA3);
        CHECK(fabs(m->rope_theta[0] - th0) < 1e-6);                   /* wavelength 2pi < 64/4 */
        CHECK(fabs(m->rope_theta[half - 1] - thl / 8.0) < 1e-6 * thl); /* wavelength > 64 */
    }
    ovk_model_desc_destroy(m);
}

/* ---- 3. KV-cache consistency and hooks --------------------------------------------------------- */

typedef struct hook_log {
    const ovk_model_ref *r;
    uint32_t calls, k_dim, v_dim;
    float k_seen[8][2][64]; /* [pos][layer][k_dim] first positions */
    int order_ok;
    uint32_t last_layer, last_pos;
} hook_log;

/* ovk_rope_average (closed form) against the plain mean of ovk_rope_apply over the
 * positions, for both pair layouts, a partial rotation, and a range far from 0. */
static void check_rope_average(void)
{
    enum { D = 16 };
    float theta[D / 2], x[D];
    for (int i = 0; i < D / 2; i++) theta[i] = powf(10000.0f, -2.0f * (float)i / D);
    theta[D / 2 - 1] = 0.0f; /* a pair that never turns: its mean is itself */
    for (int i = 0; i < D; i++) x[i] = (float)(i % 5) - 1.5f;
    static const uint32_t ranges[][2] = { { 0, 1 }, { 4, 64 }, { 64, 2048 }, { 30000, 30333 } };
    for (int neox = 0; neox < 2; neox++)
        for (uint32_t n_rot = 12; n_rot <= D; n_rot += 4)
            for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++) {
                double sum[D] = { 0 };
                float y[D], got[D];
                for (uint32_t p = ranges[r][0]; p < ranges[r][1]; p++) {
                    memcpy(y, x, sizeof y);
                    ovk_rope_apply(y, D, n_rot, neox ? OSCAR_ROPE_NEOX : OSCAR_ROPE_NORMAL, theta, p);
                    for (int i = 0; i < D; i++) sum[i] += y[i];
                }
                ovk_rope_average(x, D, n_rot, neox ? OSCAR_ROPE_NEOX : OSCAR_ROPE_NORMAL, theta, ranges[r][0], ranges[r][1], got);
                double worst = 0;
                for (int i = 0; i < D; i++) {
                    double e = fabs(got[i] - sum[i] / (ranges[r][1] - ranges[r][0]));
                    if (e > worst) worst = e;
                }
                /* float angles in ovk_rope_apply lose ~p * 2^-24 radians at large p */
                CHECK_MSG(worst < 1e-4 * (1.0 + ranges[r][1] / 1000.0), "rope average neox %d n_rot %u positions %u..%u: max error %.3g",
                          neox, n_rot, ranges[r][0], ranges[r][1], worst);
            }
    float same[D];
    ovk_rope_average(x, D, D, OSCAR_ROPE_NORMAL, theta, 9, 9, same); /* empty range: x itself */
    CHECK(!memcmp(same, x, sizeof x));
}

/* Logs the batch's tokens one by one (calls counts tokens, not batches). */
static oscar_status qkv_hook(void *user, uint32_t layer, uint32_t pos0, uint32_t n, const float *q, const float *k,
                             const float *v)
{
    hook_log *h = user;
    (void)q; (void)v;
    for (uint32_t t = 0; t < n; t++) {
        uint32_t pos = pos0 + t;
        if (h->calls && (layer < h->last_layer)) h->order_ok = 0;
        h->last_layer = layer;
        h->last_pos = pos;
        if (pos < 8 && layer < 2) memcpy(h->k_seen[pos][layer], k + (size_t)t * h->k_dim, h->k_dim * sizeof(float));
        h->calls++;
    }
    return OSCAR_OK;
}

static void zero_v(void *user, uint32_t layer, uint32_t pos, float *k, float *v)
{
    uint32_t *n = user;
    (void)layer; (void)pos; (void)k;
    for (uint32_t i = 0; i < n[0]; i++) v[i] = 0.0f;
    n[1]++;
}

/* Fails in layer 1 of the batch that starts at position *(uint32_t *)user. */
static oscar_status failing_hook(void *user, uint32_t layer, uint32_t pos0, uint32_t n, const float *q,
                                 const float *k, const float *v)
{
    (void)n; (void)q; (void)k; (void)v;
    return layer == 1 && pos0 == *(const uint32_t *)user ? OSCAR_ERROR_INVALID_ARGUMENT : OSCAR_OK;
}

static void check_prefill_vs_decode(ovk_arch arch, uint32_t type)
{
    ovk_model_gen_params p = ovk_model_gen_params_default(arch);
    p.weight_type = p.embd_type = type;
    p.seed = 5;
    CHECK_OK(ovk_model_gen_write(&p, test_tmp_path("kv.gguf")));
    ovk_model_desc *m = NULL;
    CHECK_OK(ovk_model_desc_load(test_tmp_path("kv.gguf"), &m));
    if (!m) return;
    enum { N = 20 };
    int32_t toks[N];
    for (int i = 0; i < N; i++) toks[i] = (int32_t)((i * 37 + 11) % m->hp.n_vocab);
    uint32_t V = m->hp.n_vocab;
    float *all = malloc(sizeof(float) * N * V), *one = malloc(sizeof(float) * V);
    float *chunk = malloc(sizeof(float) * N * V);

    hook_log *log = calloc(1, sizeof *log);
    log->order_ok = 1;
    log->k_dim = m->hp.n_head_kv * m->hp.head_dim;
    ovk_model_ref_params rp = ovk_model_ref_params_default();
    rp.qkv_hook = qkv_hook;
    rp.qkv_hook_user = log;
    ovk_model_ref *r = NULL;
    CHECK_OK(ovk_model_ref_create(m, &rp, &r));
    if (!r) goto done;
    CHECK_OK(ovk_model_ref_eval(r, toks, N, 0, all, 1));
    CHECK(log->calls == N * m->hp.n_layer && log->order_ok && log->last_pos == N - 1);
    /* The hook saw exactly what the cache holds (no transform installed). */
    float *kc;
    ovk_model_ref_kv_cache(r, 1, &kc, NULL);
    CHECK(!memcmp(kc + 3 * log->k_dim, log->k_seen[3][1], log->k_dim * sizeof(float)));

    /* Token by token: bit-identical to the batched run. */
    ovk_model_ref_reset(r);
    double max_diff = 0;
    for (int i = 0; i < N; i++) {
        CHECK_OK(ovk_model_ref_eval(r, &toks[i], 1, (uint32_t)i, one, 0));
        for (uint32_t v = 0; v < V; v++) {
            double d = fabs(one[v] - all[(size_t)i * V + v]);
            if (d > max_diff) max_diff = d;
        }
    }
    CHECK_MSG(max_diff <= 1e-5, "%s %s: prefill vs decode max diff %g", ovk_arch_name(arch),
              ovk_ggml_type_name(type), max_diff);
    CHECK(max_diff == 0.0);

    /* Prefill 7, decode the rest in chunks of 5, with batch size 3 inside. */
    ovk_model_ref_destroy(r);
    r = NULL;
    rp = ovk_model_ref_params_default();
    rp.max_batch = 3;
    rp.predequantize = 0; /* rows dequantized on the fly: same floats, same sums */
    CHECK_OK(ovk_model_ref_create(m, &rp, &r));
    if (!r) goto done;
    CHECK_OK(ovk_model_ref_eval(r, toks, 7, 0, chunk, 1));
    for (uint32_t s = 7; s < N; s += 5) {
        uint32_t n = N - s < 5 ? N - s : 5;
        CHECK_OK(ovk_model_ref_eval(r, toks + s, n, s, chunk + (size_t)s * V, 1));
    }
    CHECK(!memcmp(chunk, all, sizeof(float) * N * V));
    /* Rewind: re-evaluating position 10 onward reproduces the same logits. */
    CHECK_OK(ovk_model_ref_eval(r, toks + 10, 4, 10, one, 0));
    CHECK(!memcmp(one, all + (size_t)13 * V, sizeof(float) * V));
    CHECK(ovk_model_ref_n_past(r) == 14);
    /* Argument errors. */
    CHECK_STATUS(ovk_model_ref_eval(r, toks, 1, 15, one, 0), OSCAR_ERROR_INVALID_ARGUMENT);
    int32_t bad = (int32_t)V;
    CHECK_STATUS(ovk_model_ref_eval(r, &bad, 1, 0, one, 0), OSCAR_ERROR_INVALID_ARGUMENT);
    ovk_model_ref_destroy(r);
    r = NULL;

    /* A K/V transform takes effect: V = 0 makes every attention output 0. */
    uint32_t zv[2] = {m->hp.n_head_kv * m->hp.head_dim_v, 0};
    rp = ovk_model_ref_params_default();
    rp.kv_transform = zero_v;
    rp.kv_transform_user = zv;
    rp.n_ctx = 8;
    CHECK_OK(ovk_model_ref_create(m, &rp, &r));
    if (!r) goto done;
    CHECK_OK(ovk_model_ref_eval(r, toks, 8, 0, chunk, 1));
    CHECK(zv[1] == 8 * m->hp.n_layer);
    CHECK(memcmp(chunk, all, sizeof(float) * 8 * V) != 0);
    float *vc;
    ovk_model_ref_kv_cache(r, 0, NULL, &vc);
    CHECK(vc[0] == 0.0f && vc[7 * zv[0] + zv[0] - 1] == 0.0f);
    CHECK_STATUS(ovk_model_ref_eval(r, toks, 1, 8, one, 0), OSCAR_ERROR_CONTEXT_FULL);
    ovk_model_ref_destroy(r);
    r = NULL;

    /* Token embedding and LM head left quantized: the same floats, the same logits. A hook
     * that fails stops the evaluation with its status; n_past is then where its batch began. */
    uint32_t fail_at = 8;
    rp = ovk_model_ref_params_default();
    rp.vocab_on_the_fly = 1;
    rp.max_batch = 4;
    rp.qkv_hook = failing_hook;
    rp.qkv_hook_user = &fail_at;
    CHECK_OK(ovk_model_ref_create(m, &rp, &r));
    if (!r) goto done;
    CHECK_OK(ovk_model_ref_eval(r, toks, 8, 0, chunk, 1));
    CHECK(!memcmp(chunk, all, sizeof(float) * 8 * V));
    CHECK_STATUS(ovk_model_ref_eval(r, toks + 8, 6, 8, chunk, 1), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(ovk_model_ref_n_past(r) == 8);
done:
    ovk_model_ref_destroy(r);
    free(log);
    free(all);
    free(one);
    free(chunk);
    ovk_model_desc_destroy(m);
}

/* ---- 4. bad files ------------------------------------------------------------------------------ */

typedef struct rewrite_spec {
    const char *drop_tensor;   /* omit this tensor */
    const char *drop_key;      /* omit this key */
    const char *str_key;       /* set this string key ... */
    const char *str_value;     /* ... to this */
    const char *shape_tensor;  /* halve ne[1] of this tensor (keeping the first half of its data) */
} rewrite_spec;

static oscar_status rewrite(const char *src, const char *dst, const rewrite_spec *s)
{
    ovk_gguf *g = NULL;
    ovk_gguf_writer *w = NULL;
    oscar_status st = ovk_gguf_open(src, &g);
    if (st) return st;
    if ((st = ovk_gguf_writer_create(&w))) goto out;
    for (uint64_t i = 0; i < g->n_kv; i++) {
        if (s->drop_key && !strcmp(g->kv[i].key, s->drop_key)) continue;
        if (s->str_key && !strcmp(g->kv[i].key, s->str_key)) continue;
        if ((st = ovk_gguf_writer_copy_kv(w, &g->kv[i]))) goto out;
    }
    if (s->str_key && (st = ovk_gguf_writer_set_str(w, s->str_key, s->str_value))) goto out;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const ovk_gguf_tensor *t = &g->tensors[i];
        if (s->drop_tensor && !strcmp(t->name, s->drop_tensor)) continue;
        uint64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
        if (s->shape_tensor && !strcmp(t->name, s->shape_tensor)) ne[1] /= 2;
        if ((st = ovk_gguf_writer_add_tensor_ref(w, t->name, t->type, t->n_dims, ne, t->data))) goto out;
    }
    st = ovk_gguf_writer_write_file(w, dst);
out:
    ovk_gguf_writer_destroy(w);
    ovk_gguf_close(g);
    return st;
}

static void expect_load_error(const char *path, oscar_status want, const char *needle1, const char *needle2)
{
    ovk_model_desc *m = NULL;
    oscar_status st = ovk_model_desc_load(path, &m);
    const char *msg = oscar_last_error();
    CHECK_MSG(st == want, "%s: status %s, want %s (%s)", path, oscar_status_string(st), oscar_status_string(want), msg);
    CHECK(m == NULL);
    CHECK_MSG(strstr(msg, needle1) != NULL, "message \"%s\" does not name \"%s\"", msg, needle1);
    if (needle2) CHECK_MSG(strstr(msg, needle2) != NULL, "message \"%s\" does not name \"%s\"", msg, needle2);
    ovk_model_desc_destroy(m);
}

static void check_bad_files(void)
{
    ovk_model_gen_params p = ovk_model_gen_params_default(OSCAR_ARCH_QWEN2);
    const char *good = test_tmp_path("good.gguf");
    CHECK_OK(ovk_model_gen_write(&p, good));

    /* Truncated */
    {
        CHECK(test_copy_head(good, test_tmp_path("trunc.gguf"), -100) > 0);
        ovk_model_desc *m = NULL;
        CHECK_STATUS(ovk_model_desc_load(test_tmp_path("trunc.gguf"), &m), OSCAR_ERROR_BAD_FORMAT);
        CHECK(m == NULL && strstr(oscar_last_error(), "trunc.gguf") != NULL);
    }
    /* One change each to the good file, and the load error it must give (both strings in the
     * message; NULL: any). */
    static const struct {
        rewrite_spec change;
        oscar_status status;
        const char *needle1, *needle2;
    } bad[] = {
        { { .drop_tensor = "blk.1.ffn_up.weight" }, OSCAR_ERROR_BAD_FORMAT, "blk.1.ffn_up.weight", "missing" },
        /* qwen2 requires its biases */
        { { .drop_tensor = "blk.0.attn_k.bias" }, OSCAR_ERROR_BAD_FORMAT, "blk.0.attn_k.bias", "missing" },
        { { .shape_tensor = "blk.0.attn_k.weight" }, OSCAR_ERROR_BAD_FORMAT, "blk.0.attn_k.weight",
          "ne[1] = 16, expected 32" },
        { { .str_key = "general.architecture", .str_value = "mamba" }, OSCAR_ERROR_UNSUPPORTED_FORMAT,
          "general.architecture", "mamba" },
        { { .drop_key = "qwen2.block_count" }, OSCAR_ERROR_BAD_FORMAT, "qwen2.block_count", NULL },
        { { .str_key = "qwen2.rope.scaling.type", .str_value = "yarn" }, OSCAR_ERROR_UNSUPPORTED_FORMAT,
          "rope.scaling.type", "yarn" },
        /* a qwen2 file relabelled qwen3: its keys are under qwen2., so qwen3.block_count is missing */
        { { .str_key = "general.architecture", .str_value = "qwen3" }, OSCAR_ERROR_BAD_FORMAT, "qwen3.block_count",
          NULL },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "bad%zu.gguf", i + 1);
        CHECK_OK(rewrite(good, test_tmp_path(name), &bad[i].change));
        expect_load_error(test_tmp_path(name), bad[i].status, bad[i].needle1, bad[i].needle2);
    }

    /* Unsupported weight type: Q5_0 (the file is valid GGUF, the runtime does not run it). */
    ovk_model_gen_params q = ovk_model_gen_params_default(OSCAR_ARCH_LLAMA);
    q.weight_type = OSCAR_GGML_TYPE_Q5_0;
    CHECK_OK(ovk_model_gen_write(&q, test_tmp_path("bad8.gguf")));
    expect_load_error(test_tmp_path("bad8.gguf"), OSCAR_ERROR_UNSUPPORTED_FORMAT, "blk.0.attn_q.weight", "Q5_0");

    /* Not a file at all. */
    ovk_model_desc *m = NULL;
    CHECK_STATUS(ovk_model_desc_load(test_tmp_path("does-not-exist.gguf"), &m), OSCAR_ERROR_IO);
    CHECK_STATUS(ovk_model_desc_load(NULL, &m), OSCAR_ERROR_INVALID_ARGUMENT);
    ovk_model_desc_destroy(NULL);
    ovk_model_ref_destroy(NULL);
}

/* ---- 5. SmolLM2-135M ---------------------------------------------------------------------------- */

static int stop_eog(void *user, int32_t token) { return ovk_tokenizer_is_eog(user, token); }

static void check_smollm2(const char *path)
{
    ovk_model_desc *m = NULL;
    ovk_tokenizer *tok = NULL;
    ovk_model_ref *r = NULL;
    CHECK_OK(ovk_model_desc_load(path, &m));
    if (!m) return;
    const ovk_model_hparams *hp = &m->hp;
    CHECK(hp->arch == OSCAR_ARCH_LLAMA && hp->n_layer == 30 && hp->n_embd == 576 && hp->n_head == 9);
    CHECK(hp->n_head_kv == 3 && hp->head_dim == 64 && hp->n_ff == 1536 && hp->n_vocab == 49152);
    CHECK(hp->tied_embeddings && hp->rope_freq_base == 100000.0f && hp->n_ctx_train == 8192);
    printf("SmolLM2 fingerprint %016llx\n", (unsigned long long)m->fingerprint);
    CHECK_OK(ovk_model_tokenizer_create(m->gguf, &tok));
    double t0 = test_now();
    ovk_model_ref_params rp = ovk_model_ref_params_default();
    rp.n_ctx = 256;
    CHECK_OK(ovk_model_ref_create(m, &rp, &r));
    double t_load = test_now() - t0;
    if (!tok || !r) goto done;
    const char *prompt = "The capital of France is";
    int32_t ids[64], gen[16];
    size_t n_ids = 0;
    CHECK_OK(ovk_tokenizer_encode(tok, prompt, strlen(prompt), 1, 0, ids, 64, &n_ids));
    printf("prompt ids:");
    for (size_t i = 0; i < n_ids; i++) printf(" %d", ids[i]);
    printf("\n");
    float *logits = malloc(sizeof(float) * hp->n_vocab);
    t0 = test_now();
    CHECK_OK(ovk_model_ref_eval(r, ids, (uint32_t)n_ids, 0, logits, 0));
    double t_prompt = test_now() - t0;
    uint32_t n_gen = 0;
    for (; n_gen < 16; n_gen++) {
        gen[n_gen] = (int32_t)ovk_argmax(logits, hp->n_vocab);
        if (ovk_tokenizer_is_eog(tok, gen[n_gen])) { n_gen++; break; }
        if (n_gen + 1 < 16) CHECK_OK(ovk_model_ref_eval(r, &gen[n_gen], 1, (uint32_t)n_ids + n_gen, logits, 0));
    }
    double t_gen = test_now() - t0 - t_prompt;
    char text[1024];
    size_t len = 0;
    CHECK_OK(ovk_tokenizer_decode(tok, gen, n_gen, 1, 0, text, sizeof text - 1, &len));
    text[len < sizeof text ? len : sizeof text - 1] = 0;
    printf("greedy ids:");
    for (uint32_t i = 0; i < n_gen; i++) printf(" %d", gen[i]);
    printf("\ncontinuation: \"%s\"\n", text);
    printf("load+dequantize %.2f s; prompt %zu tokens in %.3f s (%.1f tok/s); decode %u tokens in %.3f s (%.2f tok/s)\n",
           t_load, n_ids, t_prompt, n_ids / t_prompt, n_gen > 0 ? n_gen - 1 : 0, t_gen,
           n_gen > 1 ? (n_gen - 1) / t_gen : 0.0);
    CHECK_MSG(strstr(text, "Paris") != NULL, "continuation lacks Paris: %s", text);
    /* The greedy helper gives the same tokens. */
    int32_t gen2[16];
    uint32_t n2 = 0;
    CHECK_OK(ovk_model_ref_generate_greedy(r, ids, (uint32_t)n_ids, 16, stop_eog, tok, gen2, &n2));
    CHECK(n2 == n_gen && !memcmp(gen, gen2, n_gen * sizeof *gen));
    free(logits);

    /* Perplexity of ordinary text with the adjacent-pair RoPE llama GGUFs need, and with the
     * other pairing: a wrong RoPE orientation shows here even where greedy text survives. */
    const char *para = "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. "
                       "It is named after the engineer Gustave Eiffel, whose company designed and built the "
                       "tower from 1887 to 1889.";
    int32_t pids[128];
    size_t np = 0;
    CHECK_OK(ovk_tokenizer_encode(tok, para, strlen(para), 0, 0, pids, 128, &np));
    float *all = malloc(sizeof(float) * hp->n_vocab * np);
    double ppl[2] = {0, 0};
    for (int mode = 0; mode < 2 && all && np > 1; mode++) {
        m->hp.rope_type = mode ? OSCAR_ROPE_NEOX : OSCAR_ROPE_NORMAL;
        ovk_model_ref_reset(r);
        CHECK_OK(ovk_model_ref_eval(r, pids, (uint32_t)np, 0, all, 1));
        double nll = 0;
        for (size_t t = 0; t + 1 < np; t++) {
            const float *l = all + t * hp->n_vocab;
            double mx = l[ovk_argmax(l, hp->n_vocab)], sum = 0;
            for (uint32_t v = 0; v < hp->n_vocab; v++) sum += exp(l[v] - mx);
            nll += -(l[pids[t + 1]] - mx - log(sum));
        }
        ppl[mode] = exp(nll / (double)(np - 1));
    }
    m->hp.rope_type = OSCAR_ROPE_NORMAL;
    printf("perplexity over %zu tokens: %.2f (normal RoPE), %.2f (neox RoPE, wrong for llama)\n", np, ppl[0], ppl[1]);
    CHECK_MSG(ppl[0] > 1.0 && ppl[0] < 20.0, "SmolLM2 perplexity %.2f", ppl[0]);
    CHECK_MSG(ppl[1] > 2.0 * ppl[0], "wrong RoPE pairing not worse: %.2f vs %.2f", ppl[1], ppl[0]);
    free(all);
done:
    ovk_model_ref_destroy(r);
    ovk_tokenizer_destroy(tok);
    ovk_model_desc_destroy(m);
}

int main(void)
{
    tmp_dir = test_tmp_dir_make("ovk_model_ref");
    static const uint32_t types[] = {OSCAR_GGML_TYPE_F32, OSCAR_GGML_TYPE_F16, OSCAR_GGML_TYPE_BF16,
                                     OSCAR_GGML_TYPE_Q8_0, OSCAR_GGML_TYPE_Q4_0, OSCAR_GGML_TYPE_Q4_1,
                                     OSCAR_GGML_TYPE_Q4_K, OSCAR_GGML_TYPE_Q5_K, OSCAR_GGML_TYPE_Q6_K};
    static const ovk_arch archs[] = {OSCAR_ARCH_LLAMA, OSCAR_ARCH_QWEN2, OSCAR_ARCH_QWEN3};
    for (size_t a = 0; a < 3; a++)
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
            check_generated(archs[a], types[t], (int)((a + t) % 2));

    check_rope_by_hand();
    check_rope_average();
    for (size_t a = 0; a < 3; a++) {
        check_vs_naive(archs[a], 0, NULL, 0);
        check_vs_naive(archs[a], 4, "linear", 1); /* partial rotation + linear scaling, tied */
    }
    check_prefill_vs_decode(OSCAR_ARCH_LLAMA, OSCAR_GGML_TYPE_F32);
    check_prefill_vs_decode(OSCAR_ARCH_QWEN2, OSCAR_GGML_TYPE_Q4_1);
    check_prefill_vs_decode(OSCAR_ARCH_QWEN3, OSCAR_GGML_TYPE_Q8_0);
    check_bad_files();

    const char *smol = getenv("OSCAR_SMOLLM2_GGUF");
    if (smol && *smol) check_smollm2(smol);
    else printf("OSCAR_SMOLLM2_GGUF not set: SmolLM2 greedy check skipped\n");

    test_tmp_dir_remove();
    return test_finish();
}
