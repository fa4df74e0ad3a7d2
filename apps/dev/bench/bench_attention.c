/* oscar-bench attention: decode attention over the paged cache, per layer call.
 *
 * Options:
 *   --heads N --kv-heads N --head-dim N   shapes (default Llama-3-8B: 32, 8, 128)
 *   --group N                             INT2 group size (default 128)
 *   --contexts A,B,...                    context lengths (default 1024,...,131072)
 *   --batch A,B,...                       sequences decoded together (default 1,8,32)
 *   --modes fp16,int2,int2-hadamard,oscar KV modes (default the first three; oscar runs with
 *                                         Hadamard rotations with random signs per layer)
 *   --variants auto,fp32,f16,idot         decode attention's arithmetic (default auto: what the
 *                                         cache picks for this device; f16: packed-fp16 value sums,
 *                                         fp32 key scores; idot: f16 with INT2 keys by integer dot
 *                                         products); each is timed in turn
 *   --kernels auto,chunked,stream,rows,coopmat    decode attention's kernel (default auto), likewise
 *   --iters N                             calls timed one submission each (the median is reported) and
 *                                         at least as many chained (default 20)
 *   --layers N                            layers in the cache (default 1); the chained calls take
 *                                         them in turn, so with enough layers each call reads its
 *                                         layer from memory rather than from the GPU's L2 cache,
 *                                         as in a forward pass
 *   --phase                               the chained calls record a decode step's whole attention
 *                                         phase of the layer instead of the call alone: the append
 *                                         of the step's k and v, q's preparation, the attention and
 *                                         (one row) its int8 output blocks, as the model records them
 *                                         (ovk_kv_record_append_attention, no RoPE)
 *   --hold-mib N                          hold N MiB of device memory in 64 MiB buffers for the
 *                                         whole run (as a loaded model would)
 *   --trace                               print every warm-up pass (first-run behaviour)
 *   --json FILE --device NAME|INDEX
 *
 * Each point fills every sequence of the batch to the context length through the public step
 * API (prefill chunks: append + flush into INT2 pages), then runs one decode step and times the
 * attention call (rotate q, flash-decoding, merge, un-rotate) with GPU timestamps, two ways: one
 * submission per call (what a caller of oscar_kv_attention sees, host wait and idle GPU between
 * calls included) and --iters calls recorded back to back in one command buffer (what a
 * forward pass sees: the figure the bandwidth and targets are quoted for). Before timing, the
 * GPU runs 500 ms of chained calls back to back, so that its clock governor has the clocks up
 * (time_chained).
 * Effective bandwidth = bytes of cache the call reads (INT2 and fp16 regions of every sequence)
 * / time, printed beside the read bandwidth measured in the same run, at its start and end.
 * Where each page pool lives (memory type, its flags and heap) is printed once per cache, with
 * a warning when a pool is not in device-local memory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "common/app_common.h"
#include "common/app_io.h"
#include "common/q8_layout.h"
#include "kv_cache.h"
#include "oscar/experimental.h"
#include "oscar/oscar.h"

#define MAX_LIST 16
#define MAX_VARIANTS 4

typedef struct bench_args {
    uint32_t heads, kv_heads, head_dim, group, iters, hold_mib, layers;
    int phase;
    uint32_t contexts[MAX_LIST], n_contexts;
    uint32_t batches[MAX_LIST], n_batches;
    oscar_kv_mode modes[4];
    uint32_t n_modes;
    int variants[MAX_VARIANTS]; /* -1 auto, 0 fp32, 1 packed fp16, 2 packed fp16 with integer-dot keys */
    uint32_t n_variants;
    int kernels[MAX_VARIANTS];  /* ctx->env.attn_kernel for each: -1 auto, 0 chunked, 1 stream, 2 rows, 3 coopmat */
    uint32_t n_kernels;
    int trace;
    const char *json, *device;
} bench_args;

typedef struct point {
    oscar_kv_mode mode;
    uint32_t batch, context;
    double us;        /* per call, chained in one command buffer (as in a forward pass) */
    double us_call;   /* per call, one submission and host wait each (public API) */
    double gbps, bits, bytes;
} point;

static int json_points;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static const char *variant_name(int v) { return v < 0 ? "auto" : v == 2 ? "idot" : v ? "f16" : "fp32"; }

static int parse_kernels(const char *s, bench_args *a)
{
    a->n_kernels = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int v = !strcmp(tok, "auto") ? -1 : !strcmp(tok, "chunked") ? 0 : !strcmp(tok, "stream") ? 1 : !strcmp(tok, "rows") ? 2 : !strcmp(tok, "coopmat") ? 3 : -2;
        if (v == -2 || a->n_kernels == MAX_VARIANTS) {
            fprintf(stderr, "oscar-bench: --kernels: '%s' is not a list of auto, chunked, stream, rows, coopmat\n", s);
            return 0;
        }
        a->kernels[a->n_kernels++] = v;
    }
    return a->n_kernels > 0;
}

static int parse_variants(const char *s, bench_args *a)
{
    a->n_variants = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int v = !strcmp(tok, "auto") ? -1 : !strcmp(tok, "fp32") ? 0 : !strcmp(tok, "f16") ? 1 : !strcmp(tok, "idot") ? 2 : -2;
        if (v == -2 || a->n_variants == MAX_VARIANTS) {
            fprintf(stderr, "oscar-bench: --variants: '%s' is not a list of auto, fp32, f16, idot\n", s);
            return 0;
        }
        a->variants[a->n_variants++] = v;
    }
    return a->n_variants > 0;
}

/* ---- where memory lives --------------------------------------------------------------------- */
static void memory_flags(VkMemoryPropertyFlags f, char *out, size_t n)
{
    snprintf(out, n, "%s%s%s%s%s", f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT ? "device-local " : "",
             f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT ? "host-visible " : "",
             f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT ? "host-coherent " : "",
             f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT ? "host-cached " : "", f ? "" : "(no flags) ");
}

/* The device's memory types and heaps, once. */
static void print_memory_types(const oscar_context *ctx)
{
    const VkPhysicalDeviceMemoryProperties *m = &ctx->mem_props;
    for (uint32_t h = 0; h < m->memoryHeapCount; h++)
        printf("memory heap %u: %.1f GiB%s\n", h, m->memoryHeaps[h].size / 1073741824.0,
               m->memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT ? ", device-local" : "");
    for (uint32_t t = 0; t < m->memoryTypeCount; t++) {
        char f[96];
        memory_flags(m->memoryTypes[t].propertyFlags, f, sizeof f);
        printf("memory type %u: heap %u, %s\n", t, m->memoryTypes[t].heapIndex, f);
    }
}

/* One line on where `buf` lives; a warning when that is not device-local memory. Returns 1
 * when it is device-local. */
static int print_placement(const oscar_context *ctx, const char *what, const ovk_buffer *buf)
{
    const VkMemoryType *t = &ctx->mem_props.memoryTypes[buf->memory_type];
    const VkMemoryHeap *h = &ctx->mem_props.memoryHeaps[t->heapIndex];
    int local = (t->propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && (h->flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT);
    char f[96];
    memory_flags(t->propertyFlags, f, sizeof f);
    printf("  %-16s %9.1f MiB  memory type %u (%sheap %u)%s\n", what, buf->size / 1048576.0, buf->memory_type, f,
           t->heapIndex, local ? "" : "   WARNING: not device-local memory: the kernels read it over the bus");
    return local;
}

/* ---- timing ------------------------------------------------------------------------------------ */
/* What a chained pass records over the open step: q and out [n_rows][heads][d] fp32; with
 * --phase also the append of the step's k and v rows (kv, [n_rows][kv_heads][d], both) and, where
 * the step writes them (out_q8 not NULL), out's int8 blocks, as the model records a layer. */
typedef struct chain {
    const bench_args *a;
    ovk_binding q, out, kv;
    const ovk_binding *out_q8;
} chain;

/* One pass of `iters` attention calls recorded back to back in one command buffer, as a forward
 * pass records them, over the cache's layers in turn: microseconds per call. */
static oscar_status chained_pass(oscar_context *ctx, ovk_cmd *cmd, oscar_kv_cache *cache, const chain *ch, uint32_t iters,
                                 double *us)
{
    oscar_status st = OSCAR_OK;
    OSCAR_TRY(ovk_cmd_begin(ctx, cmd));
    int t0 = ovk_cmd_timestamp(ctx, cmd);
    for (uint32_t i = 0; i < iters && st == OSCAR_OK; i++) {
        uint32_t layer = i % ch->a->layers;
        st = ch->a->phase ? ovk_kv_record_append_attention(cache, cmd, layer, &ch->q, &ch->kv, &ch->kv, &ch->out, ch->out_q8, NULL)
                          : ovk_kv_record_attention(cache, cmd, layer, &ch->q, &ch->out);
    }
    int t1 = ovk_cmd_timestamp(ctx, cmd);
    oscar_status st2 = ovk_cmd_submit_wait(ctx, cmd);
    if (st == OSCAR_OK) st = st2;
    if (st != OSCAR_OK) goto fail;
    double ns;
    OSCAR_TRY(ovk_cmd_elapsed_ns(ctx, cmd, t0, t1, &ns));
    *us = ns * 1e-3 / iters;
fail:
    return st;
}

/* Times a->iters chained calls or more (at least 10 ms of GPU work) after a warm-up of at least
 * 500 ms of back-to-back GPU work, in submissions of at least 20 ms: microseconds per call. The
 * GPU's clock governor lowers the clocks while the GPU is idle (a process that spends seconds
 * compiling pipelines or filling caches from the host), and short bursts of work separated by
 * host waits do not bring them back: a first process then timed the compute-bound INT2
 * kernels at a quarter of the SM clock. Sustained work before the timed pass does.
 * q: [n_rows][heads][d] fp32, the open step's rows; kv: [n_rows][kv_heads][d], their k and v
 * (read with --phase). */
static oscar_status time_chained(oscar_context *ctx, oscar_kv_cache *cache, const bench_args *a, const float *q,
                                 const float *kv, uint32_t n_rows, double *us)
{
    oscar_status st = OSCAR_OK;
    ovk_buffer bq = { 0 }, bo = { 0 }, bkv = { 0 }, bq8 = { 0 };
    ovk_cmd cmd = { 0 };
    uint32_t iters = a->iters;
    uint64_t out_n = (uint64_t)n_rows * a->heads * a->head_dim, bytes = out_n * sizeof(float);
    uint64_t kv_bytes = (uint64_t)n_rows * a->kv_heads * a->head_dim * sizeof(float);
    OSCAR_TRY(ovk_buffer_create(ctx, bytes, OSCAR_BUFFER_DEVICE, &bq));
    OSCAR_TRY(ovk_buffer_create(ctx, bytes, OSCAR_BUFFER_DEVICE, &bo));
    OSCAR_TRY(ovk_buffer_upload(ctx, &bq, 0, q, bytes));
    chain ch = { a, { &bq, 0, bytes }, { &bo, 0, bytes }, { 0 }, NULL };
    if (a->phase) {
        OSCAR_TRY(ovk_buffer_create(ctx, kv_bytes, OSCAR_BUFFER_DEVICE, &bkv));
        OSCAR_TRY(ovk_buffer_upload(ctx, &bkv, 0, kv, kv_bytes));
        ch.kv = (ovk_binding){ &bkv, 0, kv_bytes };
    }
    ovk_binding q8 = { &bq8, 0, 0 };
    if (a->phase && ovk_kv_attention_writes_q8(cache)) {
        OSCAR_TRY(ovk_buffer_create(ctx, OSCAR_X_Q8_BYTES(out_n), OSCAR_BUFFER_DEVICE, &bq8));
        ch.out_q8 = &q8;
    }
    OSCAR_TRY(ovk_cmd_init(ctx, &cmd));
    double t = 0, spent_ms = 0;
    OSCAR_TRY(chained_pass(ctx, &cmd, cache, &ch, iters, &t)); /* the first: an estimate */
    if (a->trace) printf("    warm-up (us a call): first pass %.1f", t);
    uint32_t n = (uint32_t)(20e3 / (t > 0.1 ? t : 0.1)) + 1; /* calls in 20 ms */
    if (n > 20000) n = 20000;
    for (uint32_t pass = 0; pass < 200 && spent_ms < 500.0; pass++) {
        OSCAR_TRY(chained_pass(ctx, &cmd, cache, &ch, n, &t));
        spent_ms += t * n * 1e-3;
        if (a->trace && (pass < 4 || spent_ms >= 500.0)) printf(", %.1f", t);
    }
    if (a->trace) printf(" (%.0f ms)\n", spent_ms);
    uint32_t timed = (uint32_t)(10e3 / (t > 0.1 ? t : 0.1)) + 1;
    OSCAR_TRY(chained_pass(ctx, &cmd, cache, &ch, timed > iters ? (timed < 20000 ? timed : 20000) : iters, us));
fail:
    ovk_cmd_release(ctx, &cmd);
    ovk_buffer_destroy(ctx, &bq);
    ovk_buffer_destroy(ctx, &bo);
    ovk_buffer_destroy(ctx, &bkv);
    ovk_buffer_destroy(ctx, &bq8);
    return st;
}

/* Rotations of mode oscar for the benchmark: R = diag(±1)·H (orthogonal), seeded, the same for
 * each of `layers` layers: [layers][d][d]. */
static float *synthetic_rotation(uint32_t d, uint32_t layers, uint32_t seed)
{
    float *r = malloc(sizeof *r * d * d * layers);
    if (!r) return NULL;
    ovk_kv_hadamard(d, r);
    for (uint32_t i = 0; i < d; i++) {
        seed = seed * 1664525u + 1013904223u;
        if (seed >> 31)
            for (uint32_t j = 0; j < d; j++) r[i * d + j] = -r[i * d + j];
    }
    for (uint32_t l = 1; l < layers; l++) memcpy(r + (size_t)l * d * d, r, sizeof *r * d * d);
    return r;
}

/* Fills `batch` sequences to each context in turn and times one decode attention at each. */
static int bench_mode_batch(oscar_context *ctx, const bench_args *a, oscar_kv_mode mode, int kernel, int variant,
                            uint32_t batch, double bw, point *pts, uint32_t *n_pts, FILE *json)
{
    uint32_t max_ctx = 0;
    for (uint32_t i = 0; i < a->n_contexts; i++) max_ctx = a->contexts[i] > max_ctx ? a->contexts[i] : max_ctx;
    oscar_kv_params p = oscar_kv_params_default();
    p.mode = mode;
    p.n_layer = a->layers, p.n_head = a->heads, p.n_kv_head = a->kv_heads, p.head_dim = a->head_dim, p.group_size = a->group;
    p.max_sequences = batch;
    p.max_context = max_ctx + 8;
    const uint32_t chunk = 2048;
    p.max_step_tokens = chunk > batch ? chunk : batch;
    float *rk = mode == OSCAR_KV_INT2_ROTATED ? synthetic_rotation(a->head_dim, a->layers, 7) : NULL;
    float *rv = mode == OSCAR_KV_INT2_ROTATED ? synthetic_rotation(a->head_dim, a->layers, 11) : NULL;
    p.rot_k = rk, p.rot_v = rv;
    oscar_kv_cache *cache = NULL;
    int saved = ctx->env.attn_f16, saved_idot = ctx->env.attn_idot, saved_kernel = ctx->env.attn_kernel;
    if (variant >= 0) ctx->env.attn_f16 = variant != 0, ctx->env.attn_idot = variant == 2;
    if (kernel >= 0) ctx->env.attn_kernel = kernel;
    oscar_status st = oscar_kv_cache_create(ctx, &p, &cache);
    ctx->env.attn_f16 = saved, ctx->env.attn_idot = saved_idot, ctx->env.attn_kernel = saved_kernel;
    free(rk), free(rv);
    if (st != OSCAR_OK) {
        printf("%-14s batch %2u: skipped: %s\n", oscar_kv_mode_name(mode), batch, oscar_last_error());
        return 1;
    }
    const char *kname = ovk_kv_attention_variant(cache);
    printf("%s batch %u, %s variant (%s), %u layer%s%s:\n", oscar_kv_mode_name(mode), batch, variant_name(variant), kname,
           a->layers, a->layers > 1 ? "s taken in turn" : "", a->phase ? ", the attention phase (append, q, attention)" : "");
    const ovk_buffer *pool2, *pool16;
    ovk_kv_pools(cache, 0, &pool2, &pool16);
    if (mode != OSCAR_KV_FP16) print_placement(ctx, "INT2 page pool", pool2);
    print_placement(ctx, "fp16 page pool", pool16);

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
    int ok = kv && q && out && seqs && n_new && times;
    for (uint32_t b = 0; b < batch && ok; b++) ok = oscar_kv_seq_add(cache, &seqs[b]) == OSCAR_OK;
    uint32_t len = 0;
    for (uint32_t ci = 0; ci < a->n_contexts && ok; ci++) {
        uint32_t target = a->contexts[ci];
        /* prefill every sequence up to target - 1, one sequence per step */
        while (ok && len + 1 < target) {
            uint32_t n = target - 1 - len < chunk ? target - 1 - len : chunk;
            for (uint32_t b = 0; b < batch && ok; b++) {
                ok = oscar_kv_step_begin(cache, 1, &seqs[b], &n) == OSCAR_OK;
                for (uint32_t l = 0; l < a->layers && ok; l++) ok = oscar_kv_append(cache, l, kv, kv) == OSCAR_OK;
                ok = ok && oscar_kv_step_end(cache) == OSCAR_OK;
            }
            len += n;
        }
        /* one decode step: every sequence gets its target-th token and attends */
        for (uint32_t b = 0; b < batch; b++) n_new[b] = 1;
        ok = ok && oscar_kv_step_begin(cache, batch, seqs, n_new) == OSCAR_OK;
        for (uint32_t l = 0; l < a->layers && ok; l++) ok = oscar_kv_append(cache, l, kv, kv) == OSCAR_OK;
        double us_chained = 0;
        ok = ok && time_chained(ctx, cache, a, q, kv, batch, &us_chained) == OSCAR_OK;
        oscar_kv_stats stats;
        for (uint32_t it = 0; it < a->iters + 2 && ok; it++) { /* two warm-up calls */
            ok = oscar_kv_attention(cache, 0, q, out) == OSCAR_OK && oscar_kv_get_stats(cache, &stats) == OSCAR_OK;
            if (it >= 2) times[it - 2] = stats.last_gpu_ms * 1000.0;
        }
        /* what the call read: each sequence's INT2 and fp16 tokens (the new one included) of one
         * layer (the stats count every layer) */
        ok = ok && oscar_kv_get_stats(cache, &stats) == OSCAR_OK;
        const char *step_kname = ovk_kv_attention_variant(cache); /* a batched step may take another kernel */
        double bytes = ((double)stats.int2_tokens * stats.int2_bytes_per_token +
                        (double)(stats.f16_tokens + batch) * stats.f16_bytes_per_token) / a->layers;
        ok = ok && oscar_kv_step_end(cache) == OSCAR_OK;
        len += 1;
        if (!ok) break;
        oscar_kv_get_stats(cache, &stats);
        qsort(times, a->iters, sizeof *times, cmp_double);
        point *pt = &pts[(*n_pts)++];
        pt->mode = mode, pt->batch = batch, pt->context = target;
        pt->us_call = times[a->iters / 2];
        pt->bits = stats.bits_per_element;
        pt->bytes = bytes;
        pt->us = us_chained;
        pt->gbps = bytes / (pt->us * 1e3);
        printf("%-14s %-12s batch %2u  context %6u  %9.1f us  %9.1f us  %7.1f GB/s  %5.1f%% of read bw  %5.2f bits/elem\n",
               oscar_kv_mode_name(mode), step_kname, batch, target, pt->us_call, pt->us, pt->gbps, 100.0 * pt->gbps / bw, pt->bits);
        fflush(stdout);
        if (json) {
            fprintf(json, "%s  {\"mode\": \"%s\", \"variant\": \"%s\", \"batch\": %u, \"context\": %u, \"us\": %.2f, "
                          "\"us_per_submission\": %.2f, \"gbps\": %.1f, \"read_bw_gbps\": %.1f, \"bytes\": %.0f, "
                          "\"bits_per_element\": %.4f, \"layers\": %u, \"phase\": %d}",
                    json_points++ ? ",\n" : "", oscar_kv_mode_name(mode), step_kname, batch, target, pt->us, pt->us_call,
                    pt->gbps, bw, bytes, pt->bits, a->layers, a->phase);
            fflush(json); /* a run cut short keeps its points */
        }
    }
    if (!ok) fprintf(stderr, "oscar-bench: %s batch %u: %s\n", oscar_kv_mode_name(mode), batch, oscar_last_error());
    free(kv), free(q), free(out), free(seqs), free(n_new), free(times);
    oscar_kv_cache_destroy(cache);
    return ok;
}

/* --hold-mib: n MiB of device memory in 64 MiB buffers, filled (so the memory is backed). */
static int hold_memory(oscar_context *ctx, uint32_t mib, ovk_buffer **held, uint32_t *n_held)
{
    *n_held = (mib + 63) / 64;
    *held = calloc(*n_held ? *n_held : 1, sizeof **held);
    if (!*held) return 0;
    for (uint32_t i = 0; i < *n_held; i++) {
        uint64_t bytes = (i + 1 < *n_held || mib % 64 == 0 ? 64ull : mib % 64) << 20;
        if (ovk_buffer_create(ctx, bytes, OSCAR_BUFFER_DEVICE, &(*held)[i]) != OSCAR_OK ||
            ovk_buffer_fill(ctx, &(*held)[i], 0, bytes, 0x3C003C00u) != OSCAR_OK)
            return 0;
    }
    if (*n_held) print_placement(ctx, "held memory[0]", &(*held)[0]);
    return 1;
}

int bench_attention(int argc, char **argv)
{
    const char *prog = "oscar-bench attention";
    bench_args a = { .heads = 32, .kv_heads = 8, .head_dim = 128, .group = 128, .iters = 20, .layers = 1 };
    app_parse_u32_list(prog, "", "1024,2048,4096,8192,16384,32768,65536,131072", 1u << 24, a.contexts, &a.n_contexts);
    app_parse_u32_list(prog, "", "1,8,32", 1024, a.batches, &a.n_batches);
    app_parse_kv_modes(prog, "", "fp16,int2,int2-hadamard", a.modes, &a.n_modes);
    parse_variants("auto", &a);
    parse_kernels("auto", &a);
    for (int i = 0; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1;
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            bench_usage(stdout, "attention");
            return 0;
        }
        if (!strcmp(f, "--trace")) {
            a.trace = 1;
            continue;
        }
        if (!strcmp(f, "--phase")) {
            a.phase = 1;
            continue;
        }
        if (!strcmp(f, "--verbose")) {
            app_set_verbose(1);
            continue;
        }
        static const char *const known[] = { "--heads", "--kv-heads", "--head-dim", "--group", "--iters", "--hold-mib", "--layers",
                                             "--contexts", "--batch", "--modes", "--variants", "--kernels", "--json", "--device", NULL };
        if (!app_flag_with_value(prog, "oscar-bench", f, v, known)) return 2;
        if (!strcmp(f, "--heads")) ok = app_parse_u32(prog, f, v, 1024, &a.heads);
        else if (!strcmp(f, "--kv-heads")) ok = app_parse_u32(prog, f, v, 1024, &a.kv_heads);
        else if (!strcmp(f, "--head-dim")) ok = app_parse_u32(prog, f, v, 1024, &a.head_dim);
        else if (!strcmp(f, "--group")) ok = app_parse_u32(prog, f, v, 1024, &a.group);
        else if (!strcmp(f, "--iters")) ok = app_parse_u32(prog, f, v, 100000, &a.iters);
        else if (!strcmp(f, "--hold-mib")) ok = app_parse_u32(prog, f, v, 1u << 20, &a.hold_mib);
        else if (!strcmp(f, "--layers")) ok = app_parse_u32(prog, f, v, 256, &a.layers);
        else if (!strcmp(f, "--contexts")) ok = app_parse_u32_list(prog, f, v, 1u << 24, a.contexts, &a.n_contexts);
        else if (!strcmp(f, "--batch")) ok = app_parse_u32_list(prog, f, v, 1024, a.batches, &a.n_batches);
        else if (!strcmp(f, "--modes")) ok = app_parse_kv_modes(prog, f, v, a.modes, &a.n_modes);
        else if (!strcmp(f, "--variants")) ok = parse_variants(v, &a);
        else if (!strcmp(f, "--kernels")) ok = parse_kernels(v, &a);
        else if (!strcmp(f, "--json")) a.json = v;
        else if (!strcmp(f, "--device")) a.device = v;
        if (!ok) return 2;
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
    print_memory_types(ctx);
    double bw = 0, bw_end = 0;
    uint64_t bw_bytes = info.max_storage_buffer_range < (2ull << 30) ? info.max_storage_buffer_range / 2 : (2ull << 30);
    ovk_buffer *held = NULL;
    uint32_t n_held = 0;
    int rc = 0;
    if (a.hold_mib) {
        if (oscar_measure_read_bandwidth(ctx, bw_bytes, 20, &bw) == OSCAR_OK)
            printf("read bandwidth before holding %u MiB: %.1f GB/s\n", a.hold_mib, bw);
        if (!hold_memory(ctx, a.hold_mib, &held, &n_held)) {
            fprintf(stderr, "oscar-bench: holding %u MiB: %s\n", a.hold_mib, oscar_last_error());
            rc = 1;
            goto out;
        }
    }
    if (oscar_measure_read_bandwidth(ctx, bw_bytes, 20, &bw) != OSCAR_OK) {
        fprintf(stderr, "oscar-bench: %s\n", oscar_last_error());
        rc = 1;
        goto out;
    }
    printf("device: %s\nread bandwidth: %.1f GB/s (measured now, %llu MiB)\n", info.name, bw, (unsigned long long)(bw_bytes >> 20));
    printf("columns: mode, kernel, per call with one submission each (median), per call chained %u times in one\n"
           "         command buffer, bandwidth of the chained figure, bits per element stored\n", a.iters);
    printf("shapes: %u query heads, %u KV heads, head_dim %u, group %u; median of %u calls\n", a.heads, a.kv_heads, a.head_dim,
           a.group, a.iters);
    FILE *json = NULL;
    if (a.json) {
        json = fopen(a.json, "w");
        if (!json) {
            fprintf(stderr, "oscar-bench: cannot write %s\n", a.json);
            rc = 1;
            goto out;
        }
        fprintf(json, "{\"device\": \"%s\", \"read_bw_gbps\": %.1f, \"heads\": %u, \"kv_heads\": %u, \"head_dim\": %u, "
                      "\"group\": %u,\n \"points\": [\n",
                info.name, bw, a.heads, a.kv_heads, a.head_dim, a.group);
    }
    point *pts = calloc((size_t)4 * MAX_VARIANTS * MAX_VARIANTS * MAX_LIST * MAX_LIST, sizeof *pts);
    uint32_t n_pts = 0;
    for (uint32_t bi = 0; bi < a.n_batches && pts; bi++)
        for (uint32_t mi = 0; mi < a.n_modes; mi++)
            for (uint32_t ki = 0; ki < a.n_kernels; ki++)
                for (uint32_t vi = 0; vi < a.n_variants; vi++)
                    if (!bench_mode_batch(ctx, &a, a.modes[mi], a.kernels[ki], a.variants[vi], a.batches[bi], bw, pts, &n_pts, json))
                        rc = 1;
    if (oscar_measure_read_bandwidth(ctx, bw_bytes, 20, &bw_end) == OSCAR_OK)
        printf("read bandwidth at the end of the run: %.1f GB/s\n", bw_end);
    if (json) {
        fprintf(json, "\n], \"read_bw_end_gbps\": %.1f}\n", bw_end);
        fclose(json);
    }
    free(pts);
out:
    for (uint32_t i = 0; i < n_held; i++) ovk_buffer_destroy(ctx, &held[i]);
    free(held);
    oscar_context_destroy(ctx);
    return rc;
}
