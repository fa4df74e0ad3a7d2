/* Running the apps from a test: fork/exec with stdin/stdout/stderr redirected to files, a
 * timeout, and the output read back. Used by tests that run the programs as a user does.
 */
#ifndef OSCAR_TEST_PROC_H
#define OSCAR_TEST_PROC_H

typedef struct test_run_result {
    int code;         /* exit status; 128+signal when killed; -1 when it could not start */
    char *out, *err;  /* stdout and stderr, NUL-terminated (NUL bytes replaced by '?') */
    double seconds;
} test_run_result;

/* The folder of the apps: $OSCAR_APPS_DIR, else ../apps beside this test binary. Writes it to
 * buf[cap] and returns 1; 0 when it cannot be found. */
int test_apps_dir(char *buf, unsigned cap);

/* test_apps_dir into buf[cap], then skips the test (test_skip) when the apps cannot be found,
 * `app` is not built there, or there is no Vulkan device. */
void test_apps_require(char *buf, unsigned cap, const char *app);

/* Runs `path` with args (NULL-terminated, at most 62), stdin from `in` (NULL: /dev/null), its
 * output captured through files in `tmp_dir`, killed after timeout_s. Free with test_run_free. */
test_run_result test_run(const char *path, const char *const *args, const char *in, const char *tmp_dir,
                         double timeout_s);
/* test_run, and `signo` sent once, delay_s seconds after `after` first appears on stdout
 * (signo 0: none), as a user presses Ctrl-C while the program works. */
test_run_result test_run_signal(const char *path, const char *const *args, const char *in, const char *tmp_dir,
                                double timeout_s, int signo, const char *after, double delay_s);
void test_run_free(test_run_result *r);

/* Reads a whole file into a NUL-terminated malloc'ed string ("" when missing). */
char *test_slurp(const char *path);
/* Writes the first n bytes of src to dst (n < 0: all but the last -n bytes; at most the whole
 * file): a truncated copy. Returns the bytes written, -1 when a file cannot be opened. */
long test_copy_head(const char *src, const char *dst, long n);
/* Number of '\n' in s. */
int test_count_lines(const char *s);

#endif
