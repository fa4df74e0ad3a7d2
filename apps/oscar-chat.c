/* oscar-chat: chat with a llama-family GGUF model, the KV cache in fp16 or 2 bits.
 *
 *   oscar-chat -m model.gguf [--kv fp16|int2|int2-hadamard|oscar] [--rot FILE] [-c N]
 *              [--temp T] [--top-k K] [--top-p P] [--min-p M] [--repeat-penalty R] [-s SEED]
 *              [-sys TEXT] [--device NAME|INDEX] [-p PROMPT | -f FILE] [-cnv] [-n N]
 *              [--sink N --recent N] [--verbose]
 *
 * Interactive (no -p or -f, or -cnv): a prompt with line editing and history (libedit), the
 * answer streamed as it is generated, and the commands /reset /stats /kv /quit. The whole
 * conversation lives in one session sequence: each turn formats the conversation with the
 * model's chat template and prefills only the text the sequence does not hold yet (the new
 * user turn and the assistant header), so earlier turns are never recomputed. Ctrl-C stops
 * the turn, while the prompt is read or while the answer is written, and keeps the chat: an
 * answer cut short is kept as it stands; a prompt cut short is dropped, and the conversation
 * before it is read again with the next message (the cache cannot drop a partial turn).
 *
 * One-shot (-p PROMPT or -f FILE): one user turn, the answer on stdout, then one stats line on
 * stderr. With -cnv that turn opens an interactive chat instead.
 *
 * Flags as llama.cpp's llama-cli spells them are accepted (-c/--ctx-size, -s, -sys/
 * --system-prompt, -f, -cnv, -n -1, --top-k 0); -ngl, -t and -fa do not apply to a runtime
 * where every layer runs on the Vulkan device and get a one-line note.
 *
 * Sampling defaults: llama.cpp's (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05, no
 * repetition penalty, a random seed), except that -p mode is greedy unless --temp is given,
 * so that scripts and tests get a reproducible answer. --temp 0 is greedy in both modes.
 *
 * Errors (missing or corrupt model, bad flag, --kv oscar without --rot, --rot with another mode,
 * a rotation file for another model, a prompt longer than --ctx) print one line on stderr and
 * exit with 1 (2 for usage errors). --verbose (or OSCAR_LOG=1) adds the library's status names
 * and source locations to error lines. A --ctx past the model's trained context is a one-line
 * warning, as in llama.cpp.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<editline/readline.h>)
#include <editline/readline.h>
#define HAVE_EDITLINE 1
#endif
#endif

#include "common/app_common.h"
#include "common/app_io.h"
#include "oscar/oscar.h"

#define PROG "oscar-chat"

typedef struct chat_args {
    const char *model, *rot, *system, *device, *prompt, *prompt_file;
    oscar_kv_mode kv;
    int kv_set, conversation;
    uint32_t ctx;                 /* 0: min(n_ctx_train, 4096) */
    int64_t n_predict;            /* -1: until end of turn or a full context */
    oscar_sampler_params sp;
    int temp_set, seed_set;
    uint64_t sink, recent;        /* fp16 windows of the INT2 modes (tokens) */
} chat_args;

static void print_help(void)
{
    printf("usage: oscar-chat -m model.gguf [options]\n"
           "  -m, --model FILE           GGUF model (llama, qwen2, qwen3)\n"
           "  --kv MODE                  KV cache: fp16 (default), int2, int2-hadamard, oscar\n"
           "  --rot FILE                 RotationZoo file for --kv oscar (made by oscar-calib for this model;\n"
           "                             --rot alone selects --kv oscar)\n"
           "  -c, --ctx, --ctx-size N    context length in tokens (default min(trained, 4096); past the trained\n"
           "                             context: a warning)\n"
           "  --temp T                   temperature (default 0.8; 0: greedy; -p mode: greedy unless given)\n"
           "  --top-k K                  keep the K most likely tokens (default 40; 0: off)\n"
           "  --top-p P                  nucleus mass (default 0.95; 1: off)\n"
           "  --min-p M                  drop tokens below M x the best one's probability (default 0.05; 0: off)\n"
           "  --repeat-penalty R         penalty for the last 64 tokens (default 1: off)\n"
           "  -s, --seed S               sampler seed (default: random, shown at the start of a chat)\n"
           "  -sys, --system, --system-prompt TEXT\n"
           "                             system prompt (default: the template's own)\n"
           "  --device NAME|INDEX        Vulkan device (default: the best one, or OSCAR_DEVICE)\n"
           "  -p, --prompt TEXT          one user turn: print the answer, then a stats line on stderr\n"
           "  -f, --file FILE            the same, the turn read from a file\n"
           "  -cnv, --conversation       with -p or -f: go on as an interactive chat after that turn\n"
           "  -n, --n-predict N          most tokens per answer (default and -1: until end of turn or full context)\n"
           "  --sink N, --recent N       INT2 modes: first and most recent tokens kept in fp16 (default 64, 256)\n"
           "  --verbose                  error lines with status names and source locations (also OSCAR_LOG=1)\n"
           "  -ngl N, -t N, -fa          accepted for llama.cpp habits and ignored (every layer runs on the device)\n"
           "commands in a chat: /reset (forget the conversation), /stats (speed of the last turn,\n"
           "context used), /kv (KV memory by region), /quit (or Ctrl-D). Ctrl-C stops the turn (while the\n"
           "prompt is read or the answer written) and keeps the chat.\n");
}

/* Parses argv into a; returns 0 to go on, or 1 with the exit code set (help: 0; errors: 2). */
static int parse_args(int argc, char **argv, chat_args *a, int *exit_code)
{
    memset(a, 0, sizeof *a);
    a->kv = OSCAR_KV_FP16;
    a->n_predict = -1;
    a->sp = oscar_sampler_params_default();
    a->sp.repeat_penalty = 1.0f;
    a->sink = 64, a->recent = 256;
    *exit_code = 2;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            print_help();
            *exit_code = 0;
            return 1;
        }
        if (!strcmp(f, "--verbose")) {
            app_set_verbose(1);
            continue;
        }
        if (!strcmp(f, "-cnv") || !strcmp(f, "--conversation")) {
            a->conversation = 1;
            continue;
        }
        if (app_skip_llama_flag(PROG, argc, argv, &i)) continue;
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        static const char *const with_value[] = { "-m", "--model", "--kv", "--rot", "--ctx", "-c", "--ctx-size", "--temp",
                                                  "--top-k", "--top-p", "--min-p", "--repeat-penalty", "--seed", "-s",
                                                  "--system", "-sys", "--system-prompt", "--device", "-p", "--prompt",
                                                  "-f", "--file", "-n", "--n-predict", "--sink", "--recent", NULL };
        if (!app_flag_with_value(PROG, PROG, f, v, with_value)) return 1;
        i++;
        int ok = 1;
        uint32_t u;
        if (!strcmp(f, "-m") || !strcmp(f, "--model")) a->model = v;
        else if (!strcmp(f, "--kv")) ok = app_parse_kv_mode(PROG, f, v, &a->kv), a->kv_set = 1;
        else if (!strcmp(f, "--rot")) a->rot = v;
        else if (!strcmp(f, "--ctx") || !strcmp(f, "-c") || !strcmp(f, "--ctx-size"))
            ok = app_parse_u32(PROG, f, v, 1u << 24, &a->ctx);
        else if (!strcmp(f, "--temp")) ok = app_parse_float(PROG, f, v, 0.0f, 100.0f, &a->sp.temperature), a->temp_set = 1;
        else if (!strcmp(f, "--top-k")) {
            if (!strcmp(v, "0")) a->sp.top_k = 0;
            else ok = app_parse_u32(PROG, f, v, 1u << 24, &u), a->sp.top_k = (int32_t)u;
        } else if (!strcmp(f, "--top-p")) ok = app_parse_float(PROG, f, v, 0.0f, 1.0f, &a->sp.top_p);
        else if (!strcmp(f, "--min-p")) ok = app_parse_float(PROG, f, v, 0.0f, 1.0f, &a->sp.min_p);
        else if (!strcmp(f, "--repeat-penalty")) ok = app_parse_float(PROG, f, v, 0.0f, 10.0f, &a->sp.repeat_penalty);
        else if (!strcmp(f, "--seed") || !strcmp(f, "-s")) ok = app_parse_u64(PROG, f, v, &a->sp.seed), a->seed_set = 1;
        else if (!strcmp(f, "--system") || !strcmp(f, "-sys") || !strcmp(f, "--system-prompt")) a->system = v;
        else if (!strcmp(f, "--device")) a->device = v;
        else if (!strcmp(f, "-p") || !strcmp(f, "--prompt")) a->prompt = v;
        else if (!strcmp(f, "-f") || !strcmp(f, "--file")) a->prompt_file = v;
        else if (!strcmp(f, "-n") || !strcmp(f, "--n-predict")) {
            if (!strcmp(v, "-1")) a->n_predict = -1; /* llama.cpp's "no limit" */
            else ok = app_parse_u32(PROG, f, v, 1u << 24, &u), a->n_predict = u;
        } else if (!strcmp(f, "--sink")) ok = app_parse_u64(PROG, f, v, &a->sink);
        else if (!strcmp(f, "--recent")) ok = app_parse_u64(PROG, f, v, &a->recent);
        if (!ok) return 1;
    }
    if (!a->model) {
        fprintf(stderr, PROG ": no model given (-m model.gguf; oscar-chat --help)\n");
        return 1;
    }
    if (a->prompt && a->prompt_file) {
        fprintf(stderr, PROG ": give the turn with -p or with -f, not both\n");
        return 1;
    }
    if (!app_check_kv_rot(PROG, &a->kv, a->kv_set, a->rot)) return 1;
    if (a->sink > (1u << 24) || a->recent > (1u << 24)) {
        fprintf(stderr, PROG ": --sink and --recent take at most %u tokens\n", 1u << 24);
        return 1;
    }
    int one_shot = (a->prompt || a->prompt_file) && !a->conversation;
    if (one_shot && !a->temp_set) a->sp.temperature = 0.0f; /* -p: greedy by default */
    if (!a->seed_set) a->sp.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    return 0;
}

/* ---- the conversation ---------------------------------------------------------------------- */

typedef struct chat {
    app_model m;
    const chat_args *args;
    oscar_session *session;
    oscar_sampler *sampler;
    int32_t seq;
    uint32_t n_ctx;               /* tokens the sequence may hold */
    float *logits;                /* [n_vocab] of the last step */
    oscar_chat_message *msgs;     /* [n_msgs] the conversation; contents malloc'ed */
    size_t n_msgs, cap_msgs;
    char *held;                   /* the formatted text the sequence holds (NUL-terminated) */
    size_t held_len;
    int interactive;              /* 1: a chat (messages may advise /reset) */
    /* last turn */
    uint32_t n_prefill, n_decode;
    double t_prefill, t_decode;   /* seconds */
} chat;

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

static int push_message(chat *c, const char *role, const char *content, size_t len)
{
    if (c->n_msgs == c->cap_msgs) {
        size_t cap = c->cap_msgs ? 2 * c->cap_msgs : 16;
        oscar_chat_message *m = realloc(c->msgs, cap * sizeof *m);
        if (!m) return 0;
        c->msgs = m, c->cap_msgs = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy) return 0;
    memcpy(copy, content, len);
    copy[len] = 0;
    c->msgs[c->n_msgs].role = role;
    c->msgs[c->n_msgs].content = copy;
    c->n_msgs++;
    return 1;
}

static void pop_message(chat *c)
{
    if (c->n_msgs) free((char *)c->msgs[--c->n_msgs].content);
}

/* Forgets the conversation: empty sequence, no messages, fresh sampler history. */
static int chat_reset(chat *c)
{
    while (c->n_msgs) pop_message(c);
    c->held_len = 0;
    if (c->held) c->held[0] = 0;
    oscar_sampler_reset(c->sampler);
    oscar_status st = oscar_session_seq_reset(c->session, c->seq);
    if (st != OSCAR_OK) {
        fprintf(stderr, PROG ": reset failed (%s): %s\n", oscar_status_string(st), oscar_last_error());
        return 0;
    }
    return 1;
}

static int set_held(chat *c, const char *text, size_t len)
{
    char *h = realloc(c->held, len + 1);
    if (!h) return 0;
    memcpy(h, text, len);
    h[len] = 0;
    c->held = h, c->held_len = len;
    return 1;
}

/* 1 when every logit is finite. A model with a NaN or infinite weight computes NaN logits,
 * and sampling from them would print tokens that mean nothing. */
static int logits_finite(const float *logits, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (!isfinite(logits[i])) return 0;
    return 1;
}

/* Prefills tokens[0..n) in pieces of the session's step (n_batch tokens, which the library
 * would run as separate steps anyway, so nothing is lost), checking for Ctrl-C between two.
 * Sets *done to the tokens prefilled; returns the first failing status (OK when interrupted). */
static oscar_status prefill_interruptible(chat *c, const int32_t *tokens, uint32_t n, uint32_t *done)
{
    const uint32_t piece = oscar_session_n_batch(c->session);
    *done = 0;
    while (*done < n && !interrupted) {
        uint32_t k = n - *done < piece ? n - *done : piece;
        oscar_status st = oscar_session_prefill(c->session, c->seq, tokens + *done, k, c->logits);
        if (st != OSCAR_OK) return st;
        *done += k;
    }
    return OSCAR_OK;
}

/* One turn: adds the user message, prefills what the sequence lacks, streams the answer to
 * stdout and records it. Returns 1 on success, 0 after printing one error line (the turn is
 * then undone: the conversation is as before, or reset when the sequence was damaged).
 * Ctrl-C stops the turn: during the answer, what was written is kept; during the prompt, the
 * turn is dropped and the sequence emptied, the conversation kept (the next turn reads it
 * again, as held_len = 0 asks). */
static int chat_turn(chat *c, const char *user, int64_t n_predict)
{
    const char *prog = PROG;
    oscar_status st;
    char *text = NULL, *reply = NULL;
    int32_t *tokens = NULL;
    size_t reply_len = 0, reply_cap = 0;
    int ok = 0, seq_touched = 0;
    c->n_prefill = c->n_decode = 0;
    c->t_prefill = c->t_decode = 0;
    struct sigaction sa = { 0 }, old_sa;
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    interrupted = 0;
    sigaction(SIGINT, &sa, &old_sa); /* for the whole turn: prompt and answer */
    if (!push_message(c, "user", user, strlen(user))) {
        fprintf(stderr, "%s: out of host memory\n", prog);
        goto done;
    }

    /* the whole conversation in the template's format, ending with the assistant header */
    size_t len = 0;
    st = oscar_model_chat_format(c->m.model, c->msgs, c->n_msgs, 1, c->args->system, NULL, 0, &len);
    if (st != OSCAR_OK) goto api_fail;
    text = malloc(len + 1);
    if (!text) goto oom;
    st = oscar_model_chat_format(c->m.model, c->msgs, c->n_msgs, 1, c->args->system, text, len + 1, &len);
    if (st != OSCAR_OK) goto api_fail;

    /* only the text the sequence does not hold yet; start over if the template rewrote the past */
    size_t from = 0;
    if (c->held_len == 0) from = 0;
    else if (c->held_len <= len && memcmp(text, c->held, c->held_len) == 0) from = c->held_len;
    else {
        st = oscar_session_seq_reset(c->session, c->seq);
        if (st != OSCAR_OK) goto api_fail;
        c->held_len = 0;
    }
    size_t n_tok = 0;
    st = oscar_model_tokenize(c->m.model, text + from, len - from, 0, 1, NULL, 0, &n_tok);
    if (st != OSCAR_OK) goto api_fail;
    tokens = malloc((n_tok ? n_tok : 1) * sizeof *tokens);
    if (!tokens) goto oom;
    st = oscar_model_tokenize(c->m.model, text + from, len - from, 0, 1, tokens, n_tok, &n_tok);
    if (st != OSCAR_OK) goto api_fail;
    uint32_t used = 0;
    st = oscar_session_seq_length(c->session, c->seq, &used);
    if (st != OSCAR_OK) goto api_fail;
    if ((uint64_t)used + n_tok + 1 > c->n_ctx) {
        if (used == 0)
            fprintf(stderr, "%s: the prompt is %zu tokens, longer than the context of %u (--ctx)\n", prog, n_tok, c->n_ctx);
        else
            fprintf(stderr, "%s: context full: %u tokens held + %zu new > %u (--ctx); /reset starts over\n", prog, used,
                    n_tok, c->n_ctx);
        goto undo;
    }

    double t0 = app_now();
    seq_touched = 1;
    uint32_t n_done = 0;
    st = n_tok ? prefill_interruptible(c, tokens, (uint32_t)n_tok, &n_done) : OSCAR_ERROR_INVALID_STATE;
    if (st != OSCAR_OK) goto api_fail;
    if (n_done < n_tok) { /* Ctrl-C while the prompt was read */
        pop_message(c);
        c->held_len = 0;
        if (c->held) c->held[0] = 0;
        st = oscar_session_seq_reset(c->session, c->seq);
        if (st != OSCAR_OK) goto api_fail;
        fprintf(stderr, "%s: [stopped while reading the prompt; %s]\n", prog,
                c->n_msgs ? "the conversation is kept and read again with the next message" : "nothing was said");
        seq_touched = 0;
        goto done;
    }
    c->t_prefill = app_now() - t0;
    c->n_prefill = (uint32_t)n_tok;
    used += (uint32_t)n_tok;
    if (!set_held(c, text, len)) goto oom;

    /* generate: sample from the last logits, stop at an end-of-generation token */
    app_utf8_out out = { .f = stdout };
    t0 = app_now();
    int stop_reason = 0; /* 0 end of turn, 1 -n reached, 2 context full, 3 interrupted, 4 not finite */
    for (int64_t n = 0;; n++) {
        if (n_predict >= 0 && n >= n_predict) { stop_reason = 1; break; }
        if (interrupted) { stop_reason = 3; break; }
        if (!logits_finite(c->logits, c->m.info.n_vocab)) { stop_reason = 4; break; }
        int32_t tok;
        st = oscar_sampler_sample(c->sampler, c->logits, &tok);
        if (st != OSCAR_OK) break;
        oscar_sampler_accept(c->sampler, tok);
        if (oscar_model_is_eog(c->m.model, tok)) break;
        char piece[256];
        size_t plen = 0;
        st = oscar_model_token_to_piece(c->m.model, tok, 0, piece, sizeof piece, &plen);
        if (st != OSCAR_OK) break;
        app_utf8_write(&out, piece, plen);
        if (reply_len + plen + 1 > reply_cap) {
            size_t cap = reply_cap ? 2 * reply_cap + plen : 1024 + plen;
            char *r = realloc(reply, cap);
            if (!r) { st = OSCAR_ERROR_OUT_OF_HOST_MEMORY; break; }
            reply = r, reply_cap = cap;
        }
        for (size_t k = 0; k < plen; k++) /* a NUL byte would cut the message short: the record skips it */
            if (piece[k]) reply[reply_len++] = piece[k];
        reply[reply_len] = 0;
        if (used + 1 > c->n_ctx) { stop_reason = 2; break; }
        st = oscar_session_decode(c->session, 1, &c->seq, &tok, c->logits);
        if (st != OSCAR_OK) break;
        used++;
        c->n_decode++;
    }
    c->t_decode = app_now() - t0;
    app_utf8_flush(&out);
    fputc('\n', stdout);
    fflush(stdout);
    if (st != OSCAR_OK) goto api_fail;
    if (stop_reason == 4) {
        fprintf(stderr, "%s: the model computed NaN or infinite logits: its weights are corrupt or overflow\n", prog);
        goto undo;
    }
    if (stop_reason == 2)
        fprintf(stderr, "%s: [the context of %u tokens is full%s]\n", prog, c->n_ctx,
                c->interactive ? "; /reset starts over" : " (--ctx)");
    if (stop_reason == 3) fprintf(stderr, "%s: [stopped]\n", prog);

    /* the sequence now holds text + reply (the end-of-turn marker follows in the next turn's text) */
    if (!push_message(c, "assistant", reply ? reply : "", reply_len)) goto oom;
    size_t held = len + reply_len;
    char *h = realloc(c->held, held + 1);
    if (!h) goto oom;
    c->held = h;
    memcpy(c->held + len, reply ? reply : "", reply_len);
    c->held[held] = 0;
    c->held_len = held;
    ok = 1;
    goto done;

oom:
    fprintf(stderr, "%s: out of host memory\n", prog);
    goto undo;
api_fail:
    app_fail(prog, NULL, st);
undo:
    if (seq_touched) chat_reset(c); /* the sequence may hold half a turn: start over */
    else pop_message(c);
done:
    sigaction(SIGINT, &old_sa, NULL);
    free(text);
    free(tokens);
    free(reply);
    return ok;
}

static void print_stats(const chat *c, FILE *f)
{
    uint32_t used = 0;
    oscar_session_seq_length(c->session, c->seq, &used);
    fprintf(f, "prefill %u tokens %.1f tok/s, decode %u tokens %.1f tok/s, context %u/%u tokens, kv %s\n", c->n_prefill,
            c->t_prefill > 0 ? c->n_prefill / c->t_prefill : 0.0, c->n_decode,
            c->t_decode > 0 ? c->n_decode / c->t_decode : 0.0, used, c->n_ctx, oscar_kv_mode_name(c->args->kv));
}

/* The KV cache as a user asks about it: per region the tokens, the bytes of the stored data
 * and its bits per element (fp16: 16; INT2: 2 bits a code plus an fp16 scale and min per
 * group, 2.25 at groups of 128), the average over what is held, then the pages (allocated a
 * page of tokens at a time, so a partly filled page costs a whole one) and the room left. */
static void print_kv(const chat *c)
{
    oscar_kv_stats s;
    oscar_status st = oscar_session_kv_stats(c->session, &s);
    if (st != OSCAR_OK) {
        app_fail(PROG, "KV statistics", st);
        return;
    }
    const oscar_model_info *in = &c->m.info;
    const double mib = 1048576.0, elems = (double)in->n_layer * 2 * in->n_head_kv * in->head_dim; /* K and V a token */
    int int2 = s.mode != OSCAR_KV_FP16;
    uint64_t tokens = s.f16_tokens + s.int2_tokens;
    double f16_bytes = (double)s.f16_tokens * s.f16_bytes_per_token, i2_bytes = (double)s.int2_tokens * s.int2_bytes_per_token;
    printf("KV cache, mode %s: %llu of %u tokens (--ctx)\n", oscar_kv_mode_name(s.mode), (unsigned long long)tokens, c->n_ctx);
    printf("  fp16 region  %8llu tokens  %9.3f MiB  %6.2f bits per element%s\n", (unsigned long long)s.f16_tokens,
           f16_bytes / mib, s.f16_bytes_per_token * 8.0 / elems, int2 ? " (the first and the most recent tokens)" : "");
    if (int2)
        printf("  INT2 region  %8llu tokens  %9.3f MiB  %6.2f bits per element (2-bit codes, fp16 scale and min per group)\n",
               (unsigned long long)s.int2_tokens, i2_bytes / mib, s.int2_bytes_per_token * 8.0 / elems);
    if (int2 && tokens)
        printf("  held now     %8llu tokens  %9.3f MiB  %6.2f bits per element on average\n", (unsigned long long)tokens,
               (f16_bytes + i2_bytes) / mib, (f16_bytes + i2_bytes) * 8.0 / (tokens * elems));
    printf("  pages of %u tokens: fp16 %u in use of %u", s.page_tokens, s.f16_pages_used, s.f16_pages_total);
    if (int2) printf(", INT2 %u in use of %u", s.int2_pages_used, s.int2_pages_total);
    printf("; %.3f MiB in use of %.3f MiB allocated\n", s.bytes_used / mib, s.bytes_total / mib);
    /* the whole context: the fp16 windows (sink and recent) and INT2 for the rest, against fp16 */
    uint64_t win = c->args->sink + c->args->recent, n = c->n_ctx;
    if (win > n) win = n;
    double full = int2 ? (double)win * s.f16_bytes_per_token + (double)(n - win) * s.int2_bytes_per_token
                       : (double)n * s.f16_bytes_per_token;
    double full_f16 = (double)n * s.f16_bytes_per_token;
    printf("  room: %llu more tokens; the full context of %u tokens takes %.3f MiB", (unsigned long long)(n > tokens ? n - tokens : 0),
           c->n_ctx, full / mib);
    if (int2) printf(" (fp16: %.3f MiB, %.1fx)", full_f16 / mib, full > 0 ? full_f16 / full : 0.0);
    printf("\n");
}

/* Reads one line with editing and history when libedit is there. Returns malloc'ed text or
 * NULL at end of input. */
static char *read_line(const char *prompt)
{
#ifdef HAVE_EDITLINE
    char *line = readline(prompt);
    if (line && *line) add_history(line);
    return line;
#else
    fputs(prompt, stdout);
    fflush(stdout);
    size_t cap = 0;
    char *line = NULL;
    ssize_t n = getline(&line, &cap, stdin);
    if (n < 0) {
        free(line);
        return NULL;
    }
    if (n && line[n - 1] == '\n') line[n - 1] = 0;
    return line;
#endif
}

/* The chat loop; `first` (may be NULL) is a first user turn given on the command line. */
static void interactive(chat *c, const char *first)
{
    char how[64] = "greedy";
    if (c->args->sp.temperature > 0)
        snprintf(how, sizeof how, "sampled, seed %llu", (unsigned long long)c->args->sp.seed);
    printf("oscar-chat: %s (%s), %u layers, KV %s, context %u tokens, %s\n"
           "type a message; /reset /stats /kv /quit\n",
           c->m.info.name[0] ? c->m.info.name : c->args->model, c->m.info.arch, c->m.info.n_layer,
           oscar_kv_mode_name(c->args->kv), c->n_ctx, how);
    fflush(stdout); /* the banner before the first prompt, also when stdout is a file or a pipe */
    if (first) {
        printf("> %s\n", first);
        chat_turn(c, first, c->args->n_predict);
    }
    for (;;) {
        char *line = read_line("> ");
        if (!line) {
            printf("\n");
            break;
        }
        char *s = line;
        while (*s == ' ' || *s == '\t') s++;
        size_t n = strlen(s);
        while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = 0;
        if (n == 0) {
            free(line);
            continue;
        }
        if (s[0] == '/') {
            int quit = 0;
            if (!strcmp(s, "/quit") || !strcmp(s, "/exit")) quit = 1;
            else if (!strcmp(s, "/reset")) {
                if (chat_reset(c)) printf("[conversation reset]\n");
            } else if (!strcmp(s, "/stats")) print_stats(c, stdout);
            else if (!strcmp(s, "/kv")) print_kv(c);
            else printf("commands: /reset /stats /kv /quit\n");
            free(line);
            if (quit) break;
            continue;
        }
        chat_turn(c, s, c->args->n_predict);
        free(line);
    }
}

int main(int argc, char **argv)
{
    chat_args a;
    int rc = 0;
    app_log_init();
    if (parse_args(argc, argv, &a, &rc)) return rc;

    chat c;
    memset(&c, 0, sizeof c);
    c.args = &a;
    c.seq = -1;
    oscar_rotation_set *rot = NULL;
    char *file_prompt = NULL;
    rc = 1;
    if (a.prompt_file) {
        size_t n = 0;
        if (!(file_prompt = app_read_text(PROG, a.prompt_file, "prompt file", APP_MAX_TEXT_BYTES, &n))) return 1;
        a.prompt = file_prompt;
    }
    if (a.rot && !app_check_input(PROG, a.rot, "rotation file")) goto out;
    if (!app_model_open(PROG, a.model, a.device, a.rot, 1, &c.m)) goto out;
    if (a.rot && !app_rotation_load(PROG, a.rot, c.m.model, &rot)) goto out;

    uint32_t train = c.m.info.n_ctx_train;
    c.n_ctx = a.ctx ? a.ctx : (train && train < 4096 ? train : 4096);
    c.interactive = !a.prompt || a.conversation;
    oscar_session_params sp = oscar_session_params_default();
    sp.kv_mode = a.kv;
    sp.n_ctx = c.n_ctx;
    sp.rotations = rot;
    sp.sink_tokens = (uint32_t)a.sink;
    sp.recent_tokens = (uint32_t)a.recent;
    oscar_status st = oscar_session_create(c.m.model, &sp, &c.session);
    if (st == OSCAR_OK) st = oscar_session_seq_add(c.session, &c.seq);
    if (st == OSCAR_OK) st = oscar_sampler_create(&a.sp, c.m.info.n_vocab, &c.sampler);
    if (st != OSCAR_OK) {
        app_fail(PROG, NULL, st);
        goto out;
    }
    app_warn_context(PROG, c.n_ctx, &c.m.info); /* once the context fits: a failure is its own one line */
    c.logits = malloc((size_t)c.m.info.n_vocab * sizeof *c.logits);
    if (!c.logits) {
        fprintf(stderr, PROG ": out of host memory\n");
        goto out;
    }
    if (a.prompt && !a.conversation) {
        if (chat_turn(&c, a.prompt, a.n_predict)) {
            print_stats(&c, stderr);
            rc = 0;
        }
    } else {
        interactive(&c, a.prompt);
        rc = 0;
    }
out:
    while (c.n_msgs) pop_message(&c);
    oscar_rotation_set_destroy(rot);
    free(c.msgs);
    free(c.held);
    free(c.logits);
    free(file_prompt);
    oscar_sampler_destroy(c.sampler);
    oscar_session_destroy(c.session);
    app_model_close(&c.m);
    return rc;
}
