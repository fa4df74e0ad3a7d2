/* Sampler: repetition penalty, top-k, top-p, min-p, temperature, seeded draw (see sampler.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "sampler.h"

/* ---- the generator ----------------------------------------------------------------------- */

void ovk_rng_seed(ovk_rng *rng, uint64_t seed)
{
    /* splitmix64 of the seed, so nearby seeds give unrelated streams and 0 is fine */
    uint64_t z = seed + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    rng->state = z ? z : 0x9E3779B97F4A7C15ull;
}

uint64_t ovk_rng_next(ovk_rng *rng)
{
    /* xorshift64* */
    uint64_t x = rng->state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng->state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

double ovk_rng_uniform(ovk_rng *rng) { return (double)(ovk_rng_next(rng) >> 11) * 0x1.0p-53; }

/* ---- the sampler ------------------------------------------------------------------------- */

typedef struct cand {
    int32_t id;
    float logit;
} cand;

struct oscar_sampler {
    oscar_sampler_params p;
    uint32_t n_vocab;
    ovk_rng rng;
    cand *cands;        /* [n_vocab] working set, sorted by logit (descending) when filtered */
    double *probs;      /* [n_vocab] probabilities of cands */
    uint8_t *seen;      /* [n_vocab] scratch marks for the penalty */
    int32_t *history;   /* [repeat_last_n] ring of accepted tokens */
    uint32_t n_history; /* tokens in the ring (<= repeat_last_n) */
    uint32_t history_pos; /* next write index */
};

oscar_sampler_params oscar_sampler_params_default(void)
{
    oscar_sampler_params p;
    p.temperature = 0.8f;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.repeat_penalty = 1.0f;
    p.repeat_last_n = 64;
    p.seed = 0x5EED;
    return p;
}

oscar_status oscar_sampler_create(const oscar_sampler_params *params, uint32_t n_vocab, oscar_sampler **out)
{
    oscar_status st = OSCAR_OK;
    oscar_sampler *s = NULL;
    if (!out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "sampler: out is NULL");
    *out = NULL;
    oscar_sampler_params p = params ? *params : oscar_sampler_params_default();
    if (n_vocab == 0 || n_vocab > (uint32_t)INT32_MAX)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "sampler: n_vocab %u", n_vocab);
    if (isnan(p.temperature) || isnan(p.top_p) || isnan(p.min_p) || isnan(p.repeat_penalty))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "sampler: a parameter is NaN");
    if (p.top_p <= 0.0f) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "sampler: top_p %g must be > 0", p.top_p);
    if (p.repeat_penalty <= 0.0f)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "sampler: repeat_penalty %g must be > 0", p.repeat_penalty);
    if (p.repeat_last_n < 0) p.repeat_last_n = 0;

    s = calloc(1, sizeof *s);
    if (!s) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "sampler: out of memory");
    s->p = p;
    s->n_vocab = n_vocab;
    s->cands = malloc(n_vocab * sizeof *s->cands);
    s->probs = malloc(n_vocab * sizeof *s->probs);
    s->seen = calloc(n_vocab, 1);
    s->history = p.repeat_last_n > 0 ? malloc((size_t)p.repeat_last_n * sizeof *s->history) : NULL;
    if (!s->cands || !s->probs || !s->seen || (p.repeat_last_n > 0 && !s->history))
        OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "sampler: out of memory for %u tokens", n_vocab);
    ovk_rng_seed(&s->rng, p.seed);
    *out = s;
    return OSCAR_OK;
fail:
    oscar_sampler_destroy(s);
    return st;
}

void oscar_sampler_destroy(oscar_sampler *s)
{
    if (!s) return;
    free(s->cands);
    free(s->probs);
    free(s->seen);
    free(s->history);
    free(s);
}

void oscar_sampler_accept(oscar_sampler *s, int32_t token)
{
    if (!s || s->p.repeat_last_n <= 0) return;
    s->history[s->history_pos] = token;
    s->history_pos = (s->history_pos + 1) % (uint32_t)s->p.repeat_last_n;
    if (s->n_history < (uint32_t)s->p.repeat_last_n) s->n_history++;
}

void oscar_sampler_reset(oscar_sampler *s)
{
    if (!s) return;
    s->n_history = 0;
    s->history_pos = 0;
    ovk_rng_seed(&s->rng, s->p.seed);
}

/* Descending logit, then ascending id, so the order (and every draw) is deterministic. */
static int cmp_cand(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Restores the heap below c[i]: c[0..k) is a heap whose root is the worst candidate (last in
 * cmp_cand order). */
static void sift_worst(cand *c, size_t k, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < k && cmp_cand(&c[l], &c[w]) > 0) w = l;
        if (r < k && cmp_cand(&c[r], &c[w]) > 0) w = r;
        if (w == i) return;
        cand t = c[i];
        c[i] = c[w];
        c[w] = t;
        i = w;
    }
}

/* Moves the k best of c[0..n) (cmp_cand order) to c[0..k), unordered; returns k (0 < k < n). */
static size_t select_top_k(cand *c, size_t n, size_t k)
{
    for (size_t i = k / 2; i-- > 0;) sift_worst(c, k, i);
    for (size_t i = k; i < n; i++) {
        if (cmp_cand(&c[i], &c[0]) < 0) {
            c[0] = c[i];
            sift_worst(c, k, 0);
        }
    }
    return k;
}

/* Fills s->probs[0..n) with the softmax of cands[0..n).logit / temp (cands sorted, so [0] is
 * the maximum). */
static void softmax(oscar_sampler *s, size_t n, double temp)
{
    double max = s->cands[0].logit, sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        double e = exp(((double)s->cands[i].logit - max) / temp);
        s->probs[i] = e;
        sum += e;
    }
    for (size_t i = 0; i < n; i++) s->probs[i] /= sum;
}

/* Runs the chain up to the draw. On return cands[0..*n) are the survivors, sorted, and
 * probs[0..*n) their final probabilities (greedy: *n == 1). */
static oscar_status prepare(oscar_sampler *s, const float *logits, size_t *n_out)
{
    const oscar_sampler_params *p = &s->p;
    size_t n = 0;
    for (uint32_t i = 0; i < s->n_vocab; i++) {
        float l = logits[i];
        if (isnan(l)) l = -INFINITY;
        s->cands[n].id = (int32_t)i;
        s->cands[n].logit = l;
        n++;
    }
    /* repetition penalty, once per distinct token of the history (llama.cpp semantics) */
    if (p->repeat_penalty != 1.0f && s->n_history > 0) {
        for (uint32_t k = 0; k < s->n_history; k++) {
            int32_t t = s->history[k];
            if (t < 0 || (uint32_t)t >= s->n_vocab || s->seen[t]) continue;
            s->seen[t] = 1;
            float *l = &s->cands[t].logit;
            if (*l > 0.0f) *l /= p->repeat_penalty;
            else *l *= p->repeat_penalty;
        }
        for (uint32_t k = 0; k < s->n_history; k++) {
            int32_t t = s->history[k];
            if (t >= 0 && (uint32_t)t < s->n_vocab) s->seen[t] = 0;
        }
    }
    /* drop -inf (and NaN) */
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (s->cands[i].logit > -INFINITY) s->cands[m++] = s->cands[i];
    n = m;
    if (n == 0) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "sampler: no finite logit among %u", s->n_vocab);

    if (p->temperature <= 0.0f) {
        size_t best = 0;
        for (size_t i = 1; i < n; i++)
            if (s->cands[i].logit > s->cands[best].logit) best = i; /* first (lowest id) on ties */
        s->cands[0] = s->cands[best];
        s->probs[0] = 1.0;
        *n_out = 1;
        return OSCAR_OK;
    }

    /* top-k (a heap selection, O(n log k)), then sort what is left */
    if (p->top_k > 0 && (size_t)p->top_k < n) n = select_top_k(s->cands, n, (size_t)p->top_k);
    qsort(s->cands, n, sizeof *s->cands, cmp_cand);
    /* top-p at temperature 1: the shortest prefix whose mass reaches top_p */
    if (p->top_p < 1.0f) {
        softmax(s, n, 1.0);
        double cum = 0.0;
        size_t keep = n;
        for (size_t i = 0; i < n; i++) {
            cum += s->probs[i];
            if (cum >= p->top_p) { keep = i + 1; break; }
        }
        n = keep;
    }
    /* min-p at temperature 1: p_i >= min_p * p_max, i.e. logit_i >= logit_max + log(min_p) */
    if (p->min_p > 0.0f) {
        double cut = (double)s->cands[0].logit + log((double)p->min_p);
        size_t keep = 1;
        while (keep < n && (double)s->cands[keep].logit >= cut) keep++;
        n = keep;
    }
    softmax(s, n, (double)p->temperature);
    *n_out = n;
    return OSCAR_OK;
}

oscar_status oscar_sampler_sample(oscar_sampler *s, const float *logits, int32_t *token)
{
    oscar_status st = OSCAR_OK;
    if (!s || !logits || !token) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "sampler_sample: NULL argument");
    size_t n = 0;
    OSCAR_TRY(prepare(s, logits, &n));
    if (n == 1 || s->p.temperature <= 0.0f) {
        *token = s->cands[0].id;
        return OSCAR_OK;
    }
    double u = ovk_rng_uniform(&s->rng), cum = 0.0;
    size_t pick = n - 1; /* rounding can leave cum a hair below u: the last survivor then */
    for (size_t i = 0; i < n; i++) {
        cum += s->probs[i];
        if (u < cum) { pick = i; break; }
    }
    *token = s->cands[pick].id;
    return OSCAR_OK;
fail:
    return st;
}

oscar_status ovk_sampler_distribution(oscar_sampler *s, const float *logits, float *probs)
{
    oscar_status st = OSCAR_OK;
    if (!s || !logits || !probs) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "sampler_distribution: NULL argument");
    size_t n = 0;
    OSCAR_TRY(prepare(s, logits, &n));
    memset(probs, 0, s->n_vocab * sizeof *probs);
    for (size_t i = 0; i < n; i++) probs[s->cands[i].id] = (float)s->probs[i];
    return OSCAR_OK;
fail:
    return st;
}
