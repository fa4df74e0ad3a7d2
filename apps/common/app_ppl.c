/* Perplexity pieces shared by the apps (app_ppl.h). */
#include "common/app_ppl.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

oscar_status app_tokenize_text(const oscar_model *model, const char *text, size_t len, int32_t **tokens,
                               size_t *n_tokens, int32_t *bos)
{
    *tokens = NULL;
    *n_tokens = 0;
    size_t n = 0;
    oscar_status st = oscar_model_tokenize(model, text, len, 0, 0, NULL, 0, &n);
    if (st != OSCAR_OK) return st;
    int32_t *t = malloc((n ? n : 1) * sizeof *t);
    if (!t) return OSCAR_ERROR_OUT_OF_HOST_MEMORY;
    st = oscar_model_tokenize(model, text, len, 0, 0, t, n, &n);
    if (st != OSCAR_OK) {
        free(t);
        return st;
    }
    int32_t b = -1;
    size_t n_bos = 0;
    if (oscar_model_tokenize(model, "", 0, 1, 0, &b, 1, &n_bos) != OSCAR_OK || n_bos != 1) b = -1;
    *tokens = t;
    *n_tokens = n;
    *bos = b;
    return OSCAR_OK;
}

/* The terms are computed with expf (each within 1 ulp of float; the vocabulary of 50K-150K
 * tokens per row per step is the apps' CPU hot spot) and summed in double. */
double app_token_nll(const float *logits, uint32_t n_vocab, int32_t target)
{
    float mx = logits[0];
    for (uint32_t i = 1; i < n_vocab; i++) mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0;
    for (uint32_t i = 0; i < n_vocab; i++) sum += expf(logits[i] - mx);
    return log(sum) + (double)mx - (double)logits[target];
}

/* The NLLs of a decode step's rows, split over threads that live for the whole evaluation: a row
 * of 50K-150K logits takes the CPU ~0.3 ms, and a step scores up to n_par rows while the GPU
 * waits for the next one. Thread t (the calling one is 0) takes rows t, t + n, t + 2n, ... of
 * each step, each row by itself, so the values do not depend on the threads. */
enum { NLL_MAX_THREADS = 16 };

typedef struct nll_pool nll_pool;

typedef struct nll_worker_arg {
    nll_pool *pool;
    uint32_t t;
} nll_worker_arg;

struct nll_pool {
    pthread_mutex_t lock;
    pthread_cond_t go, done;
    pthread_t threads[NLL_MAX_THREADS - 1];
    nll_worker_arg args[NLL_MAX_THREADS - 1];
    uint32_t n;              /* threads taking rows, the calling one included (1: no workers) */
    uint64_t step;           /* bumped for each step the workers are to take */
    uint32_t pending;        /* workers not yet through this step */
    int quit;
    /* this step */
    const float *logits;     /* [n_rows][n_vocab] */
    const int32_t *const *chunks;
    uint32_t n_vocab, n_rows, j; /* j: the rows score token j + 1 of their chunks */
    double *nll;             /* [n_rows] out */
};

static void nll_rows(const nll_pool *p, uint32_t t)
{
    for (uint32_t r = t; r < p->n_rows; r += p->n)
        p->nll[r] = app_token_nll(p->logits + (size_t)r * p->n_vocab, p->n_vocab, p->chunks[r][p->j + 1]);
}

static void *nll_worker(void *arg)
{
    nll_pool *p = ((nll_worker_arg *)arg)->pool;
    uint32_t t = ((nll_worker_arg *)arg)->t;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (p->step == seen && !p->quit) pthread_cond_wait(&p->go, &p->lock);
        if (p->quit) break;
        seen = p->step;
        pthread_mutex_unlock(&p->lock);
        nll_rows(p, t);
        pthread_mutex_lock(&p->lock);
        if (--p->pending == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* Starts up to want - 1 workers (fewer where a thread cannot be made: the rows go to those there are). */
static void nll_pool_start(nll_pool *p, uint32_t want)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    p->n = 1;
    for (uint32_t t = 1; t < want && t < NLL_MAX_THREADS; t++) {
        p->args[t - 1] = (nll_worker_arg){ p, t };
        if (pthread_create(&p->threads[t - 1], NULL, nll_worker, &p->args[t - 1]) != 0) break;
        p->n++;
    }
}

static void nll_pool_stop(nll_pool *p)
{
    pthread_mutex_lock(&p->lock);
    p->quit = 1;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->lock);
    for (uint32_t t = 1; t < p->n; t++) pthread_join(p->threads[t - 1], NULL);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->lock);
}

/* nll[r] for a step's n_rows rows (n_rows <= the pool's rows a step when it was started). */
static void nll_pool_run(nll_pool *p, const float *logits, const int32_t *const *chunks, uint32_t n_vocab, uint32_t n_rows,
                         uint32_t j, double *nll)
{
    pthread_mutex_lock(&p->lock);
    p->logits = logits, p->chunks = chunks, p->n_vocab = n_vocab, p->n_rows = n_rows, p->j = j, p->nll = nll;
    p->pending = p->n - 1;
    p->step++;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->lock);
    nll_rows(p, 0);
    pthread_mutex_lock(&p->lock);
    while (p->pending) pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}
oscar_status app_ppl_eval(oscar_session *session, const int32_t *seqs, uint32_t n_par, const int32_t *tokens,
                          uint32_t ctx, uint32_t n_chunks, int32_t bos, uint32_t n_vocab, float *logits,
                          double *chunk_nll, const app_ppl_hooks *hooks)
{
    const int32_t **chunks = malloc((n_chunks ? n_chunks : 1) * sizeof *chunks); /* [n_chunks] chunk c's first token */
    if (!chunks) return OSCAR_ERROR_OUT_OF_HOST_MEMORY;
    for (uint32_t c = 0; c < n_chunks; c++) chunks[c] = tokens + (size_t)c * ctx;
    oscar_status st = app_ppl_eval_chunks(session, seqs, n_par, chunks, ctx, n_chunks, bos, n_vocab, logits, chunk_nll, hooks);
    free(chunks);
    return st;
}

oscar_status app_ppl_eval_chunks(oscar_session *session, const int32_t *seqs, uint32_t n_par,
                                 const int32_t *const *chunks, uint32_t ctx, uint32_t n_chunks, int32_t bos,
                                 uint32_t n_vocab, float *logits, double *chunk_nll, const app_ppl_hooks *hooks)
{
    const uint32_t first = ctx / 2;
    const uint64_t total = (uint64_t)n_chunks * (ctx - 1 - first);
    uint64_t scored = 0;
    oscar_status st = OSCAR_OK;
    int32_t *prefix = malloc((size_t)(first + 1) * sizeof *prefix); /* [first+1] a chunk's prefill, BOS first */
    int32_t *step_tok = malloc((size_t)n_par * sizeof *step_tok);   /* [n_par] this step's token per chunk */
    double *step_nll = malloc((size_t)n_par * sizeof *step_nll);    /* [n_par] this step's NLL per chunk */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t threads = cpus > 1 ? (uint32_t)(cpus < NLL_MAX_THREADS ? cpus : NLL_MAX_THREADS) : 1;
    nll_pool pool;
    nll_pool_start(&pool, threads < n_par ? threads : n_par);
    if (!prefix || !step_tok || !step_nll) {
        st = OSCAR_ERROR_OUT_OF_HOST_MEMORY;
        goto out;
    }
    for (uint32_t c = 0; c < n_chunks; c++) chunk_nll[c] = 0;
    for (uint32_t c0 = 0; c0 < n_chunks; c0 += n_par) {
        uint32_t np = n_chunks - c0 < n_par ? n_chunks - c0 : n_par;
        /* prefill positions 0..first of each chunk: the logits of `first` score token first+1 */
        for (uint32_t p = 0; p < np; p++) {
            const int32_t *ct = chunks[c0 + p];
            memcpy(prefix, ct, (size_t)(first + 1) * sizeof *prefix);
            if (bos >= 0) prefix[0] = bos;
            st = oscar_session_seq_reset(session, seqs[p]);
            if (st == OSCAR_OK) st = oscar_session_prefill(session, seqs[p], prefix, first + 1, logits);
            if (st != OSCAR_OK) goto out;
            double nll = app_token_nll(logits, n_vocab, ct[first + 1]);
            if (!isfinite(nll)) {
                st = APP_PPL_NOT_FINITE;
                goto out;
            }
            chunk_nll[c0 + p] += nll;
            scored++;
            if (hooks && hooks->on_step) hooks->on_step(hooks->user, scored, total);
        }
        /* then one token per chunk per step: token j's logits score token j+1 */
        for (uint32_t j = first + 1; j + 1 < ctx; j++) {
            for (uint32_t p = 0; p < np; p++) step_tok[p] = chunks[c0 + p][j];
            st = oscar_session_decode(session, np, seqs, step_tok, logits);
            if (st != OSCAR_OK) goto out;
            nll_pool_run(&pool, logits, chunks + c0, n_vocab, np, j, step_nll);
            for (uint32_t p = 0; p < np; p++) {
                double nll = step_nll[p];
                if (!isfinite(nll)) {
                    st = APP_PPL_NOT_FINITE;
                    goto out;
                }
                chunk_nll[c0 + p] += nll;
            }
            scored += np;
            if (hooks && hooks->on_step) hooks->on_step(hooks->user, scored, total);
        }
        if (hooks && hooks->on_chunk)
            for (uint32_t p = 0; p < np; p++) hooks->on_chunk(hooks->user, c0 + p, chunk_nll[c0 + p]);
    }
out:
    nll_pool_stop(&pool);
    free(prefix);
    free(step_tok);
    free(step_nll);
    return st;
}

/* Mean over chunks of (a[c] - b[c]) / n_scored (b NULL: of a[c] / n_scored), and the standard
 * error of that mean from the chunks' spread (0 for one chunk). */
static void chunk_mean_se(const double *a, const double *b, uint32_t n_chunks, uint32_t n_scored, double *mean, double *se)
{
    double sum = 0, sum_sq = 0;
    for (uint32_t c = 0; c < n_chunks; c++) {
        double v = (a[c] - (b ? b[c] : 0.0)) / n_scored;
        sum += v;
        sum_sq += v * v;
    }
    double m = n_chunks ? sum / n_chunks : NAN, e = 0;
    if (n_chunks > 1) {
        double var = (sum_sq / n_chunks - m * m) * n_chunks / (n_chunks - 1);
        e = var > 0 ? sqrt(var / n_chunks) : 0;
    }
    *mean = m;
    *se = e;
}

double app_ppl_summary(const double *chunk_nll, uint32_t n_chunks, uint32_t n_scored, double *err, double *nll)
{
    double m, e;
    chunk_mean_se(chunk_nll, NULL, n_chunks, n_scored, &m, &e);
    if (err) *err = e * exp(m);
    if (nll) *nll = m;
    return exp(m);
}

double app_ppl_ratio(const double *nll_a, const double *nll_b, uint32_t n_chunks, uint32_t n_scored, double *err)
{
    double m, e;
    chunk_mean_se(nll_a, nll_b, n_chunks, n_scored, &m, &e);
    if (err) *err = e * exp(m);
    return exp(m);
}
