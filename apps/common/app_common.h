/* Helpers shared by the apps (linked into every app): number and list parsing with one-line
 * error messages, KV-mode names, a loading progress bar, model + context opening, a UTF-8
 * stream printer and a wall clock.
 *
 * Every parse_* function returns 1 on success; on failure it prints one line
 * "<prog>: <flag>: <what was wrong>" on stderr and returns 0.
 */
#ifndef OSCAR_APP_COMMON_H
#define OSCAR_APP_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "oscar/oscar.h"

#define APP_MAX_LIST 16

/* Seconds on a monotonic clock. */
double app_now(void);

/* A positive integer no larger than max ("4096", "4K" = 4096). */
int app_parse_u32(const char *prog, const char *flag, const char *s, uint32_t max, uint32_t *out);
/* An unsigned 64-bit integer (seeds): decimal or 0x hex. */
int app_parse_u64(const char *prog, const char *flag, const char *s, uint64_t *out);
/* A finite float in [lo, hi]. */
int app_parse_float(const char *prog, const char *flag, const char *s, float lo, float hi, float *out);
/* A comma-separated list of positive integers ("4096,8K,131072"), at most APP_MAX_LIST. */
int app_parse_u32_list(const char *prog, const char *flag, const char *s, uint32_t max, uint32_t *out, uint32_t *n);
/* The same with numbers from min to max (min 0 allows 0), at most max_n of them. */
int app_parse_u32_list_range(const char *prog, const char *flag, const char *s, uint32_t min, uint32_t max,
                             uint32_t max_n, uint32_t *out, uint32_t *n);
/* One KV mode by name: fp16, int2, int2-hadamard, oscar. */
int app_parse_kv_mode(const char *prog, const char *flag, const char *s, oscar_kv_mode *out);
/* A comma-separated list of KV modes, at most 4. */
int app_parse_kv_modes(const char *prog, const char *flag, const char *s, oscar_kv_mode *out, uint32_t *n);

/* A progress callback (oscar_progress_fn) drawing "loading NAME [#####    ]  42%" on stderr
 * while stderr is a terminal; silent otherwise (scripts and tests see no progress output).
 * user: a const char * label. app_progress_clear() erases the bar (before an error line). */
void app_progress(void *user, float fraction);
void app_progress_clear(void);

/* Everything an app needs to run a model: a context on `device` (NULL: the best one, or
 * OSCAR_DEVICE) and the model at `path`, loaded with a progress bar. rot: the rotation file
 * given with it, or NULL (a RotationZoo file given as the model gets the hint "did you mean
 * --rot X?", naming this one as the model). need_tokenizer: a model without one is refused
 * at once rather than at the first prompt. On failure prints one line "<prog>: <path>:
 * <reason>" and returns 0 with nothing left allocated. */
typedef struct app_model {
    oscar_context *ctx;
    oscar_model *model;
    oscar_model_info info;
} app_model;

int app_model_open(const char *prog, const char *path, const char *device, const char *rot, int need_tokenizer,
                   app_model *out);
void app_model_close(app_model *m);

/* Loads a RotationZoo file for the model; prints one line and returns 0 on failure. */
int app_rotation_load(const char *prog, const char *path, const oscar_model *model, oscar_rotation_set **out);

/* One line on stderr when n_ctx is past the context the model was trained for (llama.cpp
 * warns the same way; quality past it is not what the model was made for). */
void app_warn_context(const char *prog, uint32_t n_ctx, const oscar_model_info *info);

/* A flag that takes a value: 1 when f is one of known[] (NULL-terminated) and a value v follows.
 * Else prints one line and returns 0: "<prog>: unknown option 'F' (<cmd> --help lists them)",
 * cmd being the command whose --help lists the flags, or "<prog>: F needs a value". */
int app_flag_with_value(const char *prog, const char *cmd, const char *f, const char *v, const char *const *known);

/* --kv and --rot together: --rot alone selects oscar (*kv is set when kv_set is 0), oscar needs
 * a rotation file and the other modes take none. When they do not fit, prints one line
 * ("--kv oscar needs a rotation file ...", "--rot needs --kv oscar ...") and returns 0. */
int app_check_kv_rot(const char *prog, oscar_kv_mode *kv, int kv_set, const char *rot);

/* Flags of llama.cpp's tools that do not apply here (-ngl, -t, -fa, ...): when argv[*i] is one,
 * prints a one-line note, skips its value (argv[*i + 1], when it takes one) and returns 1. */
int app_skip_llama_flag(const char *prog, int argc, char **argv, int *i);

/* Writes bytes to a FILE in whole UTF-8 characters: a character split across two token
 * pieces is held back until its last byte arrives. Bytes that cannot start or continue a
 * valid character are written as they come (the terminal shows them as it will). */
typedef struct app_utf8_out {
    FILE *f;
    unsigned char held[8]; /* bytes of an incomplete character */
    size_t n_held;
} app_utf8_out;

void app_utf8_write(app_utf8_out *u, const char *bytes, size_t n);
/* Writes whatever is held (end of the stream) and flushes. */
void app_utf8_flush(app_utf8_out *u);

#endif
