/* The calibration program end to end on a generated model (runtime/model_gen.h):
 *  - ovk_calib_run() (the library entry point oscar-calib calls) writes a RotationZoo file
 *    with every tensor and every oscar.* key of docs/rotationzoo.md, per layer and per head,
 *    proxy and score value targets, fitted and fixed clip ratios;
 *  - orientation: the writer stores R row-major (element (i, j) at float i*d + j) for a
 *    non-symmetric R, and the file's R_K equals the rotation the calibrator core builds from
 *    an independently captured C_K, with diag(Rᵀ C_K R) flat (the OSCAR property) while
 *    diag(R C_K Rᵀ) is not, so a transposed file would fail;
 *  - bad input: a missing or non-GGUF model, a missing, empty or too short text, an unwritable
 *    output, a bad group size or sequence length: the right status, and no file left behind;
 *  - the least-squares refit: its metric (blk.N.attn_k_metric, symmetric, mean diagonal 1, the
 *    core's ovk_key_metric_matrix of the spread C_K) and oscar.refit_rounds written when asked
 *    for (one group per row), neither by default;
 *  - the binary (OSCAR_CALIB_BIN, else ../oscar-calib from the tests folder): --help, bad flag
 *    values (exit 2), a failing run (exit 1, one line on stderr, no file), a good run (exit 0),
 *    the refit's tensors and key present with --refit 3 and absent by default;
 *  - the key rotation spread by RoPE over the model's context (oscar.calib.key_rope_span, R_K
 *    the core's rotation of the spread C_K) by default, and not with --key-spread no;
 *  - centering of both sides, of the keys only (--center keys, the default: the same key means
 *    and key clips as with both, no value means) or of the values only; the clip fit's key
 *    center averaged over the key spread's context (the calibration sequence's without it).
 */
#include <cblas.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "calib_run.h"
#include "capture.h"
#include "gguf.h"
#include "model_desc.h"
#include "model_gen.h"
#include "model_ref.h"
#include "calib.h"
#include "rotation_file.h"
#include "test_util.h"
#include "tokenizer.h"

static char dir[256];                       /* scratch folder */
static char model_path[300], text_path[300], empty_path[300], out_path[300];
static char model64_path[300];              /* head_dim 64, for a group smaller than head_dim */

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Neither path nor a temporary file of its writer exists. */
static int no_output(const char *path)
{
    return !exists(path) && !test_tmp_leftover(path);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* ~9 KB of varied English sentences, one paragraph per line group. */
static void write_text(const char *path)
{
    static const char *const subj[] = {"The system", "A careful reader", "Every package", "The old server",
                                       "Our small team", "The network"};
    static const char *const verb[] = {"describes", "installs", "checks", "remembers", "updates", "explains"};
    static const char *const obj[] = {"the configuration files", "a new kernel", "the mailing list",
                                      "every user account", "the backup schedule", "three different mirrors"};
    FILE *f = fopen(path, "wb");
    if (!f) return;
    test_rng_seed(11);
    for (int para = 0; para < 40; para++) {
        for (int s = 0; s < 4; s++)
            fprintf(f, "%s %s %s before %u o'clock. ", subj[test_rng_u32() % 6], verb[test_rng_u32() % 6],
                    obj[test_rng_u32() % 6], 1 + test_rng_u32() % 12);
        fputs("\n\n", f);
    }
    fclose(f);
}

/* ---- metadata checks ------------------------------------------------------------------------- */

static void check_str(const ovk_gguf *g, const char *key, const char *want)
{
    const char *s = NULL;
    CHECK_OK(ovk_gguf_get_str(g, key, &s));
    CHECK_MSG(s && strcmp(s, want) == 0, "%s = '%s', want '%s'", key, s ? s : "(null)", want);
}

static void check_u32(const ovk_gguf *g, const char *key, uint32_t want)
{
    uint32_t v = 0;
    CHECK_OK(ovk_gguf_get_u32(g, key, &v));
    CHECK_MSG(v == want, "%s = %u, want %u", key, v, want);
}

typedef struct expect {
    const char *grouping, *objective_v, *text_source;
    uint32_t group_size, seq_len;
    uint64_t tokens;
    int clip_fitted;
    const float *clip_k, *clip_v; /* [n_layer] */
    unsigned centered;            /* OSCAR_CALIB_CENTER_* bits: blk.<l>.attn_k_mean / attn_v_mean present */
    int feedback;                 /* blk.<l>.attn_k_feedback present */
    uint32_t refit;               /* oscar.refit_rounds and blk.<l>.attn_k_metric present (> 0) or not */
    uint32_t key_rope_span;       /* oscar.calib.key_rope_span (> 0) or absent (0) */
    uint32_t key_center_block;    /* oscar.key_center_block (> 0) or absent (0) */
} expect;

/* The refit's keys and tensors in an open file: oscar.refit_rounds = refit and every layer's
 * blk.<l>.attn_k_metric (F32, the feedback's shape: [d, d] per layer, [d, d, n_rot] per head,
 * each matrix finite, symmetric, mean diagonal 1) when refit > 0; neither when 0. */
static void check_refit(const ovk_gguf *g, uint32_t n_layer, uint32_t d, uint32_t n_rot, uint32_t refit)
{
    uint32_t v = 0;
    oscar_status st = ovk_gguf_get_u32(g, "oscar.refit_rounds", &v);
    CHECK_MSG(refit ? st == OSCAR_OK && v == refit : st != OSCAR_OK, "oscar.refit_rounds: status %d value %u, want %u",
              (int)st, v, refit);
    for (uint32_t l = 0; l < n_layer; l++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%u.attn_k_metric", l);
        const ovk_gguf_tensor *t = ovk_gguf_find_tensor(g, name);
        CHECK_MSG((t != NULL) == (refit > 0), "%s %s", name, t ? "present" : "missing");
        if (!t) continue;
        CHECK_MSG(t->type == OSCAR_GGML_TYPE_F32 && t->n_dims == (n_rot == 1 ? 2u : 3u) && t->ne[0] == d &&
                  t->ne[1] == d && t->ne[2] == n_rot, "%s: type %u, %u dims [%llu, %llu, %llu]", name, t->type,
                  t->n_dims, (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], (unsigned long long)t->ne[2]);
        if (t->n_dims != (n_rot == 1 ? 2u : 3u) || t->ne[2] != n_rot) continue;
        for (uint32_t r = 0; r < n_rot; r++) {
            const float *m = (const float *)t->data + (size_t)r * d * d;
            double diag = 0.0;
            int ok = 1;
            for (uint32_t i = 0; i < d; i++) {
                diag += m[(size_t)i * d + i];
                for (uint32_t j = 0; j < d; j++) ok &= isfinite(m[(size_t)i * d + j]) && m[(size_t)i * d + j] == m[(size_t)j * d + i];
            }
            CHECK_MSG(ok && fabs(diag / d - 1.0) < 1e-5, "%s[%u]: not finite and symmetric (%d) or mean diagonal %.8f", name,
                      r, ok, diag / d);
        }
    }
}

/* Checks every key and tensor of docs/rotationzoo.md; returns the file (caller closes) or NULL. */
static ovk_gguf *check_file(const char *path, const ovk_model_desc *desc, const expect *e)
{
    ovk_gguf *g = NULL;
    CHECK_OK(ovk_gguf_open(path, &g));
    if (!g) return NULL;
    const ovk_model_hparams *hp = &desc->hp;
    uint32_t d = hp->head_dim, n_rot = strcmp(e->grouping, "head") == 0 ? hp->n_head_kv : 1;
    check_u32(g, "oscar.format_version", 1);
    check_str(g, "oscar.objective_k", "query_covariance");
    check_str(g, "oscar.objective_v", e->objective_v);
    check_str(g, "oscar.grouping", e->grouping);
    check_u32(g, "oscar.group_size", e->group_size);
    int fitted = -1;
    CHECK_OK(ovk_gguf_get_bool(g, "oscar.clip_fitted", &fitted));
    CHECK(fitted == e->clip_fitted);
    for (int which = 0; which < 2; which++) {
        const ovk_gguf_array *a = NULL;
        CHECK_OK(ovk_gguf_get_array(g, which ? "oscar.clip_v" : "oscar.clip_k", OSCAR_GGUF_TYPE_FLOAT32, &a));
        if (!a) continue;
        CHECK(a->count == hp->n_layer);
        for (uint32_t l = 0; l < hp->n_layer && l < a->count; l++) {
            double r = ovk_gguf_array_number(a, l);
            CHECK(r > 0.0 && r <= 1.0);
            CHECK(r == (double)(which ? e->clip_v[l] : e->clip_k[l]));
            if (!e->clip_fitted) CHECK(r == (which ? 0.92f : 0.96f));
        }
    }
    check_u32(g, "oscar.sink_tokens", 64);
    check_u32(g, "oscar.recent_tokens", 256);
    check_str(g, "oscar.model.architecture", "llama");
    check_u32(g, "oscar.model.block_count", hp->n_layer);
    check_u32(g, "oscar.model.head_count_kv", hp->n_head_kv);
    check_u32(g, "oscar.model.head_count", hp->n_head);
    check_u32(g, "oscar.model.head_dim", d);
    char fp[17];
    snprintf(fp, sizeof fp, "%016" PRIx64, ovk_model_fingerprint(desc));
    check_str(g, "oscar.model.fingerprint", fp);
    uint64_t tokens = 0;
    CHECK_OK(ovk_gguf_get_u64(g, "oscar.calib.tokens", &tokens));
    CHECK(tokens == e->tokens);
    check_u32(g, "oscar.calib.sequence_length", e->seq_len);
    check_str(g, "oscar.calib.text_source", e->text_source);
    uint32_t span = 0;
    oscar_status sst = ovk_gguf_get_u32(g, "oscar.calib.key_rope_span", &span);
    CHECK_MSG(e->key_rope_span ? sst == OSCAR_OK && span == e->key_rope_span : sst != OSCAR_OK,
              "oscar.calib.key_rope_span: status %d value %u, want %u", (int)sst, span, e->key_rope_span);
    uint32_t block = 0;
    sst = ovk_gguf_get_u32(g, "oscar.key_center_block", &block);
    CHECK_MSG(e->key_center_block ? sst == OSCAR_OK && block == e->key_center_block : sst != OSCAR_OK,
              "oscar.key_center_block: status %d value %u, want %u", (int)sst, block, e->key_center_block);
    uint32_t n_means = (e->centered & OSCAR_CALIB_CENTER_KEYS ? 1 : 0) + (e->centered & OSCAR_CALIB_CENTER_VALUES ? 1 : 0);
    CHECK(g->n_tensors == (uint64_t)hp->n_layer * (4 + n_means + (e->feedback ? 1 : 0) + (e->refit ? 1 : 0)));
    check_refit(g, hp->n_layer, d, n_rot, e->refit);
    for (uint32_t l = 0; l < hp->n_layer; l++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%u.attn_k_feedback", l);
        const ovk_gguf_tensor *tf = ovk_gguf_find_tensor(g, name);
        CHECK_MSG((tf != NULL) == e->feedback, "%s %s", name, tf ? "present" : "missing");
        if (tf) { /* [n_rot][d][d], strictly upper triangular, not all zero */
            CHECK(tf->type == OSCAR_GGML_TYPE_F32 && tf->n_dims == (n_rot == 1 ? 2u : 3u) && tf->ne[0] == d && tf->ne[1] == d &&
                  tf->ne[2] == n_rot);
            const float *f = tf->data;
            int upper = 1, nonzero = 0;
            for (size_t i = 0; i < (size_t)n_rot * d * d; i++) {
                upper &= isfinite(f[i]) && (i % d > i / d % d || f[i] == 0.0f);
                nonzero |= f[i] != 0.0f;
            }
            CHECK_MSG(upper && nonzero, "%s: not a finite, strictly upper triangular, nonzero matrix", name);
        }
        for (int which = 0; which < 2; which++) {
            snprintf(name, sizeof name, "blk.%u.attn_%c_mean", l, which ? 'v' : 'k');
            const ovk_gguf_tensor *tm = ovk_gguf_find_tensor(g, name);
            int want_mean = (e->centered & (which ? OSCAR_CALIB_CENTER_VALUES : OSCAR_CALIB_CENTER_KEYS)) != 0;
            CHECK_MSG((tm != NULL) == want_mean, "%s %s", name, tm ? "present" : "missing");
            if (tm) {
                CHECK(tm->type == OSCAR_GGML_TYPE_F32 && tm->n_dims == 2 && tm->ne[0] == d && tm->ne[1] == hp->n_head_kv);
                for (uint32_t i = 0; i < d * hp->n_head_kv; i++) CHECK(isfinite(((const float *)tm->data)[i]));
            }
            snprintf(name, sizeof name, "blk.%u.attn_%c_rot.weight", l, which ? 'v' : 'k');
            const ovk_gguf_tensor *t = ovk_gguf_find_tensor(g, name);
            CHECK_MSG(t != NULL, "%s missing", name);
            if (!t) continue;
            CHECK(t->type == OSCAR_GGML_TYPE_F32);
            CHECK(t->n_dims == (n_rot == 1 ? 2u : 3u) && t->ne[0] == d && t->ne[1] == d && t->ne[2] == n_rot);
            for (uint32_t r = 0; r < n_rot; r++)
                CHECK_OK(ovk_rotation_check((const float *)t->data + (size_t)r * d * d, d, 1e-4, NULL));
            snprintf(name, sizeof name, "blk.%u.attn_%c_eig", l, which ? 'v' : 'k');
            t = ovk_gguf_find_tensor(g, name);
            CHECK_MSG(t != NULL, "%s missing", name);
            if (!t) continue;
            CHECK(t->type == OSCAR_GGML_TYPE_F32 && t->ne[0] == d && t->ne[1] == n_rot);
            const float *ev = t->data;
            for (uint32_t r = 0; r < n_rot; r++)
                for (uint32_t i = 1; i < d; i++) CHECK(ev[r * d + i] <= ev[r * d + i - 1]);
        }
    }
    return g;
}

/* ---- orientation ----------------------------------------------------------------------------- */

/* The writer stores a non-symmetric R as R[i][j] at float offset i*d + j, per head. */
static void test_writer_orientation(void)
{
    enum { D = 4, NL = 1, NKV = 2 };
    /* per head: a rotation by angle a in the (0,1) plane and b in the (2,3) plane; R ≠ Rᵀ */
    float rot[NL * NKV * D * D];
    memset(rot, 0, sizeof rot);
    for (int h = 0; h < NKV; h++) {
        float a = 0.3f + 0.4f * (float)h, b = 1.1f;
        float *R = rot + h * D * D;
        R[0] = cosf(a); R[1] = sinf(a); R[4] = -sinf(a); R[5] = cosf(a);
        R[10] = cosf(b); R[11] = sinf(b); R[14] = -sinf(b); R[15] = cosf(b);
    }
    float clip_k[NL] = {0.9f}, clip_v[NL] = {0.95f};
    ovk_calib_result res;
    memset(&res, 0, sizeof res);
    res.n_layer = NL;
    res.n_rot = NKV;
    res.head_dim = D;
    res.rot_k = rot;
    res.rot_v = rot;
    ovk_rotation_file_meta m;
    memset(&m, 0, sizeof m);
    m.objective_k = "query_covariance";
    m.objective_v = "proxy_score_weighted";
    m.grouping = OSCAR_CALIB_PER_HEAD;
    m.clip_k = clip_k;
    m.clip_v = clip_v;
    m.architecture = "llama";
    m.n_layer = NL;
    m.n_head = 4;
    m.n_kv_head = NKV;
    m.head_dim = D;
    m.fingerprint = 0x0123456789abcdefull;
    char path[400];
    snprintf(path, sizeof path, "%s/orient.rot.gguf", dir);
    CHECK_OK(ovk_rotation_file_write(path, &res, &m));
    ovk_gguf *g = NULL;
    CHECK_OK(ovk_gguf_open(path, &g));
    const ovk_gguf_tensor *t = g ? ovk_gguf_find_tensor(g, "blk.0.attn_k_rot.weight") : NULL;
    CHECK(t && t->n_dims == 3 && t->ne[0] == D && t->ne[1] == D && t->ne[2] == NKV);
    if (t) {
        const float *f = t->data;
        CHECK(memcmp(f, rot, sizeof rot) == 0);
        /* y = x·R for x = e_0 is row 0 of R: (cos a, sin a, 0, 0) */
        CHECK(f[0 * D + 1] == sinf(0.3f) && f[1 * D + 0] == -sinf(0.3f));
    }
    const char *fp = NULL;
    if (g) CHECK_OK(ovk_gguf_get_str(g, "oscar.model.fingerprint", &fp));
    CHECK(fp && strcmp(fp, "0123456789abcdef") == 0);
    ovk_gguf_close(g);
    /* mismatches and bad ratios are refused without a file */
    snprintf(path, sizeof path, "%s/bad.rot.gguf", dir);
    m.n_kv_head = 3;
    CHECK_STATUS(ovk_rotation_file_write(path, &res, &m), OSCAR_ERROR_INVALID_ARGUMENT);
    m.n_kv_head = NKV;
    clip_k[0] = 1.5f;
    CHECK_STATUS(ovk_rotation_file_write(path, &res, &m), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(no_output(path));
}

typedef struct cap_ctx {
    ovk_calib *cal;
    const ovk_model_desc *desc;
    double mean_k[4 * 64], mean_v[4 * 64]; /* [n_kv][d] sums over layer 0's positions >= 64 */
    uint64_t n_mean;
} cap_ctx;

static oscar_status to_calib(void *user, uint32_t layer, uint32_t pos0, uint32_t n, const float *q, const float *k,
                             const float *v)
{
    cap_ctx *c = user;
    const ovk_model_hparams *hp = &c->desc->hp;
    uint32_t d = hp->head_dim, nkv = hp->n_head_kv;
    float theta[32], x[64];
    for (uint32_t i = 0; i < hp->n_rot / 2; i++) theta[i] = -c->desc->rope_theta[i];
    for (uint32_t t = 0; layer == 0 && t < n; t++) {
        if (pos0 + t < 64) continue; /* the sink */
        for (uint32_t h = 0; h < nkv; h++) {
            memcpy(x, k + ((size_t)t * nkv + h) * d, d * sizeof *x);
            ovk_rope_apply(x, d, hp->n_rot, hp->rope_type, theta, pos0 + t); /* undone */
            for (uint32_t j = 0; j < d; j++) {
                c->mean_k[h * d + j] += x[j];
                c->mean_v[h * d + j] += v[((size_t)t * nkv + h) * d + j];
            }
        }
        c->n_mean++;
    }
    return ovk_calib_add(c->cal, layer, n, q, k, v);
}

/* Recomputes C_K of layer 0 from the same text (spread by RoPE over the model's context when
 * `spread`, as oscar-calib's default --key-spread yes does) and checks the file's R_K is the
 * core's rotation of it, and that diag(Rᵀ C R) is flat while diag(R C Rᵀ) is not. */
static void check_pipeline_orientation(const ovk_model_desc *desc, const ovk_gguf *g, uint64_t tokens,
                                       uint32_t seq_len, int spread)
{
    const ovk_model_hparams *hp = &desc->hp;
    uint32_t d = hp->head_dim;
    ovk_tokenizer *tok = NULL;
    ovk_calib *cal = NULL;
    ovk_capture *cap = NULL;
    int32_t *ids = NULL;
    double *C = malloc((size_t)d * d * sizeof *C);   /* [d][d] */
    float *R = malloc((size_t)d * d * sizeof *R);    /* [d][d] */
    FILE *f = fopen(text_path, "rb");
    char *text = malloc(1 << 16);
    size_t len = f ? fread(text, 1, 1 << 16, f) : 0;
    if (f) fclose(f);
    CHECK_OK(ovk_model_tokenizer_create(desc->gguf, &tok));
    size_t n = 0;
    CHECK_OK(ovk_tokenizer_encode(tok, text, len, 0, 0, NULL, 0, &n));
    ids = malloc(n * sizeof *ids);
    CHECK_OK(ovk_tokenizer_encode(tok, text, len, 0, 0, ids, n, &n));
    CHECK(!ovk_tokenizer_adds_bos(tok) && n >= tokens);
    ovk_calib_params cp = ovk_calib_params_default();
    cp.n_layer = hp->n_layer;
    cp.n_head = hp->n_head;
    cp.n_kv_head = hp->n_head_kv;
    cp.head_dim = d;
    cp.score_objective = 0;
    cp.max_seq_len = seq_len;
    CHECK_OK(ovk_calib_create(&cp, &cal));
    CHECK(d <= 64 && hp->n_head_kv <= 4 && hp->n_rot <= 64);
    static cap_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.cal = cal, ctx.desc = desc;
    ovk_capture_params kp = ovk_capture_params_default();
    kp.max_seq_len = seq_len;
    kp.chunk = seq_len;
    kp.hook = to_calib;
    kp.hook_user = &ctx;
    CHECK_OK(ovk_capture_create(desc, &kp, &cap));
    for (uint64_t at = 0; cap && cal && at < tokens; at += seq_len) {
        uint32_t m = tokens - at < seq_len ? (uint32_t)(tokens - at) : seq_len;
        CHECK_OK(ovk_calib_begin_sequence(cal));
        CHECK_OK(ovk_capture_eval(cap, ids + at, m, 0, NULL));
    }
    CHECK_OK(ovk_calib_covariance(cal, 0, OSCAR_CALIB_ALL_HEADS, OSCAR_CALIB_KEYS, C));
    if (spread) ovk_rope_spread_covariance(d, hp->n_rot, hp->rope_type == OSCAR_ROPE_NEOX, desc->rope_theta, hp->n_ctx_train, C);
    /* oscar-calib solves on one OpenBLAS thread; the rotation's last bits depend on the count */
    int blas_threads = openblas_get_num_threads();
    openblas_set_num_threads(1);
    CHECK_OK(ovk_rotation_build(OSCAR_ROTATION_OSCAR, d, C, R, NULL));
    const ovk_gguf_tensor *t = ovk_gguf_find_tensor(g, "blk.0.attn_k_rot.weight");
    if (t) {
        const float *F = t->data;
        double maxdiff = 0.0, asym = 0.0;
        for (size_t i = 0; i < (size_t)d * d; i++) maxdiff = fmax(maxdiff, fabs((double)F[i] - (double)R[i]));
        for (uint32_t i = 0; i < d; i++)
            for (uint32_t j = 0; j < d; j++) asym = fmax(asym, fabs((double)F[i * d + j] - (double)F[j * d + i]));
        CHECK_MSG(maxdiff == 0.0, "file R_K differs from the core's rotation by %g", maxdiff);
        CHECK_MSG(asym > 0.1, "R_K is nearly symmetric (%g): the orientation test would be blind", asym);
        /* diag(Fᵀ C F) (the stored orientation) flat; diag(F C Fᵀ) (transposed) not */
        double tr = 0.0, dev_right = 0.0, dev_wrong = 0.0;
        for (uint32_t i = 0; i < d; i++) tr += C[i * d + i];
        for (uint32_t j = 0; j < d; j++) {
            double a = 0.0, b = 0.0;
            for (uint32_t x = 0; x < d; x++)
                for (uint32_t y = 0; y < d; y++) {
                    a += F[x * d + j] * C[x * d + y] * F[y * d + j]; /* (Fᵀ C F)_jj */
                    b += F[j * d + x] * C[x * d + y] * F[j * d + y]; /* (F C Fᵀ)_jj */
                }
            dev_right = fmax(dev_right, fabs(a - tr / d) / (tr / d));
            dev_wrong = fmax(dev_wrong, fabs(b - tr / d) / (tr / d));
        }
        CHECK_MSG(dev_right < 1e-4, "diag(RᵀCR) deviates %g from tr/d", dev_right);
        CHECK_MSG(dev_wrong > 0.05, "diag(RCRᵀ) deviates only %g: transpose undetectable", dev_wrong);
    }
    /* the refit's metric: the core's, from C_K spread by RoPE over the model's context */
    t = ovk_gguf_find_tensor(g, "blk.0.attn_k_metric");
    CHECK(t != NULL);
    if (t) {
        float *M = malloc((size_t)d * d * sizeof *M);
        if (!spread) ovk_rope_spread_covariance(d, hp->n_rot, hp->rope_type == OSCAR_ROPE_NEOX, desc->rope_theta, hp->n_ctx_train, C);
        CHECK_OK(ovk_key_metric_matrix(d, C, R, 0.01, M));
        CHECK_MSG(memcmp(t->data, M, (size_t)d * d * sizeof *M) == 0, "blk.0.attn_k_metric differs from the core's metric");
        free(M);
    }
    openblas_set_num_threads(blas_threads);
    /* the means: pre-RoPE keys and values of the positions past the 64-token sink */
    CHECK(ctx.n_mean > 0);
    for (int which = 0; which < 2 && ctx.n_mean; which++) {
        t = ovk_gguf_find_tensor(g, which ? "blk.0.attn_v_mean" : "blk.0.attn_k_mean");
        CHECK(t != NULL);
        if (!t) continue;
        const float *F = t->data;
        double worst = 0.0, scale = 0.0;
        for (uint32_t i = 0; i < d * hp->n_head_kv; i++) {
            double want = (which ? ctx.mean_v[i] : ctx.mean_k[i]) / (double)ctx.n_mean;
            worst = fmax(worst, fabs(F[i] - want));
            scale = fmax(scale, fabs(want));
        }
        CHECK_MSG(worst <= 1e-5 * scale + 1e-7, "%s mean differs from the recomputed one by %g (of %g)", which ? "value" : "key",
                  worst, scale);
    }
    ovk_capture_destroy(cap);
    ovk_calib_destroy(cal);
    ovk_tokenizer_destroy(tok);
    free(ids);
    free(text);
    free(C);
    free(R);
}

/* ---- runs ------------------------------------------------------------------------------------ */

static ovk_calib_run_params base_params(void)
{
    ovk_calib_run_params p = ovk_calib_run_params_default();
    p.model_path = model_path;
    p.text_path = text_path;
    p.out_path = out_path;
    p.text_source = "test: generated sentences";
    p.tokens = 600;
    p.seq_len = 128;
    return p;
}

static void test_runs(const ovk_model_desc *desc)
{
    /* per layer, proxy values, fitted clip, centering (and the default key feedback) */
    ovk_calib_run_params p = base_params();
    ovk_calib_run_report rep;
    p.center = OSCAR_CALIB_CENTER_BOTH;
    p.refit_rounds = 3;
    CHECK_OK(ovk_calib_run(&p, &rep));
    CHECK(rep.tokens == 600 && rep.sequences == 5 && rep.n_layer == desc->hp.n_layer);
    uint32_t ctx = desc->hp.n_ctx_train; /* the key rotation's span (default --key-spread yes) */
    expect e = {"layer", "proxy_score_weighted", "test: generated sentences", 16, 128, 600, 1, rep.clip_k, rep.clip_v,
                OSCAR_CALIB_CENTER_BOTH, 1, 3, ctx, 128}; /* the default key center block */
    CHECK(rep.refit_rounds == 3); /* asked for, with one group per row (G = head_dim 16) */
    CHECK(rep.key_center_span == ctx); /* the key center of the clip fit: the spread's context */
    ovk_gguf *g = check_file(out_path, desc, &e);
    if (g) check_pipeline_orientation(desc, g, 600, 128, 1);
    uint32_t nl = desc->hp.n_layer, nm = desc->hp.n_head_kv * desc->hp.head_dim;
    float *mean_k = calloc((size_t)nl * nm, sizeof *mean_k), *clip_k = calloc(nl, sizeof *clip_k); /* the centered keys' side */
    for (uint32_t l = 0; g && l < nl; l++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%u.attn_k_mean", l);
        const ovk_gguf_tensor *t = ovk_gguf_find_tensor(g, name);
        if (t) memcpy(mean_k + (size_t)l * nm, t->data, nm * sizeof *mean_k);
    }
    memcpy(clip_k, rep.clip_k, nl * sizeof *clip_k);
    ovk_gguf_close(g);
    ovk_calib_run_report_free(&rep);

    /* keys centered only (--center keys): the same key means and key clips, no value means */
    p.center = OSCAR_CALIB_CENTER_KEYS;
    CHECK_OK(ovk_calib_run(&p, &rep));
    e.clip_k = rep.clip_k, e.clip_v = rep.clip_v, e.centered = OSCAR_CALIB_CENTER_KEYS;
    g = check_file(out_path, desc, &e);
    CHECK(!memcmp(rep.clip_k, clip_k, nl * sizeof *clip_k));
    for (uint32_t l = 0; g && l < nl; l++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%u.attn_k_mean", l);
        const ovk_gguf_tensor *t = ovk_gguf_find_tensor(g, name);
        CHECK_MSG(t && !memcmp(t->data, mean_k + (size_t)l * nm, nm * sizeof *mean_k), "%s differs from --center yes's", name);
    }
    ovk_gguf_close(g);
    ovk_calib_run_report_free(&rep);
    free(mean_k), free(clip_k);

    /* values centered only: the value means, no key means, no key center in the clip fit, no key
     * center block */
    p.center = OSCAR_CALIB_CENTER_VALUES;
    CHECK_OK(ovk_calib_run(&p, &rep));
    CHECK(rep.key_center_span == 0);
    e.clip_k = rep.clip_k, e.clip_v = rep.clip_v, e.centered = OSCAR_CALIB_CENTER_VALUES, e.key_center_block = 0;
    ovk_gguf_close(check_file(out_path, desc, &e));
    ovk_calib_run_report_free(&rep);
    p.center = OSCAR_CALIB_CENTER_BOTH;
    e.centered = OSCAR_CALIB_CENTER_BOTH, e.key_center_block = 128;

    /* --key-block context: one center for the context, the same clip fit, no oscar.key_center_block;
     * --key-block 32: that block in the file, the same fit again; --key-clip-center block: the fit
     * centers each key by its block's center (blocks of 32 in sequences of 128: another curve) */
    float *clip_ctx = malloc(nl * sizeof *clip_ctx);
    double *err_ctx = malloc(nl * sizeof *err_ctx);
    p.key_center_block = 0;
    CHECK_OK(ovk_calib_run(&p, &rep));
    CHECK(rep.key_center_span == ctx);
    e.clip_k = rep.clip_k, e.clip_v = rep.clip_v, e.key_center_block = 0;
    ovk_gguf_close(check_file(out_path, desc, &e));
    memcpy(clip_ctx, rep.clip_k, nl * sizeof *clip_ctx);
    memcpy(err_ctx, rep.err_k, nl * sizeof *err_ctx);
    ovk_calib_run_report_free(&rep);
    p.key_center_block = 32;
    CHECK_OK(ovk_calib_run(&p, &rep));
    CHECK(rep.key_center_span == ctx && !memcmp(rep.clip_k, clip_ctx, nl * sizeof *clip_ctx));
    e.clip_k = rep.clip_k, e.clip_v = rep.clip_v, e.key_center_block = 32;
    ovk_gguf_close(check_file(out_path, desc, &e));
    ovk_calib_run_report_free(&rep);
    p.key_clip_blocks = 1;
    CHECK_OK(ovk_calib_run(&p, &rep));
    CHECK(rep.key_center_span == 0);
    int differs = 0;
    for (uint32_t l = 0; l < nl; l++) differs |= rep.err_k[l] != err_ctx[l];
    CHECK_MSG(differs, "the key clip fit with block centers gave the context center's errors");
    e.clip_k = rep.clip_k, e.clip_v = rep.clip_v;
    ovk_gguf_close(check_file(out_path, desc, &e));
    ovk_calib_run_report_free(&rep);
    p.key_center_block = 0; /* block centers in the fit without a block */
    CHECK_STATUS(ovk_calib_run(&p, &rep), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "needs a key center block") != NULL);
    ovk_calib_run_report_free(&rep);
    p.key_center_block = 8;
    CHECK_STATUS(ovk_calib_run(&p, &rep), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "key center block 8 is below 16") != NULL);
    ovk_calib_run_report_free(&rep);
    p.key_center_block = 128, p.key_clip_blocks = 0;
    e.key_center_block = 128;
    free(clip_ctx), free(err_ctx);

    /* the same with the key rotation fitted to the calibration positions' queries only */
    p.key_spread = 0;
    CHECK_OK(ovk_calib_run(&p, &rep));
    CHECK(rep.key_center_span == 128); /* the calibration sequences' */
    e.clip_k = rep.clip_k, e.clip_v = rep.clip_v, e.key_rope_span = 0;
    g = check_file(out_path, desc, &e);
    if (g) check_pipeline_orientation(desc, g, 600, 128, 0);
    ovk_gguf_close(g);
    ovk_calib_run_report_free(&rep);
    p.key_spread = 1;

    /* per head, score values, fixed clip, G = 8, no centering, nearest key rounding */
    p.grouping = OSCAR_CALIB_PER_HEAD;
    p.values = OSCAR_CALIB_VALUES_SCORES;
    p.clip_fitted = 0;
    p.group_size = 8;
    p.text_source = NULL;
    p.center = 0;
    p.key_feedback = 0;
    p.refit_rounds = 0;
    CHECK_OK(ovk_calib_run(&p, &rep));
    CHECK(rep.key_center_span == 0);
    expect e2 = {"head", "attention_output", text_path, 8, 128, 600, 0, rep.clip_k, rep.clip_v, 0, 0, 0, ctx};
    CHECK(rep.refit_rounds == 0); /* the default */
    g = check_file(out_path, desc, &e2);
    ovk_gguf_close(g);
    if (rep.clip_k_fit) CHECK(rep.clip_k_fit[0] >= 0.8f && rep.clip_k_fit[0] <= 1.0f);
    ovk_calib_run_report_free(&rep);

    /* per head with one group per row: 3 rounds (the metric per head), none, or 1 round */
    p.group_size = 0;
    for (uint32_t refit = 0; refit < 3; refit++) {
        p.refit_rounds = refit == 0 ? 3 : refit - 1;
        uint32_t want = p.refit_rounds;
        CHECK_OK(ovk_calib_run(&p, &rep));
        CHECK(rep.refit_rounds == want);
        expect e3 = {"head", "attention_output", text_path, 16, 128, 600, 0, rep.clip_k, rep.clip_v, 0, 0, want, ctx};
        g = check_file(out_path, desc, &e3);
        ovk_gguf_close(g);
        ovk_calib_run_report_free(&rep);
    }

    /* a Hadamard rotation: no C_K behind R_K, so oscar.calib.key_rope_span is written only when the
     * centered keys' clip fit used the span (the default keys centering), not without centering */
    p.kind = OSCAR_ROTATION_HADAMARD;
    p.refit_rounds = 0;
    for (unsigned center = 0; center < 2; center++) {
        p.center = center ? OSCAR_CALIB_CENTER_KEYS : 0;
        CHECK_OK(ovk_calib_run(&p, &rep));
        CHECK(rep.key_center_span == (center ? ctx : 0));
        g = NULL;
        CHECK_OK(ovk_gguf_open(out_path, &g));
        uint32_t span = 0;
        oscar_status sst = g ? ovk_gguf_get_u32(g, "oscar.calib.key_rope_span", &span) : OSCAR_ERROR_IO;
        CHECK_MSG(center ? sst == OSCAR_OK && span == ctx : sst != OSCAR_OK, "hadamard, center %u: key_rope_span status %d value %u",
                  center, (int)sst, span);
        ovk_gguf_close(g);
        ovk_calib_run_report_free(&rep);
    }
    p.kind = OSCAR_ROTATION_OSCAR;
    CHECK(remove(out_path) == 0);
}

static void test_bad_input(void)
{
    ovk_calib_run_params p = base_params();
    p.model_path = "/nonexistent/model.gguf";
    CHECK_STATUS(ovk_calib_run(&p, NULL), OSCAR_ERROR_IO);
    CHECK(no_output(out_path));
    p.model_path = text_path; /* not a GGUF */
    CHECK_STATUS(ovk_calib_run(&p, NULL), OSCAR_ERROR_BAD_FORMAT);
    CHECK(no_output(out_path));

    p = base_params();
    p.text_path = "/nonexistent/text.txt";
    CHECK_STATUS(ovk_calib_run(&p, NULL), OSCAR_ERROR_IO);
    CHECK(strstr(oscar_last_error(), "/nonexistent/text.txt") != NULL);
    CHECK(no_output(out_path));
    p.text_path = empty_path;
    CHECK_STATUS(ovk_calib_run(&p, NULL), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "empty") != NULL);
    CHECK(no_output(out_path));
    p.text_path = text_path;
    p.tokens = 200000; /* more than the text has */
    CHECK_STATUS(ovk_calib_run(&p, NULL), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "only") != NULL);
    CHECK(no_output(out_path));

    p = base_params();
    p.center = OSCAR_CALIB_CENTER_BOTH;
    p.seq_len = 64; /* no position past the 64-token sink to take the means from */
    CHECK_STATUS(ovk_calib_run(&p, NULL), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(oscar_last_error(), "centering needs sequences longer than the sink") != NULL);
    CHECK(no_output(out_path));
    p.center = 0; /* without centering the same run is fine */
    CHECK_OK(ovk_calib_run(&p, NULL));
    CHECK(remove(out_path) == 0);

    p = base_params();
    p.out_path = "/nonexistent/dir/out.rot.gguf";
    CHECK_STATUS(ovk_calib_run(&p, NULL), OSCAR_ERROR_IO);
    CHECK(strstr(oscar_last_error(), "/nonexistent/dir/out.rot.gguf") != NULL);
    p.out_path = dir; /* a folder */
    CHECK_STATUS(ovk_calib_run(&p, NULL), OSCAR_ERROR_IO);

    p = base_params();
    p.group_size = 5;
    CHECK_STATUS(ovk_calib_run(&p, NULL), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(no_output(out_path));
    p.group_size = 8; /* the refit needs one group per row */
    p.refit_rounds = 2;
    CHECK_STATUS(ovk_calib_run(&p, NULL), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(oscar_last_error(), "refit") != NULL, "%s", oscar_last_error());
    CHECK(no_output(out_path));
    p.group_size = 0;
    p.refit_rounds = OSCAR_CALIB_MAX_REFIT_ROUNDS + 1;
    CHECK_STATUS(ovk_calib_run(&p, NULL), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(no_output(out_path));
    p.refit_rounds = 0;
    p.group_size = 0;
    p.seq_len = 1024; /* above the model's context of 512 */
    CHECK_STATUS(ovk_calib_run(&p, NULL), OSCAR_ERROR_INVALID_ARGUMENT);
    p.seq_len = 1;
    CHECK_STATUS(ovk_calib_run(&p, NULL), OSCAR_ERROR_INVALID_ARGUMENT);
    p.seq_len = 128;
    p.tokens = 8; /* fewer than head_dim */
    CHECK_STATUS(ovk_calib_run(&p, NULL), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(no_output(out_path));

    /* an existing output is replaced only on success */
    write_file(out_path, "old");
    p = base_params();
    p.text_path = empty_path;
    CHECK_STATUS(ovk_calib_run(&p, NULL), OSCAR_ERROR_INVALID_ARGUMENT);
    FILE *f = fopen(out_path, "rb");
    char buf[8] = {0};
    if (f) {
        CHECK(fread(buf, 1, sizeof buf, f) == 3);
        fclose(f);
    }
    CHECK(strcmp(buf, "old") == 0);
    CHECK(!test_tmp_leftover(out_path));
    remove(out_path);
}

/* ---- the binary -------------------------------------------------------------------------------- */

/* Runs `cmd` with stderr to a file; returns the exit status and the number of stderr lines. */
static int run_cmd(const char *cmd, int *err_lines)
{
    char full[2048], errp[400];
    snprintf(errp, sizeof errp, "%s/stderr.txt", dir);
    snprintf(full, sizeof full, "%s >/dev/null 2>%s", cmd, errp);
    int rc = system(full);
    *err_lines = 0;
    FILE *f = fopen(errp, "rb");
    if (f) {
        int c;
        while ((c = fgetc(f)) != EOF) *err_lines += c == '\n';
        fclose(f);
    }
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void test_binary(void)
{
    const char *bin = getenv("OSCAR_CALIB_BIN");
    if (!bin) bin = "../oscar-calib";
    if (access(bin, X_OK) != 0) {
        printf("binary %s not found: CLI part skipped (set OSCAR_CALIB_BIN)\n", bin);
        return;
    }
    char cmd[1600];
    int lines = 0;
    snprintf(cmd, sizeof cmd, "%s --help", bin);
    CHECK(run_cmd(cmd, &lines) == 0 && lines == 0);
    static const char *const bad[] = {"--grouping foo", "--values x", "--clip maybe", "--tokens 12abc",
                                      "--tokens -5", "--seq-len 1", "--rotation quarot", "--bogus 1", "--tokens",
                                      "--group-size 48", "--group-size 16", "--refit 9", "--refit x", "--refit -1",
                                      "--refit", "--key-spread maybe", "--key-spread", "--center maybe", "--center",
                                      "--key-block 8", "--key-block", "--key-block blocks", "--key-clip-center x", "--key-clip-center"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s -m %s --text %s -o %s %s", bin, model_path, text_path, out_path, bad[i]);
        int rc = run_cmd(cmd, &lines);
        CHECK_MSG(rc == 2 && lines == 1, "'%s': exit %d, %d stderr lines", bad[i], rc, lines);
    }
    snprintf(cmd, sizeof cmd, "%s -m %s -o %s", bin, model_path, out_path);
    CHECK(run_cmd(cmd, &lines) == 2 && lines == 1);
    /* an explicit refit with a group smaller than head_dim 64: a usage error naming --refit */
    snprintf(cmd, sizeof cmd, "%s -m %s --text %s -o %s --group-size 32 --refit 2", bin, model64_path, text_path, out_path);
    int rc = run_cmd(cmd, &lines);
    CHECK_MSG(rc == 2 && lines == 1, "--group-size 32 --refit 2 at head_dim 64: exit %d, %d stderr lines", rc, lines);
    char errp[400], line[400] = {0};
    snprintf(errp, sizeof errp, "%s/stderr.txt", dir);
    FILE *ef = fopen(errp, "rb");
    if (ef) {
        if (!fgets(line, sizeof line, ef)) line[0] = '\0';
        fclose(ef);
    }
    CHECK_MSG(strstr(line, "--refit") != NULL, "stderr: %s", line);
    CHECK(no_output(out_path));
    snprintf(cmd, sizeof cmd, "%s -q -m %s --text %s/missing.txt -o %s", bin, model_path, dir, out_path);
    CHECK(run_cmd(cmd, &lines) == 1 && lines == 1);
    CHECK(no_output(out_path));
    snprintf(cmd, sizeof cmd, "%s -q -m %s --text %s --tokens 100000 -o %s", bin, model_path, text_path, out_path);
    CHECK(run_cmd(cmd, &lines) == 1 && lines == 1);
    CHECK(no_output(out_path));
    /* --refit 3 writes the refit's key and metric per head; the default neither. The key
     * rotation's span is written by default (the model's context), not with --key-spread no.
     * The default centering (keys) writes the key means only; --center no neither */
    for (int refit_off = 0; refit_off < 2; refit_off++) {
        snprintf(cmd, sizeof cmd, "%s -q -m %s --text %s --tokens 300 --seq-len 100 --grouping head%s -o %s", bin,
                 model_path, text_path, refit_off ? " --key-spread no --center no" : " --refit 3", out_path);
        CHECK(run_cmd(cmd, &lines) == 0 && lines == 0);
        CHECK(exists(out_path));
        ovk_gguf *g = NULL;
        CHECK_OK(ovk_gguf_open(out_path, &g));
        if (g) {
            check_refit(g, 2, 16, 2, refit_off ? 0 : 3); /* the generated model: 2 layers, d 16, 2 KV heads */
            uint32_t span = 0;
            oscar_status sst = ovk_gguf_get_u32(g, "oscar.calib.key_rope_span", &span);
            CHECK_MSG(refit_off ? sst != OSCAR_OK : sst == OSCAR_OK && span > 0, "key_rope_span: status %d value %u",
                      (int)sst, span);
            CHECK((ovk_gguf_find_tensor(g, "blk.1.attn_k_mean") != NULL) == !refit_off);
            CHECK(ovk_gguf_find_tensor(g, "blk.1.attn_v_mean") == NULL);
        }
        ovk_gguf_close(g);
        remove(out_path);
    }
}

int main(void)
{
    ovk_model_desc *desc = NULL;
    snprintf(dir, sizeof dir, "/tmp/oscar_calib_cli_XXXXXX");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "mkdtemp failed\n");
        return 1;
    }
    snprintf(model_path, sizeof model_path, "%s/model.gguf", dir);
    snprintf(text_path, sizeof text_path, "%s/text.txt", dir);
    snprintf(empty_path, sizeof empty_path, "%s/empty.txt", dir);
    snprintf(out_path, sizeof out_path, "%s/out.rot.gguf", dir);
    ovk_model_gen_params gp = ovk_model_gen_params_default(OSCAR_ARCH_LLAMA); /* d 16, 4 heads / 2 KV */
    CHECK_OK(ovk_model_gen_write(&gp, model_path));
    snprintf(model64_path, sizeof model64_path, "%s/model64.gguf", dir);
    gp.n_layer = 1;
    gp.head_dim = 64;
    gp.n_embd = 256;
    gp.write_head_dim = 1;
    CHECK_OK(ovk_model_gen_write(&gp, model64_path));
    write_text(text_path);
    write_file(empty_path, "");
    CHECK_OK(ovk_model_desc_load(model_path, &desc));
    if (desc) {
        test_writer_orientation();
        test_runs(desc);
        test_bad_input();
        test_binary();
    }
    ovk_model_desc_destroy(desc);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return test_finish();
}
