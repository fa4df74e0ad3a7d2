/* Model description: hyperparameters and tensor map of a llama-family GGUF (see model_desc.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "model_desc.h"

const char *ovk_arch_name(ovk_arch arch)
{
    switch (arch) {
    case OSCAR_ARCH_LLAMA: return "llama";
    case OSCAR_ARCH_QWEN2: return "qwen2";
    case OSCAR_ARCH_QWEN3: return "qwen3";
    }
    return "unknown";
}

int ovk_model_type_supported(uint32_t t)
{
    switch (t) {
    case OSCAR_GGML_TYPE_F32: case OSCAR_GGML_TYPE_F16: case OSCAR_GGML_TYPE_BF16:
    case OSCAR_GGML_TYPE_Q8_0: case OSCAR_GGML_TYPE_Q4_0: case OSCAR_GGML_TYPE_Q4_1:
    case OSCAR_GGML_TYPE_Q4_K: case OSCAR_GGML_TYPE_Q5_K: case OSCAR_GGML_TYPE_Q6_K:
        return 1;
    }
    return 0;
}

/* ---- metadata helpers --------------------------------------------------------------------- */

/* Reads an optional u32 key "<arch>.<suffix>": *out keeps `def` when the key is absent. */
static oscar_status get_u32_opt(const ovk_gguf *g, const char *arch, const char *suffix, uint32_t def,
                                uint32_t *out)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    *out = def;
    if (!ovk_gguf_find_key(g, key)) return OSCAR_OK;
    return ovk_gguf_get_u32(g, key, out);
}

static oscar_status get_u32_req(const ovk_gguf *g, const char *arch, const char *suffix, uint32_t *out)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return ovk_gguf_get_u32(g, key, out);
}

static oscar_status get_f32_opt(const ovk_gguf *g, const char *arch, const char *suffix, float def, float *out)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    *out = def;
    if (!ovk_gguf_find_key(g, key)) return OSCAR_OK;
    return ovk_gguf_get_f32(g, key, out);
}

/* ---- tensor checks ------------------------------------------------------------------------ */

/* Finds tensor `name` and checks its type and shape ne[0..n_dims). A missing optional tensor
 * leaves *out NULL. */
static oscar_status find_tensor(const ovk_gguf *g, const char *name, int required, uint32_t n_dims,
                                uint64_t ne0, uint64_t ne1, const ovk_gguf_tensor **out)
{
    const ovk_gguf_tensor *t = ovk_gguf_find_tensor(g, name);
    *out = NULL;
    if (!t) {
        if (!required) return OSCAR_OK;
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: tensor %s: missing", g->path, name);
    }
    if (!ovk_model_type_supported(t->type))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED_FORMAT,
                           "%s: tensor %s: type %s (%u) is not supported (F32, F16, BF16, Q8_0, Q4_0, "
                           "Q4_1, Q4_K, Q5_K, Q6_K)", g->path, name, ovk_ggml_type_name(t->type), t->type);
    uint64_t want[2] = {ne0, ne1};
    /* A trailing dimension of 1 may be stored or omitted. */
    for (uint32_t d = 0; d < OSCAR_GGUF_MAX_DIMS; d++) {
        uint64_t w = d < n_dims ? want[d] : 1;
        if (t->ne[d] != w)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT,
                               "%s: tensor %s: shape ne[%u] = %llu, expected %llu (expected shape [%llu, %llu])",
                               g->path, name, d, (unsigned long long)t->ne[d], (unsigned long long)w,
                               (unsigned long long)ne0, (unsigned long long)(n_dims > 1 ? ne1 : 1));
    }
    const ovk_ggml_type_info *ti = ovk_ggml_type_get(t->type);
    if (t->ne[0] % ti->block_size)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: tensor %s: row length %llu is not a multiple of the %s "
                           "block size %u", g->path, name, (unsigned long long)t->ne[0], ti->name, ti->block_size);
    *out = t;
    return OSCAR_OK;
}

static oscar_status layer_tensor(const ovk_gguf *g, uint32_t il, const char *what, int required, uint32_t n_dims,
                                 uint64_t ne0, uint64_t ne1, const ovk_gguf_tensor **out)
{
    char name[96];
    snprintf(name, sizeof name, "blk.%u.%s", il, what);
    return find_tensor(g, name, required, n_dims, ne0, ne1, out);
}

/* ---- RoPE frequencies ---------------------------------------------------------------------- */

/* Fills m->rope_theta[0..n_rot/2): theta_i = base^(-2i/n_rot), then divided by the Llama 3.1
 * factor of pair i (from rope_freqs.weight, or computed from the scaling keys), then scaled by
 * 1/factor for linear scaling. Computed in double, stored as float. */
static oscar_status compute_rope_theta(ovk_model_desc *m)
{
    const ovk_model_hparams *hp = &m->hp;
    uint32_t half = hp->n_rot / 2;
    float *divisors = NULL; /* [half] */
    oscar_status st = OSCAR_OK;
    if (m->rope_freqs) {
        divisors = malloc((size_t)half * sizeof *divisors);
        if (!divisors) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "rope_freqs: out of memory");
        OSCAR_TRY(ovk_ggml_dequantize_row(m->rope_freqs->type, m->rope_freqs->data, divisors, half));
    }
    for (uint32_t i = 0; i < half; i++) {
        double th = pow((double)hp->rope_freq_base, -2.0 * i / (double)hp->n_rot);
        if (divisors) {
            th /= divisors[i];
        } else if (hp->rope_scaling == OSCAR_ROPE_SCALING_LLAMA3) {
            /* Llama 3.1: long wavelengths are slowed by `factor`, short ones kept, and a band
             * in between interpolates smoothly. */
            double wavelen = 2.0 * M_PI / th;
            double lo_wl = hp->rope_orig_ctx / hp->rope_low_freq_factor;
            double hi_wl = hp->rope_orig_ctx / hp->rope_high_freq_factor;
            if (wavelen > lo_wl) {
                th /= hp->rope_scale_factor;
            } else if (wavelen >= hi_wl) {
                double smooth = (hp->rope_orig_ctx / wavelen - hp->rope_low_freq_factor) /
                                (hp->rope_high_freq_factor - hp->rope_low_freq_factor);
                th = (1.0 - smooth) * th / hp->rope_scale_factor + smooth * th;
            }
        }
        if (hp->rope_scaling == OSCAR_ROPE_SCALING_LINEAR) th /= hp->rope_scale_factor;
        m->rope_theta[i] = (float)th;
    }
fail:
    free(divisors);
    return st;
}

/* ---- hyperparameters ----------------------------------------------------------------------- */

static oscar_status read_hparams(const ovk_gguf *g, ovk_model_hparams *hp, const char **arch_out)
{
    oscar_status st;
    const char *arch;
    if ((st = ovk_gguf_get_str(g, "general.architecture", &arch)) != OSCAR_OK) return st;
    *arch_out = arch;
    if (!strcmp(arch, "llama")) hp->arch = OSCAR_ARCH_LLAMA;
    else if (!strcmp(arch, "qwen2")) hp->arch = OSCAR_ARCH_QWEN2;
    else if (!strcmp(arch, "qwen3")) hp->arch = OSCAR_ARCH_QWEN3;
    else
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED_FORMAT,
                           "%s: general.architecture: \"%s\" is not supported (llama, qwen2, qwen3)", g->path, arch);
    hp->rope_type = hp->arch == OSCAR_ARCH_LLAMA ? OSCAR_ROPE_NORMAL : OSCAR_ROPE_NEOX;
    hp->has_qkv_bias = hp->arch == OSCAR_ARCH_QWEN2;
    hp->has_qk_norm = hp->arch == OSCAR_ARCH_QWEN3;

#define TRY_(e) do { if ((st = (e)) != OSCAR_OK) return st; } while (0)
    TRY_(get_u32_req(g, arch, "block_count", &hp->n_layer));
    TRY_(get_u32_req(g, arch, "embedding_length", &hp->n_embd));
    TRY_(get_u32_req(g, arch, "feed_forward_length", &hp->n_ff));
    TRY_(get_u32_req(g, arch, "attention.head_count", &hp->n_head));
    TRY_(get_u32_opt(g, arch, "attention.head_count_kv", hp->n_head, &hp->n_head_kv));
    TRY_(get_u32_opt(g, arch, "context_length", 0, &hp->n_ctx_train));
    if (!hp->n_layer || !hp->n_embd || !hp->n_ff || !hp->n_head || !hp->n_head_kv)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: %s.block_count/embedding_length/feed_forward_length/"
                           "attention.head_count(_kv) must be > 0 (got %u/%u/%u/%u/%u)", g->path, arch,
                           hp->n_layer, hp->n_embd, hp->n_ff, hp->n_head, hp->n_head_kv);
    if (hp->n_layer > 4096 || hp->n_head > 4096)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: %s.block_count %u or head_count %u out of range",
                           g->path, arch, hp->n_layer, hp->n_head);
    if (hp->n_head % hp->n_head_kv)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: %s.attention.head_count %u is not a multiple of "
                           "attention.head_count_kv %u", g->path, arch, hp->n_head, hp->n_head_kv);
    TRY_(get_u32_opt(g, arch, "attention.key_length", hp->n_embd / hp->n_head, &hp->head_dim));
    TRY_(get_u32_opt(g, arch, "attention.value_length", hp->head_dim, &hp->head_dim_v));
    if (!hp->head_dim || !hp->head_dim_v || hp->head_dim > 1024 || hp->head_dim_v > 1024)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: %s.attention.key_length %u / value_length %u out of "
                           "range (1..1024)", g->path, arch, hp->head_dim, hp->head_dim_v);
    TRY_(get_f32_opt(g, arch, "attention.layer_norm_rms_epsilon", 1e-5f, &hp->norm_eps));
    if (!(hp->norm_eps > 0.0f) || !isfinite(hp->norm_eps))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: %s.attention.layer_norm_rms_epsilon %g must be > 0",
                           g->path, arch, hp->norm_eps);

    TRY_(get_u32_opt(g, arch, "rope.dimension_count", hp->head_dim, &hp->n_rot));
    if (hp->n_rot > hp->head_dim || hp->n_rot % 2)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: %s.rope.dimension_count %u must be even and <= "
                           "key_length %u", g->path, arch, hp->n_rot, hp->head_dim);
    TRY_(get_f32_opt(g, arch, "rope.freq_base", 10000.0f, &hp->rope_freq_base));
    if (!(hp->rope_freq_base > 1.0f) || !isfinite(hp->rope_freq_base))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: %s.rope.freq_base %g must be > 1", g->path, arch,
                           hp->rope_freq_base);

    /* RoPE scaling */
    char key[128];
    const char *stype = "none";
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    if (ovk_gguf_find_key(g, key)) TRY_(ovk_gguf_get_str(g, key, &stype));
    TRY_(get_f32_opt(g, arch, "rope.scaling.factor", 1.0f, &hp->rope_scale_factor));
    TRY_(get_u32_opt(g, arch, "rope.scaling.original_context_length", 0, &hp->rope_orig_ctx));
    TRY_(get_f32_opt(g, arch, "rope.scaling.low_freq_factor", 1.0f, &hp->rope_low_freq_factor));
    TRY_(get_f32_opt(g, arch, "rope.scaling.high_freq_factor", 4.0f, &hp->rope_high_freq_factor));
    if (!strcmp(stype, "none") || !strcmp(stype, "")) {
        hp->rope_scaling = OSCAR_ROPE_SCALING_NONE;
        hp->rope_scale_factor = 1.0f;
    } else if (!strcmp(stype, "linear")) {
        hp->rope_scaling = OSCAR_ROPE_SCALING_LINEAR;
    } else if (!strcmp(stype, "llama3")) {
        hp->rope_scaling = OSCAR_ROPE_SCALING_LLAMA3;
        if (!hp->rope_orig_ctx || !(hp->rope_high_freq_factor > hp->rope_low_freq_factor) ||
            !(hp->rope_low_freq_factor > 0.0f))
            OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: %s.rope.scaling: llama3 needs original_context_length "
                               "> 0 and 0 < low_freq_factor < high_freq_factor (got %u, %g, %g)", g->path, arch,
                               hp->rope_orig_ctx, hp->rope_low_freq_factor, hp->rope_high_freq_factor);
    } else {
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED_FORMAT, "%s: %s.rope.scaling.type \"%s\" is not supported "
                           "(none, linear, llama3)", g->path, arch, stype);
    }
    if (!(hp->rope_scale_factor > 0.0f) || !isfinite(hp->rope_scale_factor))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: %s.rope.scaling.factor %g must be > 0", g->path, arch,
                           hp->rope_scale_factor);
#undef TRY_
    return OSCAR_OK;
}

/* ---- finiteness of the small tensors ------------------------------------------------------- */

/* A NaN or infinite weight in a norm or a bias reaches every logit of every token: the model
 * would "work" and print nan. These tensors are one row each (a few KB in all), so every
 * element is checked at load; the large matrices are not (that would read the whole file). */
static oscar_status check_finite(const ovk_gguf *g, const ovk_gguf_tensor *t, float *row)
{
    if (!t) return OSCAR_OK;
    oscar_status st = ovk_ggml_dequantize_row(t->type, t->data, row, (size_t)t->ne[0]);
    if (st != OSCAR_OK) return st;
    for (uint64_t i = 0; i < t->ne[0]; i++)
        if (!isfinite(row[i]))
            OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: tensor %s: element %llu is %s (the file is corrupt)", g->path,
                               t->name, (unsigned long long)i, isnan(row[i]) ? "NaN" : "infinite");
    return OSCAR_OK;
}

static oscar_status check_small_tensors_finite(const ovk_model_desc *m)
{
    oscar_status st = OSCAR_OK;
    const ovk_model_hparams *hp = &m->hp;
    uint64_t longest = hp->n_embd;
    uint64_t dims[] = { (uint64_t)hp->n_head * hp->head_dim, (uint64_t)hp->n_head_kv * hp->head_dim_v, hp->head_dim };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) longest = dims[i] > longest ? dims[i] : longest;
    float *row = malloc((size_t)longest * sizeof *row); /* [longest] one dequantized row */
    if (!row) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "model desc: out of memory");
    OSCAR_TRY(check_finite(m->gguf, m->output_norm, row));
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        const ovk_model_layer *L = &m->layers[il];
        const ovk_gguf_tensor *ts[] = { L->attn_norm, L->ffn_norm, L->q_norm, L->k_norm, L->bq, L->bk, L->bv };
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) OSCAR_TRY(check_finite(m->gguf, ts[i], row));
    }
fail:
    free(row);
    return st;
}

/* ---- load ---------------------------------------------------------------------------------- */

oscar_status ovk_model_desc_from_gguf(ovk_gguf *g, int take_ownership, ovk_model_desc **out)
{
    oscar_status st = OSCAR_OK;
    ovk_model_desc *m = NULL;
    const char *arch = NULL;
    if (!out) {
        if (take_ownership) ovk_gguf_close(g);
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_model_desc_from_gguf: out is NULL");
    }
    *out = NULL;
    if (!g) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_model_desc_from_gguf: g is NULL");
    m = calloc(1, sizeof *m);
    if (!m) {
        if (take_ownership) ovk_gguf_close(g);
        OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "model desc: out of memory");
    }
    m->gguf = g;
    m->owns_gguf = take_ownership;
    ovk_model_hparams *hp = &m->hp;
    /* a rotation file given where a model belongs: say so rather than name a missing key */
    if (!ovk_gguf_find_key(g, "general.architecture") && ovk_gguf_find_key(g, "oscar.format_version"))
        OSCAR_FAIL(OSCAR_ERROR_MISMATCH, "%s is a RotationZoo rotation file, not a model", g->path);
    OSCAR_TRY(read_hparams(g, hp, &arch));

    /* Embedding: n_vocab comes from its second dimension. */
    const ovk_gguf_tensor *te = ovk_gguf_find_tensor(g, "token_embd.weight");
    if (!te) OSCAR_FAIL(OSCAR_ERROR_BAD_FORMAT, "%s: tensor token_embd.weight: missing", g->path);
    if (te->ne[1] == 0 || te->ne[1] > INT32_MAX)
        OSCAR_FAIL(OSCAR_ERROR_BAD_FORMAT, "%s: tensor token_embd.weight: vocabulary size ne[1] = %llu out of range",
                   g->path, (unsigned long long)te->ne[1]);
    hp->n_vocab = (uint32_t)te->ne[1];
    uint32_t vs;
    OSCAR_TRY(get_u32_opt(g, arch, "vocab_size", hp->n_vocab, &vs));
    if (vs != hp->n_vocab)
        OSCAR_FAIL(OSCAR_ERROR_BAD_FORMAT, "%s: %s.vocab_size %u != token_embd.weight ne[1] %u", g->path, arch, vs,
                   hp->n_vocab);
    OSCAR_TRY(find_tensor(g, "token_embd.weight", 1, 2, hp->n_embd, hp->n_vocab, &m->token_embd));
    OSCAR_TRY(find_tensor(g, "output_norm.weight", 1, 1, hp->n_embd, 1, &m->output_norm));
    OSCAR_TRY(find_tensor(g, "output.weight", 0, 2, hp->n_embd, hp->n_vocab, &m->output));
    hp->tied_embeddings = m->output == NULL;
    if (!m->output) m->output = m->token_embd;
    OSCAR_TRY(find_tensor(g, "rope_freqs.weight", 0, 1, hp->n_rot / 2, 1, &m->rope_freqs));
    if (m->rope_freqs && m->rope_freqs->type != OSCAR_GGML_TYPE_F32)
        OSCAR_FAIL(OSCAR_ERROR_BAD_FORMAT, "%s: tensor rope_freqs.weight: type %s, expected F32", g->path,
                   ovk_ggml_type_name(m->rope_freqs->type));
    if (m->rope_freqs && hp->rope_scaling == OSCAR_ROPE_SCALING_NONE) hp->rope_scaling = OSCAR_ROPE_SCALING_LLAMA3;

    m->layers = calloc(hp->n_layer, sizeof *m->layers);
    m->rope_theta = calloc(hp->n_rot / 2 + 1, sizeof *m->rope_theta);
    if (!m->layers || !m->rope_theta) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "model desc: out of memory");

    uint64_t q_dim = (uint64_t)hp->n_head * hp->head_dim;
    uint64_t k_dim = (uint64_t)hp->n_head_kv * hp->head_dim;
    uint64_t v_dim = (uint64_t)hp->n_head_kv * hp->head_dim_v;
    uint64_t o_dim = (uint64_t)hp->n_head * hp->head_dim_v;
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        ovk_model_layer *L = &m->layers[il];
        OSCAR_TRY(layer_tensor(g, il, "attn_norm.weight", 1, 1, hp->n_embd, 1, &L->attn_norm));
        OSCAR_TRY(layer_tensor(g, il, "attn_q.weight", 1, 2, hp->n_embd, q_dim, &L->wq));
        OSCAR_TRY(layer_tensor(g, il, "attn_k.weight", 1, 2, hp->n_embd, k_dim, &L->wk));
        OSCAR_TRY(layer_tensor(g, il, "attn_v.weight", 1, 2, hp->n_embd, v_dim, &L->wv));
        OSCAR_TRY(layer_tensor(g, il, "attn_output.weight", 1, 2, o_dim, hp->n_embd, &L->wo));
        int bias = hp->has_qkv_bias;
        OSCAR_TRY(layer_tensor(g, il, "attn_q.bias", bias, 1, q_dim, 1, &L->bq));
        OSCAR_TRY(layer_tensor(g, il, "attn_k.bias", bias, 1, k_dim, 1, &L->bk));
        OSCAR_TRY(layer_tensor(g, il, "attn_v.bias", bias, 1, v_dim, 1, &L->bv));
        int qkn = hp->has_qk_norm;
        OSCAR_TRY(layer_tensor(g, il, "attn_q_norm.weight", qkn, 1, hp->head_dim, 1, &L->q_norm));
        OSCAR_TRY(layer_tensor(g, il, "attn_k_norm.weight", qkn, 1, hp->head_dim, 1, &L->k_norm));
        /* An optional tensor the architecture does not use would be silently ignored: refuse. */
        if (!bias && (L->bq || L->bk || L->bv))
            OSCAR_FAIL(OSCAR_ERROR_UNSUPPORTED_FORMAT, "%s: blk.%u.attn_q/k/v.bias present but architecture %s "
                       "has no QKV bias", g->path, il, arch);
        if (!qkn && (L->q_norm || L->k_norm))
            OSCAR_FAIL(OSCAR_ERROR_UNSUPPORTED_FORMAT, "%s: blk.%u.attn_q_norm/k_norm present but architecture "
                       "%s has no Q/K norm", g->path, il, arch);
        OSCAR_TRY(layer_tensor(g, il, "ffn_norm.weight", 1, 1, hp->n_embd, 1, &L->ffn_norm));
        OSCAR_TRY(layer_tensor(g, il, "ffn_gate.weight", 1, 2, hp->n_embd, hp->n_ff, &L->w_gate));
        OSCAR_TRY(layer_tensor(g, il, "ffn_up.weight", 1, 2, hp->n_embd, hp->n_ff, &L->w_up));
        OSCAR_TRY(layer_tensor(g, il, "ffn_down.weight", 1, 2, hp->n_ff, hp->n_embd, &L->w_down));
    }
    /* A tensor of a block past block_count means the metadata and the tensors disagree. */
    {
        char name[96];
        snprintf(name, sizeof name, "blk.%u.attn_norm.weight", hp->n_layer);
        if (ovk_gguf_find_tensor(g, name))
            OSCAR_FAIL(OSCAR_ERROR_BAD_FORMAT, "%s: tensor %s exists but %s.block_count is %u", g->path, name, arch,
                       hp->n_layer);
    }
    OSCAR_TRY(check_small_tensors_finite(m));
    OSCAR_TRY(compute_rope_theta(m));
    m->fingerprint = ovk_model_fingerprint(m);
    *out = m;
    return OSCAR_OK;
fail:
    ovk_model_desc_destroy(m);
    return st;
}

oscar_status ovk_model_desc_load(const char *path, ovk_model_desc **out)
{
    ovk_gguf *g = NULL;
    if (!out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_model_desc_load: out is NULL");
    *out = NULL;
    if (!path) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_model_desc_load: path is NULL");
    oscar_status st = ovk_gguf_open(path, &g);
    if (st != OSCAR_OK) return st;
    return ovk_model_desc_from_gguf(g, 1, out);
}

void ovk_model_desc_destroy(ovk_model_desc *m)
{
    if (!m) return;
    if (m->owns_gguf) ovk_gguf_close(m->gguf);
    free(m->layers);
    free(m->rope_theta);
    free(m);
}

/* ---- fingerprint ---------------------------------------------------------------------------- */

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv_bytes(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= FNV_PRIME;
    }
    return h;
}

static uint64_t fnv_u32(uint64_t h, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    return fnv_bytes(h, b, 4);
}

static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
    h = fnv_u32(h, (uint32_t)v);
    return fnv_u32(h, (uint32_t)(v >> 32));
}

static uint64_t fnv_f32(uint64_t h, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return fnv_u32(h, u);
}

static uint64_t fnv_tensor(uint64_t h, const ovk_gguf_tensor *t)
{
    if (!t) return h;
    h = fnv_bytes(h, t->name, strlen(t->name) + 1);
    h = fnv_u32(h, t->type);
    h = fnv_u32(h, t->n_dims);
    for (uint32_t d = 0; d < t->n_dims; d++) h = fnv_u64(h, t->ne[d]);
    h = fnv_u64(h, t->n_bytes);
    const uint8_t *data = t->data;
    uint64_t n = t->n_bytes, s = 256;
    uint64_t first = n < s ? n : s;
    uint64_t mid = n / 2, mid_len = n - mid < s ? n - mid : s;
    uint64_t last = n < s ? n : s;
    h = fnv_bytes(h, data, (size_t)first);
    h = fnv_bytes(h, data + mid, (size_t)mid_len);
    h = fnv_bytes(h, data + n - last, (size_t)last);
    return h;
}

uint64_t ovk_model_fingerprint(const ovk_model_desc *m)
{
    static const char tag[] = "oscar-model-fp-v1";
    const ovk_model_hparams *hp = &m->hp;
    const char *arch = ovk_arch_name(hp->arch);
    uint64_t h = FNV_OFFSET;
    h = fnv_bytes(h, tag, sizeof tag);
    h = fnv_bytes(h, arch, strlen(arch) + 1);
    uint32_t u[] = {hp->n_layer, hp->n_embd, hp->n_ff, hp->n_head, hp->n_head_kv, hp->head_dim, hp->head_dim_v,
                    hp->n_vocab, hp->n_rot, (uint32_t)hp->rope_type, (uint32_t)hp->rope_scaling,
                    (uint32_t)hp->tied_embeddings};
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) h = fnv_u32(h, u[i]);
    h = fnv_f32(h, hp->norm_eps);
    h = fnv_f32(h, hp->rope_freq_base);
    h = fnv_f32(h, hp->rope_scale_factor);
    h = fnv_tensor(h, m->token_embd);
    h = fnv_tensor(h, m->output_norm);
    if (!hp->tied_embeddings) h = fnv_tensor(h, m->output);
    h = fnv_tensor(h, m->rope_freqs);
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        const ovk_model_layer *L = &m->layers[il];
        const ovk_gguf_tensor *ts[] = {L->attn_norm, L->wq, L->wk, L->wv, L->bq, L->bk, L->bv, L->q_norm,
                                         L->k_norm, L->wo, L->ffn_norm, L->w_gate, L->w_up, L->w_down};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) h = fnv_tensor(h, ts[i]);
    }
    return h;
}

/* ---- tokenizer from GGUF arrays ----------------------------------------------------------- */

static oscar_status opt_i32(const ovk_gguf *g, const char *key, int32_t *out)
{
    if (!ovk_gguf_find_key(g, key)) return OSCAR_OK;
    uint32_t v;
    oscar_status st = ovk_gguf_get_u32(g, key, &v);
    if (st == OSCAR_OK && v <= INT32_MAX) *out = (int32_t)v;
    return st;
}

static oscar_status opt_bool(const ovk_gguf *g, const char *key, int *out)
{
    if (!ovk_gguf_find_key(g, key)) return OSCAR_OK;
    return ovk_gguf_get_bool(g, key, out);
}

/* Borrowed views of the strings of a (at most INT32_MAX of them): *ptrs and *lens, malloc'ed
 * with one spare entry (never a malloc of 0 bytes), are the caller's to free, also on failure.
 * what: one string in messages ("token", "merge"). */
static oscar_status string_views(const ovk_gguf *g, const ovk_gguf_array *a, const char *what, const char ***ptrs,
                                 uint32_t **lens)
{
    oscar_status st = OSCAR_OK;
    const uint32_t n = (uint32_t)a->count;
    *ptrs = malloc((n + 1) * sizeof **ptrs);
    *lens = malloc((n + 1) * sizeof **lens);
    if (!*ptrs || !*lens) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "tokenizer: out of memory");
    for (uint32_t i = 0; i < n; i++) {
        if (a->strs[i].len > UINT32_MAX) OSCAR_FAIL(OSCAR_ERROR_BAD_FORMAT, "%s: %s %u too long", g->path, what, i);
        (*ptrs)[i] = a->strs[i].ptr;
        (*lens)[i] = (uint32_t)a->strs[i].len;
    }
fail:
    return st;
}

/* The array `key` with one number per token, or *a = NULL when the file has no such key. */
static oscar_status opt_token_array(const ovk_gguf *g, const char *key, uint32_t n_tokens, const ovk_gguf_array **a)
{
    *a = NULL;
    if (!ovk_gguf_find_key(g, key)) return OSCAR_OK;
    oscar_status st = ovk_gguf_get_array(g, key, -1, a);
    if (st) return st;
    if ((*a)->count != n_tokens)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_BAD_FORMAT, "%s: %s: %llu entries for %u tokens", g->path, key,
                           (unsigned long long)(*a)->count, n_tokens);
    return OSCAR_OK;
}

oscar_status ovk_model_tokenizer_create(const ovk_gguf *g, ovk_tokenizer **out)
{
    oscar_status st = OSCAR_OK;
    ovk_tokenizer_desc d = ovk_tokenizer_desc_default();
    const char **tokens = NULL, **merges = NULL;  /* [n_tokens], [n_merges] borrowed strings */
    uint32_t *token_lens = NULL, *merge_lens = NULL; /* bytes of each */
    float *scores = NULL;                         /* [n_tokens] */
    int32_t *types = NULL;                        /* [n_tokens] */
    const ovk_gguf_array *a;
    if (!out || !g) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_model_tokenizer_create: NULL argument");
    *out = NULL;
    OSCAR_TRY(ovk_gguf_get_str(g, "tokenizer.ggml.model", &d.model));
    if (ovk_gguf_find_key(g, "tokenizer.ggml.pre")) OSCAR_TRY(ovk_gguf_get_str(g, "tokenizer.ggml.pre", &d.pre));
    OSCAR_TRY(ovk_gguf_get_array(g, "tokenizer.ggml.tokens", OSCAR_GGUF_TYPE_STRING, &a));
    if (a->count == 0 || a->count > INT32_MAX)
        OSCAR_FAIL(OSCAR_ERROR_BAD_FORMAT, "%s: tokenizer.ggml.tokens: %llu tokens", g->path,
                   (unsigned long long)a->count);
    d.n_tokens = (uint32_t)a->count;
    OSCAR_TRY(string_views(g, a, "token", &tokens, &token_lens));
    d.tokens = tokens;
    d.token_lens = token_lens;
    OSCAR_TRY(opt_token_array(g, "tokenizer.ggml.scores", d.n_tokens, &a));
    if (a) {
        scores = malloc(d.n_tokens * sizeof *scores);
        if (!scores) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "tokenizer: out of memory");
        for (uint32_t i = 0; i < d.n_tokens; i++) scores[i] = (float)ovk_gguf_array_number(a, i);
        d.scores = scores;
    }
    OSCAR_TRY(opt_token_array(g, "tokenizer.ggml.token_type", d.n_tokens, &a));
    if (a) {
        types = malloc(d.n_tokens * sizeof *types);
        if (!types) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "tokenizer: out of memory");
        for (uint32_t i = 0; i < d.n_tokens; i++) types[i] = (int32_t)ovk_gguf_array_int(a, i);
        d.token_types = types;
    }
    if (ovk_gguf_find_key(g, "tokenizer.ggml.merges")) {
        OSCAR_TRY(ovk_gguf_get_array(g, "tokenizer.ggml.merges", OSCAR_GGUF_TYPE_STRING, &a));
        if (a->count > INT32_MAX) OSCAR_FAIL(OSCAR_ERROR_BAD_FORMAT, "%s: tokenizer.ggml.merges too long", g->path);
        d.n_merges = (uint32_t)a->count;
        OSCAR_TRY(string_views(g, a, "merge", &merges, &merge_lens));
        d.merges = merges;
        d.merge_lens = merge_lens;
    }
    OSCAR_TRY(opt_i32(g, "tokenizer.ggml.bos_token_id", &d.bos_id));
    OSCAR_TRY(opt_i32(g, "tokenizer.ggml.eos_token_id", &d.eos_id));
    OSCAR_TRY(opt_i32(g, "tokenizer.ggml.eot_token_id", &d.eot_id));
    OSCAR_TRY(opt_i32(g, "tokenizer.ggml.unknown_token_id", &d.unk_id));
    OSCAR_TRY(opt_bool(g, "tokenizer.ggml.add_bos_token", &d.add_bos));
    OSCAR_TRY(opt_bool(g, "tokenizer.ggml.add_space_prefix", &d.add_space_prefix));
    /* Ids past the vocabulary (some files carry a padding id) are dropped, not fatal. */
    if (d.bos_id >= (int32_t)d.n_tokens) d.bos_id = -1;
    if (d.eos_id >= (int32_t)d.n_tokens) d.eos_id = -1;
    if (d.eot_id >= (int32_t)d.n_tokens) d.eot_id = -1;
    if (d.unk_id >= (int32_t)d.n_tokens) d.unk_id = -1;
    OSCAR_TRY(ovk_tokenizer_create(&d, out));
fail:
    free(tokens);
    free(token_lens);
    free(merges);
    free(merge_lens);
    free(scores);
    free(types);
    return st;
}
