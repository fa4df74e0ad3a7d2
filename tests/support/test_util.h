/* Minimal test harness shared by every tests/test_*.c.
 *
 * A test file is a main() that calls CHECK*(...) and ends with `return test_finish();`.
 * Exit status: 0 all checks passed, 1 some failed, 77 skipped (ctest reports SKIPPED; use
 * test_skip() when no Vulkan device exists, never pass silently). */
#ifndef OSCAR_TEST_UTIL_H
#define OSCAR_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define TEST_SKIP_CODE 77

extern int test_checks_passed, test_checks_failed;

#define CHECK(cond)                                                                         \
    do {                                                                                    \
        if (cond) test_checks_passed++;                                                     \
        else { test_checks_failed++; fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                \
    do {                                                                                    \
        if (cond) test_checks_passed++;                                                     \
        else { test_checks_failed++; fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
               fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); }                         \
    } while (0)

/* Checks an oscar_status-returning expression is OSCAR_OK; prints oscar_last_error() if not. */
#define CHECK_OK(expr)                                                                      \
    do {                                                                                    \
        int check_ok_st_ = (int)(expr);                                                     \
        CHECK_MSG(check_ok_st_ == 0, "%s -> %d: %s", #expr, check_ok_st_, oscar_last_error()); \
    } while (0)

/* Checks an expression returns the expected status. */
#define CHECK_STATUS(expr, want)                                                            \
    do {                                                                                    \
        int check_st_ = (int)(expr);                                                        \
        CHECK_MSG(check_st_ == (int)(want), "%s -> %d, want %d (%s)", #expr, check_st_, (int)(want), oscar_last_error()); \
    } while (0)

/* Prints "N passed, N failed" and returns the exit status for main(). */
int test_finish(void);
/* Prints why and exits with TEST_SKIP_CODE. */
void test_skip(const char *why);

/* Deterministic random numbers (xorshift64*), so failures reproduce. */
void test_rng_seed(uint64_t seed);
uint32_t test_rng_u32(void);
float test_rng_uniform(void);   /* [0, 1) */
float test_rng_normal(void);    /* N(0, 1) */

/* Seconds on a monotonic clock. */
double test_now(void);

/* The test's scratch folder: test_tmp_dir_make creates /tmp/<prefix>_XXXXXX (skips the test
 * when it cannot), test_tmp_path returns "<folder>/<name>" (valid until the folder is removed),
 * test_tmp_dir_remove deletes the folder, everything in it, and the returned paths. */
const char *test_tmp_dir_make(const char *prefix);
const char *test_tmp_path(const char *name);
void test_tmp_dir_remove(void);

/* Reads a whole file into a malloc'ed buffer with a NUL after its *size bytes (size may be
 * NULL). NULL when it cannot be opened or read. */
char *test_read_file(const char *path, size_t *size);

/* 1 when a writer's temporary file for `path` is left beside it ("<path>.<anything>.tmp"). */
int test_tmp_leftover(const char *path);

/* n random orthogonal d x d matrices r [n][d][d] (Gram-Schmidt on Gaussian rows, twice, in
 * double). Such an R is not symmetric, so using Rᵀ by mistake shows. */
void test_random_orthogonal(float *r, uint32_t n, uint32_t d);

/* Normalised squared error: sum (a-b)^2 / sum b^2 (b is the reference); 0 when both are 0. */
double test_nse(const float *a, const float *ref, size_t n);

#endif
