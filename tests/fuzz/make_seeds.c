/* Writes the seed corpora of the fuzz targets (tests/fuzz/seeds/<target>/), small valid inputs
 * from which the fuzzer mutates:
 *   gguf:          one-layer generated models (llama, qwen2, qwen3; Q4_0 and Q8_0; no tokenizer),
 *                  a generated model's tokenizer and chat template alone, a RotationZoo file, a file with every metadata type (nested arrays, a
 *                  general.alignment of 64, 1-3 dimensional tensors) and the same as GGUF v2
 *   rotation:      RotationZoo files for fuzz_rotation's model shape: per layer and per KV head,
 *                  with means and key-center blocks, key feedback and a refit metric
 *   tokenizer:     flags byte + text for each tokenizer, flag and pre-tokenizer
 *   chat_template: flags byte + template, system prompt and messages (ChatML with a default
 *                  system prompt, Llama 3, an unknown template)
 * usage: fuzz_make_seeds SEEDS_DIR (the folders must exist). scripts/fuzz.sh --seeds runs it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "model_gen.h"

static const char *root;
static int failures;

static void check(oscar_status st, const char *what)
{
    if (st == OSCAR_OK) return;
    fprintf(stderr, "fuzz_make_seeds: %s: %s\n", what, oscar_last_error());
    failures++;
}

static void path_of(char *buf, size_t cap, const char *target, const char *name)
{
    snprintf(buf, cap, "%s/%s/%s", root, target, name);
}

static void write_bytes(const char *target, const char *name, const void *data, size_t n)
{
    char path[4096];
    path_of(path, sizeof path, target, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "fuzz_make_seeds: cannot write %s\n", path);
        failures++;
    }
}

/* flags byte + text, for the tokenizer and chat-template seeds */
static void write_flagged(const char *target, const char *name, unsigned flags, const char *text, size_t len)
{
    char *buf = malloc(len + 1);
    buf[0] = (char)flags;
    memcpy(buf + 1, text, len);
    write_bytes(target, name, buf, len + 1);
    free(buf);
}

/* ---- gguf ---------------------------------------------------------------------------------- */

static void gguf_seeds(void)
{
    char path[4096];
    /* models without a tokenizer (a vocabulary of 64 keeps them a few KB), one per architecture */
    static const ovk_arch archs[] = { OSCAR_ARCH_LLAMA, OSCAR_ARCH_QWEN2, OSCAR_ARCH_QWEN3 };
    for (int a = 0; a < 3; a++) {
        ovk_model_gen_params p = ovk_model_gen_params_default(archs[a]);
        p.n_layer = 1, p.n_embd = 32, p.n_head = 2, p.n_head_kv = 1, p.head_dim = 16, p.n_ff = 32, p.n_vocab = 64;
        p.weight_type = p.embd_type = a == 1 ? OSCAR_GGML_TYPE_Q8_0 : OSCAR_GGML_TYPE_Q4_0;
        p.tokenizer = 0, p.tied_embeddings = a != 0;
        snprintf(path, sizeof path, "%s/gguf/model-%s.gguf", root, ovk_arch_name(archs[a]));
        check(ovk_model_gen_write(&p, path), "model");
    }
    /* the generated tokenizer's metadata alone (no tensors), read by the tokenizer loader */
    ovk_model_gen_params p = ovk_model_gen_params_default(OSCAR_ARCH_LLAMA);
    snprintf(path, sizeof path, "%s/gguf/full-model.tmp", root);
    check(ovk_model_gen_write(&p, path), "model with tokenizer");
    ovk_gguf *full = NULL;
    ovk_gguf_writer *w = NULL;
    check(ovk_gguf_open(path, &full), "model with tokenizer");
    check(ovk_gguf_writer_create(&w), "writer");
    if (full && w) {
        for (uint64_t i = 0; i < full->n_kv; i++)
            if (!strncmp(full->kv[i].key, "tokenizer.", 10)) check(ovk_gguf_writer_copy_kv(w, &full->kv[i]), "copy");
        char out[4096];
        path_of(out, sizeof out, "gguf", "tokenizer-only.gguf");
        check(ovk_gguf_writer_write_file(w, out), "tokenizer only");
    }
    ovk_gguf_writer_destroy(w);
    ovk_gguf_close(full);
    remove(path);

    w = NULL;
    check(ovk_gguf_writer_create(&w), "writer");
    if (!w) return;
    ovk_gguf_writer_set_alignment(w, 64);
    ovk_gguf_writer_set_u8(w, "t.u8", 200);
    ovk_gguf_writer_set_i8(w, "t.i8", -100);
    ovk_gguf_writer_set_u16(w, "t.u16", 60000);
    ovk_gguf_writer_set_i16(w, "t.i16", -30000);
    ovk_gguf_writer_set_u32(w, "t.u32", 4000000000u);
    ovk_gguf_writer_set_i32(w, "t.i32", -2000000000);
    ovk_gguf_writer_set_u64(w, "t.u64", 0xFFFFFFFFFFFFull);
    ovk_gguf_writer_set_i64(w, "t.i64", -5);
    ovk_gguf_writer_set_f32(w, "t.f32", 1.5f);
    ovk_gguf_writer_set_f64(w, "t.f64", -2.25);
    ovk_gguf_writer_set_bool(w, "t.bool", 1);
    ovk_gguf_writer_set_str(w, "t.str", "h\xc3\xa9llo");
    float fa[3] = { 1, 2, 3 };
    int32_t ia[2] = { -1, 7 };
    const char *sa[2] = { "a", "bc" };
    ovk_gguf_writer_set_array(w, "t.arr.f32", OSCAR_GGUF_TYPE_FLOAT32, fa, 3);
    ovk_gguf_writer_set_array(w, "t.arr.i32", OSCAR_GGUF_TYPE_INT32, ia, 2);
    ovk_gguf_writer_set_array(w, "t.arr.str", OSCAR_GGUF_TYPE_STRING, sa, 2);
    const char *const l0[] = { "x", "yz" }, *const l1[] = { "w" };
    const char *const *lists[] = { l0, l1 };
    uint64_t counts[] = { 2, 1 };
    ovk_gguf_writer_set_str_array_array(w, "t.arr.arr", lists, counts, 2);
    float t1[32], t3[2 * 2 * 32];
    for (int i = 0; i < 32; i++) t1[i] = (float)i;
    for (int i = 0; i < 128; i++) t3[i] = (float)(i % 7) - 3.0f;
    uint64_t ne1[1] = { 32 }, ne3[3] = { 32, 2, 2 };
    check(ovk_gguf_writer_add_tensor(w, "t.vec", OSCAR_GGML_TYPE_F32, 1, ne1, t1), "tensor");
    check(ovk_gguf_writer_add_tensor(w, "t.cube", OSCAR_GGML_TYPE_F32, 3, ne3, t3), "tensor");
    void *img = NULL;
    size_t n = 0;
    check(ovk_gguf_writer_write_memory(w, &img, &n), "all types");
    if (img) {
        write_bytes("gguf", "all-types-v3.gguf", img, n);
        ((uint8_t *)img)[4] = 2; /* GGUF v2: the same layout with 64-bit counts */
        write_bytes("gguf", "all-types-v2.gguf", img, n);
        write_bytes("gguf", "header-only.gguf", img, 24);
    }
    free(img);
    ovk_gguf_writer_destroy(w);
}

/* ---- rotation ------------------------------------------------------------------------------ */

enum { L = 2, NKV = 2, D = 8 };

/* A signed permutation of D: orthogonal and not symmetric (a transposed file still loads, as
 * any orthogonal matrix does, but the seed covers a general matrix). */
static void signed_perm(float *r, int shift, int sign_seed)
{
    memset(r, 0, D * D * sizeof *r);
    for (int i = 0; i < D; i++) r[i * D + (i + shift) % D] = ((sign_seed >> (i % 8)) & 1) ? -1.0f : 1.0f;
}

static void rotation_seed(const char *name, int per_head, int means, int feedback, int refit)
{
    ovk_gguf_writer *w = NULL;
    check(ovk_gguf_writer_create(&w), "writer");
    if (!w) return;
    float clips_k[L] = { 0.96f, 0.9f }, clips_v[L] = { 0.92f, 1.0f };
    ovk_gguf_writer_set_u32(w, "oscar.format_version", 1);
    ovk_gguf_writer_set_str(w, "oscar.objective_k", "query_covariance");
    ovk_gguf_writer_set_str(w, "oscar.objective_v", "proxy_score_weighted");
    ovk_gguf_writer_set_str(w, "oscar.grouping", per_head ? "head" : "layer");
    ovk_gguf_writer_set_u32(w, "oscar.group_size", refit ? D : D / 2);
    ovk_gguf_writer_set_array(w, "oscar.clip_k", OSCAR_GGUF_TYPE_FLOAT32, clips_k, L);
    ovk_gguf_writer_set_array(w, "oscar.clip_v", OSCAR_GGUF_TYPE_FLOAT32, clips_v, L);
    ovk_gguf_writer_set_bool(w, "oscar.clip_fitted", 1);
    ovk_gguf_writer_set_u32(w, "oscar.sink_tokens", 64);
    ovk_gguf_writer_set_u32(w, "oscar.recent_tokens", 256);
    if (refit) ovk_gguf_writer_set_u32(w, "oscar.refit_rounds", 2);
    ovk_gguf_writer_set_str(w, "oscar.model.architecture", "llama");
    ovk_gguf_writer_set_u32(w, "oscar.model.block_count", L);
    ovk_gguf_writer_set_u32(w, "oscar.model.head_count_kv", NKV);
    ovk_gguf_writer_set_u32(w, "oscar.model.head_count", 4);
    ovk_gguf_writer_set_u32(w, "oscar.model.head_dim", D);
    ovk_gguf_writer_set_str(w, "oscar.model.fingerprint", "0123456789abcdef");
    ovk_gguf_writer_set_u64(w, "oscar.calib.tokens", 20000);
    ovk_gguf_writer_set_u32(w, "oscar.calib.sequence_length", 512);
    ovk_gguf_writer_set_str(w, "oscar.calib.text_source", "seed");
    if (means) ovk_gguf_writer_set_u32(w, "oscar.key_center_block", 128);
    int nr = per_head ? NKV : 1;
    float rot[NKV * D * D], mat[NKV * D * D], mean[NKV * D];
    uint64_t ne_rot[3] = { D, D, (uint64_t)nr }, ne_mean[2] = { D, NKV };
    for (int l = 0; l < L; l++) {
        char t[64];
        for (int which = 0; which < 2; which++) {
            for (int h = 0; h < nr; h++) signed_perm(rot + h * D * D, 1 + l + h + which, 0x5A ^ (l * 3 + h + which));
            snprintf(t, sizeof t, "blk.%d.attn_%c_rot.weight", l, which ? 'v' : 'k');
            check(ovk_gguf_writer_add_tensor(w, t, OSCAR_GGML_TYPE_F32, per_head ? 3 : 2, ne_rot, rot), t);
        }
        if (means) {
            for (int i = 0; i < NKV * D; i++) mean[i] = 0.25f * (float)(i % 5) - 0.5f;
            snprintf(t, sizeof t, "blk.%d.attn_k_mean", l);
            check(ovk_gguf_writer_add_tensor(w, t, OSCAR_GGML_TYPE_F32, 2, ne_mean, mean), t);
            snprintf(t, sizeof t, "blk.%d.attn_v_mean", l);
            check(ovk_gguf_writer_add_tensor(w, t, OSCAR_GGML_TYPE_F32, 2, ne_mean, mean), t);
        }
        if (feedback) { /* strictly upper triangular */
            for (int i = 0; i < nr * D * D; i++) mat[i] = (i % D) > (i / D % D) ? 0.01f * (float)(i % 9) : 0.0f;
            snprintf(t, sizeof t, "blk.%d.attn_k_feedback", l);
            check(ovk_gguf_writer_add_tensor(w, t, OSCAR_GGML_TYPE_F32, per_head ? 3 : 2, ne_rot, mat), t);
        }
        if (refit) { /* symmetric */
            for (int i = 0; i < nr * D * D; i++) mat[i] = (i % D) == (i / D % D) ? 1.0f : 0.1f;
            snprintf(t, sizeof t, "blk.%d.attn_k_metric", l);
            check(ovk_gguf_writer_add_tensor(w, t, OSCAR_GGML_TYPE_F32, per_head ? 3 : 2, ne_rot, mat), t);
        }
    }
    void *img = NULL;
    size_t n = 0;
    check(ovk_gguf_writer_write_memory(w, &img, &n), name);
    if (img) {
        write_bytes("rotation", name, img, n);
        if (!per_head && !means && !feedback) write_bytes("gguf", name, img, n);
    }
    free(img);
    ovk_gguf_writer_destroy(w);
}

/* ---- text ---------------------------------------------------------------------------------- */

static void text_seeds(void)
{
    static const char *const texts[] = {
        "Hello world, the quick brown fox jumps over the lazy dog.",
        "  leading  and   trailing spaces   \n\n\ttabs\r\nand lines\n",
        "don't I'll we've THEY'RE 1234567 3.14159 x=y+2; f(a,b) -> {}",
        "h\xc3\xa9llo w\xc3\xb6rld \xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80 \xd0\xbf\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82",
        "bad bytes \xff\xfe\xc0\x80 \xed\xa0\x80 cut \xe2\x82",
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<s>a</s><|user|><|reserved_3|>",
        "\xe2\x96\x81the \xe2\x96\x81in ing thing",
    };
    char name[64];
    int k = 0;
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        /* BPE and SPM without and with flags, and the four pre-tokenizers */
        static const unsigned flags[] = { 0x00, 0x01, 0x0C, 0x0D, 0x02, 0x06, 0x0A, 0x0E };
        for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++) {
            if (f >= 2 && i % 2) continue; /* every text in both tokenizers, the rest on half of them */
            snprintf(name, sizeof name, "text-%02d", k++);
            write_flagged("tokenizer", name, flags[f], texts[i], strlen(texts[i]));
        }
    }
}

static void chat_seeds(void)
{
    static const char chatml[] =
        "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are a "
        "helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + "
        "message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
        "'<|im_start|>assistant\\n' }}{% endif %}";
    static const char llama3[] =
        "{{ '<|begin_of_text|>' }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
        "'<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}";
    static const char unknown[] = "{% for m in messages %}[{{ m.role }}] {{ m.content }}{% endfor %}";
    const char *tpls[] = { chatml, llama3, unknown };
    static const char msgs[] = "user\0Hello there\0assistant\0  Hi! How can I help?\n\0user\0Thanks";
    char name[64];
    for (int t = 0; t < 3; t++) {
        static const unsigned flags[] = { 0x06, 0x0C, 0x04 };
        for (int f = 0; f < 3; f++) {
            size_t lt = strlen(tpls[t]);
            const char *sys = f == 1 ? "Be brief." : "";
            size_t ls = strlen(sys), n = lt + 1 + ls + 1 + sizeof msgs - 1;
            char *buf = malloc(n);
            memcpy(buf, tpls[t], lt + 1);
            memcpy(buf + lt + 1, sys, ls + 1);
            memcpy(buf + lt + 1 + ls + 1, msgs, sizeof msgs - 1);
            snprintf(name, sizeof name, "chat-%d-%d", t, f);
            write_flagged("chat_template", name, flags[f], buf, n);
            free(buf);
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_make_seeds SEEDS_DIR\n");
        return 2;
    }
    root = argv[1];
    gguf_seeds();
    rotation_seed("rot-layer.gguf", 0, 0, 0, 0);
    rotation_seed("rot-head-means.gguf", 1, 1, 0, 0);
    rotation_seed("rot-layer-feedback-refit.gguf", 0, 0, 1, 1);
    rotation_seed("rot-head-all.gguf", 1, 1, 1, 1);
    text_seeds();
    chat_seeds();
    return failures ? 1 : 0;
}
