/* Page bookkeeping of the KV cache, bit-exact: a simulated memory holds, in each page slot,
 * the id of the token written there; after every operation each sequence must read back
 * exactly its own tokens through its tables, and every invariant of kv_book_check must hold
 * (no leak, no page owned twice, shared pages full). Includes a randomized soak of
 * append / fork / free over many sequences, window boundaries, and page exhaustion. */
#include <stdlib.h>
#include <string.h>

#include "kv_pages.h"
#include "test_util.h"

#define MAX_SEQS 12
#define MAX_CTX 600

typedef struct sim {
    kv_book b;
    uint32_t *f16_mem, *int2_mem;      /* [page][P] token ids, 0 = never written */
    uint32_t content[MAX_SEQS][MAX_CTX]; /* what each sequence must read */
    uint32_t next_id;
} sim;

static void sim_init(sim *s, const kv_book_config *cfg)
{
    memset(s, 0, sizeof *s);
    CHECK_OK(kv_book_init(&s->b, cfg));
    s->f16_mem = calloc((size_t)cfg->n_f16_pages * cfg->page + 1, 4);
    s->int2_mem = calloc((size_t)cfg->n_int2_pages * cfg->page + 1, 4);
    s->next_id = 1;
}

static void sim_free(sim *s)
{
    kv_book_free(&s->b);
    free(s->f16_mem);
    free(s->int2_mem);
}

/* Runs one step and "executes" it on the simulated memory like the GPU would. */
static oscar_status sim_step(sim *s, uint32_t n, const int32_t *seqs, const uint32_t *n_new)
{
    oscar_status st = kv_book_step_plan(&s->b, n, seqs, n_new);
    if (st != OSCAR_OK) return st;
    kv_step_plan *pl = &s->b.plan;
    uint32_t P = s->b.cfg.page;
    for (uint32_t r = 0; r < pl->n_tokens; r++) {
        uint32_t id = s->next_id++;
        s->f16_mem[pl->append[r].dst_page * P + pl->append[r].dst_slot] = id;
        s->content[pl->row_seq[r]][pl->row_pos[r]] = id;
    }
    for (uint32_t f = 0; f < pl->n_flush; f++) {
        const struct kv_token_slot *t = &pl->flush[f];
        s->int2_mem[t->dst_page * P + t->dst_slot] = s->f16_mem[t->src_row * P + t->src_slot];
    }
    kv_book_step_commit(&s->b);
    return OSCAR_OK;
}

static oscar_status sim_fork(sim *s, int32_t src, int32_t *dst)
{
    oscar_status st = kv_book_seq_fork(&s->b, src, dst);
    if (st != OSCAR_OK) return st;
    uint32_t P = s->b.cfg.page;
    for (uint32_t i = 0; i < s->b.n_copies; i++) {
        uint32_t *mem = s->b.copies[i].kind == KV_ITEM_INT2 ? s->int2_mem : s->f16_mem;
        memcpy(mem + s->b.copies[i].dst * P, mem + s->b.copies[i].src * P, P * 4);
    }
    memcpy(s->content[*dst], s->content[src], sizeof s->content[0]);
    return OSCAR_OK;
}

/* Every sequence reads exactly its tokens; all invariants hold. */
static int sim_verify(sim *s)
{
    char msg[256];
    int bad = kv_book_check(&s->b, msg, sizeof msg);
    CHECK_MSG(!bad, "%s", msg);
    uint32_t P = s->b.cfg.page;
    for (int32_t q = 0; q < (int32_t)s->b.cfg.max_seqs && !bad; q++) {
        if (!s->b.seqs[q].active) continue;
        for (uint32_t p = 0; p < s->b.seqs[q].len; p++) {
            uint32_t page, slot;
            int kind = kv_book_locate(&s->b, q, p, &page, &slot);
            uint32_t got = (kind == KV_ITEM_INT2 ? s->int2_mem : s->f16_mem)[page * P + slot];
            if (got != s->content[q][p]) {
                CHECK_MSG(0, "seq %d pos %u (%s page %u slot %u): token %u, want %u", q, p,
                          kind == KV_ITEM_INT2 ? "INT2" : "fp16", page, slot, got, s->content[q][p]);
                return 1;
            }
        }
    }
    if (!bad) CHECK(1);
    return bad;
}

/* flushed_end after appending one token at a time, computed independently of kv_pages.c */
static void test_window_boundaries(void)
{
    kv_book_config cfg = { .page = 4, .sink = 6, .recent = 8, .flush = 3, .int2 = 1, .max_seqs = 1,
                           .max_context = 100, .max_step_tokens = 16, .n_int2_pages = 32, .n_f16_pages = 32 };
    sim s;
    sim_init(&s, &cfg);
    int32_t q;
    CHECK_OK(kv_book_seq_add(&s.b, &q));
    uint32_t want_fe = 0;
    for (uint32_t len = 1; len <= 60; len++) {
        uint32_t one = 1;
        CHECK_OK(sim_step(&s, 1, &q, &one));
        /* the window [max(fe, sink), len) grows to recent + flush, then the oldest flush tokens go */
        uint32_t start = want_fe > cfg.sink ? want_fe : cfg.sink;
        if (len > cfg.sink && len - start >= cfg.recent + cfg.flush) want_fe = start + cfg.flush;
        CHECK_MSG(s.b.seqs[q].flushed_end == want_fe, "len %u: flushed_end %u, want %u", len, s.b.seqs[q].flushed_end, want_fe);
        if (len > cfg.sink + cfg.recent) {
            uint32_t fe = s.b.seqs[q].flushed_end > cfg.sink ? s.b.seqs[q].flushed_end : cfg.sink;
            uint32_t win = len - fe;
            CHECK(win >= cfg.recent && win < cfg.recent + cfg.flush);
        }
        sim_verify(&s);
    }
    /* a long step flushes whole batches and leaves at least `recent` in fp16 */
    uint32_t big = 16;
    CHECK_OK(sim_step(&s, 1, &q, &big));
    uint32_t win = s.b.seqs[q].len - s.b.seqs[q].flushed_end;
    CHECK(win >= cfg.recent && win < cfg.recent + cfg.flush && (s.b.seqs[q].flushed_end - cfg.sink) % cfg.flush == 0);
    sim_verify(&s);
    /* past max_context: CONTEXT_FULL, nothing changes */
    while (s.b.seqs[q].len + big <= cfg.max_context) CHECK_OK(sim_step(&s, 1, &q, &big));
    uint32_t len_before = s.b.seqs[q].len, fe_before = s.b.seqs[q].flushed_end;
    CHECK_STATUS(sim_step(&s, 1, &q, &big), OSCAR_ERROR_CONTEXT_FULL);
    CHECK(s.b.seqs[q].len == len_before && s.b.seqs[q].flushed_end == fe_before);
    sim_verify(&s);
    sim_free(&s);
}

/* Exhaustion: a step that cannot get its pages fails as a whole and changes nothing. */
static void test_exhaustion(uint32_t int2)
{
    kv_book_config cfg = { .page = 8, .sink = 8, .recent = 16, .flush = 4, .int2 = int2, .max_seqs = 4,
                           .max_context = 400, .max_step_tokens = 64, .n_int2_pages = 10, .n_f16_pages = 14 };
    sim s;
    sim_init(&s, &cfg);
    int32_t a, b;
    CHECK_OK(kv_book_seq_add(&s.b, &a));
    CHECK_OK(kv_book_seq_add(&s.b, &b));
    uint32_t n2[2] = { 5, 7 };
    int32_t ab[2] = { a, b };
    oscar_status st = OSCAR_OK;
    int steps = 0;
    while ((st = sim_step(&s, 2, ab, n2)) == OSCAR_OK && steps < 1000) steps++;
    CHECK_STATUS(st, OSCAR_ERROR_OUT_OF_PAGES);
    CHECK(strstr(oscar_last_error(), "no free") != NULL);
    /* the failed step left both sequences as they were */
    kv_seq before[2] = { s.b.seqs[a], s.b.seqs[b] };
    int32_t tables[2][2][64];
    size_t table_bytes = s.b.max_pages * sizeof(int32_t);
    CHECK(s.b.max_pages <= 64);
    for (int i = 0; i < 2; i++) {
        memcpy(tables[i][0], s.b.seqs[ab[i]].f16_pages, table_bytes);
        memcpy(tables[i][1], s.b.seqs[ab[i]].int2_pages, table_bytes);
    }
    uint32_t free_f16 = kv_pool_n_free(&s.b.f16), free_int2 = kv_pool_n_free(&s.b.int2);
    CHECK_STATUS(sim_step(&s, 2, ab, n2), OSCAR_ERROR_OUT_OF_PAGES);
    CHECK(kv_pool_n_free(&s.b.f16) == free_f16 && kv_pool_n_free(&s.b.int2) == free_int2);
    for (int i = 0; i < 2; i++) {
        CHECK(s.b.seqs[ab[i]].len == before[i].len && s.b.seqs[ab[i]].flushed_end == before[i].flushed_end);
        CHECK(memcmp(tables[i][0], s.b.seqs[ab[i]].f16_pages, table_bytes) == 0);
        CHECK(memcmp(tables[i][1], s.b.seqs[ab[i]].int2_pages, table_bytes) == 0);
    }
    sim_verify(&s);
    /* freeing one sequence makes room for the other */
    CHECK_OK(kv_book_seq_free(&s.b, a));
    uint32_t one = 1;
    CHECK_OK(sim_step(&s, 1, &b, &one));
    sim_verify(&s);
    /* a freed sequence is gone */
    CHECK_STATUS(sim_step(&s, 1, &a, &one), OSCAR_ERROR_INVALID_STATE);
    CHECK_STATUS(kv_book_seq_free(&s.b, a), OSCAR_ERROR_INVALID_STATE);
    CHECK_OK(kv_book_seq_free(&s.b, b));
    CHECK(kv_pool_n_free(&s.b.f16) == cfg.n_f16_pages && kv_pool_n_free(&s.b.int2) == cfg.n_int2_pages);
    sim_free(&s);
}

/* Randomized soak: add / fork / free / steps of random sizes over many sequences; with zones > 1
 * the pools are cut into that many zones (the last shorter), and kv_book_check also holds every
 * page of a sequence to its zone. */
static void test_soak(uint32_t int2, uint32_t page, uint32_t sink, uint32_t zones, uint64_t seed)
{
    kv_book_config cfg = { .page = page, .sink = sink, .recent = 24, .flush = 8, .int2 = int2, .max_seqs = MAX_SEQS,
                           .max_context = MAX_CTX, .max_step_tokens = 40, .n_int2_pages = 200, .n_f16_pages = 160,
                           .n_zones = zones, .zone_int2_pages = (200 + zones - 1) / zones, .zone_f16_pages = (160 + zones - 1) / zones };
    sim s;
    sim_init(&s, &cfg);
    test_rng_seed(seed);
    int n_ok = 0, n_full = 0, n_forks = 0, n_copies = 0;
    for (int it = 0; it < 3000; it++) {
        uint32_t op = test_rng_u32() % 10;
        int32_t live[MAX_SEQS];
        int n_live = 0;
        for (int q = 0; q < MAX_SEQS; q++)
            if (s.b.seqs[q].active) live[n_live++] = q;
        if (op == 0 || n_live == 0) {
            int32_t q;
            if (kv_book_seq_add(&s.b, &q) == OSCAR_OK) memset(s.content[q], 0, sizeof s.content[q]);
        } else if (op == 1) {
            int32_t d;
            int32_t src = live[test_rng_u32() % n_live];
            oscar_status st = sim_fork(&s, src, &d);
            CHECK(st == OSCAR_OK || st == OSCAR_ERROR_OUT_OF_PAGES);
            if (st == OSCAR_OK) CHECK(s.b.seqs[d].zone == s.b.seqs[src].zone);
            if (st == OSCAR_OK) n_forks++, n_copies += s.b.n_copies;
        } else if (op == 2 && n_live > 2) {
            CHECK_OK(kv_book_seq_free(&s.b, live[test_rng_u32() % n_live]));
        } else {
            /* a step over a random subset, each with 1..12 new tokens (decode and prefill) */
            int32_t seqs[MAX_SEQS];
            uint32_t n_new[MAX_SEQS], n = 0, total = 0;
            for (int i = 0; i < n_live; i++) {
                if (test_rng_u32() % 2) continue;
                uint32_t k = 1 + test_rng_u32() % (test_rng_u32() % 4 == 0 ? 12 : 2);
                if (total + k > cfg.max_step_tokens) break;
                seqs[n] = live[i], n_new[n] = k, total += k, n++;
            }
            if (n == 0) continue;
            oscar_status st = sim_step(&s, n, seqs, n_new);
            CHECK_MSG(st == OSCAR_OK || st == OSCAR_ERROR_OUT_OF_PAGES || st == OSCAR_ERROR_CONTEXT_FULL,
                      "step: %s", oscar_last_error());
            if (st == OSCAR_OK) n_ok++;
            else {
                n_full++;
                /* under pressure, drop the longest sequence */
                int32_t longest = live[0];
                for (int i = 1; i < n_live; i++)
                    if (s.b.seqs[live[i]].len > s.b.seqs[longest].len) longest = live[i];
                CHECK_OK(kv_book_seq_free(&s.b, longest));
            }
        }
        if (sim_verify(&s)) break;
    }
    printf("soak int2=%u page=%u sink=%u zones=%u: %d steps, %d refused, %d forks (%d page copies)\n", int2, page, sink,
           zones ? zones : 1, n_ok, n_full, n_forks, n_copies);
    CHECK(n_ok > 500 && n_forks > 50 && n_full > 0);
    for (int q = 0; q < MAX_SEQS; q++)
        if (s.b.seqs[q].active) CHECK_OK(kv_book_seq_free(&s.b, q));
    CHECK(kv_pool_n_free(&s.b.f16) == cfg.n_f16_pages && kv_pool_n_free(&s.b.int2) == cfg.n_int2_pages); /* nothing leaked */
    sim_free(&s);
}

static void test_sizing(void)
{
    kv_book_config cfg = { .page = 64, .sink = 64, .recent = 256, .flush = 8, .int2 = 1, .max_seqs = 1,
                           .max_context = 131072, .max_step_tokens = 512 };
    uint32_t i2, f;
    kv_book_pages_for(&cfg, 131072, &i2, &f);
    CHECK(i2 == (131072 - 64 - 256 + 63) / 64);
    CHECK(f == 1 + (256 + 8 - 1 + 512 + 63) / 64 + 1);
    kv_book_pages_for(&cfg, 10, &i2, &f);
    CHECK(i2 == 0 && f == 1);
    cfg.int2 = 0;
    kv_book_pages_for(&cfg, 131072, &i2, &f);
    CHECK(i2 == 0 && f == 2048);
}

int main(void)
{
    test_sizing();
    test_window_boundaries();
    test_exhaustion(1);
    test_exhaustion(0);
    test_soak(1, 8, 8, 1, 1);
    test_soak(1, 16, 5, 1, 2);   /* sink not a multiple of the page */
    test_soak(0, 8, 0, 1, 3);    /* fp16 mode */
    test_soak(1, 4, 0, 1, 4);    /* no sink */
    test_soak(1, 8, 8, 3, 5);    /* three zones, the last shorter */
    test_soak(0, 8, 0, 2, 6);    /* fp16 mode, two zones */
    return test_finish();
}
