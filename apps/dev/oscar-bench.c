/* oscar-bench: performance of OSCAR-VK on this machine's GPU.
 *
 *   oscar-bench attention [options]   decode attention over the paged cache, per layer call
 *   oscar-bench decode [options]      a whole model: prefill and decode tokens/s per context
 *   oscar-bench ops [options]         decode mat-vec per weight type (bench_ops below)
 *   oscar-bench floor [options]       a decode step's bytes read in its fewest dependent phases:
 *                                     the fastest any forward pass with a barrier between
 *                                     dependent work can be (bench_floor below)
 *
 * attention: see bench/bench_attention.c for its options and what it measures.
 *
 * decode options (see bench_decode below for what is measured):
 *   -m model.gguf | --gen tiny|llama3-8b-q4_0|qwen3-4b-q4_0   the model, or one generated with
 *                                         real shapes and seeded random weights
 *   --tmp DIR                             where --gen writes its GGUF (default /tmp)
 *   --keep                                keep the generated GGUF (and reuse it when present)
 *   --contexts A,B,...                    contexts (default 4096,8192,...,131072)
 *   --batch A,B,...                       sequences decoded together (default 1,32)
 *   --kv fp16,int2,...                    KV modes (default fp16,int2); oscar needs --rot
 *   --rot FILE|synthetic                  mode oscar's rotations: a RotationZoo file for -m's model,
 *                                         or (synthetic) Hadamard rotations with random signs per KV
 *                                         head and a key-feedback matrix, the shape of oscar-calib's
 *                                         default file, for the speed of the mode as shipped at any shape
 *   --prompt N                            prefill tokens timed (default 2048)
 *   --steps N                             decode steps timed per point (default 16)
 *   --ubatch N                            tokens per prefill step (default 0: the library's choice
 *                                         for the device, oscar_session_params.n_batch)
 *   --fill prefill|synthetic              how the base sequence reaches each context: the model's
 *                                         prefill (default; "fill s" times it) or random K/V written
 *                                         straight into the cache (seconds instead of ~14 minutes
 *                                         at 128K; decode speed does not depend on the cache's values)
 *   --layers N                            with --gen: that many layers instead of the model's
 *                                         (quick runs; per-layer costs scale, the LM head does not)
 *   --bw-mib N                            read-bandwidth buffer (default 2048; capped at the binding limit)
 *   --json FILE --device NAME|INDEX
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bench/bench.h"
#include "common/app_common.h"
#include "common/app_io.h"
#include "gguf.h"
#include "int2_quant.h"
#include "kv_cache.h"
#include "model_api.h"
#include "model_gen.h"
#include "mul_mat_coopmat.h"
#include "ops.h"
#include "weight_planes.h"
#include "oscar/oscar.h"
#include "oscar/experimental.h"

/* The separator before the next JSON point: nothing before the first one. */
static int json_points;
static const char *json_sep(void)
{
    return json_points++ ? ",\n" : "";
}

static void print_usage(FILE *out, const char *mode);

void bench_usage(FILE *out, const char *mode) { print_usage(out, mode); }

/* ==== decode: a whole model ==================================================================== */

typedef struct decode_args {
    const char *model, *gen, *tmp, *json, *device, *rot;
    int keep;
    uint32_t contexts[APP_MAX_LIST], n_contexts;
    uint32_t batches[APP_MAX_LIST], n_batches;
    oscar_kv_mode modes[4];
    uint32_t n_modes;
    uint32_t prompt, steps, ubatch, bw_mib, layers;
    int synthetic;  /* --fill synthetic */
} decode_args;

/* A rotation set of oscar-calib's default shape for any model, without calibrating: per KV
 * head R = diag(±1)·H (H the Hadamard matrix of mode int2-hadamard, ovk_kv_hadamard; signs
 * seeded per layer and head: orthogonal) for keys and values, the reference's fixed clips, and a key-feedback
 * matrix in every (layer, head) with seeded values above its diagonal, so that a session
 * stores its keys through the feedback flush as with a calibrated file. Speed only: the
 * rotations know nothing of the model. Prints one line and returns 0 on failure. */
static int synthetic_rotations(const char *prog, const oscar_model *model, const oscar_model_info *info,
                               oscar_rotation_set **out)
{
    uint32_t nl = info->n_layer, nkv = info->n_head_kv, d = info->head_dim;
    size_t dd = (size_t)d * d, n = (size_t)nl * nkv * dd;
    *out = NULL;
    if ((d & (d - 1)) != 0) { /* the Hadamard matrix needs a power of two */
        fprintf(stderr, "%s: --rot synthetic: head_dim %u is not a power of two\n", prog, d);
        return 0;
    }
    float *rk = malloc(n * sizeof *rk), *rv = malloc(n * sizeof *rv), *fb = calloc(n, sizeof *fb);
    float *H = malloc(dd * sizeof *H); /* [d][d] */
    if (!rk || !rv || !fb || !H) {
        fprintf(stderr, "%s: --rot synthetic: out of host memory\n", prog);
        free(rk), free(rv), free(fb), free(H);
        return 0;
    }
    ovk_kv_hadamard(d, H);
    uint32_t rng = 12345;
    for (size_t m = 0; m < (size_t)nl * nkv; m++)
        for (uint32_t i = 0; i < d; i++) {
            rng = rng * 1664525u + 1013904223u;
            float sk = (rng >> 31) ? 1.0f : -1.0f, sv = (rng >> 30) & 1 ? 1.0f : -1.0f;
            for (uint32_t j = 0; j < d; j++) {
                rk[m * dd + (size_t)i * d + j] = sk * H[(size_t)i * d + j];
                rv[m * dd + (size_t)i * d + j] = sv * H[(size_t)i * d + j];
                if (j > i) fb[m * dd + (size_t)i * d + j] = (float)((int)((rng >> 8) % 201) - 100) / 2000.0f;
                rng = rng * 1664525u + 1013904223u;
            }
        }
    oscar_status st = oscar_rotation_set_create(model, nl, nkv, rk, rv, NULL, NULL, out);
    if (st == OSCAR_OK) (*out)->key_feedback = fb, fb = NULL; /* the set frees it */
    else fprintf(stderr, "%s: --rot synthetic: %s\n", prog, oscar_last_error());
    free(rk), free(rv), free(fb), free(H);
    return st == OSCAR_OK;
}

/* Generator shapes: the real models' hyperparameters with seeded random weights. */
static int gen_preset(const char *name, ovk_model_gen_params *p)
{
    if (!strcmp(name, "tiny")) {
        *p = ovk_model_gen_params_default(OSCAR_ARCH_LLAMA);
        p->n_embd = 128, p->n_head = 2, p->n_head_kv = 1, p->head_dim = 64, p->n_ff = 256;
        p->weight_type = p->embd_type = OSCAR_GGML_TYPE_Q4_0;
        p->n_ctx_train = 8192;
    } else if (!strcmp(name, "llama3-8b-q4_0") || !strcmp(name, "llama3-8b")) {
        /* Llama-3-8B: 32 layers, 4096, 32/8 heads of 128, ffn 14336, vocab 128256; llama.cpp's
         * Q4_0 keeps the output matrix in Q6_K (the generator uses one type for both
         * token_embd and output: Q6_K, about 4.8 GB in all) */
        *p = ovk_model_gen_params_default(OSCAR_ARCH_LLAMA);
        p->n_layer = 32, p->n_embd = 4096, p->n_head = 32, p->n_head_kv = 8, p->head_dim = 128, p->n_ff = 14336;
        p->n_vocab = 128256, p->n_ctx_train = 131072, p->rope_freq_base = 500000.0f;
        p->weight_type = OSCAR_GGML_TYPE_Q4_0, p->embd_type = OSCAR_GGML_TYPE_Q6_K;
    } else if (!strcmp(name, "qwen3-4b-q4_0") || !strcmp(name, "qwen3-4b")) {
        /* Qwen3-4B: 36 layers, 2560, 32/8 heads of 128, ffn 9728, vocab 151936, tied */
        *p = ovk_model_gen_params_default(OSCAR_ARCH_QWEN3);
        p->n_layer = 36, p->n_embd = 2560, p->n_head = 32, p->n_head_kv = 8, p->head_dim = 128, p->n_ff = 9728;
        p->n_vocab = 151936, p->n_ctx_train = 131072, p->rope_freq_base = 1000000.0f, p->tied_embeddings = 1;
        p->weight_type = OSCAR_GGML_TYPE_Q4_0, p->embd_type = OSCAR_GGML_TYPE_Q6_K;
    } else {
        return 0;
    }
    p->seed = 1;
    return 1;
}

/* Weight bytes one decode step reads: every tensor except token_embd when the LM head is a
 * separate matrix (the embedding lookup reads one row per token). */
static uint64_t step_weight_bytes(const char *path, const oscar_model_info *info)
{
    uint64_t bytes = info->weight_bytes;
    ovk_gguf *g = NULL;
    if (info->tied_embeddings || ovk_gguf_open(path, &g) != OSCAR_OK) return bytes;
    const ovk_gguf_tensor *t = ovk_gguf_find_tensor(g, "token_embd.weight");
    if (t && t->n_bytes < bytes) bytes -= t->n_bytes - t->n_bytes / (t->ne[1] ? t->ne[1] : 1);
    ovk_gguf_close(g);
    return bytes;
}

typedef struct decode_point {
    oscar_kv_mode mode;
    uint32_t batch, context;
    double tok_s, ms_step, gpu_ms, limit_tok_s, fill_s, bits;
} decode_point;

/* The session a mode's points run in: the longest context (and the prompt) plus the timed
 * steps, the base sequence and one fork per sequence of the largest batch. */
static oscar_session_params decode_session_params(const decode_args *a, oscar_kv_mode mode, const oscar_rotation_set *rotations,
                                                  uint32_t *longest_out, uint32_t *max_b_out)
{
    uint32_t max_ctx = 0, max_b = 0;
    for (uint32_t i = 0; i < a->n_contexts; i++) max_ctx = a->contexts[i] > max_ctx ? a->contexts[i] : max_ctx;
    for (uint32_t i = 0; i < a->n_batches; i++) max_b = a->batches[i] > max_b ? a->batches[i] : max_b;
    uint32_t grow = a->steps + 1, longest = (max_ctx > a->prompt ? max_ctx : a->prompt) + grow + 8;
    oscar_session_params sp = oscar_session_params_default();
    sp.kv_mode = mode;
    sp.n_ctx = longest;
    sp.n_seq_max = max_b + 1;
    sp.n_batch = a->ubatch;
    sp.kv_memory_budget = 0; /* the cache sizes its pools for n_seq_max sequences of n_ctx tokens */
    sp.rotations = mode == OSCAR_KV_INT2_ROTATED ? rotations : NULL;
    if (longest_out) *longest_out = longest;
    if (max_b_out) *max_b_out = max_b;
    return sp;
}

/* The default contexts (up to 128K) and batches (up to 32) need page pools larger than a small
 * device's storage binding (128 MiB on lavapipe): drops the largest default context, then the
 * largest default batch, until a session of every mode fits, with a one-line note. A list given
 * on the command line is kept (its modes then report that they do not fit). */
static void fit_defaults(const char *prog, decode_args *a, app_model *m, const oscar_rotation_set *rotations,
                         const oscar_device_info *info, int ctx_given, int batch_given)
{
    uint32_t n_ctx0 = a->n_contexts, n_b0 = a->n_batches;
    for (;;) {
        int fits = 1;
        for (uint32_t i = 0; i < a->n_modes && fits; i++) {
            oscar_session_params sp = decode_session_params(a, a->modes[i], rotations, NULL, NULL);
            oscar_session *s = NULL;
            oscar_status st = oscar_session_create(m->model, &sp, &s);
            oscar_session_destroy(s);
            fits = st != OSCAR_ERROR_UNSUPPORTED && st != OSCAR_ERROR_OUT_OF_DEVICE_MEMORY;
        }
        if (fits) break;
        if (!ctx_given && a->n_contexts > 1) a->n_contexts--;
        else if (!batch_given && a->n_batches > 1) a->n_batches--;
        else break;
    }
    if (a->n_contexts == n_ctx0 && a->n_batches == n_b0) return;
    char c[128] = "", b[128] = "";
    for (uint32_t i = 0; i < a->n_contexts; i++) snprintf(c + strlen(c), sizeof c - strlen(c), "%s%u", i ? "," : "", a->contexts[i]);
    for (uint32_t i = 0; i < a->n_batches; i++) snprintf(b + strlen(b), sizeof b - strlen(b), "%s%u", i ? "," : "", a->batches[i]);
    fprintf(stderr, "%s: note: default contexts and batches cut to --contexts %s --batch %s: the page pools of larger "
            "ones exceed this device's %llu MiB storage binding\n", prog, c, b,
            (unsigned long long)(info->max_storage_buffer_range >> 20));
}

/* The GPU's clock governor lowers the SM clock whenever the process leaves the GPU idle for a
 * while (a fill, a model load, a fresh machine): decode steps, a host wait after each, did not
 * bring it back, and a first process on a fresh machine decoded ~1.5x slow. Before each timed
 * point, B throwaway forks of `base` decode back to back for WARM_UP_MS (docs/attention-results.md,
 * "The first-run slowness"), re-forked every `max_steps` steps so that they stay within the
 * session's context. seqs: room for B ids; tok: B tokens. */
#define WARM_UP_MS 500.0
static oscar_status warm_up_clocks(oscar_session *s, int32_t base, uint32_t B, uint32_t max_steps, int32_t *seqs, int32_t *tok)
{
    oscar_status st = OSCAR_OK;
    double t0 = app_now();
    while (st == OSCAR_OK && 1e3 * (app_now() - t0) < WARM_UP_MS) {
        uint32_t forked = 0;
        while (forked < B && (st = oscar_session_seq_fork(s, base, &seqs[forked])) == OSCAR_OK) forked++;
        for (uint32_t it = 0; st == OSCAR_OK && it < max_steps && 1e3 * (app_now() - t0) < WARM_UP_MS; it++)
            st = oscar_session_decode(s, B, seqs, tok, NULL);
        for (uint32_t f = 0; f < forked; f++) oscar_session_seq_free(s, seqs[f]);
    }
    return st;
}

/* One KV mode: time a prefill of a.prompt tokens, then fill a base sequence to each context
 * in turn (prefill in ubatch steps) and at each context fork it into `batch` sequences and
 * time a.steps decode steps (after warm_up_clocks and one warm-up step) for every batch size. */
static int decode_mode(const decode_args *a, app_model *m, oscar_kv_mode mode, const oscar_rotation_set *rotations, double bw,
                       uint64_t step_bytes, FILE *json)
{
    uint32_t longest = 0, max_b = 0;
    oscar_session_params sp = decode_session_params(a, mode, rotations, &longest, &max_b);
    oscar_session *s = NULL;
    oscar_status st = oscar_session_create(m->model, &sp, &s);
    if (st != OSCAR_OK) {
        char what[64];
        snprintf(what, sizeof what, "%s skipped", oscar_kv_mode_name(mode));
        app_fail("oscar-bench decode", what, st);
        return 0;
    }
    uint32_t n_tok = longest > a->prompt ? longest : a->prompt;
    int32_t *tokens = malloc((size_t)n_tok * sizeof *tokens);   /* [n_tok] seeded random ids */
    int32_t *seqs = malloc((size_t)(max_b + 1) * sizeof *seqs); /* [0]: the base, then forks */
    int32_t *step_tok = malloc((size_t)max_b * sizeof *step_tok);
    int ok = tokens && seqs && step_tok;
    uint32_t rng = 777;
    for (uint32_t i = 0; ok && i < n_tok; i++) {
        rng = rng * 1664525u + 1013904223u;
        tokens[i] = (int32_t)((rng >> 8) % m->info.n_vocab);
    }
    /* prefill speed: a warm-up prefill, then the timed one on a fresh sequence. The warm-up has
     * the timed run's step sizes (a full ubatch and the remainder), so every pipeline the timed
     * run uses is created before it: a kernel's plan may depend on the step's tokens, and a
     * driver takes up to seconds to compile a cooperative-matrix pipeline */
    double prefill_tok_s = 0;
    if (ok) {
        uint32_t ub = oscar_session_n_batch(s);
        uint32_t warm = a->prompt <= ub ? a->prompt : ub + a->prompt % ub;
        st = oscar_session_seq_add(s, &seqs[0]);
        if (st == OSCAR_OK) st = oscar_session_prefill(s, seqs[0], tokens, warm, NULL);
        if (st == OSCAR_OK) st = oscar_session_seq_reset(s, seqs[0]);
        double t0 = app_now();
        if (st == OSCAR_OK) st = oscar_session_prefill(s, seqs[0], tokens, a->prompt, NULL);
        double t = app_now() - t0;
        if (st == OSCAR_OK) st = oscar_session_seq_reset(s, seqs[0]);
        ok = st == OSCAR_OK;
        if (ok) {
            prefill_tok_s = a->prompt / t;
            printf("%-6s prefill %u tokens: %.1f tok/s (%.2f s, steps of %u)\n", oscar_kv_mode_name(mode), a->prompt,
                   prefill_tok_s, t, ub);
            if (json) {
                fprintf(json, "%s  {\"kind\": \"prefill\", \"kv\": \"%s\", \"tokens\": %u, \"step\": %u, \"tok_s\": %.2f, \"seconds\": %.3f}",
                        json_sep(), oscar_kv_mode_name(mode), a->prompt, ub, prefill_tok_s, t);
                fflush(json); /* a run cut short keeps its points (in the temporary file) */
            }
        }
    }
    uint32_t len = 0;
    for (uint32_t ci = 0; ok && ci < a->n_contexts; ci++) {
        uint32_t target = a->contexts[ci];
        double t0 = app_now();
        if (target > len) {
            if (a->synthetic) st = oscar_session_fill_synthetic(s, seqs[0], target - len);
            else st = oscar_session_prefill(s, seqs[0], tokens + len, target - len, NULL);
            ok = st == OSCAR_OK;
            len = target;
        }
        double fill_s = app_now() - t0;
        for (uint32_t bi = 0; ok && bi < a->n_batches; bi++) {
            uint32_t B = a->batches[bi];
            for (uint32_t b = 0; b < B; b++) step_tok[b] = tokens[(len + b) % n_tok];
            st = warm_up_clocks(s, seqs[0], B, a->steps + 1, seqs + 1, step_tok);
            uint32_t forked = 0;
            while (forked < B && st == OSCAR_OK && (st = oscar_session_seq_fork(s, seqs[0], &seqs[1 + forked])) == OSCAR_OK)
                forked++;
            double t = 0, gpu_ms = 0;
            for (uint32_t it = 0; st == OSCAR_OK && it < a->steps + 1; it++) {
                for (uint32_t b = 0; b < B; b++) step_tok[b] = tokens[(len + it + b) % n_tok];
                double ts = app_now();
                st = oscar_session_decode(s, B, seqs + 1, step_tok, NULL);
                if (it > 0) t += app_now() - ts; /* step 0 is the warm-up */
                oscar_kv_stats ks;
                if (st == OSCAR_OK && it > 0 && oscar_session_kv_stats(s, &ks) == OSCAR_OK) gpu_ms += ks.last_gpu_ms;
            }
            for (uint32_t f = 0; f < forked; f++) oscar_session_seq_free(s, seqs[1 + f]);
            oscar_kv_stats ks; /* the base sequence alone: forks share its pages */
            memset(&ks, 0, sizeof ks);
            if (st == OSCAR_OK) oscar_session_kv_stats(s, &ks);
            ok = st == OSCAR_OK;
            if (!ok) break;
            decode_point pt = { mode, B, target, B * a->steps / t, 1e3 * t / a->steps, gpu_ms / a->steps,
                                B * bw * 1e9 / (double)step_bytes, fill_s, ks.bits_per_element };
            printf("%-6s batch %2u  context %6u  decode %8.1f tok/s  %7.2f ms/step (GPU %.2f)  weight limit %8.1f tok/s "
                   "(%4.1f%%)  %5.2f bits/elem  fill %.1f s%s\n",
                   oscar_kv_mode_name(mode), B, target, pt.tok_s, pt.ms_step, pt.gpu_ms, pt.limit_tok_s,
                   100.0 * pt.tok_s / pt.limit_tok_s, pt.bits, fill_s, a->synthetic ? " (synthetic)" : "");
            fflush(stdout);
            if (json) {
                fprintf(json, "%s  {\"kind\": \"decode\", \"kv\": \"%s\", \"batch\": %u, \"context\": %u, \"tok_s\": %.2f, "
                              "\"ms_per_step\": %.3f, \"gpu_ms_per_step\": %.3f, \"weight_limit_tok_s\": %.2f, "
                              "\"bits_per_element\": %.4f, \"fill_seconds\": %.2f, \"fill\": \"%s\"}",
                        json_sep(), oscar_kv_mode_name(mode), B, target, pt.tok_s, pt.ms_step, pt.gpu_ms,
                        pt.limit_tok_s, pt.bits, fill_s, a->synthetic ? "synthetic" : "prefill");
                fflush(json);
            }
            fill_s = 0; /* the fill is reported once per context */
        }
    }
    if (!ok) {
        if (!tokens || !seqs || !step_tok) fprintf(stderr, "oscar-bench: out of host memory\n");
        else app_fail("oscar-bench decode", oscar_kv_mode_name(mode), st);
    }
    free(tokens), free(seqs), free(step_tok);
    oscar_session_destroy(s);
    return ok;
}

static int bench_decode(int argc, char **argv)
{
    const char *prog = "oscar-bench decode";
    decode_args a = { .tmp = "/tmp", .prompt = 2048, .steps = 16, .ubatch = 0, .bw_mib = 2048 };
    app_parse_u32_list(prog, "", "4096,8192,16384,32768,65536,131072", 1u << 24, a.contexts, &a.n_contexts);
    app_parse_u32_list(prog, "", "1,32", 1024, a.batches, &a.n_batches);
    app_parse_kv_modes(prog, "", "fp16,int2", a.modes, &a.n_modes);
    int ctx_given = 0, batch_given = 0;
    for (int i = 0; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            print_usage(stdout, "decode");
            return 0;
        }
        if (!strcmp(f, "--verbose")) {
            app_set_verbose(1);
            continue;
        }
        if (!strcmp(f, "--keep")) {
            a.keep = 1;
            continue;
        }
        int ok = 1;
        static const char *const known[] = { "-m", "--model", "--gen", "--tmp", "--json", "--device", "--rot", "--contexts",
                                             "--batch", "--kv", "--prompt", "--steps", "--ubatch", "--bw-mib", "--layers",
                                             "--fill", NULL };
        if (!app_flag_with_value(prog, "oscar-bench", f, v, known)) return 2;
        if (!strcmp(f, "-m") || !strcmp(f, "--model")) a.model = v;
        else if (!strcmp(f, "--gen")) a.gen = v;
        else if (!strcmp(f, "--tmp")) a.tmp = v;
        else if (!strcmp(f, "--json")) a.json = v;
        else if (!strcmp(f, "--device")) a.device = v;
        else if (!strcmp(f, "--rot")) a.rot = v;
        else if (!strcmp(f, "--contexts")) ok = app_parse_u32_list(prog, f, v, 1u << 24, a.contexts, &a.n_contexts), ctx_given = 1;
        else if (!strcmp(f, "--batch")) ok = app_parse_u32_list(prog, f, v, 1024, a.batches, &a.n_batches), batch_given = 1;
        else if (!strcmp(f, "--kv")) ok = app_parse_kv_modes(prog, f, v, a.modes, &a.n_modes);
        else if (!strcmp(f, "--prompt")) ok = app_parse_u32(prog, f, v, 1u << 20, &a.prompt);
        else if (!strcmp(f, "--steps")) ok = app_parse_u32(prog, f, v, 4096, &a.steps);
        else if (!strcmp(f, "--ubatch")) ok = app_parse_u32(prog, f, v, 8192, &a.ubatch);
        else if (!strcmp(f, "--bw-mib")) ok = app_parse_u32(prog, f, v, 1u << 16, &a.bw_mib);
        else if (!strcmp(f, "--layers")) ok = app_parse_u32(prog, f, v, 1024, &a.layers);
        else if (!strcmp(f, "--fill")) {
            a.synthetic = !strcmp(v, "synthetic");
            if (!a.synthetic && strcmp(v, "prefill")) {
                fprintf(stderr, "%s: --fill must be prefill or synthetic, not '%s'\n", prog, v);
                return 2;
            }
        }
        if (!ok) return 2;
        i++;
    }
    int want_rot = 0;
    for (uint32_t i = 0; i < a.n_modes; i++) want_rot |= a.modes[i] == OSCAR_KV_INT2_ROTATED;
    if (want_rot != (a.rot != NULL)) {
        fprintf(stderr, want_rot ? "%s: --kv oscar needs --rot FILE or --rot synthetic\n" : "%s: --rot goes with --kv oscar\n",
                prog);
        return 2;
    }
    for (uint32_t i = 1; i < a.n_contexts; i++)
        if (a.contexts[i] <= a.contexts[i - 1]) {
            fprintf(stderr, "%s: --contexts must increase\n", prog);
            return 2;
        }
    if (a.layers && !a.gen) {
        fprintf(stderr, "%s: --layers goes with --gen\n", prog);
        return 2;
    }
    if (!a.model == !a.gen) {
        fprintf(stderr, "%s: give either -m model.gguf or --gen tiny|llama3-8b-q4_0|qwen3-4b-q4_0\n", prog);
        return 2;
    }
    char gen_path[4096];
    int generated = 0;
    if (a.gen) {
        ovk_model_gen_params gp;
        if (!gen_preset(a.gen, &gp)) {
            fprintf(stderr, "%s: unknown --gen '%s' (tiny, llama3-8b-q4_0, qwen3-4b-q4_0)\n", prog, a.gen);
            return 2;
        }
        if (a.layers) gp.n_layer = a.layers;
        snprintf(gen_path, sizeof gen_path, "%s/oscar-bench-%s-%ul.gguf", a.tmp, a.gen, gp.n_layer);
        if (a.keep && access(gen_path, R_OK) == 0) {
            printf("model: reusing %s\n", gen_path);
        } else {
            double t0 = app_now();
            oscar_status st = ovk_model_gen_write(&gp, gen_path);
            if (st != OSCAR_OK) {
                fprintf(stderr, "%s: cannot write %s (%s): %s\n", prog, gen_path, oscar_status_string(st), oscar_last_error());
                unlink(gen_path);
                return 1;
            }
            printf("model: generated %s in %.1f s\n", gen_path, app_now() - t0);
            generated = !a.keep;
        }
        a.model = gen_path;
    }
    int rc = 1;
    app_model m;
    app_out json_out = { 0 };
    FILE *json = NULL;
    oscar_rotation_set *rotations = NULL;
    if (!app_model_open(prog, a.model, a.device, a.rot && strcmp(a.rot, "synthetic") ? a.rot : NULL, 0, &m)) goto out_file;
    if (a.rot && strcmp(a.rot, "synthetic") && !app_rotation_load(prog, a.rot, m.model, &rotations)) goto out;
    if (a.rot && !strcmp(a.rot, "synthetic") && !synthetic_rotations(prog, m.model, &m.info, &rotations)) goto out;
    oscar_device_info info;
    double bw = 0;
    oscar_context_device_info(m.ctx, &info);
    uint64_t bw_bytes = (uint64_t)a.bw_mib << 20;
    if (bw_bytes > info.max_storage_buffer_range / 2) bw_bytes = info.max_storage_buffer_range / 2;
    oscar_status st = oscar_measure_read_bandwidth(m.ctx, bw_bytes, 20, &bw);
    if (st != OSCAR_OK) {
        app_fail(prog, "read bandwidth", st);
        goto out;
    }
    if (!ctx_given || !batch_given) fit_defaults(prog, &a, &m, rotations, &info, ctx_given, batch_given);
    uint64_t step_bytes = step_weight_bytes(a.model, &m.info);
    printf("device: %s\nread bandwidth: %.1f GB/s (measured now, %llu MiB)\n", info.name, bw,
           (unsigned long long)(bw_bytes >> 20));
    printf("model: %s, %u layers, n_embd %u, %u/%u heads of %u, vocab %u, %.2f GB of weights, %.2f GB read per "
           "decode step\n",
           m.info.arch, m.info.n_layer, m.info.n_embd, m.info.n_head, m.info.n_head_kv, m.info.head_dim, m.info.n_vocab,
           m.info.weight_bytes / 1e9, step_bytes / 1e9);
    printf("weight limit = batch x read bandwidth / weight bytes per step (KV reads not counted); %u timed steps per "
           "point\n", a.steps);
    if (a.json) {
        const char *inputs[] = { a.model, a.rot, NULL };
        if (!app_out_open(prog, a.json, inputs, &json_out)) goto out;
        json = json_out.f;
        fprintf(json, "{\"device\": \"%s\", \"read_bw_gbps\": %.1f, \"model\": \"%s\", \"arch\": \"%s\", "
                      "\"weight_bytes\": %llu, \"step_weight_bytes\": %llu, \"steps\": %u,\n \"points\": [\n",
                info.name, bw, a.gen ? a.gen : a.model, m.info.arch, (unsigned long long)m.info.weight_bytes,
                (unsigned long long)step_bytes, a.steps);
    }
    rc = 0;
    for (uint32_t i = 0; i < a.n_modes; i++)
        if (!decode_mode(&a, &m, a.modes[i], rotations, bw, step_bytes, json)) rc = 1;
    if (json) {
        fprintf(json, "\n]}\n");
        if (!app_out_commit(prog, &json_out)) rc = 1;
    }
out:
    app_out_abort(&json_out);
    oscar_rotation_set_destroy(rotations);
    app_model_close(&m);
out_file:
    if (generated) unlink(gen_path);
    return rc;
}

/* ---- ops: mat-vec per weight type ----------------------------------------------------------- */

/* Whether `name` is one of the comma-separated names in `list` (case-insensitive). */
static int name_in_list(const char *name, const char *list)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncasecmp(p, name, n)) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

/* Creates the context of --device (NULL: the default) and reads its info; 0 and one line on
 * stderr when it cannot. */
static int open_device(const char *prog, const char *device, oscar_context **ctx, oscar_device_info *info)
{
    oscar_context_params cp = oscar_context_params_default();
    cp.device = device;
    if (oscar_context_create(&cp, ctx) != OSCAR_OK) {
        fprintf(stderr, "%s: %s\n", prog, oscar_last_error());
        return 0;
    }
    oscar_context_device_info(*ctx, info);
    return 1;
}

/* Ends a recording timed from timestamp t0: submits it, waits, and sets *ns. Returns st if it
 * is a failure already, else the first failure of these steps. */
static oscar_status end_timed(oscar_context *ctx, ovk_cmd *cmd, int t0, oscar_status st, double *ns)
{
    if (!cmd->recording) return st;
    int t1 = ovk_cmd_timestamp(ctx, cmd);
    oscar_status st2 = ovk_cmd_submit_wait(ctx, cmd);
    if (st == OSCAR_OK) st = st2;
    if (st == OSCAR_OK) st = ovk_cmd_elapsed_ns(ctx, cmd, t0, t1, ns);
    return st;
}

/* Times the texel-fetch product over weight planes (ops.h: the products of CPU devices) like
 * the others, its weights rotating over as many copies as a buffer keeps views (the planes'
 * own layout, weight_planes.h), and prints its line. */
static oscar_status bench_planes(oscar_context *ctx, const ovk_ops *ops_in, const uint32_t tile[3], ovk_cmd *cmd,
                                 uint32_t type, uint32_t rows,
                                 uint32_t cols, uint32_t tokens, uint32_t iters, int barriers, ovk_buffer *x, ovk_buffer *y,
                                 double bw)
{
    ovk_ops tuned = *ops_in, *ops = &tuned;
    tuned.matvec_workgroup = tile[0];
    tuned.matvec_rows = tile[1];
    tuned.matvec_tokens = tile[2];
    uint64_t bytes = ovk_planes_bytes(type, rows, cols), mat = (bytes + 255) & ~255ull;
    uint32_t copies = OVK_BUFFER_VIEWS;
    ovk_buffer w = { 0 };
    double ns = 0;
    oscar_status st = ovk_buffer_create(ctx, copies * mat, OSCAR_BUFFER_DEVICE, &w);
    if (st == OSCAR_OK) st = ovk_buffer_fill(ctx, &w, 0, copies * mat, 0x3C003C00u);
    if (st == OSCAR_OK) st = ovk_cmd_begin(ctx, cmd);
    int t0 = st == OSCAR_OK ? ovk_cmd_timestamp(ctx, cmd) : -1;
    for (uint32_t it = 0; it < iters && st == OSCAR_OK; it++) {
        st = ovk_op_mul_mat_vec_planes(ops, cmd, type, (ovk_binding){ &w, (it % copies) * mat, bytes },
                                       (ovk_binding){ x, 0, 0 }, (ovk_binding){ y, 0, 0 }, rows, rows, cols, tokens);
        if (barriers) ovk_cmd_barrier(ctx, cmd);
    }
    st = end_timed(ctx, cmd, t0, st, &ns);
    if (st == OSCAR_OK) {
        double us = ns * 1e-3 / iters, gbps = (double)bytes / (us * 1e3);
        printf("%-5s%-6s  %8.2f MB  %8.1f us  %7.1f GB/s  %5.1f%% of read bw", ovk_ggml_type_name(type), " planes",
               bytes / 1e6, us, gbps, 100.0 * gbps / bw);
        if (tokens > 1) printf("  %7.2f TFLOPS", 2.0 * rows * cols * tokens / (us * 1e6));
        printf("\n");
    }
    ovk_buffer_destroy(ctx, &w);
    return st;
}

/* Times the decode mat-vec y = W·x for each weight type, W [rows][cols], `iters` dispatches
 * chained in one command buffer with a barrier between them (as in a forward pass), and the
 * bandwidth probe chained alike over the same bytes (what a read-only kernel takes at that
 * size: the product's own bound, below the large-buffer bandwidth for small matrices). The weights
 * rotate over enough copies that together exceed the GPU's last-level cache, so every dispatch
 * reads from memory. GB/s = weight bytes / time per dispatch, beside the read bandwidth measured
 * in the same run. The weight contents are a constant fp16 1.0 pattern: timing does not depend
 * on the values. */
static int bench_ops(int argc, char **argv)
{
    const char *prog = "oscar-bench ops", *device = NULL;
    const char *only = NULL; /* --types: comma-separated type names, NULL: all */
    uint32_t rows = 14336, cols = 4096, iters = 20, per_group = 0, mv_shader = OSCAR_MATVEC_AUTO, mv_wg = 0, mv_unroll = 0, mv_split = 0;
    uint32_t tokens = 1, mv_tokens = 0; /* --tokens: the product of a batch; --mv-tokens: its tokens per workgroup */
    int barriers = 1;                   /* --no-barriers: chain the products without a barrier between them */
    int planes_only = 0;                /* --planes-only: time the planes product alone */
    int hot = 0;                        /* --hot: one copy of the weights, read from the cache where it fits */
    uint32_t mm_tile[4] = { 0 };        /* --mm-tile: the cooperative-matrix matmul's plan (ovk_ops.matmul_coopmat) */
    uint32_t planes_tile[3] = { 0 };    /* --planes-tile: the planes product's threads, rows and tokens a thread (0: defaults) */
    static const uint32_t all_types[] = { OSCAR_GGML_TYPE_F32, OSCAR_GGML_TYPE_F16, OSCAR_GGML_TYPE_BF16,
                                          OSCAR_GGML_TYPE_Q8_0, OSCAR_GGML_TYPE_Q4_0, OSCAR_GGML_TYPE_Q4_1,
                                          OSCAR_GGML_TYPE_Q4_K, OSCAR_GGML_TYPE_Q5_K, OSCAR_GGML_TYPE_Q6_K };
    for (int i = 0; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            print_usage(stdout, "ops");
            return 0;
        }
        if (!strcmp(f, "--no-barriers")) {
            barriers = 0;
            continue;
        }
        if (!strcmp(f, "--planes-only")) {
            planes_only = 1;
            continue;
        }
        if (!strcmp(f, "--hot")) {
            hot = 1;
            continue;
        }
        static const char *const known[] = { "--rows", "--cols", "--iters", "--rows-per-group", "--mv-workgroup", "--mv-unroll", "--mv-split",
                                             "--tokens", "--mv-tokens", "--types", "--mv-shader", "--device", "--mm-tile", "--planes-tile", NULL };
        if (!app_flag_with_value(prog, "oscar-bench", f, v, known)) return 2;
        int ok = 1;
        if (!strcmp(f, "--rows")) ok = app_parse_u32(prog, f, v, 1u << 20, &rows);
        else if (!strcmp(f, "--cols")) ok = app_parse_u32(prog, f, v, 1u << 20, &cols);
        else if (!strcmp(f, "--iters")) ok = app_parse_u32(prog, f, v, 1000, &iters);
        else if (!strcmp(f, "--rows-per-group")) ok = app_parse_u32(prog, f, v, 256, &per_group);
        else if (!strcmp(f, "--mv-workgroup")) ok = app_parse_u32(prog, f, v, 256, &mv_wg);
        else if (!strcmp(f, "--mv-unroll")) ok = app_parse_u32(prog, f, v, 8, &mv_unroll);
        else if (!strcmp(f, "--mv-split")) ok = app_parse_u32(prog, f, v, 8, &mv_split);
        else if (!strcmp(f, "--tokens")) ok = app_parse_u32(prog, f, v, 8192, &tokens);
        else if (!strcmp(f, "--mv-tokens")) ok = app_parse_u32(prog, f, v, 32, &mv_tokens);
        else if (!strcmp(f, "--types")) only = v;
        else if (!strcmp(f, "--planes-tile")) {
            int got = sscanf(v, "%ux%ux%u", &planes_tile[0], &planes_tile[1], &planes_tile[2]);
            ok = got == 2 || got == 3;
            if (!ok)
                fprintf(stderr, "%s: --planes-tile is THREADSxROWS[xTOKENS] (a workgroup's threads, rows and tokens a thread), "
                                "e.g. 8x4x4\n", prog);
        } else if (!strcmp(f, "--mm-tile")) {
            ok = sscanf(v, "%ux%ux%ux%u", &mm_tile[0], &mm_tile[1], &mm_tile[2], &mm_tile[3]) == 4;
            if (!ok) fprintf(stderr, "%s: --mm-tile is WMxWNxCMxCN (warp tiles, matrices per warp tile), e.g. 2x2x4x4\n", prog);
        }
        else if (!strcmp(f, "--mv-shader")) {
            if (!strcmp(v, "auto")) mv_shader = OSCAR_MATVEC_AUTO;
            else if (!strcmp(v, "units")) mv_shader = OSCAR_MATVEC_UNITS;
            else if (!strcmp(v, "run8")) mv_shader = OSCAR_MATVEC_RUN8;
            else if (!strcmp(v, "lanes")) mv_shader = OSCAR_MATVEC_LANES;
            else {
                fprintf(stderr, "%s: --mv-shader is auto, units, run8 or lanes\n", prog);
                ok = 0;
            }
        }
        else if (!strcmp(f, "--device")) device = v;
        if (!ok) return 2;
        i++;
    }
    if (cols % 32) {
        fprintf(stderr, "%s: --cols must be a multiple of 32 (the K-quants' 256 where they are timed)\n", prog);
        return 2;
    }
    if (tokens == 0) {
        fprintf(stderr, "%s: --tokens must be at least 1\n", prog);
        return 2;
    }
    oscar_context *ctx;
    oscar_device_info info;
    if (!open_device(prog, device, &ctx, &info)) return 1;
    uint64_t bw_bytes = info.max_storage_buffer_range < (2ull << 30) ? info.max_storage_buffer_range / 2 : (2ull << 30);
    double bw = 0;
    int rc = 0;
    if (oscar_measure_read_bandwidth(ctx, bw_bytes, 20, &bw) != OSCAR_OK) {
        fprintf(stderr, "%s: %s\n", prog, oscar_last_error());
        oscar_context_destroy(ctx);
        return 1;
    }
    printf("device: %s\nread bandwidth: %.1f GB/s (measured now, %llu MiB)\n", info.name, bw,
           (unsigned long long)(bw_bytes >> 20));
    printf("mat-vec %u x %u, %u token%s, %u dispatches chained per type (%s)\n", rows, cols, tokens, tokens > 1 ? "s" : "",
           iters, barriers ? "a barrier between them" : "no barriers");
    ovk_ops ops;
    ovk_ops_init(&ops, ctx);
    ops.matvec_rows = per_group; /* 0: the per-type default */
    ops.matvec_shader = mv_shader;
    ops.matvec_workgroup = mv_wg;
    ops.matvec_unroll = mv_unroll;
    ops.matvec_split = mv_split;
    ops.matvec_tokens = mv_tokens;
    memcpy(ops.matmul_coopmat, mm_tile, sizeof mm_tile);
    int coopmat_runs = ctx->env.matmul_coopmat != 0 && ovk_op_mul_mat_coopmat_supported(&ops);
    ovk_mmc_plan plan;
    if (!coopmat_runs && tokens > 1 && (mm_tile[0] || mm_tile[1] || mm_tile[2] || mm_tile[3]) &&
        ovk_mmc_plan_for(&ops, tokens, &plan) != OSCAR_OK) /* say why there is no cm row */
        printf("no cooperative-matrix product: %s\n", oscar_last_error());
    ovk_buffer scratch = { 0 }; /* a session's scratch for split cooperative-matrix products */
    if (coopmat_runs && tokens > 1) {
        if (ovk_buffer_create(ctx, OVK_MMC_SCRATCH_BYTES, OSCAR_BUFFER_DEVICE, &scratch) != OSCAR_OK) {
            fprintf(stderr, "%s: %s\n", prog, oscar_last_error());
            oscar_context_destroy(ctx);
            return 1;
        }
        ops.matmul_scratch = (ovk_binding){ &scratch, 0, 0 };
    }
    if (tokens > 1) printf("batch of %u: the default product (%s), then the tiled fp32 matmul, the cooperative-matrix one "
                           "(cm, its columns split for a short batch), and up to %u tokens the batched lanes product and "
                           "the int8 one (q8; a forward pass's decode steps of up to %u rows take it)\n",
                           tokens, coopmat_runs ? "cooperative matrices, or the batched lanes product for a few tokens"
                                                : "the batched lanes product for a few tokens, else the tiled matmul",
                           OSCAR_MATVEC_BATCH_MAX, OVK_Q8_BATCH_MAX);
    static const char *const shader_names[] = { "auto", "units", "run8", "lanes" };
    printf("mat-vec shader %s, workgroup %u, rows per group %u, unroll %u, subgroups a row %u, tokens per group %u "
           "(0: per type)\n", shader_names[mv_shader], mv_wg, per_group, mv_unroll, mv_split, mv_tokens);
    printf("planes product: %u threads, %u rows and %u tokens a thread (0: the default)\n", planes_tile[0], planes_tile[1],
           planes_tile[2]);
    ovk_cmd cmd;
    ovk_buffer x = { 0 }, y = { 0 }, xq = { 0 };
    if (ovk_cmd_init(ctx, &cmd) != OSCAR_OK || ovk_buffer_create(ctx, (uint64_t)tokens * cols * 4, OSCAR_BUFFER_DEVICE, &x) != OSCAR_OK ||
        ovk_buffer_create(ctx, OSCAR_X_F16_BYTES(1, cols) > OSCAR_X_Q8_BYTES((uint64_t)tokens * cols)
                                   ? OSCAR_X_F16_BYTES(1, cols)
                                   : OSCAR_X_Q8_BYTES((uint64_t)tokens * cols),
                          OSCAR_BUFFER_DEVICE, &xq) != OSCAR_OK ||
        ovk_buffer_create(ctx, (uint64_t)tokens * rows * 4, OSCAR_BUFFER_DEVICE, &y) != OSCAR_OK ||
        ovk_buffer_fill(ctx, &x, 0, (uint64_t)tokens * cols * 4, 0x3F800000u) != OSCAR_OK) {
        fprintf(stderr, "%s: %s\n", prog, oscar_last_error());
        oscar_context_destroy(ctx);
        return 1;
    }
    for (size_t ti = 0; ti < sizeof all_types / sizeof all_types[0]; ti++) {
        uint32_t type = all_types[ti];
        if (only && !name_in_list(ovk_ggml_type_name(type), only)) continue;
        if (cols % ovk_op_type_block(type)) {
            printf("%-5s         (skipped: %u columns are not whole blocks of %u)\n", ovk_ggml_type_name(type), cols,
                   ovk_op_type_block(type));
            continue;
        }
        uint64_t row_bytes = 0;
        ovk_ggml_row_size(type, cols, &row_bytes);
        uint64_t mat = ((row_bytes * rows) + 255) & ~255ull; /* 256-byte aligned copies */
        uint32_t copies = (uint32_t)((512ull << 20) / mat + 1); /* > 512 MiB in all: beyond any cache */
        if (copies > 64) copies = 64;
        if (hot) copies = 1;
        while (copies > 1 && (uint64_t)copies * mat > info.max_storage_buffer_range) copies--;
        ovk_buffer w = { 0 }; /* the GGUF blocks, for every product but the planes one */
        oscar_status st = planes_only ? OSCAR_OK : ovk_buffer_create(ctx, copies * mat, OSCAR_BUFFER_DEVICE, &w);
        if (st == OSCAR_OK && !planes_only) st = ovk_buffer_fill(ctx, &w, 0, copies * mat, 0x3C003C00u);
        /* one token: the fp32-input kernel, then (Q4_0, Q8_0 with shaderFloat16) the packed-fp16
         * one and (Q4_0, Q4_1, Q8_0 with subgroup arithmetic) the int8 one, each on x prepared
         * once, as a forward pass shares it between the products of one input (--rows-per-group,
         * --mv-unroll, --mv-workgroup and --mv-split tune the int8 one too: rows a subgroup, blocks a
         * pass, subgroups a row);
         * --tokens > 1: the default product of the batch, then the tiled matmul, the
         * cooperative-matrix one (where the device has them), and up to OSCAR_MATVEC_BATCH_MAX
         * tokens the batched lanes product and the int8 one, x prepared once (--mv-tokens: their
         * tokens a workgroup) */
        for (int var = 0; var < 5 && st == OSCAR_OK && !planes_only; var++) {
            int f16 = tokens == 1 && var == 1, tiled = tokens > 1 && var == 1;
            int q8 = (tokens == 1 && var == 2) || (tokens > 1 && tokens <= OSCAR_MATVEC_BATCH_MAX && var == 4);
            int coopmat = tokens > 1 && var == 2, lanes = tokens > 1 && tokens <= OSCAR_MATVEC_BATCH_MAX && var == 3;
            if ((f16 && !ovk_op_mul_mat_vec_f16_supported(&ops, type)) || (q8 && !ovk_op_mul_mat_vec_q8_supported(&ops, type)) ||
                (coopmat && !coopmat_runs) || (lanes && ovk_op_type_block(type) == 8) || (var == 3 && !lanes) ||
                (var == 4 && !q8))
                continue;
            double ns = 0;
            st = ovk_cmd_begin(ctx, &cmd);
            if ((f16 || q8) && st == OSCAR_OK) {
                ovk_binding bx = { &x, 0, 0 }, bq = { &xq, 0, 0 };
                st = q8 ? ovk_op_x_q8(&ops, &cmd, bx, bq, tokens * cols) : ovk_op_x_f16_blocks(&ops, &cmd, bx, bq, cols, 1);
                ovk_cmd_barrier(ctx, &cmd);
            }
            int t0 = st == OSCAR_OK ? ovk_cmd_timestamp(ctx, &cmd) : -1;
            for (uint32_t it = 0; it < iters && st == OSCAR_OK; it++) {
                ovk_binding bw_ = { &w, (it % copies) * mat, row_bytes * rows }, bx = { &x, 0, 0 }, by = { &y, 0, 0 };
                ovk_binding bq = { &xq, 0, 0 };
                st = q8      ? ovk_op_mul_mat_q8(&ops, &cmd, NULL, type, bw_, bq, by, rows, rows, cols, tokens)
                     : f16   ? ovk_op_mul_mat_vec_f16(&ops, &cmd, type, bw_, bq, by, rows, cols, 1)
                     : tiled ? ovk_op_mul_mat_tiled(&ops, &cmd, type, bw_, bx, by, rows, cols, tokens)
                     : coopmat ? ovk_op_mul_mat_coopmat(&ops, &cmd, type, bw_, bx, by, rows, cols, tokens)
                     : lanes   ? ovk_op_mul_mat_batch(&ops, &cmd, type, bw_, bx, by, rows, cols, tokens)
                             : ovk_op_mul_mat(&ops, &cmd, type, bw_, bx, by, rows, cols, tokens);
                if (barriers) ovk_cmd_barrier(ctx, &cmd);
            }
            st = end_timed(ctx, &cmd, t0, st, &ns);
            if (st != OSCAR_OK) break;
            double us = ns * 1e-3 / iters, gbps = (double)row_bytes * rows / (us * 1e3);
            printf("%-5s%-6s  %8.2f MB  %8.1f us  %7.1f GB/s  %5.1f%% of read bw", ovk_ggml_type_name(type),
                   q8 ? " q8" : f16 ? " f16" : tiled ? " tiled" : coopmat ? " cm" : lanes ? " lanes" : "", row_bytes * rows / 1e6, us, gbps, 100.0 * gbps / bw);
            if (tokens > 1) printf("  %7.2f TFLOPS", 2.0 * rows * cols * tokens / (us * 1e6));
            printf("\n");
        }
        if (st == OSCAR_OK && ovk_op_mul_mat_vec_planes_supported(&ops, type)) /* the texel-fetch product over planes */
            st = bench_planes(ctx, &ops, planes_tile, &cmd, type, rows, cols, tokens, iters, barriers, &x, &y, bw);
        if (st == OSCAR_OK && !planes_only) { /* the bound at this size: the bandwidth probe over the same bytes, chained alike */
            uint64_t bytes = (row_bytes * rows + 15) & ~15ull; /* inside the 256-byte-aligned copy */
            double ns = 0;
            st = ovk_cmd_begin(ctx, &cmd);
            int t0 = st == OSCAR_OK ? ovk_cmd_timestamp(ctx, &cmd) : -1;
            for (uint32_t it = 0; it < iters && st == OSCAR_OK; it++) {
                st = ovk_op_read_stream(&ops, &cmd, (ovk_binding){ &w, (it % copies) * mat, bytes }, bytes, 0,
                                          (ovk_binding){ &y, 0, 0 });
                if (barriers) ovk_cmd_barrier(ctx, &cmd);
            }
            st = end_timed(ctx, &cmd, t0, st, &ns);
            if (st == OSCAR_OK) {
                double us = ns * 1e-3 / iters, gbps = (double)bytes / (us * 1e3);
                printf("%-5s%-6s  %8.2f MB  %8.1f us  %7.1f GB/s  %5.1f%% of read bw  (the bandwidth probe over the "
                       "same bytes)\n", ovk_ggml_type_name(type), " read", bytes / 1e6, us, gbps, 100.0 * gbps / bw);
            }
        }
        ovk_buffer_destroy(ctx, &w);
        if (st != OSCAR_OK) {
            fprintf(stderr, "%s: %s: %s\n", prog, ovk_ggml_type_name(type), oscar_last_error());
            rc = 1;
        }
    }
    if (!planes_only) { /* the floor of a chained dispatch: a one-workgroup rms_norm of x in place (a step's
       * smallest kernels; x is all 1.0, its own weight, so it stays near 1), with and without
       * barriers between them */
        for (int with_barrier = 1; with_barrier >= 0; with_barrier--) {
            double ns = 0;
            ovk_binding v = { &x, 0, (uint64_t)cols * 4 };
            oscar_status st = ovk_cmd_begin(ctx, &cmd);
            int t0 = st == OSCAR_OK ? ovk_cmd_timestamp(ctx, &cmd) : -1;
            for (uint32_t it = 0; it < iters && st == OSCAR_OK; it++) {
                st = ovk_op_rms_norm(&ops, &cmd, v, v, v, cols, 1, 1e-5f);
                if (with_barrier) ovk_cmd_barrier(ctx, &cmd);
            }
            st = end_timed(ctx, &cmd, t0, st, &ns);
            if (st == OSCAR_OK) {
                printf("rms_norm of %u, %s barriers: %.2f us per dispatch\n", cols, with_barrier ? "with" : "without",
                       ns * 1e-3 / iters);
            } else {
                fprintf(stderr, "%s: rms_norm: %s\n", prog, oscar_last_error());
                rc = 1;
            }
        }
    }
    for (int q8 = 0; q8 < 2 && !planes_only; q8++) { /* the preparation of x for the packed-fp16 and the int8 kernels */
        if (q8 ? !info.subgroup_arithmetic : !info.float16_arithmetic) continue;
        double ns = 0;
        oscar_status st = ovk_cmd_begin(ctx, &cmd);
        int t0 = st == OSCAR_OK ? ovk_cmd_timestamp(ctx, &cmd) : -1;
        for (uint32_t it = 0; it < iters && st == OSCAR_OK; it++) {
            ovk_binding bx = { &x, 0, 0 }, bq = { &xq, 0, 0 };
            st = q8 ? ovk_op_x_q8(&ops, &cmd, bx, bq, cols) : ovk_op_x_f16_blocks(&ops, &cmd, bx, bq, cols, 1);
            ovk_cmd_barrier(ctx, &cmd);
        }
        st = end_timed(ctx, &cmd, t0, st, &ns);
        if (st == OSCAR_OK) printf("%s of %u columns: %.1f us\n", q8 ? "x_q8" : "x_f16_blocks", cols, ns * 1e-3 / iters);
        else rc = 1;
    }
    ovk_buffer_destroy(ctx, &x);
    ovk_buffer_destroy(ctx, &y);
    ovk_buffer_destroy(ctx, &xq);
    ovk_buffer_destroy(ctx, &scratch);
    ovk_cmd_release(ctx, &cmd);
    oscar_context_destroy(ctx);
    return rc;
}

/* ==== floor: a decode step's bytes read in its fewest dependent phases =========================== */

/* The phases of a batch-1 decode step that depend on each other, with every fusion that needs
 * no synchronisation between the workgroups of one dispatch done (Vulkan promises no forward
 * progress to a workgroup that waits on another, so a dispatch boundary and a barrier are the
 * only portable way to wait for a whole result): per layer, the norm inside the q, k, v
 * products; attention with the append; the output product with its residual; the norm inside
 * gate and up; SwiGLU inside the down product (each needs every element of the phase before);
 * per step, the final norm inside the LM head. The embedding lookup and the argmax are left
 * out (either could ride along with a neighbour), so this is a lower bound for that structure;
 * fewer phases need a product's partial sums combined across workgroups inside one dispatch
 * (split-K through atomics, or the last workgroup to finish reducing), which nothing here does
 * (docs/performance.md). */
enum { PH_QKV, PH_ATTN, PH_O, PH_GATE_UP, PH_DOWN, PH_HEAD, N_PHASES };
static const char *const phase_names[N_PHASES] = {
    "norm + q, k, v products", "attention (the cache's bytes)", "o product + residual", "norm + gate, up products",
    "SwiGLU + down product + residual", "final norm + LM head",
};
#define FLOOR_SPREADS 6
static const uint32_t floor_spreads[FLOOR_SPREADS] = { 1, 2, 4, 8, 16, 32 }; /* 16-byte loads a thread */

typedef struct floor_step {
    uint32_t n_layer;
    ovk_buffer *layer;        /* [n_layer]: the layer's weights (phases 256-byte aligned), then its cache */
    ovk_buffer head;          /* the LM head's weights */
    uint64_t bytes[N_PHASES];   /* bytes a phase reads (PH_ATTN: set per mode and context) */
    uint64_t offset[N_PHASES];  /* where a phase's bytes start in a layer's buffer */
    uint32_t spread[N_PHASES];  /* loads a thread of the fastest probe for the phase */
    ovk_buffer sink;
} floor_step;

/* Records phase p of layer l (p < PH_HEAD; l ignored for the head) and a barrier when asked. */
static oscar_status floor_phase(oscar_context *ctx, const ovk_ops *ops, ovk_cmd *cmd, const floor_step *f, int p,
                                uint32_t l, uint32_t spread, int barrier)
{
    const ovk_buffer *b = p == PH_HEAD ? &f->head : &f->layer[l];
    uint64_t off = p == PH_HEAD ? 0 : f->offset[p];
    oscar_status st = ovk_op_read_stream(ops, cmd, (ovk_binding){ b, off, f->bytes[p] }, f->bytes[p], spread,
                                           (ovk_binding){ &f->sink, 0, 0 });
    if (barrier) ovk_cmd_barrier(ctx, cmd);
    return st;
}

/* GPU time of one phase, `iters` times over successive layers with a barrier after each, at
 * each spread of the probe: sets f->spread[p] to the fastest and *us to its time. */
static oscar_status floor_time_phase(oscar_context *ctx, const ovk_ops *ops, ovk_cmd *cmd, floor_step *f, int p,
                                     uint32_t iters, double *us)
{
    oscar_status st = OSCAR_OK;
    *us = 0;
    for (int i = 0; i < FLOOR_SPREADS && st == OSCAR_OK; i++) {
        double ns = 0;
        st = ovk_cmd_begin(ctx, cmd);
        int t0 = st == OSCAR_OK ? ovk_cmd_timestamp(ctx, cmd) : -1;
        for (uint32_t it = 0; it < iters && st == OSCAR_OK; it++)
            st = floor_phase(ctx, ops, cmd, f, p, it % f->n_layer, floor_spreads[i], 1);
        st = end_timed(ctx, cmd, t0, st, &ns);
        if (st == OSCAR_OK && (i == 0 || ns * 1e-3 / iters < *us)) {
            *us = ns * 1e-3 / iters;
            f->spread[p] = floor_spreads[i];
        }
    }
    return st;
}

/* GPU time of `iters` whole steps (every layer's phases, then the head), with or without a
 * barrier after each phase, each phase at its fastest spread. */
static oscar_status floor_time_step(oscar_context *ctx, const ovk_ops *ops, ovk_cmd *cmd, const floor_step *f,
                                    uint32_t iters, int barriers, double *ms)
{
    double ns = 0;
    oscar_status st = ovk_cmd_begin(ctx, cmd);
    int t0 = st == OSCAR_OK ? ovk_cmd_timestamp(ctx, cmd) : -1;
    for (uint32_t it = 0; it < iters && st == OSCAR_OK; it++) {
        for (uint32_t l = 0; l < f->n_layer && st == OSCAR_OK; l++)
            for (int p = 0; p < PH_HEAD && st == OSCAR_OK; p++) st = floor_phase(ctx, ops, cmd, f, p, l, f->spread[p], barriers);
        if (st == OSCAR_OK) st = floor_phase(ctx, ops, cmd, f, PH_HEAD, 0, f->spread[PH_HEAD], barriers);
    }
    st = end_timed(ctx, cmd, t0, st, &ns);
    *ms = ns * 1e-6 / iters;
    return st;
}

/* Bytes one layer's attention reads at batch 1 and this context: every cached K and V, fp16
 * in the sink and recent windows, INT2 codes + fp16 scale and min per group past them (the
 * library's default windows and group; the rotations' matrices left out). */
static uint64_t floor_cache_bytes(const ovk_model_gen_params *p, oscar_kv_mode mode, uint32_t context)
{
    oscar_kv_params kp = oscar_kv_params_default();
    uint64_t row = (uint64_t)p->n_head_kv * p->head_dim, f16 = context;
    if (mode != OSCAR_KV_FP16 && f16 > kp.sink_tokens + kp.recent_tokens) f16 = kp.sink_tokens + kp.recent_tokens;
    uint32_t g = kp.group_size ? kp.group_size : ovk_int2_default_group(p->head_dim);
    uint64_t int2_row = (row / g) * (g / 4 + 4); /* codes, scale, min per group */
    return 2 * (f16 * row * 2 + (context - f16) * int2_row);
}

/* Times what a batch-1 decode step of a generated model's shapes costs at the read bandwidth
 * alone: each phase above reads its bytes with the bandwidth probe (at the probe's best
 * spread for that size), a barrier between phases, as a forward pass with every such fusion
 * would at best. Nothing is computed, so no kernel doing the step's work can be faster than
 * this chain; the weight-bandwidth limit (weight bytes / bandwidth) ignores the phases. */
static int bench_floor(int argc, char **argv)
{
    const char *prog = "oscar-bench floor", *gen = "llama3-8b-q4_0", *device = NULL;
    uint32_t contexts[APP_MAX_LIST], n_contexts = 0, n_modes = 0, iters = 20;
    oscar_kv_mode modes[4];
    app_parse_u32_list(prog, "", "4096,131072", 1u << 24, contexts, &n_contexts);
    app_parse_kv_modes(prog, "", "int2,fp16", modes, &n_modes);
    for (int i = 0; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            print_usage(stdout, "floor");
            return 0;
        }
        static const char *const known[] = { "--gen", "--contexts", "--kv", "--iters", "--device", NULL };
        if (!app_flag_with_value(prog, "oscar-bench", f, v, known)) return 2;
        int ok = 1;
        if (!strcmp(f, "--gen")) gen = v;
        else if (!strcmp(f, "--contexts")) ok = app_parse_u32_list(prog, f, v, 1u << 24, contexts, &n_contexts);
        else if (!strcmp(f, "--kv")) ok = app_parse_kv_modes(prog, f, v, modes, &n_modes);
        else if (!strcmp(f, "--iters")) ok = app_parse_u32(prog, f, v, 1000, &iters);
        else if (!strcmp(f, "--device")) device = v;
        if (!ok) return 2;
        i++;
    }
    ovk_model_gen_params gp;
    if (!gen_preset(gen, &gp)) {
        fprintf(stderr, "%s: unknown --gen '%s' (tiny, llama3-8b-q4_0, qwen3-4b-q4_0)\n", prog, gen);
        return 2;
    }
    uint32_t D = gp.n_embd, qd = gp.n_head * gp.head_dim, kvd = gp.n_head_kv * gp.head_dim, F = gp.n_ff;
    uint64_t row_d = 0, row_q = 0, row_f = 0, row_e = 0;
    ovk_ggml_row_size(gp.weight_type, D, &row_d);
    ovk_ggml_row_size(gp.weight_type, qd, &row_q);
    ovk_ggml_row_size(gp.weight_type, F, &row_f);
    ovk_ggml_row_size(gp.embd_type, D, &row_e);
    floor_step f = { .n_layer = gp.n_layer };
    f.bytes[PH_QKV] = row_d * (qd + 2ull * kvd);
    f.bytes[PH_O] = row_q * D;
    f.bytes[PH_GATE_UP] = row_d * 2ull * F;
    f.bytes[PH_DOWN] = row_f * D;
    f.bytes[PH_HEAD] = row_e * gp.n_vocab;
    uint64_t cache_max = 16, layer_bytes = 0;
    for (uint32_t m = 0; m < n_modes; m++)
        for (uint32_t c = 0; c < n_contexts; c++) {
            uint64_t b = (floor_cache_bytes(&gp, modes[m], contexts[c]) + 15) & ~15ull;
            cache_max = b > cache_max ? b : cache_max;
        }
    for (int p = 0; p < PH_HEAD; p++) {
        f.bytes[p] = (f.bytes[p] + 15) & ~15ull; /* the probe reads 16-byte vectors */
        f.offset[p] = layer_bytes;
        layer_bytes += ((p == PH_ATTN ? cache_max : f.bytes[p]) + 255) & ~255ull;
    }
    f.bytes[PH_HEAD] = (f.bytes[PH_HEAD] + 15) & ~15ull;
    uint64_t step_weights = (f.bytes[PH_QKV] + f.bytes[PH_O] + f.bytes[PH_GATE_UP] + f.bytes[PH_DOWN]) * gp.n_layer +
                            f.bytes[PH_HEAD];

    oscar_context *ctx;
    oscar_device_info info;
    if (!open_device(prog, device, &ctx, &info)) return 1;
    int rc = 1;
    ovk_ops ops;
    ovk_ops_init(&ops, ctx);
    ovk_cmd cmd;
    oscar_status st = ovk_cmd_init(ctx, &cmd);
    f.layer = calloc(gp.n_layer, sizeof *f.layer);
    if (!f.layer) st = OSCAR_ERROR_OUT_OF_HOST_MEMORY;
    uint64_t bw_bytes = info.max_storage_buffer_range < (2ull << 30) ? info.max_storage_buffer_range / 2 : (2ull << 30);
    double bw = 0;
    if (st == OSCAR_OK) st = oscar_measure_read_bandwidth(ctx, bw_bytes, 20, &bw);
    if (st == OSCAR_OK && (cache_max > info.max_storage_buffer_range || f.bytes[PH_HEAD] > info.max_storage_buffer_range)) {
        fprintf(stderr, "%s: a phase reads more than one binding may cover (%llu bytes)\n", prog,
                (unsigned long long)info.max_storage_buffer_range);
        goto done;
    }
    /* distinct memory for every layer, so that no phase finds its bytes in the last-level cache */
    for (uint32_t l = 0; l < gp.n_layer && st == OSCAR_OK; l++) {
        st = ovk_buffer_create(ctx, layer_bytes, OSCAR_BUFFER_DEVICE, &f.layer[l]);
        if (st == OSCAR_OK) st = ovk_buffer_fill(ctx, &f.layer[l], 0, layer_bytes, 0x3C003C00u);
    }
    if (st == OSCAR_OK) st = ovk_buffer_create(ctx, f.bytes[PH_HEAD], OSCAR_BUFFER_DEVICE, &f.head);
    if (st == OSCAR_OK) st = ovk_buffer_fill(ctx, &f.head, 0, f.bytes[PH_HEAD], 0x3C003C00u);
    if (st == OSCAR_OK) st = ovk_buffer_create(ctx, 16, OSCAR_BUFFER_DEVICE, &f.sink);
    if (st != OSCAR_OK) {
        fprintf(stderr, "%s: %s\n", prog, oscar_last_error());
        goto done;
    }
    double limit_ms = step_weights / (bw * 1e6);
    printf("device: %s\nread bandwidth: %.1f GB/s (measured now, %llu MiB)\n", info.name, bw,
           (unsigned long long)(bw_bytes >> 20));
    printf("model shapes: %s, %u layers; weights read per step %.3f MB: the weight-bandwidth limit %.3f ms a step "
           "(%.1f tok/s), 1.5x of it %.3f ms\n", gen, gp.n_layer, step_weights / 1e6, limit_ms, 1e3 / limit_ms, 1.5 * limit_ms);
    printf("%u dependent phases a layer and 1 a step (%u in all), each read by the bandwidth probe at its best spread "
           "(1 to 32 16-byte loads a thread), a barrier after each; %u chained reads a phase, %u steps a chain\n",
           PH_HEAD, PH_HEAD * gp.n_layer + 1, iters, iters);
    for (uint32_t m = 0; m < n_modes && st == OSCAR_OK; m++)
        for (uint32_t c = 0; c < n_contexts && st == OSCAR_OK; c++) {
            double ms_b = 0, ms_nb = 0;
            f.bytes[PH_ATTN] = (floor_cache_bytes(&gp, modes[m], contexts[c]) + 15) & ~15ull;
            printf("%s, context %u:\n", oscar_kv_mode_name(modes[m]), contexts[c]);
            for (int p = 0; p < N_PHASES && st == OSCAR_OK; p++) {
                if (p != PH_ATTN && (m > 0 || c > 0)) continue; /* the weights' phases are timed once */
                double us = 0;
                st = floor_time_phase(ctx, &ops, &cmd, &f, p, iters, &us);
                if (st == OSCAR_OK)
                    printf("  %-34s %10.3f MB  %8.2f us  %7.1f GB/s  (%u 16-byte loads a thread)\n", phase_names[p], f.bytes[p] / 1e6,
                           us, f.bytes[p] / (us * 1e3), f.spread[p]);
            }
            if (st == OSCAR_OK) st = floor_time_step(ctx, &ops, &cmd, &f, iters, 1, &ms_b);
            if (st == OSCAR_OK) st = floor_time_step(ctx, &ops, &cmd, &f, iters, 0, &ms_nb);
            if (st != OSCAR_OK) break;
            printf("  step floor: %.3f ms with barriers (%.1f tok/s), %.3f ms without; %.2fx the weight-bandwidth limit\n",
                   ms_b, 1e3 / ms_b, ms_nb, ms_b / limit_ms);
        }
    if (st != OSCAR_OK) fprintf(stderr, "%s: %s\n", prog, oscar_last_error());
    else rc = 0;
done:
    for (uint32_t l = 0; f.layer && l < gp.n_layer; l++) ovk_buffer_destroy(ctx, &f.layer[l]);
    free(f.layer);
    ovk_buffer_destroy(ctx, &f.head);
    ovk_buffer_destroy(ctx, &f.sink);
    ovk_cmd_release(ctx, &cmd);
    oscar_context_destroy(ctx);
    return rc;
}

/* The command lines of every mode (mode NULL: all of them), for --help. */
static void print_usage(FILE *out, const char *mode)
{
    static const struct { const char *mode, *text; } modes[] = {
        { "attention", "oscar-bench attention [--heads N] [--kv-heads N] [--head-dim N] [--group N] [--contexts A,B,..]\n"
                       "                      [--batch A,B,..] [--modes fp16,int2,int2-hadamard,oscar] [--variants auto,fp32,f16,idot]\n"
                       "                      [--kernels auto,chunked,stream,rows,coopmat] [--iters N] [--layers N] [--phase] [--hold-mib N] [--trace] [--json FILE] [--device NAME|INDEX] [--verbose]\n" },
        { "decode", "oscar-bench decode    -m model.gguf | --gen tiny|llama3-8b-q4_0|qwen3-4b-q4_0 [--tmp DIR] [--keep]\n"
                    "                      [--contexts A,B,..] [--batch A,B,..] [--kv fp16,int2,int2-hadamard,oscar]\n"
                    "                      [--rot FILE|synthetic] [--prompt N] [--steps N] [--ubatch N] [--bw-mib N]\n"
                    "                      [--json FILE] [--fill prefill|synthetic] [--layers N] [--device NAME|INDEX]\n"
                    "                      [--verbose]\n"
                    "                      (default contexts and batches larger than the device's storage binding holds\n"
                    "                      are cut, with a note)\n" },
        { "ops", "oscar-bench ops       [--rows N] [--cols N] [--iters N] [--rows-per-group N (0: per type)]\n"
                 "                      [--mv-shader auto|units|run8|lanes] [--mv-workgroup N] [--mv-unroll N] [--mv-split N]\n"
                 "                      [--no-barriers]\n"
                 "                      [--tokens N] [--mv-tokens N] [--mm-tile WMxWNxCMxCN] [--planes-tile THREADSxROWS[xTOKENS]]\n"
                 "                      [--planes-only] [--hot]\n"
                 "                      [--types F16,Q4_0,...] [--device NAME|INDEX]\n" },
        { "floor", "oscar-bench floor     [--gen tiny|llama3-8b-q4_0|qwen3-4b-q4_0] [--contexts A,B,..] [--kv int2,fp16]\n"
                   "                      [--iters N] [--device NAME|INDEX]\n" },
    };
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (!mode || !strcmp(mode, modes[i].mode)) fputs(modes[i].text, out);
    if (!mode) fputs("JSON files are written through a temporary file beside them, renamed at the end.\n", out);
}

int main(int argc, char **argv)
{
    app_log_init();
    if (argc < 2) {
        fprintf(stderr, "usage: oscar-bench attention|decode|ops|floor [options]   (oscar-bench --help for the options)\n");
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        print_usage(stdout, NULL);
        return 0;
    }
    if (!strcmp(argv[1], "attention")) return bench_attention(argc - 2, argv + 2);
    if (!strcmp(argv[1], "decode")) return bench_decode(argc - 2, argv + 2);
    if (!strcmp(argv[1], "ops")) return bench_ops(argc - 2, argv + 2);
    if (!strcmp(argv[1], "floor")) return bench_floor(argc - 2, argv + 2);
    fprintf(stderr, "oscar-bench: unknown mode '%s' (attention, decode, ops, floor)\n", argv[1]);
    return 2;
}
