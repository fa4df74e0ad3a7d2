/* libFuzzer target: the tokenizer encoding arbitrary bytes, and the pre-tokenizer alone.
 *
 * Tokenizers (built once): the byte-level BPE of a generated model (oscar-gen-model's vocabulary:
 * 3 control tokens, the 256 byte tokens, English merges, <|reserved_N|> up to 320 tokens; pre
 * "smollm"), and a small SentencePiece vocabulary written here (<unk>, <s>, </s>, the 256
 * <0xNN> byte tokens, a few pieces with scores, one user-defined token). The first input byte
 * picks the tokenizer (or the pre-tokenizer and which of its four regexes) and the flags
 * add_bos and parse_special; the rest is the text.
 *
 * Contract checked: no crash, out-of-bounds access, undefined behaviour or leak; the count
 * query agrees with the ids written; every id is in the vocabulary; both vocabularies spell
 * every byte, so decode(encode(x)) == x without special-token parsing and BOS (the tokenizer's
 * stated round trip; for SentencePiece, texts without a literal U+2581, which it reads as a
 * space, and without the user-defined token); pre-tokenizer word ends increase and end at the text's length.
 * Seeds: tests/fuzz/seeds/tokenizer (fuzz_make_seeds). */
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf.h"
#include "model_desc.h"
#include "model_gen.h"
#include "tokenizer.h"

static ovk_tokenizer *bpe, *spm;

/* The generated model's tokenizer, through a temporary GGUF file (as the loader reads it). */
static ovk_tokenizer *make_bpe(void)
{
    char path[] = "/tmp/oscar_fuzz_tokenizer_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) abort();
    close(fd);
    ovk_model_gen_params p = ovk_model_gen_params_default(OSCAR_ARCH_LLAMA);
    ovk_gguf *g = NULL;
    ovk_tokenizer *t = NULL;
    if (ovk_model_gen_write(&p, path) != OSCAR_OK || ovk_gguf_open(path, &g) != OSCAR_OK ||
        ovk_model_tokenizer_create(g, &t) != OSCAR_OK) {
        fprintf(stderr, "fuzz_tokenizer: cannot build the BPE vocabulary: %s\n", oscar_last_error());
        abort();
    }
    ovk_gguf_close(g);
    unlink(path);
    return t;
}

static ovk_tokenizer *make_spm(void)
{
    static const char *const pieces[] = { "\xe2\x96\x81", "\xe2\x96\x81t", "h", "e", "he", "\xe2\x96\x81the", "a",
                                          ("\xe2\x96\x81" "a"), "t", "i", "n", "in", "g", "ing", "\xe2\x96\x81in",
                                          "\xc3\xa9", "w", "o", "r", "l", "d", "\xe2\x96\x81wor", "ld" };
    enum { N_PIECES = sizeof pieces / sizeof pieces[0], N = 3 + 256 + N_PIECES + 1 };
    static char bytes[256][8];
    const char *tokens[N];
    float scores[N];
    int32_t types[N];
    tokens[0] = "<unk>", types[0] = OSCAR_TOKEN_UNKNOWN;
    tokens[1] = "<s>", types[1] = OSCAR_TOKEN_CONTROL;
    tokens[2] = "</s>", types[2] = OSCAR_TOKEN_CONTROL;
    for (int b = 0; b < 256; b++) {
        snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
        tokens[3 + b] = bytes[b], types[3 + b] = OSCAR_TOKEN_BYTE;
    }
    for (int i = 0; i < N_PIECES; i++) tokens[259 + i] = pieces[i], types[259 + i] = OSCAR_TOKEN_NORMAL;
    tokens[N - 1] = "<|user|>", types[N - 1] = OSCAR_TOKEN_USER_DEFINED;
    for (int i = 0; i < N; i++) scores[i] = i < 259 ? 0.0f : -(float)i;
    ovk_tokenizer_desc d = ovk_tokenizer_desc_default();
    d.model = "llama";
    d.n_tokens = N, d.tokens = tokens, d.scores = scores, d.token_types = types;
    d.bos_id = 1, d.eos_id = 2, d.unk_id = 0, d.add_bos = 1, d.add_space_prefix = 1;
    ovk_tokenizer *t = NULL;
    if (ovk_tokenizer_create(&d, &t) != OSCAR_OK) {
        fprintf(stderr, "fuzz_tokenizer: cannot build the SPM vocabulary: %s\n", oscar_last_error());
        abort();
    }
    return t;
}

static void check_pretokenize(ovk_pretokenizer pre, const char *text, size_t len)
{
    size_t ends[512];
    long n = ovk_pretokenize(pre, text, len, ends, 512);
    if (n < 0) return; /* out of memory */
    if (len && n == 0) abort();
    size_t shown = (size_t)n < 512 ? (size_t)n : 512;
    for (size_t i = 0; i < shown; i++)
        if (ends[i] > len || (i && ends[i] <= ends[i - 1]) || ends[i] == 0) abort();
    if ((size_t)n <= 512 && n > 0 && ends[n - 1] != len) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!bpe) bpe = make_bpe(), spm = make_spm();
    if (size == 0) return 0;
    unsigned flags = data[0];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    if ((flags & 3) == 2) {
        check_pretokenize((ovk_pretokenizer)((flags >> 2) & 3), text, len);
        return 0;
    }
    const ovk_tokenizer *tok = (flags & 1) ? spm : bpe;
    int add_bos = (flags >> 2) & 1, parse_special = (flags >> 3) & 1;
    size_t n = 0, n2 = 0;
    if (ovk_tokenizer_encode(tok, text, len, add_bos, parse_special, NULL, 0, &n) != OSCAR_OK) return 0;
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids) return 0;
    if (ovk_tokenizer_encode(tok, text, len, add_bos, parse_special, ids, n, &n2) != OSCAR_OK || n2 != n) abort();
    uint32_t V = ovk_tokenizer_vocab_size(tok);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (uint32_t)ids[i] >= V) abort();
    size_t out_len = 0;
    if (ovk_tokenizer_decode(tok, ids, n, 1, 1, NULL, 0, &out_len) != OSCAR_OK) abort();
    char *out = malloc(out_len + 1);
    if (!out) abort();
    size_t got = 0;
    if (ovk_tokenizer_decode(tok, ids, n, 1, 1, out, out_len + 1, &got) != OSCAR_OK || got != out_len) abort();
    /* SentencePiece writes a space as U+2581, so a U+2581 in the text comes back as a space;
     * and the text after a user-defined token (always matched) gets its own space prefix, as
     * llama.cpp gives it */
    int spelled = !(flags & 1) || (!memmem(text, len, "\xe2\x96\x81", 3) && !memmem(text, len, "<|user|>", 8));
    if (!add_bos && !parse_special && spelled && (out_len != len || memcmp(out, text, len) != 0)) {
        fprintf(stderr, "round trip: %zu bytes in, %zu bytes out (%s)\n", len, out_len, (flags & 1) ? "spm" : "bpe");
        abort();
    }
    free(out);
    free(ids);
    return 0;
}
