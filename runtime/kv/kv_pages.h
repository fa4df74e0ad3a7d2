/* Page bookkeeping of the KV cache, on the host: two page pools (INT2 and fp16) with
 * reference counts, per-sequence page tables, the plan of a step (where each new token goes,
 * which tokens get quantized), fork with shared full pages, free, and memory accounting.
 * No GPU here: the plan lists the copies and kernels the cache must record, and the tests
 * check every invariant (no leak, no page owned twice, each sequence reads only its own or
 * shared-immutable pages) bit-exactly.
 *
 * Regions of a sequence of length len (see shaders/common/kv_layout.h):
 *   fp16:  positions [0, min(sink, len)) and [max(flushed_end, sink), len)
 *   INT2:  positions [sink, flushed_end), INT2 index j = p - sink
 * In fp16 mode there is no INT2 region (flushed_end stays 0).
 * Page ids are global over a pool; a sequence's pages all lie in its zone.
 */
#ifndef OSCAR_KV_PAGES_H
#define OSCAR_KV_PAGES_H

#include <stdint.h>

#include "common/kv_layout.h"
#include "oscar/oscar.h"

/* A pool of one kind, cut into zones of zone_pages consecutive ids (the last may be shorter):
 * zone z holds ids [z * zone_pages, min(n_pages, (z + 1) * zone_pages)). Each zone has its own
 * free stack in free_stack[z * zone_pages ..], n_free[z] deep. */
typedef struct kv_pool {
    uint32_t n_pages;
    uint32_t zone_pages;
    uint32_t n_zones;
    uint32_t *refcount;     /* [n_pages] 0 = free */
    uint32_t *free_stack;   /* [n_pages] ids of free pages, zone z's top at z * zone_pages + n_free[z] - 1 */
    uint32_t *n_free;       /* [n_zones] */
} kv_pool;

typedef struct kv_seq {
    int active;
    uint32_t zone;          /* every page of the sequence is of this zone (of both pools) */
    uint32_t len;           /* tokens stored */
    uint32_t flushed_end;   /* positions [sink, flushed_end) are INT2; 0 while none is */
    int32_t *f16_pages;     /* [max_pages] fp16 page of positions [kP, (k+1)P), -1 none */
    int32_t *int2_pages;    /* [max_pages] INT2 page of indices [mP, (m+1)P), -1 none */
    int dirty;              /* tables changed since the GPU copy was made */
} kv_seq;

typedef struct kv_book_config {
    uint32_t page;          /* P: tokens per page */
    uint32_t sink, recent, flush;
    uint32_t int2;          /* 1: INT2 region in use (int2 modes); 0: fp16 mode */
    uint32_t max_seqs, max_context, max_step_tokens;
    uint32_t n_int2_pages, n_f16_pages;
    /* zones (0 or 1: one): both pools cut into n_zones zones of zone_int2_pages and
     * zone_f16_pages (n_zones * zone pages >= the pool's pages); a sequence takes the zone with
     * the most free pages when added and keeps it (a fork keeps its source's), so that each of
     * the GPU's dispatches reads one zone (kv_cache_impl.h) */
    uint32_t n_zones, zone_int2_pages, zone_f16_pages;
} kv_book_config;

/* A page to copy (fork): all layers, one page of one kind. */
typedef struct kv_page_copy {
    uint32_t kind;          /* KV_ITEM_INT2 or KV_ITEM_F16 */
    uint32_t src, dst;      /* physical page ids */
} kv_page_copy;

/* What a step does. Arrays are owned by the book and valid until the next plan. */
typedef struct kv_step_plan {
    uint32_t n_seqs;
    int32_t *seqs;              /* [n_seqs] */
    uint32_t *n_new;            /* [n_seqs] */
    uint32_t *old_len;          /* [n_seqs] length before the step */
    uint32_t n_tokens;          /* total new tokens (rows) */
    struct kv_token_slot *append; /* [n_tokens] src_row = row, dst = fp16 page and slot */
    uint32_t *row_seq, *row_pos;  /* [n_tokens] sequence and position of each row */
    struct kv_token_slot *flush;  /* [n_flush] fp16 (page, slot) -> INT2 (page, slot) */
    uint32_t n_flush;
    uint32_t *new_flushed_end;    /* [n_seqs] after the step */
    int active;
} kv_step_plan;

typedef struct kv_book {
    kv_book_config cfg;
    uint32_t max_pages;         /* table width: pages per sequence per kind */
    kv_pool int2, f16;
    kv_seq *seqs;               /* [max_seqs] */
    kv_step_plan plan;
    /* scratch for fork */
    kv_page_copy *copies;       /* [2 * 2] at most: the partial last page of each kind... */
    uint32_t n_copies;
} kv_book;

oscar_status kv_book_init(kv_book *b, const kv_book_config *cfg);
void kv_book_free(kv_book *b);

oscar_status kv_book_seq_add(kv_book *b, int32_t *seq);
/* Fork: fills b->copies / b->n_copies with the pages the GPU must copy before use. */
oscar_status kv_book_seq_fork(kv_book *b, int32_t src, int32_t *dst);
oscar_status kv_book_seq_free(kv_book *b, int32_t seq);

/* Plans a step: allocates the fp16 pages for the new tokens and the INT2 pages for the
 * tokens that leave the recent window. All or nothing: on failure nothing changed. */
oscar_status kv_book_step_plan(kv_book *b, uint32_t n_seqs, const int32_t *seqs, const uint32_t *n_new);
/* Commits the planned step: lengths grow, flushed_end moves, fully flushed fp16 pages are
 * released. */
void kv_book_step_commit(kv_book *b);
/* Drops a planned step, releasing what it allocated. */
void kv_book_step_cancel(kv_book *b);

/* Where a position lives: kind (KV_ITEM_INT2 / KV_ITEM_F16), physical page, slot. */
int kv_book_locate(const kv_book *b, int32_t seq, uint32_t pos, uint32_t *page, uint32_t *slot);

/* Free pages of a pool, all zones. */
uint32_t kv_pool_n_free(const kv_pool *p);
/* The zone the next added sequence takes: the most free fp16 pages, then INT2 pages. */
uint32_t kv_book_new_zone(const kv_book *b);

/* Pages a single sequence of `tokens` tokens needs of each kind (windows included). */
void kv_book_pages_for(const kv_book_config *cfg, uint32_t tokens, uint32_t *int2_pages, uint32_t *f16_pages);

/* Checks every invariant: refcounts equal the number of table references (plus the free
 * stack holds exactly the pages with count 0), every position below len is mapped, nothing
 * beyond is. Returns 0 when consistent, else writes a description to msg. */
int kv_book_check(const kv_book *b, char *msg, size_t msg_size);

#endif
