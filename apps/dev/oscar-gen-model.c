/* oscar-gen-model: writes a small llama-family GGUF model with seeded random weights.
 *
 *   oscar-gen-model -o model.gguf [--arch llama|qwen2|qwen3] [--type F32|F16|BF16|Q8_0|Q4_0|Q4_1|
 *       Q4_K|Q5_K|Q6_K] [--embd-type T] [--layers N] [--embd N] [--heads N] [--kv-heads N]
 *       [--head-dim N] [--ffn N] [--vocab N] [--ctx N] [--rope-base F] [--tied] [--seed N]
 *
 * Prints the model's fingerprint and hyperparameters after reading the file back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_desc.h"
#include "model_gen.h"

static void usage(void)
{
    fprintf(stderr,
            "usage: oscar-gen-model -o OUT.gguf [--arch llama|qwen2|qwen3] [--type T] [--embd-type T]\n"
            "         [--layers N] [--embd N] [--heads N] [--kv-heads N] [--head-dim N] [--ffn N]\n"
            "         [--vocab N] [--ctx N] [--rope-base F] [--tied] [--seed N]\n"
            "  T: F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q4_K Q5_K Q6_K (K-quants need rows that are multiples of 256)\n");
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
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--arch") && i + 1 < argc) arch_s = argv[++i];
    if (!strcmp(arch_s, "qwen2")) arch = OSCAR_ARCH_QWEN2;
    else if (!strcmp(arch_s, "qwen3")) arch = OSCAR_ARCH_QWEN3;
    else if (strcmp(arch_s, "llama")) {
        fprintf(stderr, "oscar-gen-model: unknown --arch %s\n", arch_s);
        return 2;
    }
    ovk_model_gen_params p = ovk_model_gen_params_default(arch);
    int embd_type_set = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--tied")) { p.tied_embeddings = 1; continue; }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(); return 0; }
        if (!v) { usage(); return 2; }
        i++;
        if (!strcmp(a, "-o")) out = v;
        else if (!strcmp(a, "--arch")) continue;
        else if (!strcmp(a, "--type") || !strcmp(a, "--embd-type")) {
            uint32_t t;
            if (!parse_type(v, &t)) { fprintf(stderr, "oscar-gen-model: unsupported type %s\n", v); return 2; }
            if (!strcmp(a, "--type")) p.weight_type = t;
            else { p.embd_type = t; embd_type_set = 1; }
        }
        else if (!strcmp(a, "--layers")) p.n_layer = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--embd")) p.n_embd = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--heads")) p.n_head = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--kv-heads")) p.n_head_kv = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--head-dim")) p.head_dim = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--ffn")) p.n_ff = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--vocab")) p.n_vocab = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--ctx")) p.n_ctx_train = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--rope-base")) p.rope_freq_base = strtof(v, NULL);
        else if (!strcmp(a, "--seed")) p.seed = strtoull(v, NULL, 10);
        else { fprintf(stderr, "oscar-gen-model: unknown option %s\n", a); usage(); return 2; }
    }
    if (!embd_type_set) p.embd_type = p.weight_type;
    if (!out) { usage(); return 2; }
    oscar_status st = ovk_model_gen_write(&p, out);
    if (st != OSCAR_OK) {
        fprintf(stderr, "oscar-gen-model: %s: %s\n", oscar_status_string(st), oscar_last_error());
        return 1;
    }
    ovk_model_desc *m = NULL;
    st = ovk_model_desc_load(out, &m);
    if (st != OSCAR_OK) {
        fprintf(stderr, "oscar-gen-model: wrote %s but cannot read it back: %s: %s\n", out, oscar_status_string(st),
                oscar_last_error());
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
