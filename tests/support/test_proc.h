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

/* Runs `path` with args (NULL-terminated, at most 62), stdin from `in` (NULL: /dev/null), its
 * output captured through files in `tmp_dir`, killed after timeout_s. Free with test_run_free. */
test_run_result test_run(const char *path, const char *const *args, const char *in, const char *tmp_dir,
                         double timeout_s);
void test_run_free(test_run_result *r);

/* Reads a whole file into a NUL-terminated malloc'ed string ("" when missing). */
char *test_slurp(const char *path);
/* Number of '\n' in s. */
int test_count_lines(const char *s);

#endif
