/* oscar-gen-model: writes a small llama-family GGUF model with seeded random weights.
 *
 *   oscar-gen-model -o model.gguf [--arch llama|qwen2|qwen3] [--type F32|F16|BF16|Q8_0|Q4_0|Q4_1|
 *       Q4_K|Q5_K|Q6_K] [--embd-type T] [--layers N] [--embd N] [--heads N] [--kv-heads N]
 *       [--head-dim N] [--ffn N] [--vocab N] [--ctx N] [--rope-base F] [--tied] [--seed N]
 *
 * Prints the model's fingerprint and hyperparameters after reading the file back. Bad values
 * print one line and exit with 2; a model that cannot be written, 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/app_common.h"
#include "common/app_io.h"
#include "model_desc.h"
#include "model_gen.h"

#define PROG "oscar-gen-model"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: oscar-gen-model -o OUT.gguf [--arch llama|qwen2|qwen3] [--type T] [--embd-type T]\n"
            "         [--layers N] [--embd N] [--heads N] [--kv-heads N] [--head-dim N] [--ffn N]\n"
            "         [--vocab N] [--ctx N] [--rope-base F] [--tied] [--seed N] [--verbose]\n"
            "  T: F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q4_K Q5_K Q6_K (K-quants need rows that are multiples of 256)\n"
            "  OUT.gguf is written through a temporary file beside it, renamed when complete\n");
}

static int parse_type(const char *s, uint32_t *out)
{
    for (uint32_t t = 0; t < 40; t++)
        if (ovk_model_type_supported(t) && !strcmp(ovk_ggml_type_name(t), s)) {
            *out = t;
            return 1;
        }
    return 0;
}

int main(int argc, char **argv)
{
    const char *out = NULL, *arch_s = "llama";
    ovk_arch arch = OSCAR_ARCH_LLAMA;
    app_log_init();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--arch") && i + 1 < argc) arch_s = argv[++i];
    }
    if (!strcmp(arch_s, "qwen2")) arch = OSCAR_ARCH_QWEN2;
    else if (!strcmp(arch_s, "qwen3")) arch = OSCAR_ARCH_QWEN3;
    else if (strcmp(arch_s, "llama")) {
        fprintf(stderr, PROG ": unknown --arch '%s' (llama, qwen2, qwen3)\n", arch_s);
        return 2;
    }
    ovk_model_gen_params p = ovk_model_gen_params_default(arch);
    int embd_type_set = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--tied")) { p.tied_embeddings = 1; continue; }
        if (!strcmp(a, "--verbose")) { app_set_verbose(1); continue; }
        static const char *const with_value[] = { "-o", "--arch", "--type", "--embd-type", "--layers", "--embd", "--heads",
                                                  "--kv-heads", "--head-dim", "--ffn", "--vocab", "--ctx", "--rope-base",
                                                  "--seed", NULL };
        if (!app_flag_with_value(PROG, PROG, a, v, with_value)) return 2;
        i++;
        int ok = 1;
        if (!strcmp(a, "-o")) out = v;
        else if (!strcmp(a, "--arch")) continue;
        else if (!strcmp(a, "--type") || !strcmp(a, "--embd-type")) {
            uint32_t t;
            if (!parse_type(v, &t)) {
                fprintf(stderr, PROG ": %s: unsupported type '%s' (F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q4_K Q5_K Q6_K)\n", a, v);
                return 2;
            }
            if (!strcmp(a, "--type")) p.weight_type = t;
            else { p.embd_type = t; embd_type_set = 1; }
        }
        else if (!strcmp(a, "--layers")) ok = app_parse_u32(PROG, a, v, 4096, &p.n_layer);
        else if (!strcmp(a, "--embd")) ok = app_parse_u32(PROG, a, v, 1u << 16, &p.n_embd);
        else if (!strcmp(a, "--heads")) ok = app_parse_u32(PROG, a, v, 4096, &p.n_head);
        else if (!strcmp(a, "--kv-heads")) ok = app_parse_u32(PROG, a, v, 4096, &p.n_head_kv);
        else if (!strcmp(a, "--head-dim")) ok = app_parse_u32(PROG, a, v, 1024, &p.head_dim);
        else if (!strcmp(a, "--ffn")) ok = app_parse_u32(PROG, a, v, 1u << 18, &p.n_ff);
        else if (!strcmp(a, "--vocab")) ok = app_parse_u32(PROG, a, v, 1u << 20, &p.n_vocab);
        else if (!strcmp(a, "--ctx")) ok = app_parse_u32(PROG, a, v, 1u << 24, &p.n_ctx_train);
        else if (!strcmp(a, "--rope-base")) ok = app_parse_float(PROG, a, v, 1.0001f, 1e9f, &p.rope_freq_base);
        else if (!strcmp(a, "--seed")) ok = app_parse_u64(PROG, a, v, &p.seed);
        if (!ok) return 2;
    }
    if (!embd_type_set) p.embd_type = p.weight_type;
    if (!out) {
        fprintf(stderr, PROG ": no output given (-o OUT.gguf; oscar-gen-model --help)\n");
        return 2;
    }
    oscar_status st = ovk_model_gen_write(&p, out);
    if (st != OSCAR_OK) {
        app_fail(PROG, out, st);
        return st == OSCAR_ERROR_INVALID_ARGUMENT ? 2 : 1; /* shapes that do not fit: a usage error */
    }
    ovk_model_desc *m = NULL;
    st = ovk_model_desc_load(out, &m);
    if (st != OSCAR_OK) {
        char what[4200];
        snprintf(what, sizeof what, "wrote %s but cannot read it back", out);
        app_fail(PROG, what, st);
        return 1;
    }
    const ovk_model_hparams *hp = &m->hp;
    printf("%s: %s, %u layers, n_embd %u, %u heads (%u KV) x %u, n_ff %u, vocab %u, %s%s\n"
           "fingerprint %016llx\n",
           out, ovk_arch_name(hp->arch), hp->n_layer, hp->n_embd, hp->n_head, hp->n_head_kv, hp->head_dim,
           hp->n_ff, hp->n_vocab, ovk_ggml_type_name(p.weight_type), hp->tied_embeddings ? ", tied" : "",
           (unsigned long long)m->fingerprint);
    ovk_model_desc_destroy(m);
    return 0;
}
