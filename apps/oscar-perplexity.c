/* oscar-perplexity: perplexity of a model on a text file, with the KV cache in any mode.
 *
 *   oscar-perplexity -m model.gguf -f text.txt [--ctx 512] [--kv MODE [--rot FILE]]
 *                    [--chunks N] [--parallel P] [--sink N --recent N] [--device NAME|INDEX]
 *
 * The rule (llama.cpp's): the text is tokenized once (no BOS) and cut into non-overlapping
 * chunks of ctx tokens; a trailing partial chunk is dropped. When the model asks for a BOS
 * token (its tokenizer adds one), the first token of every chunk is replaced by BOS. Each
 * chunk starts from an empty KV cache; with first = ctx/2, the tokens at positions
 * first+1 .. ctx-1 are scored (ctx-1-first per chunk), each from the logits of the token
 * before it, so every scored token sees at least first+1 tokens of context.
 * ppl = exp(mean negative log-likelihood over every scored token of every chunk).
 *
 * How: the session API returns the logits of the last token of a prefill only, so each chunk
 * prefills positions 0..first (one logits row) and then decodes the rest one token at a
 * time. To keep the device busy, P chunks (--parallel, default 4) run as P sequences of one
 * session and decode together, one token each per step (apps/common/app_ppl.c, shared with
 * oscar-quality).
 *
 * Output (stdout): one line per chunk with its perplexity and the running value, then a
 * final machine-readable line:
 *   ppl=6.123456 ppl_err=0.1234 nll=1.812 tokens=510 chunks=2 ctx=512 kv=fp16 seconds=12.3
 * (ppl_err: standard error of the mean NLL carried through exp, as llama.cpp's "+/-").
 *
 * Progress: while stderr is a terminal, one line there is redrawn with the tokens scored, the
 * time spent and an estimate of the time left (a group of --parallel chunks can take many
 * minutes on a CPU device before its lines appear). When stderr is a file or a pipe nothing
 * is drawn there: the per-chunk lines on stdout are the log.
 *
 * Errors print one line on stderr and exit with 1 (2 for usage errors): a missing model or
 * text, a text that is not a regular file (a pipe or a device such as /dev/zero) or is larger
 * than 512 MiB, --rot with a mode other than oscar, and logits that are NaN or infinite (a
 * corrupt model: a perplexity from them would mean nothing). --ctx past the model's trained
 * context is a one-line warning, as in llama.cpp. Flags as llama-perplexity spells them are
 * accepted (-c/--ctx-size, -f/--file); -ngl, -t, -fa and -s get a one-line note.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/app_common.h"
#include "common/app_io.h"
#include "common/app_ppl.h"
#include "oscar/oscar.h"

#define PROG "oscar-perplexity"

typedef struct ppl_args {
    const char *model, *file, *rot, *device;
    oscar_kv_mode kv;
    int kv_set;
    uint32_t ctx, chunks, parallel;
    uint64_t sink, recent;        /* fp16 windows of the INT2 modes (tokens) */
} ppl_args;

static void print_help(void)
{
    printf("usage: oscar-perplexity -m model.gguf -f text.txt [options]\n"
           "  -m, --model FILE    GGUF model\n"
           "  -f, --file FILE     UTF-8 text (a regular file of at most 512 MiB)\n"
           "  -c, --ctx N         tokens per chunk (default 512); tokens ctx/2+1 .. ctx-1 of each are scored\n"
           "                      (also --ctx-size; past the model's trained context: a warning)\n"
           "  --kv MODE           KV cache: fp16 (default), int2, int2-hadamard, oscar\n"
           "  --rot FILE          RotationZoo file for --kv oscar (--rot alone selects --kv oscar)\n"
           "  --chunks N          score at most N chunks (default: every whole chunk of the text)\n"
           "  --parallel P        chunks decoded together as P sequences (default 4)\n"
           "  --sink N --recent N INT2 modes: first and most recent tokens kept in fp16 (default 64, 256)\n"
           "  --device NAME|INDEX Vulkan device\n"
           "  --verbose           error lines with status names and source locations (also OSCAR_LOG=1)\n"
           "  -ngl N, -t N, -fa, -s N  accepted for llama.cpp habits and ignored\n"
           "progress: redrawn on stderr while it is a terminal (tokens scored, time, time left)\n"
           "last line: ppl=... ppl_err=... nll=... tokens=... chunks=... ctx=... kv=... seconds=...\n");
}

static int parse_args(int argc, char **argv, ppl_args *a, int *exit_code)
{
    memset(a, 0, sizeof *a);
    a->ctx = 512;
    a->parallel = 4;
    a->sink = 64, a->recent = 256;
    *exit_code = 2;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            print_help();
            *exit_code = 0;
            return 1;
        }
        if (!strcmp(f, "--verbose")) {
            app_set_verbose(1);
            continue;
        }
        if (app_skip_llama_flag(PROG, argc, argv, &i)) continue;
        if ((!strcmp(f, "-s") || !strcmp(f, "--seed")) && v) {
            fprintf(stderr, PROG ": note: %s %s ignored: perplexity draws nothing at random\n", f, v);
            i++;
            continue;
        }
        static const char *const known[] = { "-m", "--model", "-f", "--file", "--rot", "--device", "--kv", "--ctx", "-c",
                                             "--ctx-size", "--chunks", "--parallel", "--sink", "--recent", NULL };
        if (!app_flag_with_value(PROG, PROG, f, v, known)) return 1;
        int ok = 1;
        if (!strcmp(f, "-m") || !strcmp(f, "--model")) a->model = v;
        else if (!strcmp(f, "-f") || !strcmp(f, "--file")) a->file = v;
        else if (!strcmp(f, "--rot")) a->rot = v;
        else if (!strcmp(f, "--device")) a->device = v;
        else if (!strcmp(f, "--kv")) ok = app_parse_kv_mode(PROG, f, v, &a->kv), a->kv_set = 1;
        else if (!strcmp(f, "--ctx") || !strcmp(f, "-c") || !strcmp(f, "--ctx-size"))
            ok = app_parse_u32(PROG, f, v, 1u << 20, &a->ctx);
        else if (!strcmp(f, "--chunks")) ok = app_parse_u32(PROG, f, v, 1u << 24, &a->chunks);
        else if (!strcmp(f, "--parallel")) ok = app_parse_u32(PROG, f, v, 256, &a->parallel);
        else if (!strcmp(f, "--sink")) ok = app_parse_u64(PROG, f, v, &a->sink);
        else if (!strcmp(f, "--recent")) ok = app_parse_u64(PROG, f, v, &a->recent);
        if (!ok) return 1;
        i++;
    }
    if (!a->model || !a->file) {
        fprintf(stderr, PROG ": %s\n", !a->model ? "no model given (-m model.gguf)" : "no text given (-f text.txt)");
        return 1;
    }
    if (a->ctx < 8) {
        fprintf(stderr, PROG ": --ctx must be at least 8 tokens, got %u\n", a->ctx);
        return 1;
    }
    if (a->sink > (1u << 24) || a->recent > (1u << 24)) {
        fprintf(stderr, PROG ": --sink and --recent take at most %u tokens\n", 1u << 24);
        return 1;
    }
    if (!app_check_kv_rot(PROG, &a->kv, a->kv_set, a->rot)) return 1;
    return 0;
}

/* Progress of the evaluation: one stdout line per chunk with the running perplexity, and the
 * terminal line on stderr (see the top of the file). */
typedef struct ppl_progress {
    uint32_t n_chunks, n_scored;
    double sum, t_start;          /* NLL summed over the chunks reported so far */
    uint32_t done;
    int tty;                      /* stderr is a terminal */
    double t_drawn;               /* when the progress line was last drawn; 0: not shown */
} ppl_progress;

static void clear_progress(ppl_progress *pp)
{
    if (!pp->t_drawn) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    pp->t_drawn = 0;
}

static void print_chunk(void *user, uint32_t chunk, double nll_sum)
{
    ppl_progress *pp = user;
    clear_progress(pp);
    pp->sum += nll_sum;
    pp->done++;
    printf("chunk %u/%u  ppl %.4f  running ppl %.4f  (%.1f s)\n", chunk + 1, pp->n_chunks, exp(nll_sum / pp->n_scored),
           exp(pp->sum / ((double)pp->done * pp->n_scored)), app_now() - pp->t_start);
    fflush(stdout);
}

static void print_step(void *user, uint64_t scored, uint64_t total)
{
    ppl_progress *pp = user;
    double t = app_now();
    if (!pp->tty || (pp->t_drawn && t - pp->t_drawn < 0.25 && scored < total)) return;
    double spent = t - pp->t_start, left = scored ? spent * (double)(total - scored) / (double)scored : 0;
    fprintf(stderr, "\rperplexity: %llu/%llu tokens scored (%.0f%%), %.0f s, about %.0f s left \033[K",
            (unsigned long long)scored, (unsigned long long)total, 100.0 * scored / total, spent, left);
    fflush(stderr);
    pp->t_drawn = t;
}

int main(int argc, char **argv)
{
    ppl_args a;
    int rc;
    app_log_init();
    if (parse_args(argc, argv, &a, &rc)) return rc;

    rc = 1;
    app_model m;
    memset(&m, 0, sizeof m);
    oscar_rotation_set *rot = NULL;
    oscar_session *session = NULL;
    char *text = NULL;
    int32_t *tokens = NULL, *seqs = NULL;
    float *logits = NULL;
    double *chunk_nll = NULL;
    oscar_status st = OSCAR_OK;
    size_t text_len = 0, n_tokens = 0;
    int32_t bos = -1;

    if (!(text = app_read_text(PROG, a.file, "text file", APP_MAX_TEXT_BYTES, &text_len))) return 1;
    if (a.rot && !app_check_input(PROG, a.rot, "rotation file")) goto out;
    if (!app_model_open(PROG, a.model, a.device, a.rot, 1, &m)) goto out;
    if (a.rot && !app_rotation_load(PROG, a.rot, m.model, &rot)) goto out;

    /* tokens of the whole text; BOS replaces each chunk's first token when the model wants one */
    st = app_tokenize_text(m.model, text, text_len, &tokens, &n_tokens, &bos);
    if (st != OSCAR_OK) goto api_fail;

    uint32_t n_chunks = (uint32_t)(n_tokens / a.ctx);
    if (a.chunks && a.chunks < n_chunks) n_chunks = a.chunks;
    if (n_chunks == 0) {
        fprintf(stderr, PROG ": %s is %zu tokens, less than one chunk of --ctx %u tokens\n", a.file, n_tokens, a.ctx);
        goto out;
    }
    uint32_t P = a.parallel < n_chunks ? a.parallel : n_chunks;
    const uint32_t V = m.info.n_vocab, first = a.ctx / 2, n_scored = a.ctx - 1 - first;

    oscar_session_params sp = oscar_session_params_default();
    sp.kv_mode = a.kv;
    sp.n_ctx = a.ctx;
    sp.n_seq_max = P;
    sp.rotations = rot;
    sp.sink_tokens = (uint32_t)a.sink;
    sp.recent_tokens = (uint32_t)a.recent;
    st = oscar_session_create(m.model, &sp, &session);
    if (st != OSCAR_OK) goto api_fail;
    app_warn_context(PROG, a.ctx, &m.info); /* once the context fits: a failure is its own one line */
    seqs = malloc(P * sizeof *seqs);
    logits = malloc((size_t)P * V * sizeof *logits); /* [P][n_vocab] */
    chunk_nll = calloc(n_chunks, sizeof *chunk_nll);  /* [n_chunks] sum of NLL over the chunk */
    if (!seqs || !logits || !chunk_nll) goto oom;
    for (uint32_t p = 0; p < P; p++) {
        st = oscar_session_seq_add(session, &seqs[p]);
        if (st != OSCAR_OK) goto api_fail;
    }
    printf("%s: %zu tokens, %u chunks of %u, scoring %u tokens per chunk, kv %s, %u in parallel%s\n", a.file, n_tokens,
           n_chunks, a.ctx, n_scored, oscar_kv_mode_name(a.kv), P, bos >= 0 ? ", BOS first" : "");
    fflush(stdout);

    ppl_progress pp = { n_chunks, n_scored, 0, app_now(), 0, isatty(STDERR_FILENO), 0 };
    app_ppl_hooks hooks = { print_chunk, print_step, &pp };
    st = app_ppl_eval(session, seqs, P, tokens, a.ctx, n_chunks, bos, V, logits, chunk_nll, &hooks);
    clear_progress(&pp);
    if (st == APP_PPL_NOT_FINITE) {
        fprintf(stderr, PROG ": the model computed NaN or infinite logits: its weights are corrupt or overflow\n");
        goto out;
    }
    if (st != OSCAR_OK) goto api_fail;
    double nll = 0, err = 0;
    double ppl = app_ppl_summary(chunk_nll, n_chunks, n_scored, &err, &nll);
    printf("ppl=%.6f ppl_err=%.4f nll=%.6f tokens=%llu chunks=%u ctx=%u kv=%s seconds=%.1f\n", ppl, err, nll,
           (unsigned long long)n_chunks * n_scored, n_chunks, a.ctx, oscar_kv_mode_name(a.kv), app_now() - pp.t_start);
    rc = 0;
    goto out;

oom:
    fprintf(stderr, PROG ": out of host memory\n");
    goto out;
api_fail:
    app_fail(PROG, NULL, st);
out:
    free(text), free(tokens), free(seqs), free(logits), free(chunk_nll);
    oscar_rotation_set_destroy(rot);
    oscar_session_destroy(session);
    if (m.ctx || m.model) app_model_close(&m);
    return rc;
}
