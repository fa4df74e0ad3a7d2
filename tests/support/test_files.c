/* Files the app tests build (test_files.h). */
#include "test_files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"

oscar_status test_write_identity_zoo(const char *path, const oscar_model_info *in, const char *fingerprint, float clip)
{
    ovk_gguf_writer *w = NULL;
    oscar_status st = ovk_gguf_writer_create(&w);
    if (st) return st;
    uint32_t d = in->head_dim;
    float clips[256];
    for (int i = 0; i < 256; i++) clips[i] = clip;
    ovk_gguf_writer_set_u32(w, "oscar.format_version", 1);
    ovk_gguf_writer_set_str(w, "oscar.objective_k", "identity");
    ovk_gguf_writer_set_str(w, "oscar.objective_v", "identity");
    ovk_gguf_writer_set_str(w, "oscar.grouping", "layer");
    ovk_gguf_writer_set_u32(w, "oscar.group_size", d);
    ovk_gguf_writer_set_array(w, "oscar.clip_k", OSCAR_GGUF_TYPE_FLOAT32, clips, in->n_layer);
    ovk_gguf_writer_set_array(w, "oscar.clip_v", OSCAR_GGUF_TYPE_FLOAT32, clips, in->n_layer);
    ovk_gguf_writer_set_str(w, "oscar.model.architecture", in->arch);
    ovk_gguf_writer_set_u32(w, "oscar.model.block_count", in->n_layer);
    ovk_gguf_writer_set_u32(w, "oscar.model.head_count_kv", in->n_head_kv);
    ovk_gguf_writer_set_u32(w, "oscar.model.head_count", in->n_head);
    ovk_gguf_writer_set_u32(w, "oscar.model.head_dim", d);
    ovk_gguf_writer_set_str(w, "oscar.model.fingerprint", fingerprint);
    float *eye = calloc((size_t)d * d, sizeof *eye); /* [d][d] */
    for (uint32_t i = 0; i < d; i++) eye[i * d + i] = 1.0f;
    uint64_t ne[2] = { d, d };
    for (uint32_t l = 0; l < in->n_layer && !st; l++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%u.attn_k_rot.weight", l);
        st = ovk_gguf_writer_add_tensor(w, name, OSCAR_GGML_TYPE_F32, 2, ne, eye);
        snprintf(name, sizeof name, "blk.%u.attn_v_rot.weight", l);
        if (!st) st = ovk_gguf_writer_add_tensor(w, name, OSCAR_GGML_TYPE_F32, 2, ne, eye);
    }
    if (!st) st = ovk_gguf_writer_write_file(w, path);
    free(eye);
    ovk_gguf_writer_destroy(w);
    return st;
}

int test_fill_tensor(const char *path, const char *name, const void *pattern, size_t pattern_len)
{
    ovk_gguf *g = NULL;
    if (ovk_gguf_open(path, &g) != OSCAR_OK) return 0;
    const ovk_gguf_tensor *t = ovk_gguf_find_tensor(g, name);
    long at = t ? (long)(g->data_offset + t->offset) : 0;
    uint64_t n = t ? t->n_bytes : 0;
    ovk_gguf_close(g);
    FILE *f = t ? fopen(path, "r+b") : NULL;
    if (!f || fseek(f, at, SEEK_SET) != 0) {
        if (f) fclose(f);
        return 0;
    }
    for (uint64_t i = 0; i < n; i += pattern_len)
        fwrite(pattern, 1, n - i < pattern_len ? (size_t)(n - i) : pattern_len, f);
    return fclose(f) == 0;
}

int test_cut_vocabulary(const char *src, const char *dst, uint32_t n_tokens)
{
    ovk_gguf *g = NULL;
    ovk_gguf_writer *w = NULL;
    const char **strs = NULL;
    int ok = ovk_gguf_open(src, &g) == OSCAR_OK && ovk_gguf_writer_create(&w) == OSCAR_OK;
    for (uint64_t i = 0; ok && i < g->n_kv; i++) {
        const ovk_gguf_kv *kv = &g->kv[i];
        const ovk_gguf_array *a = &kv->value.arr;
        int cut = kv->value.type == OSCAR_GGUF_TYPE_ARRAY && a->count > n_tokens &&
                  (!strcmp(kv->key, "tokenizer.ggml.tokens") || !strcmp(kv->key, "tokenizer.ggml.token_type") ||
                   !strcmp(kv->key, "tokenizer.ggml.scores"));
        if (!cut) {
            ok = ovk_gguf_writer_copy_kv(w, kv) == OSCAR_OK;
        } else if (a->type == OSCAR_GGUF_TYPE_STRING) {
            /* the strings are not NUL-terminated in the mapping: copy them */
            strs = calloc(n_tokens, sizeof *strs);
            for (uint32_t k = 0; strs && k < n_tokens; k++) {
                char *c = malloc(a->strs[k].len + 1);
                memcpy(c, a->strs[k].ptr, a->strs[k].len);
                c[a->strs[k].len] = 0;
                strs[k] = c;
            }
            ok = strs && ovk_gguf_writer_set_array(w, kv->key, OSCAR_GGUF_TYPE_STRING, strs, n_tokens) == OSCAR_OK;
        } else {
            ok = ovk_gguf_writer_set_array(w, kv->key, a->type, a->data, n_tokens) == OSCAR_OK;
        }
    }
    for (uint64_t i = 0; ok && i < g->n_tensors; i++) {
        const ovk_gguf_tensor *t = &g->tensors[i];
        ok = ovk_gguf_writer_add_tensor_ref(w, t->name, t->type, t->n_dims, t->ne, t->data) == OSCAR_OK;
    }
    if (ok) ok = ovk_gguf_writer_write_file(w, dst) == OSCAR_OK;
    for (uint32_t k = 0; strs && k < n_tokens; k++) free((char *)strs[k]);
    free(strs);
    ovk_gguf_writer_destroy(w);
    ovk_gguf_close(g);
    return ok;
}

int test_write_ppl_text(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) return 0;
    for (int i = 0; i < 40; i++)
        fprintf(f, "The quick brown fox jumps over the lazy dog number %d. Then the fox runs home to the other side "
                   "of the hill, where the river meets the sea.\n", i);
    return fclose(f) == 0;
}
