/* Page bookkeeping of the KV cache; the contract is in kv_pages.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "kv_pages.h"

/* ---- pools -------------------------------------------------------------------------------- */
/* Pages of zone z: [z * zone_pages, z * zone_pages + zone_size(p, z)). */
static uint32_t zone_size(const kv_pool *p, uint32_t z)
{
    uint64_t begin = (uint64_t)z * p->zone_pages;
    return begin >= p->n_pages ? 0 : (uint32_t)(p->n_pages - begin < p->zone_pages ? p->n_pages - begin : p->zone_pages);
}

static oscar_status pool_init(kv_pool *p, uint32_t n, uint32_t n_zones, uint32_t zone_pages)
{
    memset(p, 0, sizeof *p);
    if (n_zones <= 1 || zone_pages == 0) n_zones = 1, zone_pages = n ? n : 1;
    if ((uint64_t)n_zones * zone_pages < n)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: %u zones of %u pages hold fewer than %u pages", n_zones,
                           zone_pages, n);
    p->refcount = calloc(n ? n : 1, sizeof *p->refcount);
    p->free_stack = calloc(n ? n : 1, sizeof *p->free_stack);
    p->n_free = calloc(n_zones, sizeof *p->n_free);
    if (!p->refcount || !p->free_stack || !p->n_free) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    p->n_pages = n;
    p->n_zones = n_zones;
    p->zone_pages = zone_pages;
    /* lowest ids on top, so a fresh cache fills each zone's pages in order */
    for (uint32_t z = 0; z < n_zones; z++) {
        uint32_t base = z * zone_pages, size = zone_size(p, z);
        for (uint32_t i = 0; i < size; i++) p->free_stack[base + i] = base + size - 1 - i;
        p->n_free[z] = size;
    }
    return OSCAR_OK;
}

static void pool_free(kv_pool *p)
{
    free(p->refcount);
    free(p->free_stack);
    free(p->n_free);
    memset(p, 0, sizeof *p);
}

static int pool_alloc(kv_pool *p, uint32_t zone, int32_t *page)
{
    if (p->n_free[zone] == 0) return 0;
    uint32_t id = p->free_stack[zone * p->zone_pages + --p->n_free[zone]];
    p->refcount[id] = 1;
    *page = (int32_t)id;
    return 1;
}

static void pool_ref(kv_pool *p, int32_t page) { p->refcount[page]++; }

static void pool_unref(kv_pool *p, int32_t page)
{
    uint32_t z = (uint32_t)page / p->zone_pages;
    if (--p->refcount[page] == 0) p->free_stack[z * p->zone_pages + p->n_free[z]++] = (uint32_t)page;
}

/* ---- geometry ----------------------------------------------------------------------------- */
static uint32_t div_up(uint64_t a, uint32_t b) { return (uint32_t)((a + b - 1) / b); }

/* fp16 pages a sequence's windows need at most (between steps and during one). */
static uint32_t f16_window_pages(const kv_book_config *c)
{
    uint32_t sink_pages = div_up(c->sink, c->page);
    uint32_t window = c->recent + c->flush - 1 + c->max_step_tokens;
    return sink_pages + div_up(window, c->page) + 1;
}

void kv_book_pages_for(const kv_book_config *c, uint32_t tokens, uint32_t *int2_pages, uint32_t *f16_pages)
{
    uint32_t all = div_up(tokens, c->page);
    if (!c->int2) {
        *int2_pages = 0;
        *f16_pages = all;
        return;
    }
    uint32_t q = tokens > c->sink + c->recent ? tokens - c->sink - c->recent : 0;
    *int2_pages = div_up(q, c->page);
    uint32_t w = f16_window_pages(c);
    *f16_pages = w < all ? w : all;
}

/* Is position p of s stored in fp16? */
static int is_f16(const kv_book *b, const kv_seq *s, uint32_t p)
{
    if (!b->cfg.int2) return 1;
    return p < b->cfg.sink || p >= s->flushed_end;
}

/* ---- init / free -------------------------------------------------------------------------- */
oscar_status kv_book_init(kv_book *b, const kv_book_config *cfg)
{
    oscar_status st = OSCAR_OK;
    memset(b, 0, sizeof *b);
    b->cfg = *cfg;
    if (cfg->page == 0 || cfg->max_seqs == 0 || cfg->max_context == 0 || cfg->flush == 0 || cfg->max_step_tokens == 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: page, sequences, context, flush and step sizes must be positive");
    b->max_pages = div_up(cfg->max_context, cfg->page) + 1;
    OSCAR_TRY(pool_init(&b->int2, cfg->n_int2_pages, cfg->n_zones, cfg->zone_int2_pages));
    OSCAR_TRY(pool_init(&b->f16, cfg->n_f16_pages, cfg->n_zones, cfg->zone_f16_pages));
    if (b->int2.n_zones != b->f16.n_zones)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "KV cache: the INT2 and fp16 pools have %u and %u zones", b->int2.n_zones, b->f16.n_zones);
    b->seqs = calloc(cfg->max_seqs, sizeof *b->seqs);
    if (!b->seqs) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    for (uint32_t i = 0; i < cfg->max_seqs; i++) {
        kv_seq *s = &b->seqs[i];
        s->f16_pages = malloc(b->max_pages * sizeof *s->f16_pages);
        s->int2_pages = malloc(b->max_pages * sizeof *s->int2_pages);
        if (!s->f16_pages || !s->int2_pages) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        memset(s->f16_pages, 0xFF, b->max_pages * sizeof *s->f16_pages);
        memset(s->int2_pages, 0xFF, b->max_pages * sizeof *s->int2_pages);
        s->dirty = 1;
    }
    uint32_t t = cfg->max_step_tokens;
    kv_step_plan *pl = &b->plan;
    pl->seqs = malloc(cfg->max_seqs * sizeof *pl->seqs);
    pl->n_new = malloc(cfg->max_seqs * sizeof *pl->n_new);
    pl->old_len = malloc(cfg->max_seqs * sizeof *pl->old_len);
    pl->new_flushed_end = malloc(cfg->max_seqs * sizeof *pl->new_flushed_end);
    pl->append = malloc(t * sizeof *pl->append);
    pl->row_seq = malloc(t * sizeof *pl->row_seq);
    pl->row_pos = malloc(t * sizeof *pl->row_pos);
    /* a step flushes at most (new tokens + window) per sequence */
    pl->flush = malloc(((size_t)t + (size_t)cfg->max_seqs * (cfg->recent + cfg->flush)) * sizeof *pl->flush);
    b->copies = malloc(2 * sizeof *b->copies);
    if (!pl->seqs || !pl->n_new || !pl->old_len || !pl->new_flushed_end || !pl->append || !pl->row_seq ||
        !pl->row_pos || !pl->flush || !b->copies)
        OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    return OSCAR_OK;
fail:
    kv_book_free(b);
    return st;
}

void kv_book_free(kv_book *b)
{
    if (!b) return;
    if (b->seqs)
        for (uint32_t i = 0; i < b->cfg.max_seqs; i++) {
            free(b->seqs[i].f16_pages);
            free(b->seqs[i].int2_pages);
        }
    free(b->seqs);
    kv_step_plan *pl = &b->plan;
    free(pl->seqs), free(pl->n_new), free(pl->old_len), free(pl->new_flushed_end);
    free(pl->append), free(pl->row_seq), free(pl->row_pos), free(pl->flush);
    free(b->copies);
    pool_free(&b->int2);
    pool_free(&b->f16);
    memset(b, 0, sizeof *b);
}

uint32_t kv_pool_n_free(const kv_pool *p)
{
    uint32_t n = 0;
    for (uint32_t z = 0; z < p->n_zones; z++) n += p->n_free[z];
    return n;
}

uint32_t kv_book_new_zone(const kv_book *b)
{
    /* the zone with the most free fp16 pages (every token starts there), then INT2 pages */
    uint32_t best = 0;
    for (uint32_t z = 1; z < b->f16.n_zones; z++)
        if (b->f16.n_free[z] > b->f16.n_free[best] ||
            (b->f16.n_free[z] == b->f16.n_free[best] && b->int2.n_free[z] > b->int2.n_free[best]))
            best = z;
    return best;
}

/* ---- sequences ---------------------------------------------------------------------------- */
static oscar_status get_seq(const kv_book *b, int32_t seq, const char *what)
{
    if (seq < 0 || (uint32_t)seq >= b->cfg.max_seqs || !b->seqs[seq].active)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "%s: sequence %d does not exist (never added, or freed)", what, (int)seq);
    return OSCAR_OK;
}

static void seq_reset(kv_book *b, kv_seq *s)
{
    memset(s->f16_pages, 0xFF, b->max_pages * sizeof *s->f16_pages);
    memset(s->int2_pages, 0xFF, b->max_pages * sizeof *s->int2_pages);
    s->len = 0;
    s->flushed_end = 0;
    s->dirty = 1;
}

oscar_status kv_book_seq_add(kv_book *b, int32_t *seq)
{
    if (b->plan.active) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "cannot add a sequence inside a step");
    for (uint32_t i = 0; i < b->cfg.max_seqs; i++) {
        if (b->seqs[i].active) continue;
        seq_reset(b, &b->seqs[i]);
        b->seqs[i].active = 1;
        b->seqs[i].zone = kv_book_new_zone(b);
        *seq = (int32_t)i;
        return OSCAR_OK;
    }
    OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_PAGES, "all %u sequence slots are in use (max_sequences)", b->cfg.max_seqs);
}

oscar_status kv_book_seq_free(kv_book *b, int32_t seq)
{
    oscar_status st = get_seq(b, seq, "free");
    if (st != OSCAR_OK) return st;
    if (b->plan.active) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "cannot free a sequence inside a step");
    kv_seq *s = &b->seqs[seq];
    for (uint32_t k = 0; k < b->max_pages; k++) {
        if (s->f16_pages[k] >= 0) pool_unref(&b->f16, s->f16_pages[k]);
        if (s->int2_pages[k] >= 0) pool_unref(&b->int2, s->int2_pages[k]);
    }
    seq_reset(b, s);
    s->active = 0;
    return OSCAR_OK;
}

oscar_status kv_book_seq_fork(kv_book *b, int32_t src, int32_t *dst)
{
    oscar_status st = get_seq(b, src, "fork");
    if (st != OSCAR_OK) return st;
    int32_t d;
    if ((st = kv_book_seq_add(b, &d)) != OSCAR_OK) return st;
    kv_seq *s = &b->seqs[src], *t = &b->seqs[d];
    t->zone = s->zone; /* shared pages: the same zone */
    uint32_t P = b->cfg.page;
    uint32_t n_int2 = b->cfg.int2 && s->flushed_end > b->cfg.sink ? s->flushed_end - b->cfg.sink : 0;
    /* the partial last page of each kind needs a page of its own: allocate both first */
    int32_t f16_copy = -1, int2_copy = -1;
    uint32_t f16_partial = UINT32_MAX, int2_partial = UINT32_MAX;
    if (s->len % P && s->f16_pages[(s->len - 1) / P] >= 0) f16_partial = (s->len - 1) / P;
    if (n_int2 % P) int2_partial = (n_int2 - 1) / P;
    if ((f16_partial != UINT32_MAX && !pool_alloc(&b->f16, s->zone, &f16_copy)) ||
        (int2_partial != UINT32_MAX && !pool_alloc(&b->int2, s->zone, &int2_copy))) {
        if (f16_copy >= 0) pool_unref(&b->f16, f16_copy);
        t->active = 0;
        OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_PAGES, "fork of sequence %d: no free page for its partial last page", (int)src);
    }
    b->n_copies = 0;
    for (uint32_t k = 0; k < b->max_pages; k++) {
        if (s->f16_pages[k] >= 0) {
            if (k == f16_partial) {
                t->f16_pages[k] = f16_copy;
                b->copies[b->n_copies++] = (kv_page_copy){ KV_ITEM_F16, (uint32_t)s->f16_pages[k], (uint32_t)f16_copy };
            } else {
                t->f16_pages[k] = s->f16_pages[k];
                pool_ref(&b->f16, s->f16_pages[k]);
            }
        }
        if (s->int2_pages[k] >= 0) {
            if (k == int2_partial) {
                t->int2_pages[k] = int2_copy;
                b->copies[b->n_copies++] = (kv_page_copy){ KV_ITEM_INT2, (uint32_t)s->int2_pages[k], (uint32_t)int2_copy };
            } else {
                t->int2_pages[k] = s->int2_pages[k];
                pool_ref(&b->int2, s->int2_pages[k]);
            }
        }
    }
    t->len = s->len;
    t->flushed_end = s->flushed_end;
    t->dirty = 1;
    *dst = d;
    return OSCAR_OK;
}

/* ---- steps -------------------------------------------------------------------------------- */
/* Undoes the allocations of a partly built plan: table entries set to pages allocated in it
 * are recorded by comparing with the committed lengths. */
static void plan_release(kv_book *b)
{
    kv_step_plan *pl = &b->plan;
    uint32_t P = b->cfg.page;
    for (uint32_t i = 0; i < pl->n_seqs; i++) {
        kv_seq *s = &b->seqs[pl->seqs[i]];
        /* fp16 pages for positions >= old len that start a new page */
        uint32_t first_new = div_up(pl->old_len[i], P);
        for (uint32_t k = first_new; k < b->max_pages; k++)
            if (s->f16_pages[k] >= 0) { pool_unref(&b->f16, s->f16_pages[k]); s->f16_pages[k] = -1; }
        uint32_t n_int2 = b->cfg.int2 && s->flushed_end > b->cfg.sink ? s->flushed_end - b->cfg.sink : 0;
        for (uint32_t m = div_up(n_int2, P); m < b->max_pages; m++)
            if (s->int2_pages[m] >= 0) { pool_unref(&b->int2, s->int2_pages[m]); s->int2_pages[m] = -1; }
    }
    pl->active = 0;
}

oscar_status kv_book_step_plan(kv_book *b, uint32_t n_seqs, const int32_t *seqs, const uint32_t *n_new)
{
    oscar_status st = OSCAR_OK;
    kv_step_plan *pl = &b->plan;
    const kv_book_config *c = &b->cfg;
    uint32_t P = c->page;
    if (pl->active) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "a step is already open (call step_end first)");
    if (n_seqs == 0 || n_seqs > c->max_seqs) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "step over %u sequences (1..%u)", n_seqs, c->max_seqs);
    uint64_t total = 0;
    for (uint32_t i = 0; i < n_seqs; i++) {
        if ((st = get_seq(b, seqs[i], "step")) != OSCAR_OK) return st;
        for (uint32_t j = 0; j < i; j++)
            if (seqs[j] == seqs[i]) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "sequence %d appears twice in one step", (int)seqs[i]);
        if (n_new[i] == 0) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "sequence %d: zero new tokens", (int)seqs[i]);
        if ((uint64_t)b->seqs[seqs[i]].len + n_new[i] > c->max_context)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_CONTEXT_FULL, "sequence %d: %u + %u tokens exceed the cache's max_context %u",
                               (int)seqs[i], b->seqs[seqs[i]].len, n_new[i], c->max_context);
        total += n_new[i];
    }
    if (total > c->max_step_tokens)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "step of %llu tokens exceeds max_step_tokens %u", (unsigned long long)total, c->max_step_tokens);

    pl->n_seqs = n_seqs;
    pl->n_tokens = 0;
    pl->n_flush = 0;
    for (uint32_t i = 0; i < n_seqs; i++) {
        pl->seqs[i] = seqs[i];
        pl->n_new[i] = n_new[i];
        pl->old_len[i] = b->seqs[seqs[i]].len;
    }
    pl->active = 1;
    for (uint32_t i = 0; i < n_seqs; i++) {
        kv_seq *s = &b->seqs[seqs[i]];
        uint32_t L = s->len, L2 = L + n_new[i];
        for (uint32_t p = L; p < L2; p++) {
            uint32_t k = p / P;
            if (s->f16_pages[k] < 0 && !pool_alloc(&b->f16, s->zone, &s->f16_pages[k]))
                OSCAR_FAIL(OSCAR_ERROR_OUT_OF_PAGES, "sequence %d: no free fp16 page for position %u (%u pages%s, all in use)",
                           (int)seqs[i], p, zone_size(&b->f16, s->zone), b->f16.n_zones > 1 ? " in its zone" : "");
            uint32_t row = pl->n_tokens++;
            pl->append[row] = (struct kv_token_slot){ row, p, (uint32_t)s->f16_pages[k], p % P };
            pl->row_seq[row] = (uint32_t)seqs[i];
            pl->row_pos[row] = p;
        }
        pl->new_flushed_end[i] = s->flushed_end;
        if (!c->int2 || L2 <= c->sink) continue;
        uint32_t fe = s->flushed_end > c->sink ? s->flushed_end : c->sink;
        uint32_t window = L2 - fe;
        if (window < c->recent + c->flush) continue;
        uint32_t n_flush = (window - c->recent) / c->flush * c->flush;
        for (uint32_t p = fe; p < fe + n_flush; p++) {
            uint32_t j = p - c->sink, m = j / P;
            if (s->int2_pages[m] < 0 && !pool_alloc(&b->int2, s->zone, &s->int2_pages[m]))
                OSCAR_FAIL(OSCAR_ERROR_OUT_OF_PAGES, "sequence %d: no free INT2 page for position %u (%u pages%s, all in use)",
                           (int)seqs[i], p, zone_size(&b->int2, s->zone), b->int2.n_zones > 1 ? " in its zone" : "");
            pl->flush[pl->n_flush++] = (struct kv_token_slot){ (uint32_t)s->f16_pages[p / P], p % P, (uint32_t)s->int2_pages[m], j % P };
        }
        pl->new_flushed_end[i] = fe + n_flush;
    }
    for (uint32_t i = 0; i < n_seqs; i++) b->seqs[seqs[i]].dirty = 1;
    return OSCAR_OK;
fail:
    plan_release(b);
    return st;
}

void kv_book_step_cancel(kv_book *b)
{
    if (b->plan.active) plan_release(b);
}

void kv_book_step_commit(kv_book *b)
{
    kv_step_plan *pl = &b->plan;
    if (!pl->active) return;
    uint32_t P = b->cfg.page;
    for (uint32_t i = 0; i < pl->n_seqs; i++) {
        kv_seq *s = &b->seqs[pl->seqs[i]];
        s->len = pl->old_len[i] + pl->n_new[i];
        s->flushed_end = pl->new_flushed_end[i];
        /* release fp16 pages every position of which is now INT2 */
        if (b->cfg.int2 && s->flushed_end > b->cfg.sink)
            for (uint32_t k = div_up(b->cfg.sink, P); (k + 1) * P <= s->flushed_end; k++)
                if (s->f16_pages[k] >= 0) { pool_unref(&b->f16, s->f16_pages[k]); s->f16_pages[k] = -1; }
        s->dirty = 1;
    }
    pl->active = 0;
}

int kv_book_locate(const kv_book *b, int32_t seq, uint32_t pos, uint32_t *page, uint32_t *slot)
{
    const kv_seq *s = &b->seqs[seq];
    uint32_t P = b->cfg.page;
    if (is_f16(b, s, pos)) {
        *page = (uint32_t)s->f16_pages[pos / P];
        *slot = pos % P;
        return KV_ITEM_F16;
    }
    uint32_t j = pos - b->cfg.sink;
    *page = (uint32_t)s->int2_pages[j / P];
    *slot = j % P;
    return KV_ITEM_INT2;
}

/* ---- invariants --------------------------------------------------------------------------- */
static int check_pool(const kv_pool *p, const uint32_t *refs, const char *name, char *msg, size_t n)
{
    uint8_t *in_free = calloc(p->n_pages ? p->n_pages : 1, 1);
    int bad = 0;
    for (uint32_t z = 0; z < p->n_zones && !bad; z++) {
        if (p->n_free[z] > zone_size(p, z)) bad = snprintf(msg, n, "%s zone %u: %u free of %u pages", name, z, p->n_free[z], zone_size(p, z));
        for (uint32_t i = 0; i < p->n_free[z] && !bad; i++) {
            uint32_t id = p->free_stack[z * p->zone_pages + i];
            if (id >= p->n_pages || in_free[id]) bad = snprintf(msg, n, "%s: page %u twice in the free stacks", name, id);
            else if (id / p->zone_pages != z) bad = snprintf(msg, n, "%s: page %u in the free stack of zone %u", name, id, z);
            else in_free[id] = 1;
        }
    }
    for (uint32_t id = 0; id < p->n_pages && !bad; id++) {
        if (p->refcount[id] != refs[id])
            bad = snprintf(msg, n, "%s page %u: refcount %u but %u table references", name, id, p->refcount[id], refs[id]);
        else if ((p->refcount[id] == 0) != in_free[id])
            bad = snprintf(msg, n, "%s page %u: refcount %u and %s the free stack", name, id, p->refcount[id],
                           in_free[id] ? "in" : "not in");
    }
    free(in_free);
    return bad;
}

int kv_book_check(const kv_book *b, char *msg, size_t n)
{
    const kv_book_config *c = &b->cfg;
    uint32_t P = c->page;
    uint32_t *f16_refs = calloc(b->f16.n_pages + 1, sizeof *f16_refs);
    uint32_t *int2_refs = calloc(b->int2.n_pages + 1, sizeof *int2_refs);
    int bad = 0;
    for (uint32_t si = 0; si < c->max_seqs && !bad; si++) {
        const kv_seq *s = &b->seqs[si];
        for (uint32_t k = 0; k < b->max_pages && !bad; k++) {
            int32_t pg = s->f16_pages[k];
            int need = 0;
            if (s->active)
                for (uint32_t p = k * P; p < (k + 1) * P && p < s->len; p++) need |= is_f16(b, s, p);
            if (need != (pg >= 0)) bad = snprintf(msg, n, "seq %u fp16 page %u: %s", si, k, need ? "missing" : "mapped but unused");
            else if (pg >= (int32_t)b->f16.n_pages) bad = snprintf(msg, n, "seq %u: fp16 page id %d out of range", si, pg);
            else if (pg >= 0 && (uint32_t)pg / b->f16.zone_pages != s->zone)
                bad = snprintf(msg, n, "seq %u (zone %u): fp16 page %d of another zone", si, s->zone, pg);
            else if (pg >= 0) f16_refs[pg]++;
        }
        uint32_t n_int2 = c->int2 && s->flushed_end > c->sink ? s->flushed_end - c->sink : 0;
        for (uint32_t m = 0; m < b->max_pages && !bad; m++) {
            int32_t pg = s->int2_pages[m];
            int need = s->active && m * P < n_int2;
            if (need != (pg >= 0)) bad = snprintf(msg, n, "seq %u INT2 page %u: %s", si, m, need ? "missing" : "mapped but unused");
            else if (pg >= (int32_t)b->int2.n_pages) bad = snprintf(msg, n, "seq %u: INT2 page id %d out of range", si, pg);
            else if (pg >= 0 && (uint32_t)pg / b->int2.zone_pages != s->zone)
                bad = snprintf(msg, n, "seq %u (zone %u): INT2 page %d of another zone", si, s->zone, pg);
            else if (pg >= 0) int2_refs[pg]++;
        }
    }
    if (!bad) bad = check_pool(&b->f16, f16_refs, "fp16", msg, n);
    if (!bad) bad = check_pool(&b->int2, int2_refs, "INT2", msg, n);
    /* a page shared by several sequences must be full in each: nobody writes it again */
    for (uint32_t si = 0; si < c->max_seqs && !bad; si++) {
        const kv_seq *s = &b->seqs[si];
        if (!s->active) continue;
        uint32_t n_int2 = c->int2 && s->flushed_end > c->sink ? s->flushed_end - c->sink : 0;
        for (uint32_t k = 0; k < b->max_pages && !bad; k++) {
            if (s->f16_pages[k] >= 0 && b->f16.refcount[s->f16_pages[k]] > 1 && (k + 1) * P > s->len)
                bad = snprintf(msg, n, "seq %u: shared fp16 page %d is not full (len %u)", si, s->f16_pages[k], s->len);
            if (s->int2_pages[k] >= 0 && b->int2.refcount[s->int2_pages[k]] > 1 && (k + 1) * P > n_int2)
                bad = snprintf(msg, n, "seq %u: shared INT2 page %d is not full", si, s->int2_pages[k]);
        }
    }
    free(f16_refs);
    free(int2_refs);
    return bad ? 1 : 0;
}
