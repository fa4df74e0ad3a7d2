/* libFuzzer target: the GGUF reader on arbitrary bytes (ovk_gguf_open_memory), then what the
 * loaders do with an image that parses: every typed getter on every key, the array accessors
 * (nested arrays included), every tensor's bytes, the model description (hyperparameters,
 * shapes, the small tensors' finiteness, the fingerprint) and the tokenizer built from the
 * metadata, which then encodes and decodes a fixed chat string.
 *
 * Contract checked: no crash, no out-of-bounds read (the input buffer is exactly `size` bytes
 * under AddressSanitizer), no undefined behaviour, no leak, and every failure is a status
 * with a message. Seeds: tests/fuzz/seeds/gguf (fuzz_make_seeds writes them). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "model_desc.h"
#include "tokenizer.h"

/* Reads up to 64 elements of an array and its nested arrays, as a loader would. */
static uint64_t touch_array(const ovk_gguf_array *a, int depth)
{
    uint64_t h = a->count;
    uint64_t n = a->count < 64 ? a->count : 64;
    for (uint64_t i = 0; i < n; i++) {
        if (a->type == OSCAR_GGUF_TYPE_STRING) h += a->strs[i].len ? (uint8_t)a->strs[i].ptr[a->strs[i].len - 1] : 0;
        else if (a->type == OSCAR_GGUF_TYPE_ARRAY) h += depth < 16 ? touch_array(&a->arrays[i], depth + 1) : 0;
        else h += (uint64_t)ovk_gguf_array_int(a, i) + (uint64_t)(ovk_gguf_array_number(a, i) != 0.0);
    }
    return h;
}

static void fail_without_message(const char *what)
{
    fprintf(stderr, "%s failed without a message\n", what);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ovk_gguf *g = NULL;
    if (ovk_gguf_open_memory(data, size, "fuzz", &g) != OSCAR_OK) {
        if (!oscar_last_error()[0]) fail_without_message("ovk_gguf_open_memory");
        return 0;
    }
    volatile uint64_t sink = 0;
    for (uint64_t i = 0; i < g->n_kv; i++) {
        const char *key = g->kv[i].key;
        uint32_t u32;
        int32_t i32;
        uint64_t u64;
        float f32;
        int b;
        const char *s;
        const ovk_gguf_array *a;
        if (ovk_gguf_find_key(g, key) == NULL) abort(); /* every key read must be found */
        if (ovk_gguf_get_u32(g, key, &u32) == OSCAR_OK) sink += u32;
        if (ovk_gguf_get_i32(g, key, &i32) == OSCAR_OK) sink += (uint64_t)i32;
        if (ovk_gguf_get_u64(g, key, &u64) == OSCAR_OK) sink += u64;
        if (ovk_gguf_get_f32(g, key, &f32) == OSCAR_OK) sink += f32 != 0.0f;
        if (ovk_gguf_get_bool(g, key, &b) == OSCAR_OK) sink += (uint64_t)b;
        if (ovk_gguf_get_str(g, key, &s) == OSCAR_OK) sink += strlen(s);
        if (ovk_gguf_get_array(g, key, -1, &a) == OSCAR_OK) sink += touch_array(a, 0);
    }
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const ovk_gguf_tensor *t = &g->tensors[i];
        if (ovk_gguf_find_tensor(g, t->name) == NULL) abort();
        if (t->n_bytes) sink += ((const uint8_t *)t->data)[0] + ((const uint8_t *)t->data)[t->n_bytes - 1];
    }

    ovk_model_desc *m = NULL;
    if (ovk_model_desc_from_gguf(g, 0, &m) == OSCAR_OK) sink += m->fingerprint;
    else if (!oscar_last_error()[0]) fail_without_message("ovk_model_desc_from_gguf");
    ovk_model_desc_destroy(m);

    ovk_tokenizer *tok = NULL;
    if (ovk_gguf_find_key(g, "tokenizer.ggml.tokens") && ovk_model_tokenizer_create(g, &tok) == OSCAR_OK) {
        static const char text[] = "<|im_start|>user\nHello, wörld! 123 \xff\xfe<|im_end|>\n";
        int32_t ids[256];
        size_t n = 0;
        if (ovk_tokenizer_encode(tok, text, sizeof text - 1, 1, 1, ids, 256, &n) == OSCAR_OK) {
            char out[4096];
            size_t len = 0;
            ovk_tokenizer_decode(tok, ids, n, 1, 1, out, sizeof out, &len);
            sink += len;
        }
        sink += (uint64_t)ovk_tokenizer_eot(tok) + (uint64_t)ovk_tokenizer_is_eog(tok, 0);
    }
    ovk_tokenizer_destroy(tok);
    ovk_gguf_close(g);
    (void)sink;
    return 0;
}
