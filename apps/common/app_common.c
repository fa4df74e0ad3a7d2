/* Helpers shared by the apps: see app_common.h. */
#include "common/app_common.h"
#include "common/app_io.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double app_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- parsing ------------------------------------------------------------------------------ */

/* Parses one positive integer with an optional K suffix from s; sets *end past it. */
static int parse_one_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out, const char **end_out)
{
    if (*s < '0' || *s > '9') return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) return 0;
    if (*end == 'K' || *end == 'k') {
        v *= 1024;
        end++;
    }
    if (v < min || v > max) return 0;
    *out = (uint32_t)v;
    *end_out = end;
    return 1;
}

int app_parse_u32(const char *prog, const char *flag, const char *s, uint32_t max, uint32_t *out)
{
    const char *end;
    if (!s || !parse_one_u32(s, 1, max, out, &end) || *end) {
        fprintf(stderr, "%s: %s needs a whole number from 1 to %u, got '%s'\n", prog, flag, max, s ? s : "");
        return 0;
    }
    return 1;
}

int app_parse_u64(const char *prog, const char *flag, const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = s && *s >= '0' && *s <= '9' ? strtoull(s, &end, 0) : 0;
    if (!s || *s < '0' || *s > '9' || errno || *end) {
        fprintf(stderr, "%s: %s needs a non-negative whole number, got '%s'\n", prog, flag, s ? s : "");
        return 0;
    }
    *out = v;
    return 1;
}

int app_parse_float(const char *prog, const char *flag, const char *s, float lo, float hi, float *out)
{
    char *end;
    errno = 0;
    float v = s ? strtof(s, &end) : 0.0f;
    if (!s || end == s || *end || errno || !isfinite(v) || v < lo || v > hi) {
        fprintf(stderr, "%s: %s needs a number from %g to %g, got '%s'\n", prog, flag, lo, hi, s ? s : "");
        return 0;
    }
    *out = v;
    return 1;
}

int app_parse_u32_list(const char *prog, const char *flag, const char *s, uint32_t max, uint32_t *out, uint32_t *n)
{
    return app_parse_u32_list_range(prog, flag, s, 1, max, APP_MAX_LIST, out, n);
}

int app_parse_u32_list_range(const char *prog, const char *flag, const char *s, uint32_t min, uint32_t max,
                             uint32_t max_n, uint32_t *out, uint32_t *n)
{
    *n = 0;
    const char *p = s;
    while (p && *p) {
        const char *end;
        if (*n == max_n || !parse_one_u32(p, min, max, &out[*n], &end) || (*end && *end != ',') ||
            (*end == ',' && !end[1])) {
            fprintf(stderr, "%s: %s needs a comma-separated list of at most %u numbers from %u to %u, got '%s'\n", prog,
                    flag, max_n, min, max, s);
            return 0;
        }
        (*n)++;
        p = *end ? end + 1 : end;
    }
    if (*n == 0) {
        fprintf(stderr, "%s: %s needs a comma-separated list of numbers, got '%s'\n", prog, flag, s ? s : "");
        return 0;
    }
    return 1;
}

static int kv_mode_from_name(const char *s, size_t len, oscar_kv_mode *out)
{
    static const oscar_kv_mode modes[] = { OSCAR_KV_FP16, OSCAR_KV_INT2, OSCAR_KV_INT2_HADAMARD, OSCAR_KV_INT2_ROTATED };
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        const char *name = oscar_kv_mode_name(modes[i]);
        if (strlen(name) == len && strncmp(name, s, len) == 0) {
            *out = modes[i];
            return 1;
        }
    }
    return 0;
}

int app_parse_kv_mode(const char *prog, const char *flag, const char *s, oscar_kv_mode *out)
{
    if (!s || !kv_mode_from_name(s, strlen(s), out)) {
        fprintf(stderr, "%s: %s: unknown KV mode '%s' (fp16, int2, int2-hadamard, oscar)\n", prog, flag, s ? s : "");
        return 0;
    }
    return 1;
}

int app_parse_kv_modes(const char *prog, const char *flag, const char *s, oscar_kv_mode *out, uint32_t *n)
{
    *n = 0;
    const char *p = s;
    while (p && *p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (*n == 4 || !kv_mode_from_name(p, len, &out[*n])) {
            fprintf(stderr, "%s: %s: '%s' is not a list of KV modes (fp16, int2, int2-hadamard, oscar)\n", prog, flag, s);
            return 0;
        }
        (*n)++;
        p = comma ? comma + 1 : p + len;
    }
    if (*n == 0) {
        fprintf(stderr, "%s: %s needs a list of KV modes\n", prog, flag);
        return 0;
    }
    return 1;
}

/* ---- progress bar ----------------------------------------------------------------------- */

static int progress_drawn;

void app_progress(void *user, float fraction)
{
    static int last_percent = -1;
    if (!isatty(STDERR_FILENO)) return;
    if (fraction < 0) fraction = 0;
    if (fraction > 1) fraction = 1;
    int percent = (int)(fraction * 100.0f + 0.5f);
    if (percent == last_percent && progress_drawn) return;
    last_percent = percent;
    const int width = 40;
    int fill = (int)(fraction * width + 0.5f);
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : ' ';
    bar[width] = 0;
    fprintf(stderr, "\rloading %s [%s] %3d%%", user ? (const char *)user : "", bar, percent);
    fflush(stderr);
    progress_drawn = 1;
}

void app_progress_clear(void)
{
    if (!progress_drawn) return;
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
    progress_drawn = 0;
}

/* ---- model and context -------------------------------------------------------------------- */

int app_model_open(const char *prog, const char *path, const char *device, const char *rot, int need_tokenizer,
                   app_model *out)
{
    memset(out, 0, sizeof *out);
    if (!path) {
        fprintf(stderr, "%s: no model given (-m model.gguf)\n", prog);
        return 0;
    }
    if (!app_check_input(prog, path, "model")) return 0;
    oscar_context_params cp = oscar_context_params_default();
    cp.device = device;
    oscar_status st = oscar_context_create(&cp, &out->ctx);
    if (st != OSCAR_OK) {
        app_fail(prog, "no usable Vulkan device", st);
        return 0;
    }
    const char *base = strrchr(path, '/');
    oscar_model_params mp = oscar_model_params_default();
    mp.progress = app_progress;
    mp.progress_user = (void *)(base ? base + 1 : path);
    st = oscar_model_load(out->ctx, path, &mp, &out->model);
    app_progress_clear();
    if (st == OSCAR_OK) st = oscar_model_get_info(out->model, &out->info);
    if (st == OSCAR_ERROR_MISMATCH && strstr(oscar_last_error(), "RotationZoo")) { /* a rotation file given as the model */
        if (rot) fprintf(stderr, "%s: %s is a rotation file, not a model; did you mean -m %s --rot %s?\n", prog, path, rot, path);
        else fprintf(stderr, "%s: %s is a rotation file, not a model; did you mean --rot %s?\n", prog, path, path);
        app_model_close(out);
        return 0;
    }
    if (st != OSCAR_OK) {
        app_fail(prog, path, st);
        app_model_close(out);
        return 0;
    }
    size_t n = 0;
    if (need_tokenizer && oscar_model_tokenize(out->model, "", 0, 0, 0, NULL, 0, &n) != OSCAR_OK) {
        fprintf(stderr, "%s: %s has no tokenizer (tokenizer.ggml.tokens): it cannot read or write text\n", prog, path);
        app_model_close(out);
        return 0;
    }
    return 1;
}

void app_model_close(app_model *m)
{
    oscar_model_destroy(m->model);
    oscar_context_destroy(m->ctx);
    m->model = NULL;
    m->ctx = NULL;
}

int app_rotation_load(const char *prog, const char *path, const oscar_model *model, oscar_rotation_set **out)
{
    *out = NULL;
    if (!app_check_input(prog, path, "rotation file")) return 0;
    oscar_status st = oscar_rotation_set_load(path, model, out);
    if (st != OSCAR_OK) {
        app_fail(prog, path, st);
        return 0;
    }
    return 1;
}

void app_warn_context(const char *prog, uint32_t n_ctx, const oscar_model_info *info)
{
    if (info->n_ctx_train && n_ctx > info->n_ctx_train)
        fprintf(stderr, "%s: warning: the model was trained on %u tokens of context; %u asked (quality past %u is not "
                "what it was made for)\n", prog, info->n_ctx_train, n_ctx, info->n_ctx_train);
}

int app_flag_with_value(const char *prog, const char *cmd, const char *f, const char *v, const char *const *known)
{
    int is_known = 0;
    for (size_t k = 0; known[k]; k++) is_known |= !strcmp(f, known[k]);
    if (!is_known) fprintf(stderr, "%s: unknown option '%s' (%s --help lists them)\n", prog, f, cmd);
    else if (!v) fprintf(stderr, "%s: %s needs a value\n", prog, f);
    return is_known && v;
}

int app_check_kv_rot(const char *prog, oscar_kv_mode *kv, int kv_set, const char *rot)
{
    if (rot && !kv_set) *kv = OSCAR_KV_INT2_ROTATED;
    if (*kv == OSCAR_KV_INT2_ROTATED && !rot) {
        fprintf(stderr, "%s: --kv oscar needs a rotation file (--rot FILE, made by oscar-calib for this model)\n", prog);
        return 0;
    }
    if (rot && *kv != OSCAR_KV_INT2_ROTATED) {
        fprintf(stderr, "%s: --rot needs --kv oscar (the %s mode uses no rotation file)\n", prog, oscar_kv_mode_name(*kv));
        return 0;
    }
    return 1;
}

int app_skip_llama_flag(const char *prog, int argc, char **argv, int *i)
{
    static const struct {
        const char *flag, *why;
        int value; /* 1: takes a value; 2: an optional on|off|auto value */
    } flags[] = {
        { "-ngl", "every layer runs on the Vulkan device", 1 },
        { "--n-gpu-layers", "every layer runs on the Vulkan device", 1 },
        { "--gpu-layers", "every layer runs on the Vulkan device", 1 },
        { "-t", "the work runs on the Vulkan device (lavapipe's threads: LP_NUM_THREADS)", 1 },
        { "--threads", "the work runs on the Vulkan device (lavapipe's threads: LP_NUM_THREADS)", 1 },
        { "-fa", "attention always runs in one fused pass over the paged cache", 2 },
        { "--flash-attn", "attention always runs in one fused pass over the paged cache", 2 },
        { "--mlock", "weights live in device memory", 0 },
        { "--no-mmap", "weights live in device memory", 0 },
    };
    const char *f = argv[*i];
    for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++) {
        if (strcmp(f, flags[k].flag) != 0) continue;
        const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
        int take = flags[k].value == 1 ? v != NULL
                   : flags[k].value == 2 ? v && (!strcmp(v, "on") || !strcmp(v, "off") || !strcmp(v, "auto"))
                                         : 0;
        fprintf(stderr, "%s: note: %s%s%s ignored: %s\n", prog, f, take ? " " : "", take ? v : "", flags[k].why);
        *i += take;
        return 1;
    }
    return 0;
}

/* ---- UTF-8 stream --------------------------------------------------------------------------- */

/* Length of the UTF-8 character a lead byte starts, or 0 for a byte that cannot lead. */
static size_t utf8_len(unsigned char c)
{
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) return 2;
    if ((c & 0xF0) == 0xE0) return 3;
    if ((c & 0xF8) == 0xF0) return 4;
    return 0;
}

void app_utf8_write(app_utf8_out *u, const char *bytes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)bytes[i];
        if (u->n_held == 0) {
            size_t len = utf8_len(c);
            if (len <= 1) fputc(c, u->f); /* ASCII, or a stray byte written as is */
            else u->held[u->n_held++] = c;
            continue;
        }
        if ((c & 0xC0) != 0x80) {
            /* the held character was cut short: write it as is and start again with c */
            fwrite(u->held, 1, u->n_held, u->f);
            u->n_held = 0;
            i--;
            continue;
        }
        u->held[u->n_held++] = c;
        if (u->n_held == utf8_len(u->held[0])) {
            fwrite(u->held, 1, u->n_held, u->f);
            u->n_held = 0;
        }
    }
    fflush(u->f);
}

void app_utf8_flush(app_utf8_out *u)
{
    if (u->n_held) fwrite(u->held, 1, u->n_held, u->f);
    u->n_held = 0;
    fflush(u->f);
}
