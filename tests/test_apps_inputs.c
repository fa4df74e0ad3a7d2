/* The programs given what users give them: files that are not files, outputs that are inputs,
 * damaged models, flags of other tools, Ctrl-C at the wrong moment. Each program is run as a
 * user runs it (fork/exec from build/apps and build/, tests/support/test_proc.h) on a generated
 * model (2 layers, n_embd 128, 2 heads / 1 KV head of 64, Q4_0, trained context 1024).
 *
 *  1. --help of every program and mode: usage on stdout, nothing on stderr, exit 0.
 *  2. Inputs that are not regular files (a FIFO as the model, the rotation file, the text or
 *     the prompt file; /dev/zero as a text; a folder): one line and a non-zero exit, at once
 *     (a FIFO opened for reading blocks forever: the timeout would catch a hang). A missing
 *     file says why (strerror). A text over 512 MiB (a sparse file) is refused by its size.
 *  3. oscar-calib's output: the model itself, through a symlink and a hard link, the text, or
 *     /dev/null: refused, the input untouched; a user's "<out>.tmp" survives a calibration,
 *     and no temporary file is left beside the output.
 *  4. Damaged models: output_norm all NaN (refused at load, naming the tensor), token_embd all
 *     NaN (perplexity and chat report non-finite logits, non-zero exit), a tokenizer shorter
 *     than the embedding (refused at load), no tokenizer at all.
 *  5. Usage: --rot with fp16, int2 or int2-hadamard ("--rot needs --kv oscar"); the model and
 *     rotation file swapped (a hint naming the fix); a text file as the model; an unknown flag
 *     and a bad number; a JSON output that is the model (refused, the model untouched); --ctx past the trained context (one
 *     warning line); llama.cpp's flags (-c -s -sys -n -1 --top-k 0 -f -cnv; -ngl -t -fa noted);
 *     -p mode's context-full line without the chat's /reset advice.
 *  6. Messages: a rotation file with a clip ratio of 1.5 is one plain line; the status name
 *     and the source locations appear only with --verbose or OSCAR_LOG=1.
 *  7. /kv: bits per element of the stored data per region (fp16 16, INT2 2.5 at groups of 64)
 *     and the room left, not the page overhead as bits.
 *  8. oscar-info --bandwidth larger than a storage binding: the size printed is the one
 *     measured. oscar-bench decode --gen tiny with its default contexts and batches runs on
 *     a device with a 128 MiB binding (cut to fit, with a note).
 *  9. Ctrl-C while a long prompt is read: the turn stops, the chat goes on (exit 0).
 * 10. oscar-perplexity with stderr on a terminal (a pseudo-terminal here) shows its progress
 *     and the time left there; with stderr in a file it writes nothing there.
 */
#define _XOPEN_SOURCE 700 /* posix_openpt */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model_gen.h"
#include "oscar/oscar.h"
#include "test_files.h"
#include "test_proc.h"
#include "test_tiny_model.h"
#include "test_util.h"

static char apps_dir[4096], calib_path[4200];
static const char *tmp_dir;

static test_run_result run(const char *app, const char *const *args, const char *in)
{
    char path[4300];
    if (!strcmp(app, "oscar-calib")) snprintf(path, sizeof path, "%s", calib_path);
    else snprintf(path, sizeof path, "%s/%s", apps_dir, app);
    return test_run(path, args, in, tmp_dir, 180);
}

/* A failing run: exit 1..127 (no crash, no timeout), one line on stderr containing each of the
 * needles (NULL-terminated). */
static void expect_error(const char *what, const char *app, const char *const *args, const char *const *needles)
{
    test_run_result r = run(app, args, NULL);
    CHECK_MSG(r.code > 0 && r.code < 128, "%s: exit %d", what, r.code);
    CHECK_MSG(test_count_lines(r.err) == 1, "%s: stderr has %d lines: %s", what, test_count_lines(r.err), r.err);
    for (size_t i = 0; needles && needles[i]; i++) CHECK_MSG(strstr(r.err, needles[i]), "%s: no '%s' in: %s", what, needles[i], r.err);
    printf("  %-40s exit %d: %s", what, r.code, r.err);
    test_run_free(&r);
}

static int expect_ok(const char *what, const test_run_result *r)
{
    CHECK_MSG(r->code == 0, "%s: exit %d, stderr: %s", what, r->code, r->err);
    CHECK_MSG(!strstr(r->err, "alidation"), "%s: validation messages: %s", what, r->err);
    printf("  %-40s exit %d in %.1f s\n", what, r->code, r->seconds);
    return r->code == 0;
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static void write_text(const char *path, const char *text, int repeat)
{
    FILE *f = fopen(path, "w");
    for (int i = 0; f && i < repeat; i++) fputs(text, f);
    if (f) fclose(f);
}

/* ---- 1. help --------------------------------------------------------------------------------- */

static void help(void)
{
    printf("--help:\n");
    static const char *const progs[][2] = { { "oscar-chat", NULL },      { "oscar-perplexity", NULL }, { "oscar-info", NULL },
                                            { "oscar-bench", NULL },     { "oscar-bench", "decode" },  { "oscar-bench", "attention" },
                                            { "oscar-bench", "ops" },    { "oscar-bench", "floor" },   { "oscar-gen-model", NULL },
                                            { "oscar-quality", NULL },   { "oscar-calib", NULL } };
    for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++) {
        const char *args[3] = { progs[i][1] ? progs[i][1] : "--help", progs[i][1] ? "--help" : NULL, NULL };
        test_run_result r = run(progs[i][0], args, NULL);
        CHECK_MSG(r.code == 0 && strlen(r.out) > 40 && r.err[0] == 0, "%s %s --help: exit %d, stdout %zu bytes, stderr: %s",
                  progs[i][0], progs[i][1] ? progs[i][1] : "", r.code, strlen(r.out), r.err);
        test_run_free(&r);
    }
}

/* ---- 2. inputs that are not regular files ------------------------------------------------------ */

static void not_files(const char *model, const char *zoo, const char *text)
{
    printf("inputs that are not files:\n");
    const char *fifo = test_tmp_path("fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    const char *big = test_tmp_path("big.txt");
    int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)513 << 20) == 0); /* sparse: no disk used */
    if (fd >= 0) close(fd);
    const char *nf[] = { "not a regular file", NULL }, *folder[] = { "is a folder", NULL };
    const char *why[] = { "No such file or directory", NULL }, *large[] = { "larger than 512 MiB", NULL };

    const char *a1[] = { "-m", fifo, "-p", "hi", NULL };
    expect_error("chat: a FIFO as the model", "oscar-chat", a1, nf);
    const char *a2[] = { "-m", model, "--rot", fifo, "-p", "hi", NULL };
    expect_error("chat: a FIFO as --rot", "oscar-chat", a2, nf);
    const char *a3[] = { "-m", model, "-f", fifo, NULL };
    expect_error("chat: a FIFO as -f", "oscar-chat", a3, nf);
    const char *a4[] = { "-m", tmp_dir, "-p", "hi", NULL };
    expect_error("chat: a folder as the model", "oscar-chat", a4, folder);
    const char *b1[] = { "-m", model, "-f", "/dev/zero", NULL };
    expect_error("perplexity: /dev/zero as the text", "oscar-perplexity", b1, nf);
    const char *b2[] = { "-m", model, "-f", fifo, NULL };
    expect_error("perplexity: a FIFO as the text", "oscar-perplexity", b2, nf);
    const char *b3[] = { "-m", model, "-f", test_tmp_path("nope.txt"), NULL };
    expect_error("perplexity: a missing text says why", "oscar-perplexity", b3, why);
    const char *b4[] = { "-m", model, "-f", big, NULL };
    expect_error("perplexity: a text over 512 MiB", "oscar-perplexity", b4, large);
    const char *c1[] = { "-m", model, "--text", fifo, "-o", test_tmp_path("o.rot.gguf"), "-q", NULL };
    expect_error("calib: a FIFO as --text", "oscar-calib", c1, nf);
    const char *c2[] = { "-m", fifo, "--text", text, "-o", test_tmp_path("o.rot.gguf"), "-q", NULL };
    expect_error("calib: a FIFO as the model", "oscar-calib", c2, nf);
    const char *c3[] = { "-m", model, "--rot", zoo, "-p", "hi", "-m", test_tmp_path("nope.gguf"), NULL };
    expect_error("chat: a missing model says why", "oscar-chat", c3, why);
    unlink(big);
}

/* ---- 3. oscar-calib's output ------------------------------------------------------------------- */

static void calib_output(const char *model, const char *text)
{
    printf("oscar-calib output:\n");
    long size = file_size(model);
    const char *sym = test_tmp_path("link.gguf"), *hard = test_tmp_path("hard.gguf");
    CHECK(symlink(model, sym) == 0);
    CHECK(link(model, hard) == 0);
    const char *outs[] = { model, sym, hard, text };
    const char *names[] = { "-o the model", "-o a symlink to the model", "-o a hard link to the model", "-o the text" };
    for (int i = 0; i < 4; i++) {
        const char *args[] = { "-m", model, "--text", text, "-o", outs[i], "-q", "--tokens", "512", "--seq-len", "128", NULL };
        const char *needles[] = { "would replace", NULL };
        expect_error(names[i], "oscar-calib", args, needles);
        CHECK_MSG(!test_tmp_leftover(outs[i]), "%s: a temporary file is left", names[i]);
    }
    CHECK_MSG(file_size(model) == size && file_size(text) > 0, "an input changed: model %ld bytes (was %ld)", file_size(model), size);
    struct stat sb;
    const char *dn[] = { "-m", model, "--text", text, "-o", "/dev/null", "-q", NULL }, *not_reg[] = { "not a regular file", NULL };
    expect_error("-o /dev/null", "oscar-calib", dn, not_reg);
    CHECK(stat("/dev/null", &sb) == 0 && S_ISCHR(sb.st_mode));

    /* a user's file named like the old temporary file is not touched; nothing is left behind */
    const char *out = test_tmp_path("out.rot.gguf"), *users = test_tmp_path("out.rot.gguf.tmp");
    write_text(users, "mine", 1);
    const char *ok_args[] = { "-m", model, "--text", text, "-o", out, "-q", "--tokens", "512", "--seq-len", "128", NULL };
    test_run_result r = run("oscar-calib", ok_args, NULL);
    if (expect_ok("calibration beside a user's .tmp file", &r)) {
        char *u = test_slurp(users);
        CHECK_MSG(!strcmp(u, "mine"), "the user's file now holds '%s'", u);
        free(u);
        CHECK(file_size(out) > 0 && !test_tmp_leftover(out));
    }
    test_run_free(&r);
    unlink(sym), unlink(hard);
}

/* ---- 4. damaged models --------------------------------------------------------------------------- */

static void damaged(const char *model, const char *text)
{
    printf("damaged models:\n");
    char cmd[8400];
    const char *nan_norm = test_tmp_path("nan-norm.gguf"), *nan_embd = test_tmp_path("nan-embd.gguf");
    snprintf(cmd, sizeof cmd, "cp '%s' '%s' && cp '%s' '%s'", model, nan_norm, model, nan_embd);
    CHECK(system(cmd) == 0);
    const uint32_t nan32 = 0x7FC00000u;
    CHECK(test_fill_tensor(nan_norm, "output_norm.weight", &nan32, 4));
    uint8_t q4_nan[18] = { 0x00, 0x7E }; /* Q4_0 blocks whose fp16 scale is NaN */
    memset(q4_nan + 2, 0x88, 16);
    CHECK(test_fill_tensor(nan_embd, "token_embd.weight", q4_nan, sizeof q4_nan));

    const char *a1[] = { "-m", nan_norm, "-p", "hi", NULL }, *n1[] = { "output_norm", "NaN", NULL };
    expect_error("chat: output_norm all NaN", "oscar-chat", a1, n1);
    const char *a2[] = { "-m", nan_norm, "-f", text, "--ctx", "64", NULL };
    expect_error("perplexity: output_norm all NaN", "oscar-perplexity", a2, n1);
    const char *a3[] = { "-m", nan_embd, "-f", text, "--ctx", "64", "--chunks", "1", NULL }, *n3[] = { "NaN or infinite", NULL };
    expect_error("perplexity: token_embd all NaN", "oscar-perplexity", a3, n3);
    const char *a4[] = { "-m", nan_embd, "-p", "hi", "-n", "4", NULL };
    expect_error("chat: token_embd all NaN", "oscar-chat", a4, n3);

    const char *short_vocab = test_tmp_path("short-vocab.gguf");
    CHECK(test_cut_vocabulary(model, short_vocab, 300));
    const char *a5[] = { "-m", short_vocab, "-p", "hi", NULL }, *n5[] = { "300 tokens", "320 rows", NULL };
    expect_error("chat: tokenizer shorter than token_embd", "oscar-chat", a5, n5);

    ovk_model_gen_params gp = ovk_model_gen_params_default(OSCAR_ARCH_LLAMA);
    gp.n_embd = 128, gp.n_head = 2, gp.n_head_kv = 1, gp.head_dim = 64, gp.n_ff = 256;
    gp.tokenizer = 0;
    const char *no_tok = test_tmp_path("no-tokenizer.gguf");
    CHECK_OK(ovk_model_gen_write(&gp, no_tok));
    const char *a6[] = { "-m", no_tok, "-p", "hi", NULL }, *n6[] = { "no tokenizer", NULL };
    expect_error("chat: a model without a tokenizer", "oscar-chat", a6, n6);
}

/* ---- 5. usage ------------------------------------------------------------------------------------ */

static void usage(const char *model, const char *zoo, const char *text, uint32_t n_prompt)
{
    printf("usage:\n");
    static const char *const modes[] = { "fp16", "int2", "int2-hadamard" };
    const char *need[] = { "--rot needs --kv oscar", NULL };
    for (int i = 0; i < 3; i++) {
        char what[64];
        const char *a[] = { "-m", model, "--kv", modes[i], "--rot", zoo, "-p", "hi", NULL };
        snprintf(what, sizeof what, "chat --kv %s --rot", modes[i]);
        expect_error(what, "oscar-chat", a, need);
        const char *b[] = { "-m", model, "-f", text, "--kv", modes[i], "--rot", zoo, NULL };
        snprintf(what, sizeof what, "perplexity --kv %s --rot", modes[i]);
        expect_error(what, "oscar-perplexity", b, need);
    }
    const char *sw[] = { "-m", zoo, "--rot", model, "-p", "hi", NULL }, *hint[] = { "is a rotation file", "did you mean", NULL };
    expect_error("chat: model and rotation file swapped", "oscar-chat", sw, hint);
    const char *sw2[] = { "-m", model, "--kv", "oscar", "--rot", model, "-p", "hi", NULL }, *is_model[] = { "is a model", NULL };
    expect_error("chat: a model as --rot", "oscar-chat", sw2, is_model);

    const char *nt[] = { "-m", text, "-p", "hi", NULL }, *not_gguf[] = { "not a GGUF file", NULL };
    expect_error("chat: a text file as the model", "oscar-chat", nt, not_gguf);
    const char *ub[] = { "decode", "--bogus", NULL }, *unknown[] = { "unknown option '--bogus'", NULL };
    expect_error("bench decode --bogus", "oscar-bench", ub, unknown);
    const char *gm[] = { "-o", test_tmp_path("g.gguf"), "--layers", "abc", NULL }, *num[] = { "--layers needs a whole number", NULL };
    expect_error("gen-model --layers abc", "oscar-gen-model", gm, num);
    const char *js[] = { "decode", "-m", model, "--json", model, "--kv", "fp16", "--contexts", "64", "--batch", "1",
                         "--prompt", "8", "--steps", "1", NULL }, *also[] = { "is also an input", NULL };
    long size = file_size(model);
    expect_error("bench decode --json the model", "oscar-bench", js, also);
    CHECK_MSG(file_size(model) == size, "the model changed: %ld bytes, was %ld", file_size(model), size);

    test_run_result r;
    const char *w[] = { "-m", model, "--ctx", "2048", "-p", "hi", "-n", "2", NULL };
    r = run("oscar-chat", w, NULL);
    if (expect_ok("chat --ctx past the trained context", &r))
        CHECK_MSG(strstr(r.err, "warning: the model was trained on 1024") && test_count_lines(r.err) == 2, "stderr: %s", r.err);
    test_run_free(&r);

    const char *ll[] = { "-m", model, "-c", "256", "-s", "7", "-sys", "Be brief.", "-n", "-1", "--top-k", "0", "--temp", "0.7",
                         "-ngl", "99", "-t", "4", "-fa", "-p", "Hello", NULL };
    r = run("oscar-chat", ll, NULL);
    if (expect_ok("chat with llama.cpp's flags", &r))
        CHECK_MSG(strstr(r.err, "-ngl 99 ignored") && strstr(r.err, "-t 4 ignored") && strstr(r.err, "-fa ignored"),
                  "notes: %s", r.err);
    test_run_free(&r);

    const char *prompt = test_tmp_path("prompt.txt"), *in = test_tmp_path("quit.txt");
    write_text(prompt, "Hello, who are you?\n", 1);
    write_text(in, "/quit\n", 1);
    const char *f[] = { "-m", model, "-f", prompt, "-n", "3", NULL };
    r = run("oscar-chat", f, NULL);
    if (expect_ok("chat -f FILE", &r)) CHECK_MSG(strstr(r.err, "decode 3 tokens"), "stats: %s", r.err);
    test_run_free(&r);
    const char *cnv[] = { "-m", model, "-cnv", "-p", "Hello", "-n", "3", NULL };
    r = run("oscar-chat", cnv, in);
    if (expect_ok("chat -cnv -p: a chat opened by -p", &r)) CHECK_MSG(strstr(r.out, "> Hello\n"), "stdout: %s", r.out);
    test_run_free(&r);

    /* -p: the answer fills the context; the line says so without the chat's /reset */
    char ctx[16];
    snprintf(ctx, sizeof ctx, "%u", n_prompt + 6);
    const char *full[] = { "-m", model, "--ctx", ctx, "-p", "Hello, who are you?", NULL };
    r = run("oscar-chat", full, NULL);
    if (expect_ok("chat -p filling the context", &r))
        CHECK_MSG(strstr(r.err, "is full (--ctx)") && !strstr(r.err, "/reset"), "stderr: %s", r.err);
    test_run_free(&r);
}

/* ---- 6. messages --------------------------------------------------------------------------------- */

static void messages(const char *model, const oscar_model_info *info)
{
    printf("messages:\n");
    const char *bad = test_tmp_path("clip15.rot.gguf");
    CHECK_OK(test_write_identity_zoo(bad, info, info->fingerprint_hex, 1.5f));
    const char *plain[] = { "-m", model, "--rot", bad, "-p", "hi", NULL };
    test_run_result r = run("oscar-chat", plain, NULL);
    CHECK_MSG(r.code == 1 && test_count_lines(r.err) == 1 && strstr(r.err, "clip_k[0] = 1.5 is not in (0, 1]") &&
                  !strstr(r.err, ".c:") && !strstr(r.err, "OSCAR_ERROR"),
              "plain: exit %d: %s", r.code, r.err);
    printf("  %-40s %s", "plain", r.err);
    test_run_free(&r);
    const char *verbose[] = { "-m", model, "--rot", bad, "-p", "hi", "--verbose", NULL };
    r = run("oscar-chat", verbose, NULL);
    CHECK_MSG(r.code == 1 && test_count_lines(r.err) == 1 && strstr(r.err, "rotation_set.c:") && strstr(r.err, "OSCAR_ERROR_BAD_FORMAT"),
              "--verbose: exit %d: %s", r.code, r.err);
    printf("  %-40s %s", "--verbose", r.err);
    test_run_free(&r);
    setenv("OSCAR_LOG", "1", 1);
    r = run("oscar-chat", plain, NULL);
    unsetenv("OSCAR_LOG");
    CHECK_MSG(r.code == 1 && strstr(r.err, "rotation_set.c:") && strstr(r.err, "OSCAR_ERROR_BAD_FORMAT"), "OSCAR_LOG=1: %s", r.err);
    const char *loc = strstr(r.err, "rotation_set.c:");
    CHECK_MSG(loc && !strstr(loc + 1, "rotation_set.c:"), "one source location: %s", r.err);
    test_run_free(&r);
}

/* ---- 7. /kv -------------------------------------------------------------------------------------- */

static void kv_figures(const char *model)
{
    printf("/kv:\n");
    const char *in = test_tmp_path("kv.txt");
    write_text(in, "The quick brown fox jumps over the lazy dog, then runs home across the long green field.\n/kv\n/quit\n", 1);
    static const char *const modes[] = { "fp16", "int2" };
    static const char *const bits[] = { "16.00 bits per element", "2.50 bits per element" };
    for (int i = 0; i < 2; i++) {
        const char *args[] = { "-m", model, "-n", "8", "--kv", modes[i], "--sink", "4", "--recent", "8", NULL };
        test_run_result r = run("oscar-chat", args, in);
        char what[32];
        snprintf(what, sizeof what, "/kv in %s", modes[i]);
        if (expect_ok(what, &r)) {
            const char *kv = strstr(r.out, "KV cache, mode");
            CHECK_MSG(kv && strstr(kv, bits[i]) && strstr(kv, "room: ") && !strstr(kv, "new sequence"), "%s: %s", what, kv ? kv : r.out);
            if (i == 0) CHECK_MSG(kv && !strstr(kv, "INT2 region") && !strstr(kv, "17."), "%s: %s", what, kv ? kv : r.out);
            if (i == 1) CHECK_MSG(kv && strstr(kv, "16.00 bits per element") && strstr(kv, "on average"), "%s: %s", what, kv ? kv : "");
            if (kv) printf("%s", kv);
        }
        test_run_free(&r);
    }
}

/* ---- 8. device limits ---------------------------------------------------------------------------- */

static void device_limits(void)
{
    printf("device limits:\n");
    const char *bw[] = { "--bandwidth", "60000", NULL };
    test_run_result r = run("oscar-info", bw, NULL);
    if (expect_ok("info --bandwidth 60000", &r)) {
        const char *lim = strstr(r.out, "storage binding"), *meas = strstr(r.out, "read bandwidth:");
        unsigned long long limit = 0, mib = 0;
        CHECK_MSG(lim && sscanf(lim, "storage binding %llu", &limit) == 1 && meas && (meas = strstr(meas, "GB/s (")) &&
                      sscanf(meas, "GB/s (%llu MiB", &mib) == 1 && mib > 0 && mib <= limit >> 20,
                  "measured %llu MiB with a binding of %llu bytes: %s", mib, limit, r.out);
        CHECK_MSG(mib == 60000 || strstr(r.err, "cut to"), "no note for the cut: %s", r.err);
    }
    test_run_free(&r);
    /* the default contexts and batches (one layer and one timed step, to keep it short) */
    const char *dec[] = { "decode", "--gen", "tiny", "--layers", "1", "--tmp", tmp_dir, "--fill", "synthetic", "--prompt", "64",
                          "--steps", "1", NULL };
    char path[4300];
    snprintf(path, sizeof path, "%s/oscar-bench", apps_dir);
    r = test_run(path, dec, NULL, tmp_dir, 600);
    if (expect_ok("bench decode --gen tiny, default lists", &r))
        CHECK_MSG(strstr(r.out, "int2   batch 32") && strstr(r.out, "fp16   batch 32") && !strstr(r.err, "skipped"),
                  "no decode points: %s %s", r.out, r.err);
    test_run_free(&r);
}

/* ---- 9. Ctrl-C while the prompt is read -------------------------------------------------------- */

static void interrupt_prefill(const char *model)
{
    printf("Ctrl-C while the prompt is read:\n");
    const char *in = test_tmp_path("long.txt");
    FILE *f = fopen(in, "w");
    for (int i = 0; f && i < 180; i++) fputs("the quick brown fox jumps over the lazy dog ", f);
    if (f) fputs("\nHello there\n/stats\n/quit\n", f), fclose(f);
    char path[4300];
    snprintf(path, sizeof path, "%s/oscar-chat", apps_dir);
    const char *args[] = { "-m", model, "--ctx", "8192", "-n", "4", NULL };
    test_run_result r = test_run_signal(path, args, in, tmp_dir, 600, SIGINT, "type a message", 1.0);
    if (expect_ok("chat: Ctrl-C during a 6K-token prompt", &r)) {
        CHECK_MSG(strstr(r.err, "stopped while reading the prompt"), "stderr: %s", r.err);
        /* the next turn ran on an emptied sequence: its prefill is the whole context */
        unsigned p = 0, d = 0, u = 0;
        const char *s = strstr(r.out, "prefill ");
        CHECK_MSG(s && sscanf(s, "prefill %u tokens %*f tok/s, decode %u tokens %*f tok/s, context %u", &p, &d, &u) == 3 &&
                      u == p + d && p > 0 && p < 100,
                  "stats after the interrupted turn: %s", r.out);
    }
    test_run_free(&r);
}

/* ---- 10. progress on a terminal ---------------------------------------------------------------- */

/* Runs apps_dir/app with stderr on a pseudo-terminal (stdin and stdout /dev/null) and returns
 * what it wrote there (malloc'ed), its exit status in *code. */
static char *run_on_tty(const char *app, const char *const *args, int *code)
{
    char path[4300];
    const char *argv[32];
    int n = 0;
    snprintf(path, sizeof path, "%s/%s", apps_dir, app);
    argv[n++] = path;
    for (; args[n - 1] && n < 31; n++) argv[n] = args[n - 1];
    argv[n] = NULL;
    *code = -1;
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) return NULL;
    const char *slave = ptsname(master);
    fflush(stdout), fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int fs = open(slave, O_RDWR), fn = open("/dev/null", O_RDWR);
        if (fs < 0 || fn < 0) _exit(126);
        dup2(fn, 0), dup2(fn, 1), dup2(fs, 2);
        execv(path, (char *const *)argv);
        _exit(127);
    }
    size_t len = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    double t0 = test_now();
    int status = 0, done = 0;
    while (buf && pid > 0) {
        struct pollfd pfd = { master, POLLIN, 0 };
        if (poll(&pfd, 1, 100) > 0) {
            ssize_t r = read(master, buf + len, cap - 1 - len);
            if (r > 0) len += (size_t)r;
            if (len + 1 >= cap) len = 0; /* keep the tail of a long output */
        }
        if (!done && waitpid(pid, &status, WNOHANG) == pid) done = 1, t0 = test_now() - 590; /* drain a moment more */
        if (test_now() - t0 > 600) break;
    }
    if (!done && pid > 0) kill(pid, SIGKILL), waitpid(pid, &status, 0);
    close(master);
    if (buf) buf[len] = 0;
    *code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return buf;
}

static void progress(const char *model, const char *text)
{
    printf("perplexity progress:\n");
    const char *args[] = { "-m", model, "-f", text, "--ctx", "64", "--chunks", "3", "--parallel", "1", NULL };
    int code = 0;
    char *err = run_on_tty("oscar-perplexity", args, &code);
    CHECK_MSG(code == 0 && err && strstr(err, "tokens scored") && strstr(err, "s left"), "on a terminal: exit %d, stderr: %s", code,
              err ? err : "");
    printf("  %-40s exit %d, progress shown: %s\n", "stderr on a terminal", code, err && strstr(err, "tokens scored") ? "yes" : "no");
    free(err);
    test_run_result r = run("oscar-perplexity", args, NULL);
    if (expect_ok("stderr in a file", &r)) CHECK_MSG(r.err[0] == 0, "stderr: %s", r.err);
    test_run_free(&r);
}

int main(void)
{
    test_apps_require(apps_dir, sizeof apps_dir, "oscar-chat");
    snprintf(calib_path, sizeof calib_path, "%s/../oscar-calib", apps_dir);
    if (access(calib_path, X_OK) != 0) test_skip("oscar-calib is not built");
    tmp_dir = test_tmp_dir_make("oscar_test_apps_inputs");
    double t0 = test_now();

    const char *model = test_tmp_path("tiny.gguf");
    oscar_context *ctx = NULL;
    oscar_model *m = NULL;
    oscar_model_info info;
    if (!test_tiny_model(model, &info, &ctx, &m)) return test_finish();
    /* the -p prompt's length, for a context it fills */
    oscar_chat_message msg = { "user", "Hello, who are you?" };
    char text[512];
    size_t len = 0, n_prompt = 0;
    CHECK_OK(oscar_model_chat_format(m, &msg, 1, 1, NULL, text, sizeof text, &len));
    CHECK_OK(oscar_model_tokenize(m, text, len, 0, 1, NULL, 0, &n_prompt));
    oscar_model_destroy(m);
    oscar_context_destroy(ctx);
    const char *zoo = test_tmp_path("tiny.rot.gguf"), *text_path = test_tmp_path("text.txt");
    CHECK_OK(test_write_identity_zoo(zoo, &info, info.fingerprint_hex, 0.95f));
    write_text(text_path, "The quick brown fox jumps over the lazy dog. Then the fox runs home to the other side of the hill.\n", 60);

    help();
    not_files(model, zoo, text_path);
    calib_output(model, text_path);
    damaged(model, text_path);
    usage(model, zoo, text_path, (uint32_t)n_prompt);
    messages(model, &info);
    kv_figures(model);
    device_limits();
    interrupt_prefill(model);
    progress(model, text_path);

    printf("total %.1f s\n", test_now() - t0);
    test_tmp_dir_remove();
    return test_finish();
}
