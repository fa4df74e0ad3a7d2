#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"

#include <glob.h>

int test_checks_passed, test_checks_failed;
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

int test_finish(void)
{
    printf("%d passed, %d failed\n", test_checks_passed, test_checks_failed);
    if (test_checks_passed + test_checks_failed == 0) {
        fprintf(stderr, "test made no checks\n");
        return 1;
    }
    return test_checks_failed ? 1 : 0;
}

void test_skip(const char *why)
{
    printf("SKIPPED: %s\n", why);
    exit(TEST_SKIP_CODE);
}

void test_rng_seed(uint64_t seed) { rng_state = seed ? seed : 0x9E3779B97F4A7C15ull; }

uint32_t test_rng_u32(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545F4914F6CDD1Dull) >> 32);
}

float test_rng_uniform(void) { return (float)(test_rng_u32() >> 8) * (1.0f / 16777216.0f); }

float test_rng_normal(void)
{
    float u1 = test_rng_uniform(), u2 = test_rng_uniform();
    if (u1 < 1e-7f) u1 = 1e-7f;
    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
}

double test_nse(const float *a, const float *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)ref[i];
        num += d * d;
        den += (double)ref[i] * (double)ref[i];
    }
    if (den == 0) return num == 0 ? 0 : INFINITY;
    return num / den;
}

void test_random_orthogonal(float *r, uint32_t n, uint32_t d)
{
    double *q = malloc(sizeof(double) * d * d);
    for (uint32_t m = 0; m < n; m++) {
        for (uint32_t i = 0; i < d * d; i++) q[i] = test_rng_normal();
        for (int pass = 0; pass < 2; pass++) {
            for (uint32_t i = 0; i < d; i++) {
                for (uint32_t j = 0; j < i; j++) {
                    double dot = 0;
                    for (uint32_t k = 0; k < d; k++) dot += q[i * d + k] * q[j * d + k];
                    for (uint32_t k = 0; k < d; k++) q[i * d + k] -= dot * q[j * d + k];
                }
                double nn = 0;
                for (uint32_t k = 0; k < d; k++) nn += q[i * d + k] * q[i * d + k];
                nn = 1.0 / sqrt(nn);
                for (uint32_t k = 0; k < d; k++) q[i * d + k] *= nn;
            }
        }
        for (uint32_t i = 0; i < d * d; i++) r[(size_t)m * d * d + i] = (float)q[i];
    }
    free(q);
}

char *test_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    size_t n = len > 0 ? (size_t)len : 0;
    char *buf = malloc(n + 1);
    if (buf && fread(buf, 1, n, f) != n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (!buf) return NULL;
    buf[n] = '\0';
    if (size) *size = n;
    return buf;
}

double test_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static char tmp_dir[256];

const char *test_tmp_dir_make(const char *prefix)
{
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/%s_XXXXXX", prefix);
    if (!mkdtemp(tmp_dir)) test_skip("cannot create a temporary folder");
    return tmp_dir;
}

/* Every path handed out, so each stays valid until test_tmp_dir_remove frees them. */
static char **tmp_paths;
static size_t n_tmp_paths;

const char *test_tmp_path(const char *name)
{
    size_t len = strlen(tmp_dir) + strlen(name) + 2;
    char *path = malloc(len);
    char **grown = realloc(tmp_paths, (n_tmp_paths + 1) * sizeof *tmp_paths);
    if (!path || !grown) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    snprintf(path, len, "%s/%s", tmp_dir, name);
    tmp_paths = grown;
    tmp_paths[n_tmp_paths++] = path;
    return path;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

void test_tmp_dir_remove(void)
{
    if (tmp_dir[0] && nftw(tmp_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
        fprintf(stderr, "could not remove %s\n", tmp_dir);
    for (size_t i = 0; i < n_tmp_paths; i++) free(tmp_paths[i]);
    free(tmp_paths);
    tmp_paths = NULL;
    n_tmp_paths = 0;
}

int test_tmp_leftover(const char *path)
{
    char pattern[4200];
    snprintf(pattern, sizeof pattern, "%s.*.tmp", path);
    glob_t g;
    int found = glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc > 0;
    if (found) fprintf(stderr, "left beside %s: %s\n", path, g.gl_pathv[0]);
    globfree(&g);
    return found;
}
