/* The whole calibration run (see calib_run.h). */
#include <cblas.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "calib_run.h"
#include "oscar/experimental.h"
#include "capture.h"
#include "error.h"
#include "int2_quant.h"
#include "model_desc.h"
#include "model_ref.h"
#include "rotation_file.h"
#include "tokenizer.h"

#define RUN_MAX_TEXT_BYTES (512u << 20) /* larger text files are refused (read whole) */
#define RUN_TOKENIZE_PIECE (64u << 10)  /* bytes tokenized at a time, cut at a newline */
#define RUN_FIXED_CLIP_K 0.96f          /* the reference's ratios (DESIGN.md §1) */
#define RUN_FIXED_CLIP_V 0.92f
#define RUN_VFIT_SEQUENCES 4u           /* sequences whose attention outputs fit the value clip */
#define RUN_KEY_CENTER_BLOCK 128u       /* positions per key-center block (ovk_calib_run_params) */

ovk_calib_run_params ovk_calib_run_params_default(void)
{
    ovk_calib_run_params p;
    memset(&p, 0, sizeof p);
    p.tokens = 20000;
    p.seq_len = 512;
    p.grouping = OSCAR_CALIB_PER_LAYER;
    p.values = OSCAR_CALIB_VALUES_PROXY;
    p.kind = OSCAR_ROTATION_OSCAR;
    p.clip_fitted = 1;
    p.clip_v_output = 1;
    p.center = OSCAR_CALIB_CENTER_KEYS;
    p.key_center_block = RUN_KEY_CENTER_BLOCK;
    p.key_feedback = 1;
    p.key_spread = 1;
    p.refit_rounds = 0;
    p.sink_tokens = 64;
    p.recent_tokens = 256;
    p.seed = 1;
    return p;
}

void ovk_calib_run_report_free(ovk_calib_run_report *report)
{
    if (!report) return;
    free(report->clip_k_fit);
    free(report->clip_v_fit);
    free(report->clip_k);
    free(report->clip_v);
    free(report->err_k);
    free(report->err_v);
    memset(report, 0, sizeof *report);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- inputs -------------------------------------------------------------------------------- */

/* 1 when both paths name one existing file (the same device and inode: through a symlink or
 * a hard link too). */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Checks that `path` can be written without writing it: it must not be one of the inputs (the
 * rename at the end would replace the user's model or text), an existing file must be a
 * writable regular file, and its folder must take the writer's temporary file (probed with a
 * new file of a name no one uses, created exclusively and removed). */
static oscar_status check_writable(const char *path, const char *model_path, const char *text_path)
{
    struct stat sb;
    if (same_file(path, model_path))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "output %s is the model %s: writing it would replace the model", path,
                           model_path);
    if (same_file(path, text_path))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "output %s is the text file %s: writing it would replace the text",
                           path, text_path);
    if (stat(path, &sb) == 0) {
        if (!S_ISREG(sb.st_mode))
            OSCAR_RETURN_ERROR(OSCAR_ERROR_IO, "output %s exists and is not a regular file", path);
        if (access(path, W_OK) != 0)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_IO, "output %s is not writable: %s", path, strerror(errno));
    }
    size_t n = strlen(path) + 40;
    char *probe = malloc(n); /* "<path>.<pid>.probe.tmp" */
    if (!probe) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
    snprintf(probe, n, "%s.%ld.probe.tmp", path, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int err = errno;
    if (fd >= 0) {
        close(fd);
        unlink(probe);
    }
    free(probe);
    if (fd < 0 && err != EEXIST) OSCAR_RETURN_ERROR(OSCAR_ERROR_IO, "cannot write output %s: %s", path, strerror(err));
    return OSCAR_OK;
}

/* Reads the whole text file into *out (NUL-terminated, *len bytes). IO when it cannot be read,
 * INVALID_ARGUMENT when it is empty or too large. A pipe or a device is refused before it is
 * opened (opening a FIFO blocks until a writer comes); O_NONBLOCK and fstat cover a path
 * replaced in between. */
static oscar_status read_text(const char *path, char **out, size_t *len)
{
    oscar_status st = OSCAR_OK;
    char *buf = NULL; /* [size + 1] bytes */
    *out = NULL;
    *len = 0;
    struct stat sb;
    if (stat(path, &sb) != 0) OSCAR_RETURN_ERROR(OSCAR_ERROR_IO, "cannot open text file %s: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode)) OSCAR_RETURN_ERROR(OSCAR_ERROR_IO, "text file %s is not a regular file", path);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) OSCAR_RETURN_ERROR(OSCAR_ERROR_IO, "cannot open text file %s: %s", path, strerror(errno));
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of memory reading %s", path);
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        OSCAR_FAIL(OSCAR_ERROR_IO, "text file %s is not a regular file", path);
    if (sb.st_size == 0) OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "text file %s is empty", path);
    if ((uint64_t)sb.st_size > RUN_MAX_TEXT_BYTES)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "text file %s is larger than %u MiB", path, RUN_MAX_TEXT_BYTES >> 20);
    size_t size = (size_t)sb.st_size;
    buf = malloc(size + 1);
    if (!buf) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of memory reading %s", path);
    if (fread(buf, 1, size, f) != size) OSCAR_FAIL(OSCAR_ERROR_IO, "cannot read text file %s", path);
    buf[size] = '\0';
    *out = buf;
    *len = size;
    buf = NULL;
fail:
    free(buf);
    fclose(f);
    return st;
}

/* Tokenizes text into at least `want` tokens (or all of it), piece by piece so a large file
 * costs only what is needed: *toks [*n] (the caller frees). */
static oscar_status tokenize_text(const ovk_tokenizer *tok, const char *text, size_t len, uint64_t want,
                                  int32_t **toks, uint64_t *n)
{
    oscar_status st = OSCAR_OK;
    int32_t *buf = NULL; /* [cap] token ids */
    size_t cap = 0, used = 0;
    *toks = NULL;
    *n = 0;
    for (size_t at = 0; at < len && used < want;) {
        size_t end = len - at > RUN_TOKENIZE_PIECE ? at + RUN_TOKENIZE_PIECE : len;
        if (end < len) { /* cut after the last newline of the piece, if any */
            size_t cut = end;
            while (cut > at && text[cut - 1] != '\n') cut--;
            if (cut > at) end = cut;
        }
        size_t need = 0;
        OSCAR_TRY(ovk_tokenizer_encode(tok, text + at, end - at, 0, 0, NULL, 0, &need));
        if (used + need > cap) {
            size_t nc = cap ? cap : 4096;
            while (nc < used + need) nc *= 2;
            int32_t *nb = realloc(buf, nc * sizeof *nb);
            if (!nb) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of memory for %zu tokens", nc);
            buf = nb;
            cap = nc;
        }
        size_t got = 0;
        OSCAR_TRY(ovk_tokenizer_encode(tok, text + at, end - at, 0, 0, buf + used, cap - used, &got));
        used += got;
        at = end;
    }
    *toks = buf;
    *n = used;
    return OSCAR_OK;
fail:
    free(buf);
    return st;
}

/* ---- capture ------------------------------------------------------------------------------- */

typedef struct run_ctx {
    ovk_calib *cal;
    const ovk_calib_run_params *p;
    const ovk_model_desc *desc;
    uint32_t n_layer;
    uint64_t done, total; /* tokens captured, tokens to capture */
    float *k_pre;         /* [chunk][n_kv][d] keys with RoPE undone (p->center), else NULL */
    float *unrope;        /* [n_rot / 2] −rope_theta: RoPE by these angles undoes it */
} run_ctx;

/* The means (p->center) take the keys before RoPE, so that the runtime can rotate their mean to
 * the positions of any context: the chunk's rows at positions >= sink, RoPE undone. */
static oscar_status add_means(run_ctx *ctx, uint32_t layer, uint32_t pos0, uint32_t n, const float *k, const float *v)
{
    const ovk_model_hparams *hp = &ctx->desc->hp;
    uint32_t skip = pos0 >= ctx->p->sink_tokens ? 0 : ctx->p->sink_tokens - pos0, row = hp->n_head_kv * hp->head_dim;
    if (skip >= n) return OSCAR_OK;
    for (uint32_t t = skip; t < n; t++)
        for (uint32_t h = 0; h < hp->n_head_kv; h++) {
            float *x = ctx->k_pre + (size_t)(t - skip) * row + (size_t)h * hp->head_dim;
            memcpy(x, k + (size_t)t * row + (size_t)h * hp->head_dim, hp->head_dim * sizeof *x);
            ovk_rope_apply(x, hp->head_dim, hp->n_rot, hp->rope_type, ctx->unrope, pos0 + t);
        }
    return ovk_calib_add_means(ctx->cal, layer, n - skip, ctx->k_pre, v + (size_t)skip * row);
}

/* Capture hook: streams one layer's chunk into the calibrator; reports progress after the last layer. */
static oscar_status capture_hook(void *user, uint32_t layer, uint32_t pos0, uint32_t n, const float *q,
                                 const float *k, const float *v)
{
    run_ctx *ctx = user;
    oscar_status st = ovk_calib_add(ctx->cal, layer, n, q, k, v);
    if (st == OSCAR_OK && ctx->k_pre) st = add_means(ctx, layer, pos0, n, k, v);
    if (st != OSCAR_OK) return st;
    if (layer + 1 == ctx->n_layer) {
        ctx->done += n;
        if (ctx->p->progress) ctx->p->progress(ctx->p->progress_user, "capture", ctx->done, ctx->total);
    }
    return OSCAR_OK;
}

/* ---- the run ------------------------------------------------------------------------------- */

oscar_status ovk_calib_model_shape(const char *model_path, uint64_t *fingerprint, uint32_t *head_dim,
                                   uint32_t *default_group)
{
    ovk_model_desc *desc = NULL;
    oscar_status st = ovk_model_desc_load(model_path, &desc);
    if (st != OSCAR_OK) return st;
    if (fingerprint) *fingerprint = desc->fingerprint;
    if (head_dim) *head_dim = desc->hp.head_dim;
    if (default_group) *default_group = ovk_int2_default_group(desc->hp.head_dim);
    ovk_model_desc_destroy(desc);
    return OSCAR_OK;
}

oscar_status ovk_calib_run(const ovk_calib_run_params *params, ovk_calib_run_report *report)
{
    oscar_status st = OSCAR_OK;
    ovk_model_desc *desc = NULL;
    ovk_tokenizer *tok = NULL;
    ovk_capture *cap = NULL;
    ovk_calib *cal = NULL;
    char *text = NULL;     /* [text_len + 1] the text file */
    size_t text_len = 0;
    int32_t *toks = NULL;  /* [n_toks] the tokenized text */
    uint64_t n_toks = 0;
    int32_t *seq = NULL;   /* [seq_len] one sequence (BOS + text tokens) */
    run_ctx ctx;           /* the capture hook's state */
    memset(&ctx, 0, sizeof ctx);
    float *means = NULL;   /* [3][n_layer][n_kv][d]: pre-RoPE key means, value means (also the
                            * values' center in the clip fit), the keys' center (RoPE-averaged) */
    ovk_calib_result res;
    memset(&res, 0, sizeof res);
    ovk_calib_run_report rep;
    memset(&rep, 0, sizeof rep);
    if (report) memset(report, 0, sizeof *report);
    if (!params || !params->model_path || !params->text_path || !params->out_path)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "calibration: model, text and output paths are required");
    const ovk_calib_run_params *p = params;
    if (p->seq_len < 2 || p->seq_len > 65536)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "sequence length %u out of range (2..65536)", p->seq_len);
    if (p->tokens == 0 || p->tokens > (1ull << 32))
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "token count %llu out of range (1..2^32)",
                   (unsigned long long)p->tokens);
    if (p->values != OSCAR_CALIB_VALUES_PROXY && p->values != OSCAR_CALIB_VALUES_SCORES)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "values objective must be proxy or scores");
    if (p->grouping != OSCAR_CALIB_PER_LAYER && p->grouping != OSCAR_CALIB_PER_HEAD)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "grouping must be layer or head");
    if ((unsigned)p->kind > OSCAR_ROTATION_OSCAR_NO_PERM)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "unknown rotation kind %d", (int)p->kind);
    if (p->refit_rounds > OSCAR_CALIB_MAX_REFIT_ROUNDS)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "refit rounds %u out of range (0..%u)", p->refit_rounds,
                   OSCAR_CALIB_MAX_REFIT_ROUNDS);
    if (p->center > OSCAR_CALIB_CENTER_BOTH)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "center %u: not a set of OSCAR_CALIB_CENTER_* bits", p->center);
    if (p->key_center_block && p->key_center_block < OSCAR_KEY_CENTER_BLOCK_MIN)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "key center block %u is below %u positions", p->key_center_block,
                   OSCAR_KEY_CENTER_BLOCK_MIN);
    if (p->key_clip_blocks && !p->key_center_block)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "a key clip fitted with block centers needs a key center block");

    /* cheap checks first: output writable, model loads, text readable */
    OSCAR_TRY(check_writable(p->out_path, p->model_path, p->text_path));
    double t0 = now_s();
    OSCAR_TRY(ovk_model_desc_load(p->model_path, &desc));
    const ovk_model_hparams *hp = &desc->hp;
    rep.n_layer = hp->n_layer;
    rep.fingerprint = desc->fingerprint;
    if (hp->head_dim_v != hp->head_dim)
        OSCAR_FAIL(OSCAR_ERROR_UNSUPPORTED, "model %s: head_dim_v %u differs from head_dim %u", p->model_path,
                   hp->head_dim_v, hp->head_dim);
    if (hp->n_ctx_train && p->seq_len > hp->n_ctx_train)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "sequence length %u exceeds the model's context %u", p->seq_len,
                   hp->n_ctx_train);
    OSCAR_TRY(ovk_model_tokenizer_create(desc->gguf, &tok));
    OSCAR_TRY(read_text(p->text_path, &text, &text_len));
    rep.t_load = now_s() - t0;

    /* tokens: each sequence is [BOS] + text tokens, seq_len positions (the last may be shorter) */
    t0 = now_s();
    int bos = ovk_tokenizer_adds_bos(tok);
    uint32_t n_seq = (uint32_t)((p->tokens + p->seq_len - 1) / p->seq_len);
    uint64_t want_text = p->tokens - (bos ? n_seq : 0u);
    OSCAR_TRY(tokenize_text(tok, text, text_len, want_text, &toks, &n_toks));
    rep.text_tokens = n_toks;
    rep.t_tokenize = now_s() - t0;
    if (n_toks < want_text)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "text file %s has only %llu tokens, %llu needed for --tokens %llu",
                   p->text_path, (unsigned long long)n_toks, (unsigned long long)want_text,
                   (unsigned long long)p->tokens);

    /* calibrator and capture */
    ovk_calib_params cp = ovk_calib_params_default();
    cp.n_layer = hp->n_layer;
    cp.n_head = hp->n_head;
    cp.n_kv_head = hp->n_head_kv;
    cp.head_dim = hp->head_dim;
    cp.group_size = p->group_size;
    cp.grouping = p->grouping;
    cp.key_feedback = p->key_feedback;
    cp.rope_theta = desc->rope_theta;
    cp.rope_n_rot = hp->n_rot;
    cp.rope_neox = hp->rope_type == OSCAR_ROPE_NEOX;
    cp.feedback_span = p->feedback_span ? p->feedback_span : hp->n_ctx_train;
    cp.key_spread = p->key_spread;
    cp.key_center_block = (p->center & OSCAR_CALIB_CENTER_KEYS) && p->key_clip_blocks ? p->key_center_block : 0;
    cp.score_objective = p->values == OSCAR_CALIB_VALUES_SCORES;
    cp.max_seq_len = p->seq_len;
    cp.vfit_sequences = p->clip_v_output ? RUN_VFIT_SEQUENCES : 0;
    cp.vfit_sink = p->sink_tokens;
    cp.vfit_recent = p->recent_tokens;
    cp.seed = p->seed;
    cp.progress = p->progress;
    cp.progress_user = p->progress_user;
    if (p->group_size && (p->group_size > hp->head_dim || hp->head_dim % p->group_size != 0))
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "group size %u does not divide head_dim %u", p->group_size,
                   hp->head_dim);
    uint32_t group = p->group_size ? p->group_size : ovk_int2_default_group(hp->head_dim); /* ovk_calib_create's */
    if (p->refit_rounds && group < hp->head_dim)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "refit needs one group per row: group size %u is below head_dim %u", group,
                   hp->head_dim);
    cp.refit_rounds = p->refit_rounds;
    if ((st = ovk_calib_create(&cp, &cal)) != OSCAR_OK)
        OSCAR_FAIL(st == OSCAR_ERROR_INVALID_ARGUMENT ? OSCAR_ERROR_UNSUPPORTED : st,
                   "model %s cannot be calibrated: %s", p->model_path, oscar_last_error());
    if (p->tokens < ovk_calib_get_params(cal)->min_tokens)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "--tokens %llu is below the minimum of %u (head_dim)",
                   (unsigned long long)p->tokens, ovk_calib_get_params(cal)->min_tokens);
    ctx.cal = cal, ctx.p = p, ctx.desc = desc, ctx.n_layer = hp->n_layer, ctx.total = p->tokens;
    ovk_capture_params kp = ovk_capture_params_default();
    kp.max_seq_len = p->seq_len;
    kp.chunk = p->chunk ? p->chunk : (p->seq_len < 256 ? p->seq_len : 256);
    if (p->center) {
        if (p->sink_tokens >= p->seq_len)
            OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "centering needs sequences longer than the sink: --seq-len %u, --sink %u",
                       p->seq_len, p->sink_tokens);
        ctx.k_pre = malloc((size_t)kp.chunk * hp->n_head_kv * hp->head_dim * sizeof *ctx.k_pre);
        ctx.unrope = malloc((hp->n_rot / 2 + 1) * sizeof *ctx.unrope);
        if (!ctx.k_pre || !ctx.unrope) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
        for (uint32_t i = 0; i < hp->n_rot / 2; i++) ctx.unrope[i] = -desc->rope_theta[i];
    }
    kp.hook = capture_hook;
    kp.hook_user = &ctx;
    OSCAR_TRY(ovk_capture_create(desc, &kp, &cap));
    seq = malloc((size_t)p->seq_len * sizeof *seq);
    if (!seq) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of memory");

    t0 = now_s();
    uint64_t used_text = 0;
    for (uint32_t s = 0; s < n_seq; s++) {
        uint64_t left = p->tokens - (uint64_t)s * p->seq_len;
        uint32_t len = left < p->seq_len ? (uint32_t)left : p->seq_len;
        uint32_t at = 0;
        if (bos) seq[at++] = ovk_tokenizer_bos(tok);
        memcpy(seq + at, toks + used_text, (size_t)(len - at) * sizeof *seq);
        used_text += len - at;
        OSCAR_TRY(ovk_calib_begin_sequence(cal));
        OSCAR_TRY(ovk_capture_eval(cap, seq, len, 0, NULL));
    }
    rep.tokens = ctx.done;
    rep.sequences = n_seq;
    rep.t_capture = now_s() - t0;
    ovk_capture_destroy(cap); /* frees the float weights before solving */
    cap = NULL;

    size_t per_layer = (size_t)hp->n_head_kv * hp->head_dim, all = hp->n_layer * per_layer;
    /* positions the key statistics are spread over (the rotation's C_K, the clip fit's key center) */
    uint32_t key_span = p->key_spread ? ovk_calib_key_rope_span(ovk_calib_get_params(cal)) : 0;
    if (p->center) {
        /* the clip fit's rows are positions 0..seq_len-1: center the keys as the runtime would a
         * context of key_center_span positions (ovk_rope_average over sink..span-1): with the
         * key spread the model's context, whose late keys keep more of their offset (the center
         * averaged over it is smaller), else seq_len */
        uint32_t span = key_span > p->sink_tokens ? key_span : p->seq_len;
        int blocks = ovk_calib_get_params(cal)->key_center_block != 0; /* the fit centers each key by its block */
        if ((p->center & OSCAR_CALIB_CENTER_KEYS) && !blocks) rep.key_center_span = span;
        double mean[OSCAR_CALIB_MAX_HEAD_DIM];
        means = malloc(3 * all * sizeof *means);
        if (!means) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
        for (uint32_t l = 0; l < hp->n_layer; l++)
            for (uint32_t h = 0; h < hp->n_head_kv; h++)
                for (int which = 0; which < 2; which++) {
                    float *m = means + which * all + l * per_layer + (size_t)h * hp->head_dim;
                    OSCAR_TRY(ovk_calib_mean(cal, l, h, which, mean));
                    for (uint32_t j = 0; j < hp->head_dim; j++) m[j] = (float)mean[j];
                    if (!which && !blocks) /* with blocks the fit takes the pre-RoPE mean itself */
                        ovk_rope_average(m, hp->head_dim, hp->n_rot, hp->rope_type, desc->rope_theta, p->sink_tokens,
                                           span, m + 2 * all);
                }
    }
    t0 = now_s();
    /* the solve's BLAS calls are head_dim-sized: one OpenBLAS thread, so that its idle threads
     * do not spin beside the clip fit's own workers */
    int blas_threads = openblas_get_num_threads();
    openblas_set_num_threads(1);
    const float *center_k = NULL; /* the clip fit's key centers: pre-RoPE means with blocks, else RoPE-averaged */
    if (p->center & OSCAR_CALIB_CENTER_KEYS) center_k = ovk_calib_get_params(cal)->key_center_block ? means : means + 2 * all;
    const float *center_v = p->center & OSCAR_CALIB_CENTER_VALUES ? means + all : NULL;
    st = ovk_calib_solve(cal, p->kind, p->values, center_k, center_v, &res);
    openblas_set_num_threads(blas_threads);
    if (st != OSCAR_OK) goto fail;
    rep.t_solve = now_s() - t0;
    rep.refit_rounds = ovk_calib_get_params(cal)->refit_rounds;
    size_t nl = hp->n_layer;
    rep.clip_k_fit = malloc(nl * sizeof(float));
    rep.clip_v_fit = malloc(nl * sizeof(float));
    rep.clip_k = malloc(nl * sizeof(float));
    rep.clip_v = malloc(nl * sizeof(float));
    rep.err_k = malloc(nl * sizeof(double));
    rep.err_v = malloc(nl * sizeof(double));
    if (!rep.clip_k_fit || !rep.clip_v_fit || !rep.clip_k || !rep.clip_v || !rep.err_k || !rep.err_v)
        OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
    for (size_t l = 0; l < nl; l++) {
        rep.clip_k_fit[l] = res.clip_k[l];
        rep.clip_v_fit[l] = res.clip_v[l];
        rep.clip_k[l] = p->clip_fitted ? res.clip_k[l] : RUN_FIXED_CLIP_K;
        rep.clip_v[l] = p->clip_fitted ? res.clip_v[l] : RUN_FIXED_CLIP_V;
        rep.err_k[l] = res.err_k[l];
        rep.err_v[l] = res.err_v[l];
    }

    t0 = now_s();
    ovk_rotation_file_meta meta;
    memset(&meta, 0, sizeof meta);
    meta.objective_k = ovk_rotation_objective_k(p->kind);
    meta.objective_v = ovk_rotation_objective_v(p->kind, p->values);
    meta.grouping = p->grouping;
    meta.group_size = ovk_calib_get_params(cal)->group_size;
    meta.clip_k = rep.clip_k;
    meta.clip_v = rep.clip_v;
    meta.clip_fitted = p->clip_fitted;
    meta.sink_tokens = p->sink_tokens;
    meta.recent_tokens = p->recent_tokens;
    meta.architecture = ovk_arch_name(hp->arch);
    meta.n_layer = hp->n_layer;
    meta.n_head = hp->n_head;
    meta.n_kv_head = hp->n_head_kv;
    meta.head_dim = hp->head_dim;
    meta.fingerprint = desc->fingerprint;
    meta.calib_tokens = rep.tokens;
    meta.sequence_length = p->seq_len;
    meta.text_source = p->text_source ? p->text_source : p->text_path;
    int from_covariance = p->kind == OSCAR_ROTATION_OSCAR || p->kind == OSCAR_ROTATION_OSCAR_NO_PERM; /* R = U·H(·P) */
    meta.write_eigenvalues = from_covariance;
    meta.mean_k = p->center & OSCAR_CALIB_CENTER_KEYS ? means : NULL;
    meta.mean_v = p->center & OSCAR_CALIB_CENTER_VALUES ? means + all : NULL;
    meta.refit_rounds = rep.refit_rounds;
    meta.key_center_block = p->center & OSCAR_CALIB_CENTER_KEYS ? p->key_center_block : 0;
    /* recorded where the span was used: R_K built from the spread C_K, or the clip fit's key center */
    if (from_covariance || (key_span && rep.key_center_span == key_span)) meta.key_rope_span = key_span;
    OSCAR_TRY(ovk_rotation_file_write(p->out_path, &res, &meta));
    rep.t_write = now_s() - t0;

fail:
    if (report) *report = rep;
    else ovk_calib_run_report_free(&rep);
    ovk_calib_result_free(&res);
    free(seq);
    free(means);
    free(ctx.k_pre);
    free(ctx.unrope);
    free(toks);
    free(text);
    ovk_capture_destroy(cap);
    ovk_calib_destroy(cal);
    ovk_tokenizer_destroy(tok);
    ovk_model_desc_destroy(desc);
    return st;
}
