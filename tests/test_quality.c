/* oscar-quality as a user runs it (fork/exec from build/apps/, or OSCAR_APPS_DIR), on a
 * generated model (2 layers, n_embd 128, 2 heads / 1 KV head of 64, Q4_0, n_ctx_train 256)
 * with a RotationZoo file made by oscar-calib (build/oscar-calib; the oscar mode is left out
 * when the calibrator is not built).
 *
 *  1. A report for fp16 (baseline), int2 and oscar: exit 0, no validation message, the three
 *     sections with a row per mode; perplexities finite and > 1 with a relative column; the
 *     context above n_ctx_train capped (512 -> 256); passkey cells "k/1" and a length longer
 *     than the model's context skipped; agreement tables for two window pairs, where with
 *     the default windows (nothing ever quantized) int2 must agree 100% with fp16.
 *  2. The perplexity of a mode equals oscar-perplexity's for the same context and chunks
 *     (the shared rule, apps/common/app_ppl.c).
 *  3. Two texts: a table each, named after the files, with the same figures as a run on that
 *     text alone, and the mean table: the baseline's geometric mean perplexity, each mode's
 *     mean change, the error sqrt(e1² + e2²) / 2 and the largest change with its text.
 *  4. Bad input: a missing model, text or rotation file, an unknown KV mode, a malformed
 *     --mode, oscar without a file, a rotation file of another model, an unknown option, two
 *     texts of one name: non-zero exit and exactly one line on stderr.
 * About 30 s on lavapipe.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model_gen.h"
#include "oscar/oscar.h"
#include "test_files.h"
#include "test_proc.h"
#include "test_util.h"

static char apps_dir[4096];
static const char *tmp_dir; /* the test's scratch folder */

static test_run_result run_app(const char *app, const char *const *args, double timeout_s)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", apps_dir, app);
    return test_run(path, args, NULL, tmp_dir, timeout_s);
}

static void expect_one_line_error(const char *what, const char *const *args, const char *needle)
{
    test_run_result r = run_app("oscar-quality", args, 120);
    CHECK_MSG(r.code > 0 && r.code < 128, "%s: exit %d", what, r.code);
    CHECK_MSG(test_count_lines(r.err) == 1, "%s: stderr has %d lines: %s", what, test_count_lines(r.err), r.err);
    CHECK_MSG(!needle || strstr(r.err, needle), "%s: stderr lacks '%s': %s", what, needle, r.err);
    printf("  %-32s exit %d: %s", what, r.code, r.err);
    test_run_free(&r);
}

/* The line of a markdown table that starts with "| name " after `from`, or NULL. */
static const char *table_row(const char *from, const char *name)
{
    char key[80];
    snprintf(key, sizeof key, "\n| %s ", name);
    const char *p = from ? strstr(from, key) : NULL;
    return p ? p + 1 : NULL;
}

/* The change and its paired standard error, in percent, of a perplexity cell "v ± e (+c% ± s%)"
 * (cell `col` of a table row); 0 when the cell has no such bracket. */
static int cell_change(const char *row, int col, double *change, double *err)
{
    const char *p = row;
    for (int c = 0; p && c < col; c++) p = strchr(p + 1, '|');
    const char *end = p ? strchr(p + 1, '|') : NULL, *b = p ? strchr(p, '(') : NULL;
    if (!b || !end || b > end) return 0;
    char *q;
    *change = strtod(b + 1, &q);
    if (strncmp(q, "% ± ", strlen("% ± ")) != 0) return 0;
    *err = strtod(q + strlen("% ± "), &q);
    return strncmp(q, "%)", 2) == 0;
}

/* The number in cell `col` (0 = the name) of a table row; NAN when absent. */
static double row_cell(const char *row, int col)
{
    if (!row) return NAN;
    const char *p = row;
    for (int c = 0; c < col; c++) {
        p = strchr(p + 1, '|');
        if (!p || p[1] == '\n') return NAN;
    }
    return strtod(p + 1, NULL);
}

int main(void)
{
    test_apps_require(apps_dir, sizeof apps_dir, "oscar-quality");
    tmp_dir = test_tmp_dir_make("oscar_test_quality");
    double t_all = test_now();

    /* the model, another one (for a mismatching rotation file), and a text */
    ovk_model_gen_params gp = ovk_model_gen_params_default(OSCAR_ARCH_LLAMA);
    gp.n_embd = 128, gp.n_head = 2, gp.n_head_kv = 1, gp.head_dim = 64, gp.n_ff = 256;
    gp.weight_type = gp.embd_type = OSCAR_GGML_TYPE_Q4_0;
    gp.n_ctx_train = 256;
    const char *model = test_tmp_path("tiny.gguf"), *other = test_tmp_path("other.gguf");
    CHECK_OK(ovk_model_gen_write(&gp, model));
    gp.seed = 2;
    CHECK_OK(ovk_model_gen_write(&gp, other));
    const char *text = test_tmp_path("text.txt");
    CHECK(test_write_ppl_text(text));

    /* a RotationZoo file from the calibrator, when it is built */
    char calib[4200], zoo[600], zoo_other[600], ovk_mode[700];
    snprintf(calib, sizeof calib, "%s/../oscar-calib", apps_dir);
    snprintf(zoo, sizeof zoo, "%s", test_tmp_path("tiny.rot.gguf"));
    snprintf(zoo_other, sizeof zoo_other, "%s", test_tmp_path("other.rot.gguf"));
    snprintf(ovk_mode, sizeof ovk_mode, "oscar=oscar:%s", zoo);
    int have_oscar = 0;
    if (access(calib, X_OK) == 0) {
        const char *a1[] = { "-m", model, "--text", text, "--tokens", "512", "--seq-len", "128", "-q", "-o", zoo, NULL };
        test_run_result r = test_run(calib, a1, NULL, tmp_dir, 120);
        CHECK_MSG(r.code == 0, "oscar-calib: exit %d: %s", r.code, r.err);
        test_run_free(&r);
        const char *a2[] = { "-m", other, "--text", text, "--tokens", "256", "--seq-len", "128", "-q", "-o", zoo_other, NULL };
        r = test_run(calib, a2, NULL, tmp_dir, 120);
        CHECK_MSG(r.code == 0, "oscar-calib other: exit %d: %s", r.code, r.err);
        test_run_free(&r);
        have_oscar = access(zoo, R_OK) == 0 && access(zoo_other, R_OK) == 0;
    } else {
        printf("oscar-calib not built: the oscar mode is left out\n");
    }

    /* 1. the report */
    printf("oscar-quality report:\n");
    {
        const char *args[48] = { "-m", model, "-f", text, "--mode", "fp16=fp16", "--mode", "int2=int2",
                                 "--ctx", "64,512", "--max-chunks", "2", "--parallel", "2",
                                 "--passkey-lengths", "200,4096", "--passkey-trials", "1",
                                 "--agree-prompts", "2", "--agree-tokens", "8",
                                 "--agree-sink", "64,2", "--agree-recent", "256,4", NULL };
        if (have_oscar) {
            int n = 0;
            while (args[n]) n++;
            args[n] = "--mode", args[n + 1] = ovk_mode, args[n + 2] = NULL;
        }
        test_run_result r = run_app("oscar-quality", args, 240);
        CHECK_MSG(r.code == 0, "exit %d, stderr: %s", r.code, r.err);
        CHECK_MSG(!strstr(r.err, "alidation"), "validation messages: %s", r.err);
        CHECK_MSG(!strstr(r.err, "runtime error") && !strstr(r.err, "Sanitizer"), "sanitizer report: %s", r.err);
        printf("  report in %.1f s, %d lines\n", r.seconds, test_count_lines(r.out));
        const char *o = r.out;
        const char *s_ppl = strstr(o, "\n## Perplexity"), *s_pk = strstr(o, "\n## Passkey retrieval"),
                   *s_ag = strstr(o, "\n## Greedy agreement with fp16");
        CHECK_MSG(s_ppl && s_pk && s_ag && s_ppl < s_pk && s_pk < s_ag, "sections missing: %s", o);
        CHECK_MSG(strstr(o, "- command: `oscar-quality -m ") != NULL, "no command line: %s", o);
        CHECK_MSG(strstr(o, "fingerprint `") && strstr(o, "- device: ") && strstr(o, " UTC"), "header: %s", o);
        CHECK_MSG(strstr(o, "| ctx 64 (2 chunks) | ctx 256 (2 chunks) |") != NULL, "contexts (256 capped): %s", o);
        const char *modes[] = { "fp16", "int2", "oscar" };
        for (int i = 0; i < 2 + have_oscar; i++) {
            for (int c = 1; c <= 2; c++) {
                double v = row_cell(table_row(s_ppl, modes[i]), c);
                CHECK_MSG(isfinite(v) && v > 1, "ppl of %s, ctx column %d: %g", modes[i], c, v);
            }
            const char *row = table_row(s_ppl, modes[i]);
            const char *eol = row ? strchr(row, '\n') : NULL;
            if (i > 0) CHECK_MSG(row && strstr(row, "%)") && strstr(row, "%)") < eol, "no relative change: %.200s", row);
            double pk = row_cell(table_row(s_pk, modes[i]), 1);
            CHECK_MSG(pk == 0 || pk == 1, "passkey cell of %s: %g", modes[i], pk);
            double ag = row_cell(table_row(s_ag, modes[i]), 1);
            CHECK_MSG(isfinite(ag) && ag >= 0 && ag <= 100, "agreement of %s: %g", modes[i], ag);
        }
        CHECK_MSG(strstr(s_pk ? s_pk : "", "L 4096: skipped, longer than the model's context 256") != NULL,
                  "passkey length above the context: %s", o);
        const char *w1 = strstr(o, "### fp16 windows 64 sink + 256 recent"), *w2 = strstr(o, "### fp16 windows 2 sink + 4 recent");
        CHECK_MSG(w1 && w2 && w1 < w2, "agreement window tables: %s", o);
        CHECK_MSG(w1 && strstr(w1, "no token is ever quantized") != NULL, "the default windows hold every token: %s", o);
        /* nothing quantized: int2 is fp16 there */
        CHECK_MSG(row_cell(table_row(w1, "int2"), 1) == 100.0, "int2 with nothing quantized: %.300s", w1);
        CHECK_MSG(w2 && strstr(w2, "every one has INT2 tokens") != NULL, "small windows: %s", o);
        CHECK_MSG(row_cell(table_row(w2, "fp16"), 1) == 100.0, "baseline with itself: %.300s", w2);

        /* --group-size: int2 in groups of 32 and 64 (head_dim 64; windows of 4 + 8 tokens, so
         * most of each chunk is INT2) store different scales, so their perplexities differ; the
         * rotation file, made for groups of 64, is refused by name. The second run also repeats
         * the baseline as a mode: its change is exactly 0 ± 0 (paired: every chunk's NLL is
         * the baseline's) though its perplexity's own error is not, and int2's change is above 0
         * with a finite paired error. */
        {
            double ppl_g[2] = { NAN, NAN };
            const char *gs[2] = { "32", "64" };
            for (int k = 0; k < 2; k++) {
                const char *ag[] = { "-m", model, "-f", text, "--mode", "fp16=fp16", "--mode", "int2=int2", "--ctx", "256",
                                     "--max-chunks", "2", "--parallel", "2", "--sink", "4", "--recent", "8", "--tasks", "ppl",
                                     "--group-size", gs[k], k ? "--mode" : NULL, "again=fp16", NULL };
                test_run_result g = run_app("oscar-quality", ag, 120);
                char line[64];
                snprintf(line, sizeof line, "- INT2 groups of %s elements (--group-size)", gs[k]);
                const char *gp = strstr(g.out, "\n## Perplexity");
                ppl_g[k] = gp ? row_cell(table_row(gp, "int2"), 1) : NAN;
                if (k) {
                    double c0 = NAN, e0 = NAN, c1 = NAN, e1 = NAN;
                    int ok0 = cell_change(table_row(gp, "again"), 1, &c0, &e0);
                    int ok1 = cell_change(table_row(gp, "int2"), 1, &c1, &e1);
                    const char *again = table_row(gp, "again");
                    CHECK_MSG(ok0 && c0 == 0 && e0 == 0 && again && strstr(again, "± 0.0000 (") == NULL,
                              "the baseline again: %.200s", again ? again : "(no row)");
                    /* nonzero either way: on a random model INT2 noise can lower the perplexity too */
                    CHECK_MSG(ok1 && isfinite(c1) && c1 != 0 && isfinite(e1) && e1 > 0, "int2's paired change: %+g%% ± %g%%", c1,
                              e1);
                    printf("  int2 ctx 256, windows 4 + 8: %+.2f%% ± %.2f%% (paired); the baseline again %+.2f%% ± %.2f%%\n",
                           c1, e1, c0, e0);
                }
                CHECK_MSG(g.code == 0 && strstr(g.out, line) != NULL, "--group-size %s: exit %d: %s %s", gs[k], g.code, g.out,
                          g.err);
                test_run_free(&g);
            }
            CHECK_MSG(isfinite(ppl_g[0]) && isfinite(ppl_g[1]) && ppl_g[0] != ppl_g[1], "int2 at 256: groups of 32 %g, 64 %g",
                      ppl_g[0], ppl_g[1]);
            printf("  int2 ctx 256, windows 4 + 8: groups of 32 %.4f, of 64 %.4f\n", ppl_g[0], ppl_g[1]);
            if (have_oscar) { /* the report has begun (a line on stderr) when the mode's session is made */
                const char *ao[] = { "-m", model, "-f", text, "--mode", "fp16=fp16", "--mode", ovk_mode, "--ctx", "256",
                                     "--max-chunks", "1", "--tasks", "ppl", "--group-size", "32", NULL };
                test_run_result g = run_app("oscar-quality", ao, 120);
                CHECK_MSG(g.code > 0 && g.code < 128 && strstr(g.err, "calibrated for groups of 64") && strstr(g.err, "oscar.group_size"),
                          "a rotation file for other groups: exit %d: %s", g.code, g.err);
                test_run_free(&g);
            }
        }

        /* 2. the same perplexity as oscar-perplexity */
        double q_int2 = row_cell(table_row(s_ppl, "int2"), 1);
        const char *pb[] = { "-m", model, "-f", text, "--ctx", "64", "--chunks", "2", "--kv", "int2", NULL };
        test_run_result p = run_app("oscar-perplexity", pb, 120);
        const char *line = strstr(p.out, "\nppl=");
        double ppl = line ? strtod(line + 5, NULL) : NAN;
        CHECK_MSG(p.code == 0 && fabs(ppl - q_int2) <= 1e-4 * ppl + 1e-4, "oscar-perplexity %g vs oscar-quality %g", ppl,
                  q_int2);
        printf("  int2 ctx 64: oscar-quality %.4f, oscar-perplexity %.6f\n", q_int2, ppl);
        test_run_free(&p);
        if (r.code != 0 || test_checks_failed) printf("%s\n", o);
        test_run_free(&r);
    }

    /* 3. two texts: their tables and the mean */
    printf("two texts:\n");
    {
        const char *other = test_tmp_path("other-text.txt");
        FILE *f = fopen(other, "w");
        CHECK(f != NULL);
        for (int i = 0; f && i < 60; i++)
            fprintf(f, "Dear colleague, thank you for letter %d. The meeting moves to Tuesday at %d o'clock, and the "
                       "minutes will follow by mail.\n", i, 1 + i % 12);
        CHECK(f && fclose(f) == 0);
        const char *common[] = { "-m", model, "--mode", "fp16=fp16", "--mode", "int2=int2", "--ctx", "64,128",
                                 "--max-chunks", "2", "--parallel", "2", "--sink", "4", "--recent", "8", "--tasks", "ppl" };
        const int nc = (int)(sizeof common / sizeof common[0]);
        const char *args[32];
        /* each text alone, then both */
        double alone[2][2][2]; /* [text][ctx][ppl of fp16, change of int2] */
        const char *files[2] = { text, other };
        for (int t = 0; t < 3; t++) {
            int n = 0;
            for (int i = 0; i < nc; i++) args[n++] = common[i];
            if (t != 1) args[n++] = "-f", args[n++] = files[0];
            if (t != 0) args[n++] = "-f", args[n++] = files[1];
            args[n] = NULL;
            test_run_result r = run_app("oscar-quality", args, 120);
            CHECK_MSG(r.code == 0, "texts %d: exit %d: %s", t, r.code, r.err);
            const char *o = r.out ? r.out : "";
            if (t < 2) {
                const char *sec = strstr(o, "\n## Perplexity");
                CHECK_MSG(sec && !strstr(o, "### Mean over"), "one text, no mean table: %s", o);
                for (int c = 0; c < 2; c++) {
                    double e = NAN;
                    alone[t][c][0] = row_cell(table_row(sec, "fp16"), 1 + c);
                    CHECK(cell_change(table_row(sec, "int2"), 1 + c, &alone[t][c][1], &e));
                }
            } else {
                const char *s1 = strstr(o, "\n### text\n"), *s2 = strstr(o, "\n### other-text\n"),
                           *sm = strstr(o, "\n### Mean over 2 texts\n");
                CHECK_MSG(s1 && s2 && sm && s1 < s2 && s2 < sm, "sections per text and the mean: %s", o);
                CHECK_MSG(strstr(o, "| mode | ctx 64 (2 texts) | ctx 128 (2 texts) |") != NULL, "mean header: %s", o);
                double ch[2][2], er[2][2];
                for (int x = 0; x < 2; x++)
                    for (int c = 0; c < 2; c++) {
                        const char *sec = x ? s2 : s1;
                        CHECK(cell_change(table_row(sec, "int2"), 1 + c, &ch[x][c], &er[x][c]));
                        double p = row_cell(table_row(sec, "fp16"), 1 + c);
                        CHECK_MSG(fabs(p - alone[x][c][0]) < 1e-4 && fabs(ch[x][c] - alone[x][c][1]) < 1e-9,
                                  "text %d ctx column %d: %g %+g%% together, %g %+g%% alone", x, c, p, ch[x][c],
                                  alone[x][c][0], alone[x][c][1]);
                    }
                const char *rb = table_row(sm, "fp16"), *ri = table_row(sm, "int2");
                for (int c = 0; c < 2; c++) {
                    double g = row_cell(rb, 1 + c), want_g = sqrt(alone[0][c][0] * alone[1][c][0]);
                    CHECK_MSG(fabs(g - want_g) <= 1e-3 * want_g, "geometric mean ppl, column %d: %g, want %g", c, g, want_g);
                    const char *cell = ri;
                    for (int k = 0; cell && k <= c; k++) cell = strchr(cell + 1, '|');
                    double mean = NAN, err = NAN, mx = NAN;
                    char name[64] = "";
                    CHECK_MSG(cell && sscanf(cell, "| %lf%% ± %lf%% (max %lf%% %63[^)])", &mean, &err, &mx, name) == 4,
                              "mean cell: %.120s", cell ? cell : "(none)");
                    int w = ch[1][c] > ch[0][c];
                    double want_e = sqrt(er[0][c] * er[0][c] + er[1][c] * er[1][c]) / 2;
                    CHECK_MSG(fabs(mean - (ch[0][c] + ch[1][c]) / 2) <= 0.01 && fabs(err - want_e) <= 0.01 &&
                                  fabs(mx - ch[w][c]) <= 0.005 && !strcmp(name, w ? "other-text" : "text"),
                              "mean cell %.120s: want %+.3f%% ± %.3f%% (max %+.2f%% %s)", cell, (ch[0][c] + ch[1][c]) / 2,
                              want_e, ch[w][c], w ? "other-text" : "text");
                    printf("  ctx column %d: int2 %+.2f%% and %+.2f%%, mean %+.2f%% ± %.2f%%, max %s\n", c, ch[0][c],
                           ch[1][c], mean, err, name);
                }
            }
            if (test_checks_failed) printf("%s\n%s\n", o, r.err);
            test_run_free(&r);
        }
    }

    /* 4. bad input */
    printf("bad input:\n");
    {
        const char *a1[] = { "-m", test_tmp_path("missing.gguf"), "-f", text, NULL };
        expect_one_line_error("missing model", a1, "missing.gguf");
        const char *a2[] = { "-m", model, "-f", test_tmp_path("missing.txt"), NULL };
        expect_one_line_error("missing text", a2, "missing.txt");
        const char *a3[] = { "-m", model, "-f", text, "--mode", "x=int3", NULL };
        expect_one_line_error("unknown KV mode", a3, "int3");
        const char *a4[] = { "-m", model, "-f", text, "--mode", "int2", NULL };
        expect_one_line_error("--mode without a name", a4, "NAME=KVMODE");
        const char *a5[] = { "-m", model, "-f", text, "--mode", "o=oscar", NULL };
        expect_one_line_error("oscar without a file", a5, "rotation file");
        const char *a6[] = { "-m", model, "-f", text, "--mode", "o=oscar:/nonexistent/x.rot.gguf", NULL };
        expect_one_line_error("missing rotation file", a6, "x.rot.gguf");
        const char *a7[] = { "-m", model, "-f", text, "--frobnicate", "1", NULL };
        expect_one_line_error("unknown option", a7, "--frobnicate");
        const char *a8[] = { "-m", model, "-f", text, "--mode", "a=fp16", "--mode", "a=int2", NULL };
        expect_one_line_error("a name used twice", a8, "twice");
        const char *a11[] = { "-m", model, "-f", text, "-f", text, NULL };
        expect_one_line_error("one text twice", a11, "twice");
        const char *a10[] = { "-m", model, "-f", text, "--group-size", "48", NULL };
        expect_one_line_error("a group size the cache does not have", a10, "--group-size");
        if (have_oscar) {
            char m_other[700];
            snprintf(m_other, sizeof m_other, "o=oscar:%s", zoo_other);
            const char *a9[] = { "-m", model, "-f", text, "--mode", "fp16=fp16", "--mode", m_other, NULL };
            expect_one_line_error("rotation of another model", a9, "calibrated on another model");
        }
    }

    printf("total %.1f s\n", test_now() - t_all);
    test_tmp_dir_remove();
    return test_finish();
}
