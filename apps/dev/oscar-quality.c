/* oscar-quality: compares KV-cache modes on one model: perplexity at several contexts,
 * passkey retrieval, and greedy agreement with a baseline mode. Writes a markdown report on
 * stdout (progress on stderr). scripts/quality.sh runs it for docs/quality.md.
 *
 *   oscar-quality -m model.gguf -f eval.txt [-f eval2.txt ...] --mode fp16=fp16 --mode int2=int2
 *                 --mode oscar-layer=oscar:layer.rot.gguf [options]
 *
 * The model is loaded once; each mode gets its own sessions (a KV mode is fixed when a session
 * is created). The first mode is the baseline of the relative columns and of the agreement.
 *
 * 1. Perplexity (apps/common/app_ppl.h, the rule of oscar-perplexity): non-overlapping chunks
 *    of ctx tokens, the first half prefilled, the second half decoded one token per step so
 *    that tokens leaving the recent window are quantized as in real use; tokens ctx/2+1 ..
 *    ctx-1 scored. Contexts above the model's n_ctx_train are capped to it. Each text (-f,
 *    repeated; named after its file without the folder and .txt) gets a table of its own;
 *    with several, a last table gives per mode and context the mean of the texts' changes
 *    against the baseline, its error sqrt(sum of the texts' squared paired errors) / n (the
 *    texts are independent samples) and the largest change, with the text it came from.
 * 2. Passkey: a filler of neutral sentences with "The pass key is NNNNN. Remember it. NNNNN is
 *    the pass key." at depth 10%, 50%, 90%, then "What is the pass key?", formatted with the
 *    model's chat template and followed by the answer prefix "The pass key is"; the whole
 *    prompt is at most L tokens. Greedy answer of up to 16 tokens; a trial succeeds when the
 *    5 digits appear in it.
 * 3. Agreement: built-in prompts (tests/data would tie the app to the source tree) through
 *    the chat template, up to --agree-tokens greedy tokens each (stopping at end of
 *    generation) in every mode; for each prompt, the length of the common prefix with the
 *    baseline's tokens over the baseline's length, and whether the two are identical. Run
 *    once per (--agree-sink, --agree-recent) pair, since with the default windows short
 *    chats never leave fp16.
 *
 * Exit status: 0 report written; 1 a run failed (one line on stderr: missing file, model or
 * rotation that does not load or fits another model, device error); 2 bad command line.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/app_common.h"
#include "common/app_io.h"
#include "common/app_ppl.h"
#include "oscar/oscar.h"

#define PROG "oscar-quality"
#define MAX_MODES 16
#define N_DEPTHS 3
#define PK_ANSWER_TOKENS 16
#define MAX_WINDOWS 4
#define MAX_TEXTS 8

static const double pk_depths[N_DEPTHS] = { 0.1, 0.5, 0.9 };

/* ---- built-in data ---------------------------------------------------------------------------- */

static const char *const filler_sentences[] = {
    "The morning train left the station on time.",
    "A gentle wind moved through the tall grass.",
    "The library opens at nine and closes at five.",
    "Children walked along the river after school.",
    "The baker sold fresh bread at the corner shop.",
    "Clouds drifted slowly over the quiet valley.",
    "A small boat was tied to the wooden dock.",
    "The garden had rows of carrots and beans.",
};
#define N_FILLER (sizeof filler_sentences / sizeof filler_sentences[0])

static const char *const pk_intro =
    "There is a pass key hidden inside the following text. Find it and remember it.\n\n";
static const char *const pk_question = "\n\nWhat is the pass key?";
static const char *const pk_answer_prefix = "The pass key is";

static const char *const agree_prompts[] = {
    "What is the capital of France?",
    "Explain in two sentences why the sky is blue.",
    "Write a short poem about the sea.",
    "Give me three tips for learning a new language.",
    "What is the difference between a list and a tuple in Python?",
    "Summarize the story of Little Red Riding Hood.",
    "How do I boil an egg?",
    "List five fruits that are red.",
    "Translate 'good morning' into Spanish and French.",
    "What causes the seasons on Earth?",
    "Write a haiku about autumn leaves.",
    "Explain what a binary search does.",
    "Suggest a name for a small coffee shop.",
    "Why do cats purr?",
    "What are the main ingredients of a pizza?",
    "Describe a rainy day in a city.",
    "How many days are there in a leap year, and why?",
    "Give an example of a healthy breakfast.",
    "What does a compiler do?",
    "Write a friendly email inviting a colleague to lunch.",
};
#define N_AGREE_PROMPTS (sizeof agree_prompts / sizeof agree_prompts[0])

/* ---- arguments ---------------------------------------------------------------------------------- */

typedef struct q_mode {
    char name[64];
    oscar_kv_mode kv;
    const char *rot_path;         /* RotationZoo file (argv), NULL without */
    oscar_rotation_set *rot;
} q_mode;

typedef struct q_args {
    const char *model, *device;
    const char *files[MAX_TEXTS];  /* -f, in the order given */
    char text_names[MAX_TEXTS][64];/* each file's name without the folder and .txt */
    uint32_t n_files;
    q_mode modes[MAX_MODES];
    uint32_t n_modes;
    uint32_t ctx[APP_MAX_LIST], n_ctx;
    uint32_t max_chunks, parallel;
    uint32_t sink, recent;
    uint32_t group;               /* --group-size: INT2 group of every session; 0: the library's default */
    uint32_t agree_sink[MAX_WINDOWS], agree_recent[MAX_WINDOWS], n_agree_sink, n_agree_recent;
    uint32_t pk_len[APP_MAX_LIST], n_pk_len, pk_trials;
    uint64_t seed;
    uint32_t agree_n_prompts, agree_tokens;
    int do_ppl, do_passkey, do_agree;
} q_args;

static void print_help(void)
{
    printf("usage: oscar-quality -m model.gguf -f eval.txt [-f eval2.txt ...] --mode NAME=KVMODE[:ROTFILE] ... [options]\n"
           "  -f, --file FILE     evaluation text (repeat, at most %d: a perplexity table each, then their mean);\n"
           "                      named in the report after the file without its folder and .txt\n"
           "  --mode NAME=KVMODE[:ROTFILE]  a KV configuration (repeat; the first is the baseline); KVMODE is\n"
           "                      fp16, int2, int2-hadamard or oscar (oscar needs :ROTFILE). Default:\n"
           "                      fp16=fp16 int2=int2 hadamard=int2-hadamard\n"
           "  --tasks LIST        any of ppl,passkey,agree (default all)\n"
           "  --sink N --recent N fp16 windows of the INT2 modes for perplexity and passkey (default 64, 256)\n"
           "  --group-size G      INT2 quantization group, 32, 64 or 128 (default: min(head_dim, 128), and in\n"
           "                      oscar modes the rotation file's, which must then equal G)\n"
           "  --ctx LIST          perplexity contexts (default 512,2048,8192; capped at the model's context)\n"
           "  --max-chunks N      perplexity chunks per context (default: every whole chunk of the text)\n"
           "  --parallel P        sequences decoded together (default 8)\n"
           "  --passkey-lengths LIST  prompt lengths in tokens (default 1024,4096)\n"
           "  --passkey-trials N  numbers per depth and length (default 5)\n"
           "  --seed N            seed of the pass keys (default 1)\n"
           "  --agree-prompts N   built-in prompts used, 1..%u (default %u)\n"
           "  --agree-tokens N    greedy tokens per prompt (default 128)\n"
           "  --agree-sink LIST --agree-recent LIST  fp16 windows of the agreement runs, one table per\n"
           "                      pair (default: --sink and --recent; e.g. 64,4 and 256,8)\n"
           "  --device NAME|INDEX Vulkan device\n"
           "  --verbose           error lines with status names and source locations (also OSCAR_LOG=1)\n",
           MAX_TEXTS, (unsigned)N_AGREE_PROMPTS, (unsigned)N_AGREE_PROMPTS);
}

/* The report's name of an evaluation text: its file name without the folder and a trailing
 * ".txt", cut to fit `out`. */
static void text_name(const char *path, char *out, size_t cap)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    if (n > 4 && !strcmp(b + n - 4, ".txt")) n -= 4;
    if (n >= cap) n = cap - 1;
    memcpy(out, b, n);
    out[n] = 0;
}

/* "NAME=KVMODE[:ROTFILE]" into m; one line and 0 when malformed. */
static int parse_mode(const char *s, const q_args *a, q_mode *m)
{
    memset(m, 0, sizeof *m);
    const char *eq = strchr(s, '=');
    size_t name_len = eq ? (size_t)(eq - s) : 0;
    if (!eq || name_len == 0 || name_len >= sizeof m->name) {
        fprintf(stderr, PROG ": --mode needs NAME=KVMODE[:ROTFILE] with a name of 1..%zu characters, got '%s'\n",
                sizeof m->name - 1, s);
        return 0;
    }
    for (size_t i = 0; i < name_len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
              c == '.' || c == '+')) {
            fprintf(stderr, PROG ": --mode '%s': a name may hold letters, digits and - _ . + only\n", s);
            return 0;
        }
    }
    memcpy(m->name, s, name_len);
    for (uint32_t i = 0; i < a->n_modes; i++)
        if (!strcmp(a->modes[i].name, m->name)) {
            fprintf(stderr, PROG ": --mode '%s': the name %s is used twice\n", s, m->name);
            return 0;
        }
    const char *kv = eq + 1, *colon = strchr(kv, ':');
    char kv_name[32];
    size_t kv_len = colon ? (size_t)(colon - kv) : strlen(kv);
    if (kv_len >= sizeof kv_name) kv_len = sizeof kv_name - 1;
    memcpy(kv_name, kv, kv_len);
    kv_name[kv_len] = 0;
    if (!app_parse_kv_mode(PROG, "--mode", kv_name, &m->kv)) return 0;
    if (colon) m->rot_path = colon + 1;
    if (m->kv == OSCAR_KV_INT2_ROTATED && (!m->rot_path || !*m->rot_path)) {
        fprintf(stderr, PROG ": --mode '%s': the oscar mode needs a rotation file (NAME=oscar:FILE)\n", s);
        return 0;
    }
    if (m->kv != OSCAR_KV_INT2_ROTATED && m->rot_path) {
        fprintf(stderr, PROG ": --mode '%s': a rotation file goes with the oscar mode only\n", s);
        return 0;
    }
    return 1;
}

static int parse_tasks(const char *s, q_args *a)
{
    a->do_ppl = a->do_passkey = a->do_agree = 0;
    const char *p = s;
    while (*p) {
        size_t len = strcspn(p, ",");
        if (len == 3 && !strncmp(p, "ppl", 3)) a->do_ppl = 1;
        else if (len == 7 && !strncmp(p, "passkey", 7)) a->do_passkey = 1;
        else if (len == 5 && !strncmp(p, "agree", 5)) a->do_agree = 1;
        else {
            fprintf(stderr, PROG ": --tasks takes a list of ppl, passkey, agree; got '%s'\n", s);
            return 0;
        }
        p += len;
        if (*p) p++;
    }
    if (!a->do_ppl && !a->do_passkey && !a->do_agree) {
        fprintf(stderr, PROG ": --tasks names no task\n");
        return 0;
    }
    return 1;
}

static int parse_args(int argc, char **argv, q_args *a, int *exit_code)
{
    memset(a, 0, sizeof *a);
    a->ctx[0] = 512, a->ctx[1] = 2048, a->ctx[2] = 8192, a->n_ctx = 3;
    a->parallel = 8;
    a->sink = 64, a->recent = 256;
    a->pk_len[0] = 1024, a->pk_len[1] = 4096, a->n_pk_len = 2;
    a->pk_trials = 5;
    a->seed = 1;
    a->agree_n_prompts = N_AGREE_PROMPTS;
    a->agree_tokens = 128;
    a->do_ppl = a->do_passkey = a->do_agree = 1;
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
        static const char *const known[] = { "-m", "--model", "-f", "--file", "--device", "--mode", "--tasks", "--ctx",
                                             "--max-chunks", "--parallel", "--sink", "--recent", "--group-size", "--passkey-lengths",
                                             "--passkey-trials", "--seed", "--agree-prompts", "--agree-tokens",
                                             "--agree-sink", "--agree-recent", NULL };
        if (!app_flag_with_value(PROG, PROG, f, v, known)) return 1;
        int ok = 1;
        uint64_t u64 = 0;
        if (!strcmp(f, "-m") || !strcmp(f, "--model")) a->model = v;
        else if (!strcmp(f, "-f") || !strcmp(f, "--file")) {
            if (a->n_files == MAX_TEXTS) {
                fprintf(stderr, PROG ": at most %d evaluation texts (-f)\n", MAX_TEXTS);
                return 1;
            }
            text_name(v, a->text_names[a->n_files], sizeof a->text_names[0]);
            for (uint32_t t = 0; t < a->n_files; t++)
                if (!strcmp(a->text_names[t], a->text_names[a->n_files])) {
                    fprintf(stderr, PROG ": -f %s: a text named %s is given twice (texts are named after their files)\n",
                            v, a->text_names[t]);
                    return 1;
                }
            a->files[a->n_files++] = v;
        }
        else if (!strcmp(f, "--device")) a->device = v;
        else if (!strcmp(f, "--mode")) {
            if (a->n_modes == MAX_MODES) {
                fprintf(stderr, PROG ": at most %d --mode options\n", MAX_MODES);
                return 1;
            }
            ok = parse_mode(v, a, &a->modes[a->n_modes]);
            a->n_modes += ok;
        } else if (!strcmp(f, "--tasks")) ok = parse_tasks(v, a);
        else if (!strcmp(f, "--ctx")) ok = app_parse_u32_list(PROG, f, v, 1u << 20, a->ctx, &a->n_ctx);
        else if (!strcmp(f, "--max-chunks")) ok = app_parse_u32(PROG, f, v, 1u << 24, &a->max_chunks);
        else if (!strcmp(f, "--parallel")) ok = app_parse_u32(PROG, f, v, 256, &a->parallel);
        else if (!strcmp(f, "--sink") || !strcmp(f, "--recent")) {
            ok = app_parse_u64(PROG, f, v, &u64);
            if (ok && u64 > (1u << 24)) {
                fprintf(stderr, PROG ": %s takes at most %u tokens\n", f, 1u << 24);
                return 1;
            }
            *(f[2] == 's' ? &a->sink : &a->recent) = (uint32_t)u64;
        } else if (!strcmp(f, "--group-size")) {
            ok = app_parse_u32(PROG, f, v, 128, &a->group);
            if (ok && a->group != 32 && a->group != 64 && a->group != 128) {
                fprintf(stderr, PROG ": --group-size %s: INT2 groups are of 32, 64 or 128 elements\n", v);
                return 1;
            }
        } else if (!strcmp(f, "--passkey-lengths")) ok = app_parse_u32_list(PROG, f, v, 1u << 20, a->pk_len, &a->n_pk_len);
        else if (!strcmp(f, "--passkey-trials")) ok = app_parse_u32(PROG, f, v, 1000, &a->pk_trials);
        else if (!strcmp(f, "--seed")) ok = app_parse_u64(PROG, f, v, &a->seed);
        else if (!strcmp(f, "--agree-prompts")) ok = app_parse_u32(PROG, f, v, N_AGREE_PROMPTS, &a->agree_n_prompts);
        else if (!strcmp(f, "--agree-tokens")) ok = app_parse_u32(PROG, f, v, 1u << 16, &a->agree_tokens);
        else if (!strcmp(f, "--agree-sink")) ok = app_parse_u32_list_range(PROG, f, v, 0, 1u << 24, MAX_WINDOWS, a->agree_sink, &a->n_agree_sink);
        else ok = app_parse_u32_list_range(PROG, f, v, 0, 1u << 24, MAX_WINDOWS, a->agree_recent, &a->n_agree_recent);
        if (!ok) return 1;
        i++;
    }
    if (!a->model || !a->n_files) {
        fprintf(stderr, PROG ": %s\n", !a->model ? "no model given (-m model.gguf)" : "no text given (-f eval.txt)");
        return 1;
    }
    for (uint32_t i = 0; i < a->n_ctx; i++)
        if (a->ctx[i] < 8) {
            fprintf(stderr, PROG ": --ctx values must be at least 8 tokens, got %u\n", a->ctx[i]);
            return 1;
        }
    if (a->n_modes == 0) {
        static const char *const defaults[] = { "fp16=fp16", "int2=int2", "hadamard=int2-hadamard" };
        for (uint32_t i = 0; i < 3; i++) a->n_modes += parse_mode(defaults[i], a, &a->modes[a->n_modes]);
    }
    if (!a->n_agree_sink && !a->n_agree_recent) {
        a->agree_sink[0] = a->sink, a->agree_recent[0] = a->recent;
        a->n_agree_sink = a->n_agree_recent = 1;
    } else if (a->n_agree_sink != a->n_agree_recent) {
        fprintf(stderr, PROG ": --agree-sink and --agree-recent need lists of the same length (%u and %u)\n",
                a->n_agree_sink, a->n_agree_recent);
        return 1;
    }
    return 0;
}

/* ---- helpers ------------------------------------------------------------------------------------- */

/* splitmix64: the pass key of (seed, length, depth, trial). */
static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Tokens of one user message in the chat template, followed by `answer_prefix` (may be NULL)
 * after the assistant header: a malloc'ed array in *out, *n tokens. */
static oscar_status chat_tokens(const oscar_model *model, const char *user_text, const char *answer_prefix, int32_t **out,
                                uint32_t *n)
{
    *out = NULL;
    *n = 0;
    oscar_chat_message msg = { "user", user_text };
    size_t len = 0, pre = answer_prefix ? strlen(answer_prefix) : 0, n_tok = 0;
    oscar_status st = oscar_model_chat_format(model, &msg, 1, 1, NULL, NULL, 0, &len);
    if (st != OSCAR_OK) return st;
    char *text = malloc(len + pre + 1);
    if (!text) return OSCAR_ERROR_OUT_OF_HOST_MEMORY;
    st = oscar_model_chat_format(model, &msg, 1, 1, NULL, text, len + 1, &len);
    if (st == OSCAR_OK) {
        if (pre) memcpy(text + len, answer_prefix, pre);
        text[len + pre] = 0;
        st = oscar_model_tokenize(model, text, len + pre, 0, 1, NULL, 0, &n_tok);
    }
    int32_t *t = NULL;
    if (st == OSCAR_OK && !(t = malloc((n_tok ? n_tok : 1) * sizeof *t))) st = OSCAR_ERROR_OUT_OF_HOST_MEMORY;
    if (st == OSCAR_OK) st = oscar_model_tokenize(model, text, len + pre, 0, 1, t, n_tok, &n_tok);
    free(text);
    if (st != OSCAR_OK) {
        free(t);
        return st;
    }
    *out = t;
    *n = (uint32_t)n_tok;
    return OSCAR_OK;
}

/* Greedy generation for n prompts at once on sequences seqs[n] of a session: each sequence is
 * reset and prefilled with prompts[i][prompt_len[i]], then up to max_new tokens are chosen by
 * the device's argmax, all live sequences in one decode step; a sequence stops after an
 * end-of-generation token (kept). out: [n][max_new] tokens, out_len[n] how many. */
static oscar_status greedy_batch(oscar_session *s, const oscar_model *model, const int32_t *seqs, uint32_t n,
                                 int32_t *const *prompts, const uint32_t *prompt_len, uint32_t max_new, int32_t *out,
                                 uint32_t *out_len)
{
    oscar_status st = OSCAR_OK;
    int32_t *act_seq = malloc((size_t)n * sizeof *act_seq);  /* [n] live sequences of this step */
    int32_t *act_tok = malloc((size_t)n * sizeof *act_tok);  /* [n] their last token */
    uint32_t *act_idx = malloc((size_t)n * sizeof *act_idx); /* [n] their prompt index */
    if (!act_seq || !act_tok || !act_idx) {
        st = OSCAR_ERROR_OUT_OF_HOST_MEMORY;
        goto out;
    }
    for (uint32_t i = 0; i < n; i++) {
        int32_t tok = 0;
        st = oscar_session_seq_reset(s, seqs[i]);
        if (st == OSCAR_OK) st = oscar_session_prefill(s, seqs[i], prompts[i], prompt_len[i], NULL);
        if (st == OSCAR_OK) st = oscar_session_last_argmax(s, &tok, 1);
        if (st != OSCAR_OK) goto out;
        out[(size_t)i * max_new] = tok;
        out_len[i] = max_new ? 1 : 0;
    }
    for (;;) {
        uint32_t na = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (out_len[i] == 0 || out_len[i] >= max_new) continue;
            int32_t last = out[(size_t)i * max_new + out_len[i] - 1];
            if (oscar_model_is_eog(model, last)) continue;
            act_seq[na] = seqs[i], act_tok[na] = last, act_idx[na] = i, na++;
        }
        if (na == 0) break;
        st = oscar_session_decode(s, na, act_seq, act_tok, NULL);
        if (st == OSCAR_OK) st = oscar_session_last_argmax(s, act_tok, na);
        if (st != OSCAR_OK) goto out;
        for (uint32_t j = 0; j < na; j++) {
            uint32_t i = act_idx[j];
            out[(size_t)i * max_new + out_len[i]++] = act_tok[j];
        }
    }
out:
    free(act_seq), free(act_tok), free(act_idx);
    return st;
}

/* A session for a mode; one line on failure (returns 0). */
static int open_session(app_model *m, const q_mode *mode, uint32_t n_ctx, uint32_t n_seq, uint32_t sink,
                        uint32_t recent, uint32_t group, oscar_session **s, int32_t *seqs)
{
    oscar_session_params sp = oscar_session_params_default();
    sp.group_size = group;
    sp.kv_mode = mode->kv;
    sp.n_ctx = n_ctx;
    sp.n_seq_max = n_seq;
    sp.rotations = mode->rot;
    sp.sink_tokens = sink;
    sp.recent_tokens = recent;
    oscar_status st = oscar_session_create(m->model, &sp, s);
    for (uint32_t i = 0; i < n_seq && st == OSCAR_OK; i++) st = oscar_session_seq_add(*s, &seqs[i]);
    if (st != OSCAR_OK) {
        char what[128];
        snprintf(what, sizeof what, "mode %s: session for %u x %u tokens", mode->name, n_seq, n_ctx);
        app_fail(PROG, what, st);
        oscar_session_destroy(*s);
        *s = NULL;
        return 0;
    }
    return 1;
}

/* Writes argv as a shell command line (arguments with special characters in single quotes). */
static void print_command(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        const char *s = i == 0 ? (strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0]) : argv[i];
        int plain = *s != 0;
        for (const char *p = s; *p; p++)
            if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%", *p)) plain = 0;
        if (i) putchar(' ');
        if (plain) fputs(s, stdout);
        else {
            putchar('\'');
            for (const char *p = s; *p; p++) *p == '\'' ? fputs("'\\''", stdout) : putchar(*p);
            putchar('\'');
        }
    }
}

/* ---- passkey prompts ----------------------------------------------------------------------------- */

typedef struct pk_prompt {
    int32_t *tokens;              /* [n] chat-formatted prompt, answer prefix included */
    uint32_t n;
    uint32_t key;                 /* 10000..99999 */
} pk_prompt;

/* The user text with n_sent filler sentences and the key sentence before sentence `at`. */
static char *pk_text(uint32_t n_sent, uint32_t at, uint32_t key)
{
    size_t cap = strlen(pk_intro) + strlen(pk_question) + 128;
    for (uint32_t i = 0; i < n_sent; i++) cap += strlen(filler_sentences[i % N_FILLER]) + 1;
    char *t = malloc(cap), *p = t;
    if (!t) return NULL;
    p += sprintf(p, "%s", pk_intro);
    for (uint32_t i = 0; i <= n_sent; i++) {
        if (i == at) p += sprintf(p, "%sThe pass key is %05u. Remember it. %05u is the pass key.", p == t + strlen(pk_intro) ? "" : " ", key, key);
        if (i < n_sent) p += sprintf(p, "%s%s", p == t + strlen(pk_intro) ? "" : " ", filler_sentences[i % N_FILLER]);
    }
    sprintf(p, "%s", pk_question);
    return t;
}

/* Tokens of the prompt with n_sent filler sentences (the key at `depth` of them). */
static oscar_status pk_tokens(const oscar_model *model, uint32_t n_sent, double depth, uint32_t key, int32_t **t,
                              uint32_t *n)
{
    char *text = pk_text(n_sent, (uint32_t)(depth * n_sent + 0.5), key);
    if (!text) return OSCAR_ERROR_OUT_OF_HOST_MEMORY;
    oscar_status st = chat_tokens(model, text, pk_answer_prefix, t, n);
    free(text);
    return st;
}

/* Builds the prompt of one trial with the most filler sentences that keep it within
 * max_tokens. *n_sent: in, a first guess (the previous trial's count, or 0 for an estimate
 * from the tokens per sentence); out, the count used. INVALID_ARGUMENT when not even zero
 * filler sentences fit. */
static oscar_status pk_build(const oscar_model *model, uint32_t max_tokens, double depth, uint32_t key, uint32_t *n_sent,
                             pk_prompt *out)
{
    memset(out, 0, sizeof *out);
    out->key = key;
    int32_t *t = NULL;
    uint32_t n = 0, est = *n_sent;
    oscar_status st;
    if (est == 0) {
        st = pk_tokens(model, 0, depth, key, &t, &n);
        if (st != OSCAR_OK) return st;
        free(t);
        if (n > max_tokens) return OSCAR_ERROR_INVALID_ARGUMENT;
        size_t per = 0, len = 0; /* filler tokens per sentence, mean over the set */
        for (uint32_t i = 0; i < N_FILLER; i++) {
            char buf[256];
            snprintf(buf, sizeof buf, " %s", filler_sentences[i]);
            st = oscar_model_tokenize(model, buf, strlen(buf), 0, 0, NULL, 0, &len);
            if (st != OSCAR_OK) return st;
            per += len;
        }
        est = (uint32_t)((size_t)(max_tokens - n) * N_FILLER / (per ? per : 1));
    }
    /* walk down until it fits, then up while the next one fits too */
    for (;;) {
        st = pk_tokens(model, est, depth, key, &t, &n);
        if (st != OSCAR_OK) return st;
        if (n <= max_tokens || est == 0) break;
        free(t);
        est--;
    }
    if (n > max_tokens) {
        free(t);
        return OSCAR_ERROR_INVALID_ARGUMENT;
    }
    for (;;) {
        int32_t *t2 = NULL;
        uint32_t n2 = 0;
        st = pk_tokens(model, est + 1, depth, key, &t2, &n2);
        if (st != OSCAR_OK) {
            free(t);
            return st;
        }
        if (n2 > max_tokens) {
            free(t2);
            break;
        }
        free(t);
        t = t2, n = n2, est++;
    }
    out->tokens = t, out->n = n;
    *n_sent = est;
    return OSCAR_OK;
}

/* ---- the perplexity report ------------------------------------------------------------------------ */

typedef struct ppl_result {
    double ppl, err;              /* NAN when not run */
    double change, change_err;    /* ppl / the baseline's - 1 and its paired standard error (modes after the first) */
} ppl_result;

typedef ppl_result ppl_results[MAX_MODES][MAX_TEXTS][APP_MAX_LIST]; /* [mode][text][context] */

/* A table's header rule after its header row: the mode column, then n right-aligned columns. */
static void print_rule(uint32_t n)
{
    printf("\n| --- |");
    for (uint32_t ci = 0; ci < n; ci++) printf(" ---: |");
    printf("\n");
}

/* The table of text x: a row per mode, a column per context. */
static void print_ppl_table(const q_args *a, uint32_t x, const ppl_results ppl, const uint32_t *ctx_eff,
                            uint32_t n_ctx_eff, const uint32_t *chunks)
{
    printf("| mode |");
    for (uint32_t ci = 0; ci < n_ctx_eff; ci++) printf(" ctx %u (%u chunks) |", ctx_eff[ci], chunks[ci]);
    print_rule(n_ctx_eff);
    for (uint32_t mi = 0; mi < a->n_modes; mi++) {
        printf("| %s |", a->modes[mi].name);
        for (uint32_t ci = 0; ci < n_ctx_eff; ci++) {
            const ppl_result *r = &ppl[mi][x][ci];
            if (!isfinite(r->ppl)) printf(" — |");
            else if (mi == 0 || !isfinite(r->change)) printf(" %.4f ± %.4f |", r->ppl, r->err);
            else printf(" %.4f ± %.4f (%+.2f%% ± %.2f%%) |", r->ppl, r->err, 100.0 * r->change, 100.0 * r->change_err);
        }
        printf("\n");
    }
    for (uint32_t ci = 0; ci < n_ctx_eff; ci++)
        if (chunks[ci] == 0) printf("\nctx %u: the text is shorter than one chunk.\n", ctx_eff[ci]);
}

/* The mean over texts: for the baseline the geometric mean of the texts' perplexities, for every
 * other mode the mean of the texts' changes ± sqrt(sum of their squared paired errors) / n, and
 * the largest change with its text. A context counts the texts long enough for one chunk. */
static void print_ppl_mean(const q_args *a, const ppl_results ppl, const uint32_t *ctx_eff, uint32_t n_ctx_eff,
                           const uint32_t (*chunks)[APP_MAX_LIST])
{
    printf("\n### Mean over %u texts\n\n", a->n_files);
    printf("%s: geometric mean of the texts' perplexities. Other modes: mean of the texts' changes against %s "
           "± sqrt(sum of their squared paired errors) / n; in brackets the largest change and its text.\n\n",
           a->modes[0].name, a->modes[0].name);
    printf("| mode |");
    for (uint32_t ci = 0; ci < n_ctx_eff; ci++) {
        uint32_t n = 0;
        for (uint32_t x = 0; x < a->n_files; x++) n += chunks[x][ci] > 0;
        printf(" ctx %u (%u texts) |", ctx_eff[ci], n);
    }
    print_rule(n_ctx_eff);
    for (uint32_t mi = 0; mi < a->n_modes; mi++) {
        printf("| %s |", a->modes[mi].name);
        for (uint32_t ci = 0; ci < n_ctx_eff; ci++) {
            double sum = 0, var = 0, worst = -INFINITY;
            uint32_t n = 0, worst_x = 0;
            for (uint32_t x = 0; x < a->n_files; x++) {
                const ppl_result *r = &ppl[mi][x][ci];
                double v = mi == 0 ? log(r->ppl) : r->change;
                if (!isfinite(v)) continue;
                sum += v, n++;
                if (mi == 0) continue;
                var += r->change_err * r->change_err;
                if (v > worst) worst = v, worst_x = x;
            }
            if (n == 0) printf(" — |");
            else if (mi == 0) printf(" %.4f |", exp(sum / n));
            else
                printf(" %+.2f%% ± %.2f%% (max %+.2f%% %s) |", 100.0 * sum / n, 100.0 * sqrt(var) / n, 100.0 * worst,
                       a->text_names[worst_x]);
        }
        printf("\n");
    }
}

/* ---- main ---------------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    q_args a;
    int rc;
    app_log_init();
    if (parse_args(argc, argv, &a, &rc)) return rc;
    rc = 1;

    app_model m;
    memset(&m, 0, sizeof m);
    char *text[MAX_TEXTS] = { 0 };
    int32_t *tokens[MAX_TEXTS] = { 0 }, *seqs = NULL; /* [text][n_tokens[text]] */
    float *logits = NULL;
    double *chunk_nll = NULL, *base_nll = NULL; /* [chunks] this run's NLL sums; [text][n_ctx][max chunks] the baseline's */
    const int32_t **chunk_ptr = NULL;           /* [chunks] the first token of each chunk of this run */
    size_t text_len[MAX_TEXTS] = { 0 }, n_tokens[MAX_TEXTS] = { 0 };
    int32_t bos = -1;
    oscar_status st = OSCAR_OK;
    oscar_session *s = NULL;
    const uint32_t NX = a.n_files;
    /* results */
    static ppl_results ppl;
    uint32_t ctx_eff[APP_MAX_LIST], n_ctx_eff = 0, ctx_chunks[MAX_TEXTS][APP_MAX_LIST];
    int ctx_capped = 0;
    uint32_t pk_ok[MAX_MODES][APP_MAX_LIST][N_DEPTHS];
    double pk_seconds[MAX_MODES];
    pk_prompt *pk = NULL;                       /* [n_pk_len][N_DEPTHS][trials] */
    uint32_t pk_len_ok[APP_MAX_LIST], pk_max_n[APP_MAX_LIST], pk_min_n[APP_MAX_LIST];
    int32_t *ag_prompt[N_AGREE_PROMPTS] = { 0 };
    uint32_t ag_prompt_n[N_AGREE_PROMPTS] = { 0 };
    int32_t *ag_base = NULL, *ag_out = NULL;    /* [n_prompts][agree_tokens] baseline's and mode's tokens */
    uint32_t *ag_base_len = NULL, *ag_out_len = NULL; /* [n_prompts] */
    double ag_frac[MAX_WINDOWS][MAX_MODES];     /* mean common-prefix fraction */
    uint32_t ag_same[MAX_WINDOWS][MAX_MODES], ag_all_fp16[MAX_WINDOWS];
    uint32_t ag_total_min[MAX_WINDOWS], ag_total_max[MAX_WINDOWS]; /* prompt + baseline answer, tokens */
    double ag_base_mean_len[MAX_WINDOWS];                           /* baseline answer, tokens */
    const uint32_t n_pk_all = N_DEPTHS * a.pk_trials;
    const uint32_t P = a.parallel;

    for (uint32_t i = 0; i < MAX_MODES; i++)
        for (uint32_t x = 0; x < MAX_TEXTS; x++)
            for (uint32_t j = 0; j < APP_MAX_LIST; j++) {
                ppl_result *r = &ppl[i][x][j];
                r->ppl = r->err = r->change = r->change_err = NAN;
            }
    memset(pk_ok, 0, sizeof pk_ok);
    memset(pk_seconds, 0, sizeof pk_seconds);
    memset(ag_frac, 0, sizeof ag_frac);
    memset(ag_same, 0, sizeof ag_same);
    memset(ag_all_fp16, 0, sizeof ag_all_fp16);
    memset(ag_total_min, 0, sizeof ag_total_min);
    memset(ag_total_max, 0, sizeof ag_total_max);
    memset(ag_base_mean_len, 0, sizeof ag_base_mean_len);

    /* inputs first: text, model, every rotation file (so a bad one costs no evaluation) */
    for (uint32_t x = 0; x < NX; x++)
        if (!(text[x] = app_read_text(PROG, a.files[x], "text file", APP_MAX_TEXT_BYTES, &text_len[x]))) goto out;
    if (!app_model_open(PROG, a.model, a.device, NULL, 1, &m)) goto out;
    for (uint32_t i = 0; i < a.n_modes; i++)
        if (a.modes[i].rot_path && !app_rotation_load(PROG, a.modes[i].rot_path, m.model, &a.modes[i].rot)) goto out;
    const uint32_t V = m.info.n_vocab, n_ctx_train = m.info.n_ctx_train ? m.info.n_ctx_train : (1u << 20);
    oscar_device_info dev;
    memset(&dev, 0, sizeof dev);
    (void)oscar_context_device_info(m.ctx, &dev);

    size_t n_tokens_all = 0;
    for (uint32_t x = 0; x < NX; x++) {
        st = app_tokenize_text(m.model, text[x], text_len[x], &tokens[x], &n_tokens[x], &bos);
        if (st != OSCAR_OK) goto api_fail;
        n_tokens_all += n_tokens[x];
    }
    /* contexts: capped at n_ctx_train, duplicates dropped */
    for (uint32_t i = 0; i < a.n_ctx; i++) {
        uint32_t c = a.ctx[i] > n_ctx_train ? n_ctx_train : a.ctx[i];
        ctx_capped |= c != a.ctx[i];
        int dup = 0;
        for (uint32_t j = 0; j < n_ctx_eff; j++) dup |= ctx_eff[j] == c;
        if (!dup) ctx_eff[n_ctx_eff++] = c;
    }
    for (uint32_t x = 0; x < NX; x++)
        for (uint32_t i = 0; i < n_ctx_eff; i++) {
            ctx_chunks[x][i] = (uint32_t)(n_tokens[x] / ctx_eff[i]);
            if (a.max_chunks && ctx_chunks[x][i] > a.max_chunks) ctx_chunks[x][i] = a.max_chunks;
        }

    /* passkey prompts, the same for every mode */
    uint32_t pk_ctx = 0;
    if (a.do_passkey) {
        pk = calloc((size_t)a.n_pk_len * n_pk_all, sizeof *pk);
        if (!pk) goto oom;
        for (uint32_t li = 0; li < a.n_pk_len; li++) {
            pk_len_ok[li] = a.pk_len[li] <= n_ctx_train && a.pk_len[li] >= 2 * PK_ANSWER_TOKENS;
            pk_max_n[li] = 0, pk_min_n[li] = UINT32_MAX;
            if (!pk_len_ok[li]) continue;
            uint32_t n_sent = 0; /* estimated by the first trial */
            for (uint32_t d = 0; d < N_DEPTHS && pk_len_ok[li]; d++)
                for (uint32_t t = 0; t < a.pk_trials; t++) {
                    uint32_t key = 10000 + (uint32_t)(mix64(a.seed ^ mix64(((uint64_t)a.pk_len[li] << 24) | (d << 16) | t)) % 90000);
                    pk_prompt *p = &pk[(size_t)li * n_pk_all + d * a.pk_trials + t];
                    st = pk_build(m.model, a.pk_len[li] - PK_ANSWER_TOKENS, pk_depths[d], key, &n_sent, p);
                    if (st == OSCAR_ERROR_INVALID_ARGUMENT) {
                        pk_len_ok[li] = 0; /* not even the bare question fits */
                        st = OSCAR_OK;
                        break;
                    }
                    if (st != OSCAR_OK) goto api_fail;
                    if (p->n > pk_max_n[li]) pk_max_n[li] = p->n;
                    if (p->n < pk_min_n[li]) pk_min_n[li] = p->n;
                }
            if (pk_len_ok[li] && pk_max_n[li] + PK_ANSWER_TOKENS > pk_ctx) pk_ctx = pk_max_n[li] + PK_ANSWER_TOKENS;
        }
    }

    /* agreement prompts */
    const uint32_t NP = a.agree_n_prompts, NT = a.agree_tokens;
    uint32_t ag_ctx = 0;
    if (a.do_agree) {
        for (uint32_t i = 0; i < NP; i++) {
            st = chat_tokens(m.model, agree_prompts[i], NULL, &ag_prompt[i], &ag_prompt_n[i]);
            if (st != OSCAR_OK) goto api_fail;
            if (ag_prompt_n[i] + NT > ag_ctx) ag_ctx = ag_prompt_n[i] + NT;
        }
        if (ag_ctx > n_ctx_train) {
            fprintf(stderr, PROG ": --agree-tokens %u: prompt and answer need %u tokens, more than the model's %u\n", NT,
                    ag_ctx, n_ctx_train);
            goto out;
        }
        ag_base = malloc((size_t)NP * NT * sizeof *ag_base);
        ag_out = malloc((size_t)NP * NT * sizeof *ag_out);
        ag_base_len = calloc(NP, sizeof *ag_base_len);
        ag_out_len = calloc(NP, sizeof *ag_out_len);
        if (!ag_base || !ag_out || !ag_base_len || !ag_out_len) goto oom;
    }

    seqs = malloc((size_t)P * sizeof *seqs);                 /* [P] */
    logits = malloc((size_t)P * V * sizeof *logits);         /* [P][n_vocab] */
    uint32_t max_chunks = 1, all_chunks = 1; /* the most chunks of a text, and of all texts, at one context */
    for (uint32_t i = 0; i < n_ctx_eff; i++) {
        uint32_t sum = 0;
        for (uint32_t x = 0; x < NX; x++) {
            max_chunks = ctx_chunks[x][i] > max_chunks ? ctx_chunks[x][i] : max_chunks;
            sum += ctx_chunks[x][i];
        }
        all_chunks = sum > all_chunks ? sum : all_chunks;
    }
    chunk_nll = malloc((size_t)all_chunks * sizeof *chunk_nll);   /* [chunks of all texts] NLL sums */
    chunk_ptr = malloc((size_t)all_chunks * sizeof *chunk_ptr);   /* [chunks of all texts] their first tokens */
    base_nll = malloc((size_t)NX * (n_ctx_eff ? n_ctx_eff : 1) * max_chunks * sizeof *base_nll);
    if (!seqs || !logits || !chunk_nll || !chunk_ptr || !base_nll) goto oom;
    fprintf(stderr, PROG ": %s, %u modes, %u text%s, %zu tokens\n", m.info.name[0] ? m.info.name : a.model, a.n_modes, NX,
            NX == 1 ? "" : "s", n_tokens_all);

    double t_all = app_now();
    for (uint32_t mi = 0; mi < a.n_modes; mi++) {
        const q_mode *mode = &a.modes[mi];
        /* 1. perplexity, a context at a time: every text's chunks decode together, P at a time */
        for (uint32_t ci = 0; a.do_ppl && ci < n_ctx_eff; ci++) {
            uint32_t ctx = ctx_eff[ci], nc = 0;
            for (uint32_t x = 0; x < NX; x++)
                for (uint32_t c = 0; c < ctx_chunks[x][ci]; c++) chunk_ptr[nc++] = tokens[x] + (size_t)c * ctx;
            if (nc == 0) continue;
            uint32_t np = nc < P ? nc : P;
            double t0 = app_now();
            if (!open_session(&m, mode, ctx, np, a.sink, a.recent, a.group, &s, seqs)) goto out;
            st = app_ppl_eval_chunks(s, seqs, np, chunk_ptr, ctx, nc, bos, V, logits, chunk_nll, NULL);
            oscar_session_destroy(s);
            s = NULL;
            if (st != OSCAR_OK) goto api_fail;
            double seconds = app_now() - t0;
            for (uint32_t x = 0, first = 0; x < NX; first += ctx_chunks[x][ci], x++) {
                uint32_t n = ctx_chunks[x][ci];
                const double *nll = chunk_nll + first; /* this text's chunks */
                ppl_result *r = &ppl[mi][x][ci];
                if (n == 0) continue;
                r->ppl = app_ppl_summary(nll, n, ctx - 1 - ctx / 2, &r->err, NULL);
                double *base = base_nll + ((size_t)x * n_ctx_eff + ci) * max_chunks;
                if (mi == 0) memcpy(base, nll, n * sizeof *base);
                else r->change = app_ppl_ratio(nll, base, n, ctx - 1 - ctx / 2, &r->change_err) - 1;
                fprintf(stderr, PROG ": [%s] %s ppl ctx %u: %.4f +/- %.4f (%u chunks)\n", mode->name, a.text_names[x], ctx,
                        r->ppl, r->err, n);
            }
            fprintf(stderr, PROG ": [%s] ppl ctx %u: %u chunks of %u text%s, %u at a time, %.1f s\n", mode->name, ctx, nc, NX,
                    NX == 1 ? "" : "s", np, seconds);
        }
        /* 2. passkey */
        if (a.do_passkey && pk_ctx) {
            double t0 = app_now();
            uint32_t np = n_pk_all < P ? n_pk_all : P;
            int32_t *answers = malloc((size_t)np * PK_ANSWER_TOKENS * sizeof *answers); /* [np][16] */
            uint32_t ans_len[256];
            int32_t *prompts[256];
            uint32_t prompt_n[256];
            char piece[512];
            if (!answers) goto oom;
            if (!open_session(&m, mode, pk_ctx, np, a.sink, a.recent, a.group, &s, seqs)) {
                free(answers);
                goto out;
            }
            for (uint32_t li = 0; li < a.n_pk_len && st == OSCAR_OK; li++) {
                if (!pk_len_ok[li]) continue;
                for (uint32_t k0 = 0; k0 < n_pk_all && st == OSCAR_OK; k0 += np) {
                    uint32_t nb = n_pk_all - k0 < np ? n_pk_all - k0 : np;
                    for (uint32_t j = 0; j < nb; j++) {
                        prompts[j] = pk[(size_t)li * n_pk_all + k0 + j].tokens;
                        prompt_n[j] = pk[(size_t)li * n_pk_all + k0 + j].n;
                    }
                    st = greedy_batch(s, m.model, seqs, nb, prompts, prompt_n, PK_ANSWER_TOKENS, answers, ans_len);
                    for (uint32_t j = 0; j < nb && st == OSCAR_OK; j++) {
                        size_t len = 0;
                        st = oscar_model_detokenize(m.model, answers + (size_t)j * PK_ANSWER_TOKENS, ans_len[j], 0, piece,
                                                    sizeof piece - 1, &len);
                        if (st != OSCAR_OK) break;
                        piece[len < sizeof piece - 1 ? len : sizeof piece - 1] = 0;
                        char want[16];
                        snprintf(want, sizeof want, "%05u", pk[(size_t)li * n_pk_all + k0 + j].key);
                        pk_ok[mi][li][(k0 + j) / a.pk_trials] += strstr(piece, want) != NULL;
                    }
                }
            }
            free(answers);
            oscar_session_destroy(s);
            s = NULL;
            if (st != OSCAR_OK) goto api_fail;
            pk_seconds[mi] = app_now() - t0;
            fprintf(stderr, PROG ": [%s] passkey done (%.1f s)\n", mode->name, pk_seconds[mi]);
        }
    }

    /* 3. agreement: window pair outer, modes inner (the baseline first), so one baseline
     * buffer serves each pair */
    for (uint32_t wi = 0; a.do_agree && wi < a.n_agree_sink; wi++) {
        for (uint32_t mi = 0; mi < a.n_modes; mi++) {
            const q_mode *mode = &a.modes[mi];
            double t0 = app_now();
            uint32_t np = NP < P ? NP : P;
            int32_t *dst = mi == 0 ? ag_base : ag_out;
            uint32_t *dst_len = mi == 0 ? ag_base_len : ag_out_len;
            if (!open_session(&m, mode, ag_ctx, np, a.agree_sink[wi], a.agree_recent[wi], a.group, &s, seqs)) goto out;
            for (uint32_t k0 = 0; k0 < NP && st == OSCAR_OK; k0 += np) {
                uint32_t nb = NP - k0 < np ? NP - k0 : np;
                st = greedy_batch(s, m.model, seqs, nb, ag_prompt + k0, ag_prompt_n + k0, NT, dst + (size_t)k0 * NT,
                                  dst_len + k0);
            }
            oscar_session_destroy(s);
            s = NULL;
            if (st != OSCAR_OK) goto api_fail;
            if (mi == 0) {
                uint32_t w = a.agree_sink[wi] + a.agree_recent[wi];
                double sum_len = 0;
                ag_total_max[wi] = 0, ag_total_min[wi] = UINT32_MAX;
                for (uint32_t k = 0; k < NP; k++) {
                    uint32_t total = ag_prompt_n[k] + ag_base_len[k];
                    ag_all_fp16[wi] += total <= w;
                    ag_total_max[wi] = total > ag_total_max[wi] ? total : ag_total_max[wi];
                    ag_total_min[wi] = total < ag_total_min[wi] ? total : ag_total_min[wi];
                    sum_len += ag_base_len[k];
                }
                ag_base_mean_len[wi] = sum_len / NP;
                ag_frac[wi][0] = 1.0, ag_same[wi][0] = NP;
                continue;
            }
            double frac = 0;
            for (uint32_t k = 0; k < NP; k++) {
                const int32_t *b = ag_base + (size_t)k * NT, *o = ag_out + (size_t)k * NT;
                uint32_t nb = ag_base_len[k], pre = 0;
                while (pre < nb && pre < ag_out_len[k] && b[pre] == o[pre]) pre++;
                frac += nb ? (double)pre / nb : 1.0;
                ag_same[wi][mi] += pre == nb && ag_out_len[k] == nb;
            }
            ag_frac[wi][mi] = frac / NP;
            fprintf(stderr, PROG ": [%s] agreement (windows %u+%u): %.3f, %u/%u identical (%.1f s)\n", mode->name,
                    a.agree_sink[wi], a.agree_recent[wi], ag_frac[wi][mi], ag_same[wi][mi], NP, app_now() - t0);
        }
    }
    double t_total = app_now() - t_all;

    /* ---- the report ---- */
    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    const char *base = a.modes[0].name;
    printf("# KV-cache quality: %s\n\n", m.info.name[0] ? m.info.name : a.model);
    printf("Generated by `oscar-quality` (apps/oscar-quality.c) on %s.\n\n", date);
    printf("- command: `");
    print_command(argc, argv);
    printf("`\n");
    printf("- model: `%s` (%s, %u layers, %u heads / %u KV heads, head_dim %u, n_ctx_train %u), fingerprint `%s`\n",
           a.model, m.info.arch, m.info.n_layer, m.info.n_head, m.info.n_head_kv, m.info.head_dim, m.info.n_ctx_train,
           m.info.fingerprint_hex);
    printf("- device: %s (%s %s), oscar-vk %s\n", dev.name, dev.driver_name, dev.driver_info, oscar_version_string());
    printf("- fp16 windows of the INT2 modes: %u sink + %u recent tokens (perplexity and passkey)\n", a.sink, a.recent);
    if (a.group) printf("- INT2 groups of %u elements (--group-size)\n", a.group);
    printf("- total time %.1f s\n\n", t_total);
    printf("| mode | KV mode | rotation file |\n| --- | --- | --- |\n");
    for (uint32_t i = 0; i < a.n_modes; i++)
        printf("| %s%s | %s | %s |\n", a.modes[i].name, i == 0 ? " (baseline)" : "", oscar_kv_mode_name(a.modes[i].kv),
               a.modes[i].rot_path ? a.modes[i].rot_path : "—");

    if (a.do_ppl) {
        printf("\n## Perplexity\n\n");
        printf("Non-overlapping chunks of ctx tokens%s; the first half prefilled, the second half decoded one token "
               "per step (tokens leaving the recent window are quantized as in real use); tokens ctx/2+1 .. ctx-1 "
               "scored. Value ± standard error over chunks; in brackets the change relative to %s ± its paired "
               "standard error (from the spread of the per-chunk changes: the chunks' spread in difficulty, which "
               "the first error holds, cancels).%s\n",
               bos >= 0 ? " (BOS first)" : "", base,
               ctx_capped ? " Contexts above the model's n_ctx_train were capped to it." : "");
        for (uint32_t x = 0; x < NX; x++) {
            if (NX > 1) printf("\n### %s\n", a.text_names[x]);
            printf("\nText `%s`, %zu tokens.\n\n", a.files[x], n_tokens[x]);
            print_ppl_table(&a, x, ppl, ctx_eff, n_ctx_eff, ctx_chunks[x]);
        }
        if (NX > 1) print_ppl_mean(&a, ppl, ctx_eff, n_ctx_eff, ctx_chunks);
    }

    if (a.do_passkey) {
        printf("\n## Passkey retrieval\n\n");
        printf("Filler of neutral sentences with \"The pass key is NNNNN. Remember it. NNNNN is the pass key.\" at "
               "depth 10%%, 50%%, 90%%, then \"What is the pass key?\" in the chat template, answer prefix \"%s\"; "
               "greedy answer of up to %d tokens; success when the 5 digits appear. %u trials (different keys, seed "
               "%llu) per depth and length; L = the longest prompt allowed (actual prompt lengths below).\n\n",
               pk_answer_prefix, PK_ANSWER_TOKENS, a.pk_trials, (unsigned long long)a.seed);
        printf("| mode |");
        for (uint32_t li = 0; li < a.n_pk_len; li++)
            for (uint32_t d = 0; d < N_DEPTHS; d++) printf(" L %u @ %.0f%% |", a.pk_len[li], pk_depths[d] * 100);
        printf(" all |\n| --- |");
        for (uint32_t li = 0; li < a.n_pk_len; li++)
            for (uint32_t d = 0; d < N_DEPTHS; d++) printf(" ---: |");
        printf(" ---: |\n");
        for (uint32_t mi = 0; mi < a.n_modes; mi++) {
            uint32_t ok = 0, all = 0;
            printf("| %s |", a.modes[mi].name);
            for (uint32_t li = 0; li < a.n_pk_len; li++)
                for (uint32_t d = 0; d < N_DEPTHS; d++) {
                    if (!pk_len_ok[li]) {
                        printf(" — |");
                        continue;
                    }
                    printf(" %u/%u |", pk_ok[mi][li][d], a.pk_trials);
                    ok += pk_ok[mi][li][d], all += a.pk_trials;
                }
            if (all) printf(" %.0f%% |\n", 100.0 * ok / all);
            else printf(" — |\n");
        }
        printf("\n");
        for (uint32_t li = 0; li < a.n_pk_len; li++) {
            if (pk_len_ok[li]) printf("- L %u: prompts of %u..%u tokens\n", a.pk_len[li], pk_min_n[li], pk_max_n[li]);
            else if (a.pk_len[li] > n_ctx_train) printf("- L %u: skipped, longer than the model's context %u\n", a.pk_len[li], n_ctx_train);
            else printf("- L %u: skipped, too short for the question\n", a.pk_len[li]);
        }
    }

    if (a.do_agree) {
        printf("\n## Greedy agreement with %s\n\n", base);
        printf("%u built-in prompts (apps/oscar-quality.c) in the chat template, up to %u greedy tokens each "
               "(stopping at end of generation). Agreement = tokens before the "
               "first divergence / the baseline's answer length, averaged over prompts; identical = the whole answer "
               "matches. The baseline uses the same windows but stores everything in fp16 when it is fp16.\n",
               NP, NT);
        for (uint32_t wi = 0; wi < a.n_agree_sink; wi++) {
            uint32_t w = a.agree_sink[wi] + a.agree_recent[wi];
            printf("\n### fp16 windows %u sink + %u recent\n\n", a.agree_sink[wi], a.agree_recent[wi]);
            printf("%s's answers average %.1f tokens; prompt + answer: %u..%u tokens; %u of %u stay within the "
                   "%u fp16 window tokens, so %s.\n\n",
                   base, ag_base_mean_len[wi], ag_total_min[wi], ag_total_max[wi], ag_all_fp16[wi], NP, w,
                   ag_all_fp16[wi] == NP ? "**no token is ever quantized: every mode is fp16 here and must agree**"
                   : ag_all_fp16[wi] ? "only the others have INT2 tokens"
                                     : "every one has INT2 tokens");
            printf("| mode | agreement | identical |\n| --- | ---: | ---: |\n");
            for (uint32_t mi = 0; mi < a.n_modes; mi++)
                printf("| %s%s | %.1f%% | %u/%u |\n", a.modes[mi].name, mi == 0 ? " (baseline)" : "",
                       100.0 * ag_frac[wi][mi], ag_same[wi][mi], NP);
        }
    }
    fflush(stdout);
    rc = ferror(stdout) ? 1 : 0;
    if (rc) fprintf(stderr, PROG ": cannot write the report to stdout\n");
    goto out;

oom:
    fprintf(stderr, PROG ": out of host memory\n");
    goto out;
api_fail:
    if (st == APP_PPL_NOT_FINITE) fprintf(stderr, PROG ": the model computed NaN or infinite logits: its weights are corrupt\n");
    else app_fail(PROG, NULL, st);
out:
    oscar_session_destroy(s);
    for (uint32_t x = 0; x < NX; x++) free(text[x]), free(tokens[x]);
    free(seqs), free(logits), free(chunk_nll), free(chunk_ptr), free(base_nll);
    if (pk)
        for (size_t i = 0; i < (size_t)a.n_pk_len * n_pk_all; i++) free(pk[i].tokens);
    free(pk);
    for (uint32_t i = 0; i < N_AGREE_PROMPTS; i++) free(ag_prompt[i]);
    free(ag_base), free(ag_out), free(ag_base_len), free(ag_out_len);
    for (uint32_t i = 0; i < a.n_modes; i++) oscar_rotation_set_destroy(a.modes[i].rot);
    if (m.ctx || m.model) app_model_close(&m);
    return rc;
}
