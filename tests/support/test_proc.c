/* Running the apps from a test (test_proc.h). */
#define _GNU_SOURCE
#include "test_proc.h"
#include "test_util.h"

#include "oscar/oscar.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

char *test_slurp(const char *path)
{
    size_t n = 0;
    char *s = test_read_file(path, &n);
    if (!s) return calloc(1, 1);
    for (size_t i = 0; i < n; i++) /* a random model may print a NUL byte */
        if (!s[i]) s[i] = '?';
    return s;
}

int test_count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

int test_apps_dir(char *buf, unsigned cap)
{
    const char *env = getenv("OSCAR_APPS_DIR");
    if (env) {
        snprintf(buf, cap, "%s", env);
        return 1;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 0;
    self[n] = 0;
    snprintf(buf, cap, "%s/../apps", dirname(self));
    return 1;
}

void test_apps_require(char *buf, unsigned cap, const char *app)
{
    if (!test_apps_dir(buf, cap)) test_skip("cannot find the apps (set OSCAR_APPS_DIR)");
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/%s", buf, app);
    if (access(probe, X_OK) != 0) test_skip("the apps are not built (OSCAR_BUILD_APPS=OFF?)");
    uint32_t n_dev = 0;
    if (oscar_list_devices(NULL, &n_dev) != OSCAR_OK || n_dev == 0) test_skip("no Vulkan device");
}

long test_copy_head(const char *src, const char *dst, long n)
{
    FILE *f = fopen(src, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    long keep = n < 0 ? size + n : n;
    if (keep < 0) keep = 0;
    if (keep > size) keep = size;
    char *buf = malloc(keep ? (size_t)keep : 1);
    long got = buf ? (long)fread(buf, 1, (size_t)keep, f) : -1;
    fclose(f);
    FILE *o = got == keep ? fopen(dst, "wb") : NULL;
    if (o) {
        got = (long)fwrite(buf, 1, (size_t)keep, o);
        fclose(o);
    }
    free(buf);
    return o ? got : -1;
}

void test_run_free(test_run_result *r)
{
    free(r->out), free(r->err);
    r->out = r->err = NULL;
}

test_run_result test_run(const char *path, const char *const *args, const char *in, const char *tmp_dir,
                         double timeout_s)
{
    return test_run_signal(path, args, in, tmp_dir, timeout_s, 0, NULL, 0);
}

test_run_result test_run_signal(const char *path, const char *const *args, const char *in, const char *tmp_dir,
                                double timeout_s, int signo, const char *after, double delay_s)
{
    test_run_result r = { -1, NULL, NULL, 0 };
    char out_path[4200], err_path[4200];
    snprintf(out_path, sizeof out_path, "%s/stdout.txt", tmp_dir);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", tmp_dir);
    const char *argv[64];
    int n = 0;
    argv[n++] = path;
    for (; args[n - 1] && n < 63; n++) argv[n] = args[n - 1];
    argv[n] = NULL;
    double t0 = test_now();
    fflush(stdout), fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int fi = open(in ? in : "/dev/null", O_RDONLY);
        int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fi < 0 || fo < 0 || fe < 0) _exit(126);
        dup2(fi, 0), dup2(fo, 1), dup2(fe, 2);
        execv(path, (char *const *)argv);
        _exit(127);
    }
    if (pid > 0) {
        int status = 0;
        double t_seen = -1; /* when `after` appeared on stdout */
        for (;;) {
            pid_t w = waitpid(pid, &status, WNOHANG);
            if (w == pid) break;
            if (w < 0 && errno != EINTR) break;
            if (signo && t_seen < 0) {
                char *o = test_slurp(out_path);
                if (strstr(o, after)) t_seen = test_now();
                free(o);
            }
            if (signo && t_seen >= 0 && test_now() - t_seen >= delay_s) {
                kill(pid, signo);
                signo = 0;
            }
            if (test_now() - t0 > timeout_s) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                fprintf(stderr, "%s: killed after %.0f s\n", path, timeout_s);
                break;
            }
            usleep(20000);
        }
        r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    r.seconds = test_now() - t0;
    r.out = test_slurp(out_path);
    r.err = test_slurp(err_path);
    return r;
}
