/* oscar-bench: performance of OSCAR-VK on this machine's GPU.
 *
 *   oscar-bench attention [options]   decode attention over the paged cache, per layer call
 *
 * attention options:
 *   --heads N --kv-heads N --head-dim N   shapes (default Llama-3-8B: 32, 8, 128)
 *   --group N                             INT2 group size (default 128)
 *   --contexts A,B,...                    context lengths (default 1024,...,131072)
 *   --batch A,B,...                       sequences decoded together (default 1,8,32)
 *   --modes fp16,int2,int2-hadamard       KV modes (default all three)
 *   --iters N                             timed calls per point (default 20; median reported)
 *   --json FILE                           also write the results as JSON
 *   --device NAME|INDEX
 *
 * Each point fills every sequence of the batch to the context length through the public
 * step API (prefill chunks: append + flush into INT2 pages), then runs one decode step and
 * times the attention call (rotate q, flash-decoding, merge, un-rotate) with GPU timestamps.
 * Effective bandwidth = bytes of cache the call reads (INT2 and fp16 regions of every
 * sequence) / time, printed beside the read bandwidth measured in the same run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oscar/oscar.h"

#define MAX_LIST 16

typedef struct bench_args {
    uint32_t heads, kv_heads, head_dim, group, iters;
    uint32_t contexts[MAX_LIST], n_contexts;
    uint32_t batches[MAX_LIST], n_batches;
    oscar_kv_mode modes[4];
    uint32_t n_modes;
    const char *json, *device;
} bench_args;

static int parse_list(const char *s, uint32_t *out, uint32_t *n, const char *flag)
{
    *n = 0;
    while (*s && *n < MAX_LIST) {
        char *end;
        unsigned long v = strtoul(s, &end, 10);
        if (end == s || v == 0 || v > (1ul << 30)) {
            fprintf(stderr, "oscar-bench: %s: '%s' is not a list of positive numbers\n", flag, s);
            return 0;
        }
        if (*end == 'K' || *end == 'k') v *= 1024, end++;
        out[(*n)++] = (uint32_t)v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') {
            fprintf(stderr, "oscar-bench: %s: unexpected '%s'\n", flag, end);
            return 0;
        }
    }
    return *n > 0;
}

static int parse_u32(const char *s, uint32_t *out, const char *flag)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*end || end == s || v == 0 || v > (1ul << 20)) {
        fprintf(stderr, "oscar-bench: %s needs a positive number, got '%s'\n", flag, s);
        return 0;
    }
    *out = (uint32_t)v;
    return 1;
}

static int parse_modes(const char *s, bench_args *a)
{
    a->n_modes = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok && a->n_modes < 4; tok = strtok(NULL, ",")) {
        oscar_kv_mode m;
        if (strcmp(tok, "fp16") == 0) m = OSCAR_KV_FP16;
        else if (strcmp(tok, "int2") == 0) m = OSCAR_KV_INT2;
        else if (strcmp(tok, "int2-hadamard") == 0) m = OSCAR_KV_INT2_HADAMARD;
        else {
            fprintf(stderr, "oscar-bench: --modes: unknown mode '%s' (fp16, int2, int2-hadamard)\n", tok);
            return 0;
        }
        a->modes[a->n_modes++] = m;
    }
    return a->n_modes > 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct point {
    oscar_kv_mode mode;
    uint32_t batch, context;
    double us, gbps, bits, bytes;
    int ok;
} point;

/* Fills `batch` sequences to each context in turn and times one decode attention at each. */
static int bench_mode_batch(oscar_context *ctx, const bench_args *a, oscar_kv_mode mode, uint32_t batch, double bw,
                            point *pts, uint32_t *n_pts, FILE *json)
{
    uint32_t max_ctx = 0;
    for (uint32_t i = 0; i < a->n_contexts; i++) max_ctx = a->contexts[i] > max_ctx ? a->contexts[i] : max_ctx;
    oscar_kv_params p = oscar_kv_params_default();
    p.mode = mode;
    p.n_layer = 1, p.n_head = a->heads, p.n_kv_head = a->kv_heads, p.head_dim = a->head_dim, p.group_size = a->group;
    p.max_sequences = batch;
    p.max_context = max_ctx + 8;
    const uint32_t chunk = 2048;
    p.max_step_tokens = chunk > batch ? chunk : batch;
    oscar_kv_cache *cache = NULL;
    oscar_status st = oscar_kv_cache_create(ctx, &p, &cache);
    if (st != OSCAR_OK) {
        printf("%-14s batch %2u: skipped: %s\n", oscar_kv_mode_name(mode), batch, oscar_last_error());
        return 1;
    }
    size_t kv_floats = (size_t)p.max_step_tokens * a->kv_heads * a->head_dim;
    size_t q_floats = (size_t)batch * a->heads * a->head_dim;
    float *kv = malloc(kv_floats * sizeof(float)), *q = malloc(q_floats * sizeof(float)), *out = malloc(q_floats * sizeof(float));
    int32_t *seqs = malloc(batch * sizeof *seqs);
    uint32_t *n_new = malloc(batch * sizeof *n_new);
    double *times = malloc(a->iters * sizeof *times);
    uint32_t seed = 12345;
    for (size_t i = 0; i < kv_floats; i++) {
        seed = seed * 1664525u + 1013904223u;
        kv[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 4.0f;
    }
    for (size_t i = 0; i < q_floats; i++) q[i] = kv[i % kv_floats];
    int ok = 1;
    for (uint32_t b = 0; b < batch && ok; b++) ok = oscar_kv_seq_add(cache, &seqs[b]) == OSCAR_OK;
    uint32_t len = 0;
    for (uint32_t ci = 0; ci < a->n_contexts && ok; ci++) {
        uint32_t target = a->contexts[ci];
        /* prefill every sequence up to target - 1, one sequence per step */
        while (ok && len + 1 < target) {
            uint32_t n = target - 1 - len < chunk ? target - 1 - len : chunk;
            for (uint32_t b = 0; b < batch && ok; b++) {
                ok = oscar_kv_step_begin(cache, 1, &seqs[b], &n) == OSCAR_OK && oscar_kv_append(cache, 0, kv, kv) == OSCAR_OK &&
                     oscar_kv_step_end(cache) == OSCAR_OK;
            }
            len += n;
        }
        /* one decode step: every sequence gets its target-th token and attends */
        for (uint32_t b = 0; b < batch; b++) n_new[b] = 1;
        ok = ok && oscar_kv_step_begin(cache, batch, seqs, n_new) == OSCAR_OK && oscar_kv_append(cache, 0, kv, kv) == OSCAR_OK;
        oscar_kv_stats stats;
        for (uint32_t it = 0; it < a->iters + 2 && ok; it++) { /* two warm-up calls */
            ok = oscar_kv_attention(cache, 0, q, out) == OSCAR_OK && oscar_kv_get_stats(cache, &stats) == OSCAR_OK;
            if (it >= 2) times[it - 2] = stats.last_gpu_ms * 1000.0;
        }
        /* what the call read: each sequence's INT2 and fp16 tokens (the new one included) */
        ok = ok && oscar_kv_get_stats(cache, &stats) == OSCAR_OK;
        double bytes = (double)stats.int2_tokens * stats.int2_bytes_per_token + (double)(stats.f16_tokens + batch) * stats.f16_bytes_per_token;
        ok = ok && oscar_kv_step_end(cache) == OSCAR_OK;
        len += 1;
        if (!ok) break;
        oscar_kv_get_stats(cache, &stats);
        qsort(times, a->iters, sizeof *times, cmp_double);
        point *pt = &pts[(*n_pts)++];
        pt->mode = mode, pt->batch = batch, pt->context = target;
        pt->us = times[a->iters / 2];
        pt->gbps = bytes / (pt->us * 1e3);
        pt->bits = stats.bits_per_element;
        pt->bytes = bytes;
        pt->ok = 1;
        printf("%-14s batch %2u  context %6u  %9.1f us  %7.1f GB/s  %5.1f%% of read bw  %5.2f bits/elem\n",
               oscar_kv_mode_name(mode), batch, target, pt->us, pt->gbps, 100.0 * pt->gbps / bw, pt->bits);
        fflush(stdout);
        if (json)
            fprintf(json, "%s  {\"mode\": \"%s\", \"batch\": %u, \"context\": %u, \"us\": %.2f, \"gbps\": %.1f, "
                          "\"read_bw_gbps\": %.1f, \"bytes\": %.0f, \"bits_per_element\": %.4f}",
                    ftell(json) > 2 ? ",\n" : "", oscar_kv_mode_name(mode), batch, target, pt->us, pt->gbps, bw, bytes, pt->bits);
    }
    if (!ok) {
        fprintf(stderr, "oscar-bench: %s batch %u: %s\n", oscar_kv_mode_name(mode), batch, oscar_last_error());
    }
    free(kv), free(q), free(out), free(seqs), free(n_new), free(times);
    oscar_kv_cache_destroy(cache);
    return ok;
}

static int bench_attention(int argc, char **argv)
{
    bench_args a = { .heads = 32, .kv_heads = 8, .head_dim = 128, .group = 128, .iters = 20 };
    parse_list("1024,2048,4096,8192,16384,32768,65536,131072", a.contexts, &a.n_contexts, "");
    parse_list("1,8,32", a.batches, &a.n_batches, "");
    parse_modes("fp16,int2,int2-hadamard", &a);
    for (int i = 0; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1;
        if (!v) ok = 0;
        else if (!strcmp(f, "--heads")) ok = parse_u32(v, &a.heads, f);
        else if (!strcmp(f, "--kv-heads")) ok = parse_u32(v, &a.kv_heads, f);
        else if (!strcmp(f, "--head-dim")) ok = parse_u32(v, &a.head_dim, f);
        else if (!strcmp(f, "--group")) ok = parse_u32(v, &a.group, f);
        else if (!strcmp(f, "--iters")) ok = parse_u32(v, &a.iters, f);
        else if (!strcmp(f, "--contexts")) ok = parse_list(v, a.contexts, &a.n_contexts, f);
        else if (!strcmp(f, "--batch")) ok = parse_list(v, a.batches, &a.n_batches, f);
        else if (!strcmp(f, "--modes")) ok = parse_modes(v, &a);
        else if (!strcmp(f, "--json")) a.json = v;
        else if (!strcmp(f, "--device")) a.device = v;
        else {
            fprintf(stderr, "oscar-bench attention: unknown option '%s'\n", f);
            return 2;
        }
        if (!ok) {
            if (!v) fprintf(stderr, "oscar-bench attention: %s needs a value\n", f);
            return 2;
        }
        i++;
    }
    for (uint32_t i = 1; i < a.n_contexts; i++)
        if (a.contexts[i] <= a.contexts[i - 1]) {
            fprintf(stderr, "oscar-bench: --contexts must increase\n");
            return 2;
        }
    oscar_context_params cp = oscar_context_params_default();
    cp.device = a.device;
    oscar_context *ctx;
    if (oscar_context_create(&cp, &ctx) != OSCAR_OK) {
        fprintf(stderr, "oscar-bench: %s\n", oscar_last_error());
        return 1;
    }
    oscar_device_info info;
    oscar_context_device_info(ctx, &info);
    double bw = 0;
    uint64_t bw_bytes = info.max_storage_buffer_range < (2ull << 30) ? info.max_storage_buffer_range / 2 : (2ull << 30);
    if (oscar_measure_read_bandwidth(ctx, bw_bytes, 20, &bw) != OSCAR_OK) {
        fprintf(stderr, "oscar-bench: %s\n", oscar_last_error());
        oscar_context_destroy(ctx);
        return 1;
    }
    printf("device: %s\nread bandwidth: %.1f GB/s (measured now, %llu MiB)\n", info.name, bw, (unsigned long long)(bw_bytes >> 20));
    printf("shapes: %u query heads, %u KV heads, head_dim %u, group %u; median of %u calls\n", a.heads, a.kv_heads, a.head_dim,
           a.group, a.iters);
    FILE *json = NULL;
    if (a.json) {
        json = fopen(a.json, "w");
        if (!json) {
            fprintf(stderr, "oscar-bench: cannot write %s\n", a.json);
            oscar_context_destroy(ctx);
            return 1;
        }
        fprintf(json, "{\"device\": \"%s\", \"read_bw_gbps\": %.1f, \"heads\": %u, \"kv_heads\": %u, \"head_dim\": %u, "
                      "\"group\": %u,\n \"points\": [\n",
                info.name, bw, a.heads, a.kv_heads, a.head_dim, a.group);
    }
    point *pts = calloc(4 * MAX_LIST * MAX_LIST, sizeof *pts);
    uint32_t n_pts = 0;
    int rc = 0;
    for (uint32_t bi = 0; bi < a.n_batches; bi++)
        for (uint32_t mi = 0; mi < a.n_modes; mi++)
            if (!bench_mode_batch(ctx, &a, a.modes[mi], a.batches[bi], bw, pts, &n_pts, json)) rc = 1;
    /* int2 vs fp16 at equal batch and context */
    for (uint32_t i = 0; i < n_pts; i++) {
        if (pts[i].mode != OSCAR_KV_FP16) continue;
        for (uint32_t j = 0; j < n_pts; j++)
            if (pts[j].mode != OSCAR_KV_FP16 && pts[j].batch == pts[i].batch && pts[j].context == pts[i].context &&
                pts[i].context >= 32768)
                printf("batch %2u context %6u: %s takes %.2fx the time of fp16\n", pts[i].batch, pts[i].context,
                       oscar_kv_mode_name(pts[j].mode), pts[j].us / pts[i].us);
    }
    if (json) {
        fprintf(json, "\n]}\n");
        fclose(json);
    }
    free(pts);
    oscar_context_destroy(ctx);
    return rc;
}

static int usage(void)
{
    fprintf(stderr, "usage: oscar-bench attention [options]   (oscar-bench --help for the options)\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2) return usage();
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        printf("oscar-bench attention [--heads N] [--kv-heads N] [--head-dim N] [--group N] [--contexts A,B,..]\n"
               "                      [--batch A,B,..] [--modes fp16,int2,int2-hadamard] [--iters N] [--json FILE]\n"
               "                      [--device NAME|INDEX]\n");
        return 0;
    }
    if (!strcmp(argv[1], "attention")) return bench_attention(argc - 2, argv + 2);
    fprintf(stderr, "oscar-bench: unknown mode '%s' (attention)\n", argv[1]);
    return 2;
}
