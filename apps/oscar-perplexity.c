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
 * session and decode together, one token each per step.
 *
 * Output (stdout): one line per chunk with its perplexity and the running value, then a
 * final machine-readable line:
 *   ppl=6.123456 ppl_err=0.1234 nll=1.812 tokens=510 chunks=2 ctx=512 kv=fp16 seconds=12.3
 * (ppl_err: standard error of the mean NLL carried through exp, as llama.cpp's "+/-").
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/app_common.h"
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
           "  --ctx N             tokens per chunk (default 512); tokens ctx/2+1 .. ctx-1 of each are scored\n"
           "  --kv MODE           KV cache: fp16 (default), int2, int2-hadamard, oscar\n"
           "  --rot FILE          RotationZoo file for --kv oscar\n"
           "  --chunks N          score at most N chunks (default: every whole chunk of the text)\n"
           "  --parallel P        chunks decoded together as P sequences (default 4)\n"
           "  --sink N --recent N INT2 modes: first and most recent tokens kept in fp16 (default 64, 256)\n"
           "  --device NAME|INDEX Vulkan device\n"
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
        int ok = 1;
        if (!strcmp(f, "-m") || !strcmp(f, "--model")) a->model = v;
        else if (!strcmp(f, "-f") || !strcmp(f, "--file")) a->file = v;
        else if (!strcmp(f, "--rot")) a->rot = v;
        else if (!strcmp(f, "--device")) a->device = v;
        else if (!strcmp(f, "--kv")) ok = v && app_parse_kv_mode(PROG, f, v, &a->kv), a->kv_set = 1;
        else if (!strcmp(f, "--ctx")) ok = v && app_parse_u32(PROG, f, v, 1u << 20, &a->ctx);
        else if (!strcmp(f, "--chunks")) ok = v && app_parse_u32(PROG, f, v, 1u << 24, &a->chunks);
        else if (!strcmp(f, "--parallel")) ok = v && app_parse_u32(PROG, f, v, 256, &a->parallel);
        else if (!strcmp(f, "--sink")) ok = v && app_parse_u64(PROG, f, v, &a->sink);
        else if (!strcmp(f, "--recent")) ok = v && app_parse_u64(PROG, f, v, &a->recent);
        else {
            fprintf(stderr, PROG ": unknown option '%s' (oscar-perplexity --help lists them)\n", f);
            return 1;
        }
        if (!v) {
            fprintf(stderr, PROG ": %s needs a value\n", f);
            return 1;
        }
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
    if (a->rot && !a->kv_set) a->kv = OSCAR_KV_INT2_ROTATED;
    if (a->kv == OSCAR_KV_INT2_ROTATED && !a->rot) {
        fprintf(stderr, PROG ": --kv oscar needs a rotation file (--rot FILE)\n");
        return 1;
    }
    if (a->rot && a->kv == OSCAR_KV_FP16) {
        fprintf(stderr, PROG ": --rot is for the INT2 modes, not --kv fp16\n");
        return 1;
    }
    return 0;
}

/* Reads a whole file into a malloc'ed NUL-terminated buffer; prints one line on failure. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, PROG ": cannot open %s\n", path);
        return NULL;
    }
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 65536 + 1 > cap) {
            cap = 2 * cap + 65536 + 1;
            char *b = realloc(buf, cap);
            if (!b) {
                fprintf(stderr, PROG ": %s: out of host memory\n", path);
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = b;
        }
        size_t r = fread(buf + n, 1, 65536, f);
        n += r;
        if (r < 65536) break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        fprintf(stderr, PROG ": cannot read %s\n", path);
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* -log softmax(logits)[target], in double over the whole vocabulary. */
static double token_nll(const float *logits, uint32_t n_vocab, int32_t target)
{
    double mx = logits[0];
    for (uint32_t i = 1; i < n_vocab; i++) mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0;
    for (uint32_t i = 0; i < n_vocab; i++) sum += exp((double)logits[i] - mx);
    return log(sum) + mx - (double)logits[target];
}

int main(int argc, char **argv)
{
    ppl_args a;
    int rc;
    if (parse_args(argc, argv, &a, &rc)) return rc;

    rc = 1;
    app_model m;
    oscar_rotation_set *rot = NULL;
    oscar_session *session = NULL;
    char *text = NULL;
    int32_t *tokens = NULL, *seqs = NULL, *step_tok = NULL;
    float *logits = NULL;
    double *chunk_nll = NULL;
    oscar_status st = OSCAR_OK;
    size_t text_len = 0, n_tokens = 0;

    if (!(text = read_file(a.file, &text_len))) return 1;
    if (!app_model_open(PROG, a.model, a.device, &m)) goto out;
    if (a.rot && !app_rotation_load(PROG, a.rot, m.model, &rot)) goto out;

    /* tokens of the whole text; BOS replaces each chunk's first token when the model wants one */
    st = oscar_model_tokenize(m.model, text, text_len, 0, 0, NULL, 0, &n_tokens);
    if (st != OSCAR_OK) goto api_fail;
    tokens = malloc((n_tokens ? n_tokens : 1) * sizeof *tokens);
    if (!tokens) goto oom;
    st = oscar_model_tokenize(m.model, text, text_len, 0, 0, tokens, n_tokens, &n_tokens);
    if (st != OSCAR_OK) goto api_fail;
    int32_t bos = -1;
    size_t n_bos = 0;
    if (oscar_model_tokenize(m.model, "", 0, 1, 0, &bos, 1, &n_bos) != OSCAR_OK || n_bos != 1) bos = -1;

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
    seqs = malloc(P * sizeof *seqs);
    step_tok = malloc(P * sizeof *step_tok);
    logits = malloc((size_t)P * V * sizeof *logits); /* [P][n_vocab] */
    chunk_nll = calloc(n_chunks, sizeof *chunk_nll);  /* [n_chunks] sum of NLL over the chunk */
    if (!seqs || !step_tok || !logits || !chunk_nll) goto oom;
    for (uint32_t p = 0; p < P; p++) {
        st = oscar_session_seq_add(session, &seqs[p]);
        if (st != OSCAR_OK) goto api_fail;
    }
    printf("%s: %zu tokens, %u chunks of %u, scoring %u tokens per chunk, kv %s, %u in parallel%s\n", a.file, n_tokens,
           n_chunks, a.ctx, n_scored, oscar_kv_mode_name(a.kv), P, bos >= 0 ? ", BOS first" : "");
    fflush(stdout);

    double t_start = app_now(), sum = 0, sum_sq = 0;
    uint64_t count = 0;
    for (uint32_t c0 = 0; c0 < n_chunks; c0 += P) {
        uint32_t np = n_chunks - c0 < P ? n_chunks - c0 : P;
        /* prefill positions 0..first of each chunk: the logits of `first` score token first+1 */
        for (uint32_t p = 0; p < np; p++) {
            int32_t *ct = tokens + (size_t)(c0 + p) * a.ctx;
            int32_t saved = ct[0];
            if (bos >= 0) ct[0] = bos;
            st = oscar_session_seq_reset(session, seqs[p]);
            if (st == OSCAR_OK) st = oscar_session_prefill(session, seqs[p], ct, first + 1, logits);
            ct[0] = saved;
            if (st != OSCAR_OK) goto api_fail;
            chunk_nll[c0 + p] += token_nll(logits, V, ct[first + 1]);
        }
        /* then one token per chunk per step: token j's logits score token j+1 */
        for (uint32_t j = first + 1; j + 1 < a.ctx; j++) {
            for (uint32_t p = 0; p < np; p++) step_tok[p] = tokens[(size_t)(c0 + p) * a.ctx + j];
            st = oscar_session_decode(session, np, seqs, step_tok, logits);
            if (st != OSCAR_OK) goto api_fail;
            for (uint32_t p = 0; p < np; p++)
                chunk_nll[c0 + p] += token_nll(logits + (size_t)p * V, V, tokens[(size_t)(c0 + p) * a.ctx + j + 1]);
        }
        for (uint32_t p = 0; p < np; p++) {
            double mean = chunk_nll[c0 + p] / n_scored;
            sum += chunk_nll[c0 + p];
            sum_sq += mean * mean; /* per-chunk spread is not the token spread: see below */
            count += n_scored;
            printf("chunk %u/%u  ppl %.4f  running ppl %.4f  (%.1f s)\n", c0 + p + 1, n_chunks, exp(mean),
                   exp(sum / (double)count), app_now() - t_start);
        }
        fflush(stdout);
    }
    double nll = sum / (double)count;
    /* standard error of the mean NLL from the spread of the chunk means (chunks are independent
     * samples; tokens inside a chunk are not) */
    double err = 0;
    if (n_chunks > 1) {
        double var = (sum_sq / n_chunks - nll * nll) * n_chunks / (n_chunks - 1);
        err = var > 0 ? sqrt(var / n_chunks) * exp(nll) : 0;
    }
    printf("ppl=%.6f ppl_err=%.4f nll=%.6f tokens=%llu chunks=%u ctx=%u kv=%s seconds=%.1f\n", exp(nll), err, nll,
           (unsigned long long)count, n_chunks, a.ctx, oscar_kv_mode_name(a.kv), app_now() - t_start);
    rc = 0;
    goto out;

oom:
    fprintf(stderr, PROG ": out of host memory\n");
    goto out;
api_fail:
    fprintf(stderr, PROG ": %s: %s\n", oscar_status_string(st), oscar_last_error());
out:
    free(text), free(tokens), free(seqs), free(step_tok), free(logits), free(chunk_nll);
    oscar_rotation_set_destroy(rot);
    oscar_session_destroy(session);
    if (m.ctx || m.model) app_model_close(&m);
    return rc;
}
