/* ovk_attn_build_items (runtime/attn_items.h): for many (sink, flushed_end, n_visible,
 * split) combinations every visible position is covered by exactly one item of the right
 * storage kind, items are at most `split` long and non-empty — except a row that sees
 * nothing, which gets exactly one empty item — rows own contiguous item ranges, items carry
 * their row's sequence; plus the argument errors, the grid helper, the items' first page ids
 * and the decode kernel's shape per device (ovk_attn_pick). Host only. */
#include <stdlib.h>
#include <string.h>

#include "attn_items.h"
#include "test_util.h"

/* Checks the items of row r against the contract; `cover` holds n_visible counters. */
static void check_row(const struct kv_attn_row *row, const struct kv_attn_item *items, uint32_t r, uint32_t sink,
                      uint32_t flushed, uint32_t split, uint32_t *cover)
{
    uint32_t n = row->n_visible;
    memset(cover, 0, sizeof *cover * (n + 1));
    int ok = row->item_end > row->item_begin;
    if (n == 0) /* one empty item */
        ok &= row->item_end == row->item_begin + 1 && items[row->item_begin].row == r &&
              items[row->item_begin].begin == items[row->item_begin].end;
    for (uint32_t i = row->item_begin; i < row->item_end && n > 0; i++) {
        const struct kv_attn_item *it = &items[i];
        ok &= it->row == r && it->seq == row->seq && it->begin < it->end && it->end - it->begin <= split &&
              it->page0 == -1 && it->page1 == -1 && it->page2 == -1;
        for (uint32_t x = it->begin; x < it->end; x++) {
            uint32_t p = it->kind == KV_ITEM_INT2 ? x + sink : x;
            int int2 = p >= sink && p < flushed;
            ok &= p < n && (it->kind == KV_ITEM_INT2) == int2;
            if (p < n) cover[p]++;
        }
    }
    for (uint32_t p = 0; p < n; p++) ok &= cover[p] == 1;
    CHECK_MSG(ok, "row %u: sink %u flushed %u n %u split %u", r, sink, flushed, n, split);
}

int main(void)
{
    enum { MAXN = 700 };
    static uint32_t cover[MAXN + 1];
    uint32_t sinks[] = { 0, 1, 4, 64 };
    uint32_t splits[] = { 1, 3, 64, 1000 };
    uint32_t ns[] = { 0, 1, 3, 4, 5, 63, 64, 65, 100, 319, 320, 321, 600 };
    size_t nn = sizeof ns / sizeof ns[0];
    for (size_t si = 0; si < 4; si++)
        for (size_t pi = 0; pi < 4; pi++) {
            uint32_t sink = sinks[si], split = splits[pi];
            /* flushed_end: 0 (nothing flushed), below sink, = sink, inside, = n, beyond n */
            uint32_t flushes[] = { 0, sink / 2, sink, sink + 7, sink + 256, 600 };
            for (size_t fi = 0; fi < 6; fi++) {
                uint32_t flushed = flushes[fi];
                uint32_t row_seq[16], row_n[16];
                for (size_t i = 0; i < nn; i++) { row_seq[i] = 0; row_n[i] = ns[i]; }
                uint32_t n_items = 0;
                CHECK_OK(ovk_attn_build_items(row_seq, row_n, (uint32_t)nn, &sink, &flushed, split, NULL, NULL, 0,
                                                &n_items));
                struct kv_attn_item *items = malloc(sizeof *items * (n_items + 1));
                struct kv_attn_row rows[16];
                uint32_t got = 0;
                CHECK_OK(ovk_attn_build_items(row_seq, row_n, (uint32_t)nn, &sink, &flushed, split, rows, items,
                                                n_items, &got));
                CHECK(got == n_items);
                uint32_t next = 0;
                for (uint32_t r = 0; r < nn; r++) {
                    CHECK(rows[r].item_begin == next && rows[r].item_end >= next && rows[r].seq == 0 &&
                          rows[r].n_visible == ns[r]);
                    next = rows[r].item_end;
                    check_row(&rows[r], items, r, sink, flushed, split, cover);
                }
                CHECK(next == n_items);
                if (n_items > 0)
                    CHECK_STATUS(ovk_attn_build_items(row_seq, row_n, (uint32_t)nn, &sink, &flushed, split, rows,
                                                        items, n_items - 1, &got),
                                 OSCAR_ERROR_INVALID_ARGUMENT);
                free(items);
            }
        }
    /* fp16 mode: one fp16 range per row, split */
    {
        uint32_t seq = 0, n = 10, zero = 0, cnt = 0;
        struct kv_attn_item items[4];
        struct kv_attn_row row;
        CHECK_OK(ovk_attn_build_items(&seq, &n, 1, &zero, &zero, 4, &row, items, 4, &cnt));
        CHECK(cnt == 3 && items[0].kind == KV_ITEM_F16 && items[0].begin == 0 && items[2].end == 10);
    }
    uint32_t dummy = 0, n_items;
    CHECK_STATUS(ovk_attn_build_items(&dummy, &dummy, 1, &dummy, &dummy, 0, NULL, NULL, 0, &n_items),
                 OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_attn_build_items(NULL, &dummy, 1, &dummy, &dummy, 4, NULL, NULL, 0, &n_items),
                 OSCAR_ERROR_INVALID_ARGUMENT);
    /* first page ids: logical pages begin/P .. + 2 of the kind's table, -1 past it */
    {
        int32_t table[5] = { 7, 3, 9, 4, 11 };
        struct kv_attn_item it = { 0, KV_ITEM_INT2, 130, 400, 2, -1, -1, -1 };
        ovk_attn_item_pages(&it, 64, table, 5);
        CHECK(it.page0 == 9 && it.page1 == 4 && it.page2 == 11);
        it.begin = 200;
        ovk_attn_item_pages(&it, 64, table, 5);
        CHECK(it.page0 == 4 && it.page1 == 11 && it.page2 == -1);
    }
    /* which steps take the cooperative-matrix kernel: 16 rows or more up to the batch context a
     * row on average, any rows from the long context (none when it is 0) */
    {
        const uint64_t steps[][5] = { /* rows, visible, batch context, long context, want */
            { 16, 16 * 6144, 6144, 0, 1 },     { 16, 16 * 6144 + 1, 6144, 0, 0 }, { 15, 15 * 100, 6144, 0, 0 },
            { 32, 32 * 32768, 32768, 98304, 1 }, { 32, 32 * 40000, 32768, 98304, 0 }, { 1, 98304, 32768, 98304, 1 },
            { 1, 98303, 32768, 98304, 0 },     { 3, 3 * 131072, 32768, 98304, 1 }, { 1, 1u << 30, 6144, 0, 0 },
            { 0, 0, 6144, 98304, 0 } };
        for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
            const uint64_t *x = steps[i];
            CHECK_MSG(ovk_attn_cm_step(x[0], x[1], (uint32_t)x[2], (uint32_t)x[3]) == (int)x[4],
                      "cooperative-matrix step %zu: %llu rows seeing %llu tokens", i, (unsigned long long)x[0],
                      (unsigned long long)x[1]);
        }
    }
    /* the cooperative-matrix kernel's products: 16 x 8 x 16 (the heads along N) where the device
     * lists them and GQA <= 8, unless 16 is asked for; where only the emulations run, when 8 is */
    {
        const struct {
            int coopmat, coopmat8;
            uint32_t gqa, cm_n;
            const char *shader; /* NULL: refused */
        } cms[] = { { 1, 1, 4, 0, "attn_decode_cm8.coopmat" },  { 1, 1, 8, 0, "attn_decode_cm8.coopmat" },
                    { 1, 1, 12, 0, "attn_decode_cm.coopmat" },  { 1, 0, 4, 0, "attn_decode_cm.coopmat" },
                    { 1, 2, 4, 0, "attn_decode_cm.coopmat" },   { 1, 1, 4, 16, "attn_decode_cm.coopmat" },
                    { 2, 2, 4, 0, "attn_decode_cm_emu.f16" },   { 2, 2, 4, 8, "attn_decode_cm8_emu.f16" },
                    { 1, 1, 12, 8, NULL },                      { 1, 0, 4, 8, NULL } };
        for (size_t i = 0; i < sizeof cms / sizeof cms[0]; i++) {
            ovk_attn_device dev = { 32, 32, 1024, 49152, 1, 0, 0, 0, cms[i].coopmat, 49152, cms[i].coopmat8 };
            ovk_attn_tuning tune = { 3, -1, 0, 0, 0, 0, -1, -1, 0, cms[i].cm_n };
            ovk_attn_config cfg;
            oscar_status st = ovk_attn_pick(&dev, 128, 128, 16, cms[i].gqa, 0, 0, &tune, &cfg);
            if (!cms[i].shader)
                CHECK_MSG(st == OSCAR_ERROR_UNSUPPORTED && strstr(oscar_last_error(), "16 x 8 x 16"),
                          "cooperative-matrix case %zu: status %d (%s)", i, (int)st, oscar_last_error());
            else
                CHECK_MSG(st == OSCAR_OK && cfg.cm && !strcmp(cfg.shader, cms[i].shader), "cooperative-matrix case %zu: %s",
                          i, st == OSCAR_OK ? cfg.shader : oscar_last_error());
        }
    }
    /* the kernel's shape: fits the device's shared memory, workgroups a multiple of d/4 and of
     * the largest subgroup, the fp32 fallback where asked or without fp16 */
    const uint32_t shapes[][9] = { /* d, G, P, gqa, min sg, max sg, shared bytes, fp16, centered */
        { 128, 128, 64, 4, 32, 32, 32768, 1, 0 }, { 64, 64, 64, 3, 8, 8, 32768, 1, 1 }, { 256, 32, 5, 8, 8, 8, 32768, 0, 0 },
        { 128, 64, 16, 8, 4, 16, 16384, 1, 1 }, { 64, 32, 1, 1, 32, 64, 49152, 1, 0 }, { 256, 128, 64, 8, 8, 32, 32768, 1, 1 } };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const uint32_t *x = shapes[i];
        ovk_attn_device dev = { x[4], x[5], 1024, x[6], (int)x[7], 0 };
        ovk_attn_tuning tune = { 1, -1, 0, 0, 0, 0, -1, -1 };
        ovk_attn_config cfg;
        CHECK_OK(ovk_attn_pick(&dev, x[0], x[1], x[2], x[3], (int)x[8], 0, &tune, &cfg));
        CHECK_MSG(cfg.shared_bytes <= x[6] && cfg.shared_bytes == ovk_attn_shared_bytes(&cfg, x[0], x[1], x[2], x[3], (int)x[8]) &&
                      cfg.wg % (x[0] / 4) == 0 && cfg.wg % x[5] == 0 && cfg.sg_min == x[4] &&
                      (cfg.ve == 4 || cfg.ve == 8 || cfg.ve == 16) && cfg.ku >= 1 && cfg.ku <= 4 &&
                      !strcmp(cfg.variant, x[7] ? "stream-f16" : "stream-fp32"),
                  "shape %zu: wg %u ku %u ve %u, %u bytes of %u", i, cfg.wg, cfg.ku, cfg.ve, cfg.shared_bytes, x[6]);
        tune.f16 = 0;
        CHECK_OK(ovk_attn_pick(&dev, x[0], x[1], x[2], x[3], (int)x[8], 0, &tune, &cfg));
        CHECK(!strcmp(cfg.variant, "stream-fp32") && !strcmp(cfg.shader, "attn_decode"));
        tune.kernel = -1; /* the default: chunked where it fits, 256 threads (a CPU: 64) where d/4 divides them */
        for (int cpu = 0; cpu <= 1; cpu++) {
            dev.cpu = cpu;
            CHECK_OK(ovk_attn_pick(&dev, x[0], x[1], x[2], x[3], (int)x[8], 0, &tune, &cfg));
            uint32_t want_wg = cpu && 64 % (x[0] / 4) == 0 ? 64 : 256 % (x[0] / 4) == 0 ? 256 : 128;
            CHECK_MSG(cfg.stream || (cfg.item_tokens >= 64 && cfg.shared_bytes <= x[6] && cfg.wg == want_wg &&
                                     !strcmp(cfg.shader, "attn_decode_chunked")),
                      "shape %zu, cpu %d: %s of %u threads", i, cpu, cfg.shader, cfg.wg);
        }
        /* the rows kernel: the default on a CPU device with texel buffers, asked for (2) on any
         * device with them, never without them */
        for (int cpu = 0; cpu <= 1; cpu++)
            for (int texel = 0; texel <= 1; texel++)
                for (int ask = -1; ask <= 2; ask += 3) {
                    dev.cpu = cpu, dev.texel = texel, tune.kernel = ask;
                    CHECK_OK(ovk_attn_pick(&dev, x[0], x[1], x[2], x[3], (int)x[8], 0, &tune, &cfg));
                    int want = texel && (ask == 2 || cpu);
                    CHECK_MSG(cfg.rows == want && (!want || (!strcmp(cfg.shader, "attn_decode_rows") && cfg.wg == 8 &&
                                                             cfg.tb == 4 && !cfg.stream)),
                              "shape %zu, cpu %d texel %d kernel %d: %s", i, cpu, texel, ask, cfg.shader);
                }
        tune.kernel = -1, dev.texel = 0;
        dev.cpu = 0;
        /* integer-dot keys: with packed fp16 where asked for and enabled, never in fp16 mode */
        tune.f16 = -1;
        for (int idot = 0; idot <= 1; idot++)
            for (int ask = -1; ask <= 1; ask++)
                for (int fp16_mode = 0; fp16_mode <= 1; fp16_mode++) {
                    dev.idot = idot, tune.idot = ask;
                    CHECK_OK(ovk_attn_pick(&dev, x[0], x[1], x[2], x[3], (int)x[8], fp16_mode, &tune, &cfg));
                    int want = x[7] && !fp16_mode && x[0] % 32 == 0 && ask == 1 && idot;
                    CHECK_MSG(cfg.stream || (cfg.idot == want && !strcmp(cfg.shader, want ? "attn_decode_chunked_f16.idot" : x[7] ? "attn_decode_chunked_f16" : "attn_decode_chunked") &&
                                             cfg.shared_bytes <= x[6] &&
                                             cfg.item_tokens == ovk_attn_item_tokens(x[0], x[1], x[2], x[3], cfg.wg, x[6], want)),
                              "shape %zu, idot %d asked %d fp16 mode %d: %s", i, idot, ask, fp16_mode, cfg.shader);
                }
        dev.idot = 0, tune.idot = -1, tune.f16 = -1;
        tune.kernel = 1;
    }
    /* the chunked kernel's chunk: the largest multiple of 64 (<= the cap) whose shared memory fits */
    CHECK(ovk_attn_item_tokens(128, 128, 64, 4, 128, 32768, 0) == OSCAR_ATTN_MAX_ITEM_TOKENS);
    CHECK(ovk_attn_item_tokens(256, 32, 1, 16, 256, 16384, 0) == 0);
    {
        for (int idot = 0; idot <= 1; idot++) {
            uint32_t it = ovk_attn_item_tokens(128, 64, 16, 8, 64, 16384, idot);
            CHECK(it >= 64 && it % 64 == 0 && 4ull * ATTN_CH_SHARED_FLOATS(it, 8, 64, 128, 64, 16, idot) <= 16384 &&
                  4ull * ATTN_CH_SHARED_FLOATS(it + 64, 8, 64, 128, 64, 16, idot) > 16384);
        }
    }
    {   /* nothing fits */
        ovk_attn_device dev = { 4, 4, 1024, 2048, 1, 1 };
        ovk_attn_tuning tune = { 1, -1, 0, 0, 0, 0, -1, -1 };
        ovk_attn_config cfg;
        CHECK_STATUS(ovk_attn_pick(&dev, 256, 32, 64, 16, 1, 0, &tune, &cfg), OSCAR_ERROR_UNSUPPORTED);
    }
    uint32_t g[3];
    ovk_attn_grid(200000, 3, g);
    CHECK(g[0] == 65535 && g[1] == 3 && g[2] == 4);
    ovk_attn_grid(0, 1, g);
    CHECK(g[0] == 1 && g[2] == 1);
    ovk_attn_grid(65535, 1, g);
    CHECK(g[0] == 65535 && g[2] == 1);
    return test_finish();
}
