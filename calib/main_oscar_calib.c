/* oscar-calib: calibrates OSCAR rotations for a GGUF model on plain text and writes a
 * RotationZoo GGUF file (docs/rotationzoo.md). See --help and docs/calibration.md. */
#include <cblas.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "calib_run.h"
#include "common/app_io.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: oscar-calib -m MODEL.gguf --text FILE -o OUT.rot.gguf [options]\n"
        "\n"
        "Runs the model over FILE, accumulates post-RoPE Q/K/V statistics in float64 and writes\n"
        "OSCAR rotations (R = U*H*P per layer or per KV head) and clip ratios as a RotationZoo GGUF.\n"
        "\n"
        "required:\n"
        "  -m, --model FILE        GGUF model (llama, qwen2, qwen3)\n"
        "      --text FILE         plain UTF-8 calibration text\n"
        "  -o, --output FILE       RotationZoo GGUF to write (through a temporary file beside it, renamed at\n"
        "                          the end: nothing on failure; never the model or the text itself)\n"
        "options:\n"
        "      --tokens N          calibration tokens (default 20000; the text must have that many)\n"
        "      --seq-len N         tokens per calibration sequence, positions 0..N-1 (default 512)\n"
        "      --grouping G        layer (one R per layer, default) or head (one per layer and KV head)\n"
        "      --values V          value target: proxy (score-weighted covariance, default) or\n"
        "                          scores (covariance of attention outputs S*V)\n"
        "      --clip C            fitted (per-layer ratios fitted on the data, default) or\n"
        "                          fixed (the reference's 0.96 keys / 0.92 values)\n"
        "      --clip-v-fit F      what the fitted value clip minimises: output (the attention\n"
        "                          outputs' error over the first 4 sequences, default) or rows\n"
        "                          (each sampled value row's own error)\n"
        "      --center C          keys (default), no (the reference's method), values or yes\n"
        "                          (both): store those sides' means so the runtime subtracts them\n"
        "                          before quantizing\n"
        "      --key-block N       with centered keys: the runtime centers keys per block of N positions\n"
        "                          (>= 16, default 128; written as oscar.key_center_block), or\n"
        "                          'context': one center for the whole context\n"
        "      --key-clip-center C context (default): the key clip is fitted on keys centered as a whole\n"
        "                          context would center them; block: by their block's center (needs\n"
        "                          --key-block N; it fits lower ratios that measured worse on SmolLM2)\n"
        "      --key-rounding K    feedback (default): key codes chosen element by element, each\n"
        "                          rounding error moved to where the layer's queries look least\n"
        "                          (written as blk.N.attn_k_feedback; the key clip is fitted with it);\n"
        "                          nearest: the reference's rounding\n"
        "      --feedback-span N   positions the feedback's query covariance is spread over by RoPE\n"
        "                          (default: the model's context_length)\n"
        "      --key-spread yes|no yes (default): the key rotation fitted to that spread covariance too,\n"
        "                          i.e. to queries anywhere in the context, and centered keys clip-fitted\n"
        "                          with the mean a context that long subtracts; no: the calibration\n"
        "                          positions' queries and mean, as the reference\n"
        "      --group-size G      quantization group size: 32, 64 or 128 dividing head_dim, as the runtime\n"
        "                          reads (default min(head_dim, 128)); sessions in mode oscar use it\n"
        "      --refit N           each row's min and scale refitted by least squares N times (0..8), keys\n"
        "                          under the queries' metric (written as blk.N.attn_k_metric); 0: the\n"
        "                          reference's min-max grid (default; the refit measured worse on SmolLM2)\n"
        "      --rotation R        oscar (default), oscar-noperm, hadamard, identity\n"
        "      --sink N            fp16 sink tokens recorded in the file (default 64)\n"
        "      --recent N          fp16 recent tokens recorded in the file (default 256)\n"
        "      --text-source S     text provenance recorded in the file (default: the --text path)\n"
        "      --chunk N           prefill batch in tokens (default min(seq-len, 256))\n"
        "      --threads N         OpenBLAS threads (default: OpenBLAS's own choice)\n"
        "      --seed N            reservoir sampling seed (default 1)\n"
        "  -q, --quiet             no progress bar and no summary\n"
        "      --verbose           error lines with status names and source locations (also OSCAR_LOG=1)\n"
        "      --print-fingerprint print the model's fingerprint (16 hex digits) and exit\n"
        "                          (needs only -m; for scripts/rotationzoo_convert.py)\n"
        "  -h, --help              this text\n"
        "\n"
        "Exit status: 0 written, 1 calibration failed, 2 bad command line.\n");
}

/* ---- progress ------------------------------------------------------------------------------ */

typedef struct progress_state {
    int quiet;
    const char *stage;    /* stage of the bar being drawn, NULL when none */
    int mid_line;         /* 1: the bar's line is not ended yet */
    double t_start, t_last; /* seconds (monotonic) */
} progress_state;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Draws "capture [#####.....] 10240/20000 tokens 12.3 s" on stderr, at most 10 times a second,
 * always at the end of a stage (then with a newline). */
static void progress(void *user, const char *stage, uint64_t done, uint64_t total)
{
    progress_state *ps = user;
    if (ps->quiet) return;
    double t = now_s();
    if (!ps->stage || strcmp(ps->stage, stage) != 0) {
        ps->stage = stage;
        ps->t_start = t;
        ps->t_last = 0.0;
    }
    if (done < total && t - ps->t_last < 0.1) return;
    ps->t_last = t;
    enum { WIDTH = 30 };
    char bar[WIDTH + 1];
    uint64_t fill = total ? done * WIDTH / total : WIDTH;
    for (int i = 0; i < WIDTH; i++) bar[i] = (uint64_t)i < fill ? '#' : '.';
    bar[WIDTH] = '\0';
    const char *unit = strcmp(stage, "capture") == 0 ? "tokens" : "layers";
    fprintf(stderr, "\r%-8s [%s] %" PRIu64 "/%" PRIu64 " %s %.1f s", stage, bar, done, total, unit, t - ps->t_start);
    ps->mid_line = done < total;
    if (done >= total) fputc('\n', stderr);
    fflush(stderr);
}

/* ---- OpenBLAS kernel choice ------------------------------------------------------------- */

/* OpenBLAS 0.3.21 (Debian 12) does not recognise some newer Xeons (this project's VMs among
 * them) and falls back to its generic "Prescott" SSE3 kernels, 4-5x slower than the AVX-512
 * ones on the same CPU (measured: sgemm 25 vs 115 GFLOPS per core). The kernel set is chosen
 * when the library is loaded, before main, from OPENBLAS_CORETYPE; so when that variable is
 * unset, the detected core is Prescott and the CPU does have AVX-512 (or AVX2 + FMA), set it
 * and re-execute this program once. Returns only when no re-execution happened. */
static void choose_openblas_kernels(char **argv)
{
    if (getenv("OPENBLAS_CORETYPE")) return;
    const char *core = openblas_get_corename();
    if (!core || strcmp(core, "Prescott") != 0) return;
    const char *want = NULL;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        want = "SkylakeX";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        want = "Haswell";
    if (!want) return;
    setenv("OPENBLAS_CORETYPE", want, 1);
    execv("/proc/self/exe", argv); /* returns only on failure: go on with the slow kernels */
}

/* ---- arguments ----------------------------------------------------------------------------- */

/* Parses a whole decimal number in [lo, hi]; prints the problem and returns 0 when it is not. */
static int parse_u64(const char *flag, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *s == '-' || *end || errno) {
        fprintf(stderr, "oscar-calib: %s: '%s' is not a number\n", flag, s);
        return 0;
    }
    if (v < lo || v > hi) {
        fprintf(stderr, "oscar-calib: %s: %llu is out of range (%" PRIu64 "..%" PRIu64 ")\n", flag, v, lo, hi);
        return 0;
    }
    *out = v;
    return 1;
}

/* Index of s in the NULL-terminated list, or -1 after printing the problem. */
static int parse_choice(const char *flag, const char *s, const char *const *choices)
{
    for (int i = 0; choices[i]; i++)
        if (strcmp(s, choices[i]) == 0) return i;
    fprintf(stderr, "oscar-calib: %s: '%s' is not one of", flag, s);
    for (int i = 0; choices[i]; i++) fprintf(stderr, " %s", choices[i]);
    fputc('\n', stderr);
    return -1;
}

int main(int argc, char **argv)
{
    choose_openblas_kernels(argv);
    app_log_init();
    ovk_calib_run_params p = ovk_calib_run_params_default();
    progress_state ps = {0};
    uint64_t threads = 0, v = 0;
    int print_fp = 0;
    static const char *const groupings[] = {"layer", "head", NULL};
    static const char *const values[] = {"proxy", "scores", NULL};
    static const char *const clips[] = {"fixed", "fitted", NULL};
    static const char *const vfits[] = {"rows", "output", NULL};
    static const char *const yes_no[] = {"no", "yes", NULL};
    static const char *const centers[] = {"no", "keys", "values", "yes", NULL};
    static const char *const clip_centers[] = {"context", "block", NULL};
    static const char *const roundings[] = {"nearest", "feedback", NULL};
    static const char *const rotations[] = {"identity", "hadamard", "oscar", "oscar-noperm", NULL};

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            ps.quiet = 1;
            continue;
        }
        if (!strcmp(a, "--verbose")) {
            app_set_verbose(1);
            continue;
        }
        if (!strcmp(a, "--print-fingerprint")) {
            print_fp = 1;
            continue;
        }
        if (a[0] != '-') {
            fprintf(stderr, "oscar-calib: unexpected argument '%s' (see --help)\n", a);
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "oscar-calib: %s needs a value (see --help)\n", a);
            return 2;
        }
        const char *val = argv[++i];
        int c;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) p.model_path = val;
        else if (!strcmp(a, "--text")) p.text_path = val;
        else if (!strcmp(a, "-o") || !strcmp(a, "--output")) p.out_path = val;
        else if (!strcmp(a, "--text-source")) p.text_source = val;
        else if (!strcmp(a, "--tokens")) {
            if (!parse_u64(a, val, 1, 1ull << 32, &p.tokens)) return 2;
        } else if (!strcmp(a, "--seq-len")) {
            if (!parse_u64(a, val, 2, 65536, &v)) return 2;
            p.seq_len = (uint32_t)v;
        } else if (!strcmp(a, "--chunk")) {
            if (!parse_u64(a, val, 1, 8192, &v)) return 2;
            p.chunk = (uint32_t)v;
        } else if (!strcmp(a, "--group-size")) {
            if (!parse_u64(a, val, 32, 128, &v)) return 2;
            if (v != 32 && v != 64 && v != 128) {
                fprintf(stderr, "oscar-calib: --group-size %s: the runtime quantizes in groups of 32, 64 or 128\n", val);
                return 2;
            }
            p.group_size = (uint32_t)v;
        } else if (!strcmp(a, "--refit")) {
            if (!parse_u64(a, val, 0, OSCAR_CALIB_MAX_REFIT_ROUNDS, &v)) return 2;
            p.refit_rounds = (uint32_t)v;
        } else if (!strcmp(a, "--key-block")) {
            if (val && !strcmp(val, "context")) p.key_center_block = 0;
            else if (!parse_u64(a, val, 16, 1u << 24, &v)) return 2;
            else p.key_center_block = (uint32_t)v;
        } else if (!strcmp(a, "--key-clip-center")) {
            if ((c = parse_choice(a, val, clip_centers)) < 0) return 2;
            p.key_clip_blocks = c;
        } else if (!strcmp(a, "--feedback-span")) {
            if (!parse_u64(a, val, 1, 1u << 24, &v)) return 2;
            p.feedback_span = (uint32_t)v;
        } else if (!strcmp(a, "--sink")) {
            if (!parse_u64(a, val, 0, 1u << 20, &v)) return 2;
            p.sink_tokens = (uint32_t)v;
        } else if (!strcmp(a, "--recent")) {
            if (!parse_u64(a, val, 0, 1u << 20, &v)) return 2;
            p.recent_tokens = (uint32_t)v;
        } else if (!strcmp(a, "--threads")) {
            if (!parse_u64(a, val, 1, 1024, &threads)) return 2;
        } else if (!strcmp(a, "--seed")) {
            if (!parse_u64(a, val, 0, UINT64_MAX, &p.seed)) return 2;
        } else if (!strcmp(a, "--grouping")) {
            if ((c = parse_choice(a, val, groupings)) < 0) return 2;
            p.grouping = c ? OSCAR_CALIB_PER_HEAD : OSCAR_CALIB_PER_LAYER;
        } else if (!strcmp(a, "--values")) {
            if ((c = parse_choice(a, val, values)) < 0) return 2;
            p.values = c ? OSCAR_CALIB_VALUES_SCORES : OSCAR_CALIB_VALUES_PROXY;
        } else if (!strcmp(a, "--clip")) {
            if ((c = parse_choice(a, val, clips)) < 0) return 2;
            p.clip_fitted = c;
        } else if (!strcmp(a, "--clip-v-fit")) {
            if ((c = parse_choice(a, val, vfits)) < 0) return 2;
            p.clip_v_output = c;
        } else if (!strcmp(a, "--key-rounding")) {
            if ((c = parse_choice(a, val, roundings)) < 0) return 2;
            p.key_feedback = c;
        } else if (!strcmp(a, "--key-spread")) {
            if ((c = parse_choice(a, val, yes_no)) < 0) return 2;
            p.key_spread = c;
        } else if (!strcmp(a, "--center")) {
            if ((c = parse_choice(a, val, centers)) < 0) return 2;
            p.center = (unsigned)c; /* the index is the OSCAR_CALIB_CENTER_* bits */
        } else if (!strcmp(a, "--rotation")) {
            if ((c = parse_choice(a, val, rotations)) < 0) return 2;
            p.kind = (ovk_rotation_kind)c;
        } else {
            fprintf(stderr, "oscar-calib: unknown option '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (print_fp) {
        uint64_t fingerprint = 0;
        if (!p.model_path) {
            fprintf(stderr, "oscar-calib: --print-fingerprint needs -m MODEL\n");
            return 2;
        }
        oscar_status st = ovk_calib_model_shape(p.model_path, &fingerprint, NULL, NULL);
        if (st != OSCAR_OK) {
            app_fail("oscar-calib", p.model_path, st);
            return 1;
        }
        printf("%016" PRIx64 "\n", fingerprint);
        return 0;
    }
    if (!p.model_path || !p.text_path || !p.out_path) {
        fprintf(stderr, "oscar-calib: -m MODEL, --text FILE and -o OUTPUT are required (see --help)\n");
        return 2;
    }
    if (p.refit_rounds > 0) {
        /* the refit fits one group per row: a usage error, told before the run, when the group is
         * smaller than the model's head_dim (a model that does not load fails in the run) */
        uint32_t hd = 0, g = 0;
        if (ovk_calib_model_shape(p.model_path, NULL, &hd, &g) == OSCAR_OK) {
            if (p.group_size) g = p.group_size;
            if (g < hd) {
                fprintf(stderr, "oscar-calib: --refit %u: needs one group per row, but the group size %u is below "
                        "head_dim %u (use --refit 0)\n", p.refit_rounds, g, hd);
                return 2;
            }
        }
    }
    if (threads) openblas_set_num_threads((int)threads);
    p.progress = progress;
    p.progress_user = &ps;

    ovk_calib_run_report rep;
    oscar_status st = ovk_calib_run(&p, &rep);
    if (st != OSCAR_OK) {
        if (!ps.quiet && ps.stage && ps.mid_line) fputc('\n', stderr);
        app_fail("oscar-calib", NULL, st);
        ovk_calib_run_report_free(&rep);
        return 1;
    }
    if (!ps.quiet) {
        fprintf(stderr,
                "oscar-calib: %" PRIu64 " tokens in %u sequences of %u; load %.1f s, tokenize %.1f s, capture %.1f s "
                "(%.0f tok/s), solve %.1f s, write %.2f s\n",
                rep.tokens, rep.sequences, p.seq_len, rep.t_load, rep.t_tokenize, rep.t_capture,
                rep.t_capture > 0 ? (double)rep.tokens / rep.t_capture : 0.0, rep.t_solve, rep.t_write);
        printf("layer  clip_k  clip_v  fit_k  fit_v  err_k        err_v\n");
        for (uint32_t l = 0; l < rep.n_layer; l++)
            printf("%5u  %6.2f  %6.2f  %5.2f  %5.2f  %-11.4g  %-11.4g\n", l, (double)rep.clip_k[l],
                   (double)rep.clip_v[l], (double)rep.clip_k_fit[l], (double)rep.clip_v_fit[l], rep.err_k[l],
                   rep.err_v[l]);
        fprintf(stderr, "oscar-calib: wrote %s (model fingerprint %016" PRIx64 ")\n", p.out_path, rep.fingerprint);
    }
    ovk_calib_run_report_free(&rep);
    return 0;
}
