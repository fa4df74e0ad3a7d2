/* Tokenizer tests.
 *
 * 1. Synthetic vocabularies built here (byte-level BPE and SentencePiece), with expected ids
 *    derived by hand in the comments: merge order by rank and by score, ties, ignore_merges,
 *    special tokens with and without parse_special, byte fallback, BOS, capacity handling,
 *    decoding, rejected inputs.
 * 2. The real SmolLM2-135M-Instruct vocabulary (49152 tokens, 48900 merges, pre "smollm")
 *    against ids from Hugging Face `tokenizers` for 33 tricky strings (spaces, newlines, digit
 *    runs, contractions, emoji, CJK, accents, invalid UTF-8, special tokens in text).
 *    Decision: the vocabulary is committed as a plain-text dump, tests/data/smollm2_vocab.txt
 *    (0.98 MB, under the 2 MB limit we set), so this part runs everywhere, in CI included,
 *    without the 98 MB model and without a GGUF reader. The dump, the expected ids
 *    (smollm2_golden.txt) and the word splits (pretok_golden.txt) are written by
 *    scripts/gen_tokenizer_golden.py, whose header says how the reference was built. Once the
 *    GGUF reader exists, the model loader's own test should build the tokenizer from the GGUF
 *    (OSCAR_SMOLLM2_GGUF) and compare with the same golden file.
 * 3. The pre-tokenizer alone against the `regex` module for the gpt2, smollm, llama-bpe
 *    (Llama 3) and qwen2 patterns, on the same strings.
 * 4. Round trips decode(encode(x)) == x on the golden strings and on random bytes.
 *
 * Data files are found through OSCAR_SOURCE_DIR (ctest sets it); a missing file fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oscar/oscar.h"
#include "test_util.h"
#include "tokenizer.h"

/* ---- helpers ---------------------------------------------------------------------------- */

/* Encodes and compares with the expected ids; prints both on mismatch. */
static void check_encode(const ovk_tokenizer *tok, const char *text, size_t len, int add_bos,
                         int parse_special, const int32_t *want, size_t n_want, const char *label)
{
    int32_t got[512];
    size_t n = 0;
    oscar_status st = ovk_tokenizer_encode(tok, text, len, add_bos, parse_special, got, 512, &n);
    int same = st == OSCAR_OK && n == n_want && (n == 0 || memcmp(got, want, n * sizeof *got) == 0);
    CHECK_MSG(same, "%s: encode mismatch (status %d, %zu ids, want %zu)", label, (int)st, n, n_want);
    if (!same) {
        fprintf(stderr, "  got: ");
        for (size_t i = 0; i < n && i < 512; i++) fprintf(stderr, "%d ", got[i]);
        fprintf(stderr, "\n  want:");
        for (size_t i = 0; i < n_want; i++) fprintf(stderr, " %d", want[i]);
        fprintf(stderr, "\n");
    }
}

/* Checks decode(ids) == text (bytes). */
static void check_decode(const ovk_tokenizer *tok, const int32_t *ids, size_t n, int render_special,
                         const char *text, size_t len, const char *label)
{
    char buf[4096];
    size_t got = 0;
    oscar_status st = ovk_tokenizer_decode(tok, ids, n, render_special, 1, buf, sizeof buf, &got);
    CHECK_MSG(st == OSCAR_OK && got == len && memcmp(buf, text, len) == 0,
              "%s: decode gave %zu bytes \"%.*s\", want %zu", label, got, (int)(got < sizeof buf ? got : 0), buf, len);
}

static char *data_path(const char *name)
{
    const char *root = getenv("OSCAR_SOURCE_DIR");
    static char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/%s", root ? root : "../..", name);
    return path;
}

static int hexnib(int c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

/* Decodes a hex string into out (>= strlen/2 bytes); returns the byte count. */
static size_t unhex(const char *h, size_t hl, char *out)
{
    size_t n = 0;
    for (size_t i = 0; i + 1 < hl; i += 2) out[n++] = (char)(hexnib(h[i]) * 16 + hexnib(h[i + 1]));
    return n;
}

/* Splits a buffer into lines in place (LF terminated); returns the count, lines in *out. */
static size_t split_lines(char *buf, char ***out)
{
    size_t n = 0, cap = 1024;
    char **lines = malloc(cap * sizeof *lines);
    char *p = buf;
    while (*p) {
        char *e = strchr(p, '\n');
        if (n == cap) { cap *= 2; lines = realloc(lines, cap * sizeof *lines); }
        lines[n++] = p;
        if (!e) break;
        *e = '\0';
        p = e + 1;
    }
    *out = lines;
    return n;
}

/* GPT-2's bytes_to_unicode, written independently of the runtime for the synthetic vocab. */
static void byte_char(unsigned b, char out[3])
{
    unsigned printable[256] = {0};
    for (unsigned x = '!'; x <= '~'; x++) printable[x] = 1;
    for (unsigned x = 0xA1; x <= 0xAC; x++) printable[x] = 1;
    for (unsigned x = 0xAE; x <= 0xFF; x++) printable[x] = 1;
    unsigned cp = b;
    if (!printable[b]) {
        cp = 256;
        for (unsigned x = 0; x < b; x++) cp += !printable[x];
    }
    memset(out, 0, 3);
    if (cp < 0x80) out[0] = (char)cp;
    else { out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3F)); }
}

/* The text a byte-level vocabulary can spell: `in` without the bytes that have no token
 * (the tokenizer drops those). Returns the new length. */
static size_t spellable(const ovk_tokenizer *tok, const char *in, size_t len, char *out)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c[3];
        byte_char((unsigned char)in[i], c);
        if (ovk_tokenizer_find(tok, c, strlen(c)) >= 0) out[n++] = in[i];
    }
    return n;
}

/* ---- 1a. synthetic byte-level BPE ------------------------------------------------------ */

static void test_synthetic_bpe(void)
{
    /* ids 0..255: the mapped character of byte id; then: */
    static const char *extra[] = {
        "ab",     /* 256, merge rank 0: a b   */
        "abc",    /* 257, merge rank 1: ab c  */
        "\xC4\xA0" "a",  /* 258 "Ġa", merge rank 2: Ġ a */
        "aa",     /* 259, merge rank 3: a a   */
        "<|x|>",  /* 260, CONTROL            */
        "\xC4\xA0" "ab", /* 261 "Ġab", merge rank 4: Ġa b */
        "<u>",    /* 262, USER_DEFINED: always matched */
    };
    static const char *merges[] = {"a b", "ab c", "\xC4\xA0 a", "a a", "\xC4\xA0" "a b"};
    char chars[256][3];
    const char *tokens[256 + 7];
    int32_t types[256 + 7];
    for (unsigned b = 0; b < 256; b++) {
        byte_char(b, chars[b]);
        tokens[b] = chars[b];
        types[b] = OSCAR_TOKEN_NORMAL;
    }
    for (int i = 0; i < 7; i++) { tokens[256 + i] = extra[i]; types[256 + i] = OSCAR_TOKEN_NORMAL; }
    types[260] = OSCAR_TOKEN_CONTROL;
    types[262] = OSCAR_TOKEN_USER_DEFINED;
    ovk_tokenizer_desc d = ovk_tokenizer_desc_default();
    d.model = "gpt2";
    d.pre = "gpt2";
    d.n_tokens = 263;
    d.tokens = tokens;
    d.token_types = types;
    d.n_merges = 5;
    d.merges = merges;
    d.bos_id = 260;
    d.eos_id = 260;
    ovk_tokenizer *tok = NULL;
    CHECK_OK(ovk_tokenizer_create(&d, &tok));
    if (!tok) return;
    CHECK(ovk_tokenizer_vocab_size(tok) == 263);
    CHECK(!ovk_tokenizer_adds_bos(tok)); /* gpt2 default: add_bos_token 0 */

    /* words "abc" " ab" " aaa", then <|x|>, then "z".
     * "abc": a b -> ab (rank 0), ab c -> abc (rank 1)                         = 257
     * " ab": pairs (Ġ,a) rank 2 and (a,b) rank 0: ab first, and "Ġ ab" is no
     *        merge, so Ġ + ab although the token "Ġab" exists                 = 32 256
     * " aaa": (Ġ,a) rank 2 beats (a,a) rank 3: Ġa a a; then (a,a), leftmost  = 258 259
     * "z" = byte 122 */
    const char *text = "abc ab aaa<|x|>z";
    int32_t want[] = {257, 32, 256, 258, 259, 260, 122};
    check_encode(tok, text, strlen(text), 0, 1, want, 7, "bpe synthetic");
    /* without parse_special "<|x|>" is text: words "<|" "x" "|>" "z" */
    int32_t want_plain[] = {257, 32, 256, 258, 259, 60, 124, 120, 124, 62, 122};
    check_encode(tok, text, strlen(text), 0, 0, want_plain, 11, "bpe no special");
    /* user-defined tokens match even without parse_special */
    int32_t want_user[] = {97, 262, 98};
    check_encode(tok, "a<u>b", 5, 0, 0, want_user, 3, "bpe user-defined");
    /* "aaaa": a a a a -> (a,a) leftmost first: aa a a -> aa aa */
    int32_t want_aaaa[] = {259, 259};
    check_encode(tok, "aaaa", 4, 0, 1, want_aaaa, 2, "bpe ties leftmost");
    /* invalid UTF-8 keeps its bytes: 0xFF is its own word, mapped to the byte token 255 */
    int32_t want_bad[] = {256, 255, 257};
    check_encode(tok, "ab\xFF" "abc", 6, 0, 1, want_bad, 3, "bpe invalid byte");
    check_decode(tok, want_bad, 3, 0, "ab\xFF" "abc", 6, "bpe invalid byte");
    check_decode(tok, want, 7, 1, text, strlen(text), "bpe render special");
    check_decode(tok, want, 7, 0, "abc ab aaaz", 11, "bpe skip special");

    /* capacity: count query, exact fit, too small */
    size_t n = 0;
    CHECK_OK(ovk_tokenizer_encode(tok, text, strlen(text), 0, 1, NULL, 0, &n));
    CHECK(n == 7);
    int32_t small[3] = {-1, -1, -1};
    CHECK_STATUS(ovk_tokenizer_encode(tok, text, strlen(text), 0, 1, small, 2, &n), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(n == 7 && small[0] == 257 && small[1] == 32 && small[2] == -1);
    CHECK_OK(ovk_tokenizer_encode(tok, "", 0, 1, 1, small, 3, &n));
    CHECK(n == 0);
    char piece[8];
    size_t pl = 0;
    CHECK_OK(ovk_tokenizer_token_to_piece(tok, 258, 0, piece, sizeof piece, &pl));
    CHECK(pl == 2 && memcmp(piece, " a", 2) == 0);
    CHECK_STATUS(ovk_tokenizer_token_to_piece(tok, 258, 0, piece, 1, &pl), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(pl == 2);
    CHECK_STATUS(ovk_tokenizer_token_to_piece(tok, 263, 0, piece, sizeof piece, &pl), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_tokenizer_token_to_piece(tok, -1, 0, piece, sizeof piece, &pl), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(ovk_tokenizer_is_eog(tok, 260) && !ovk_tokenizer_is_eog(tok, 259) && !ovk_tokenizer_is_eog(tok, -5));
    CHECK(ovk_tokenizer_find(tok, "abc", 3) == 257 && ovk_tokenizer_find(tok, "abd", 3) == -1);
    CHECK(ovk_tokenizer_token_type(tok, 260) == OSCAR_TOKEN_CONTROL);
    ovk_tokenizer_destroy(tok);

    /* ignore_merges (Llama 3): " ab" is a token, so it is taken whole */
    d.pre = "llama-bpe";
    tok = NULL;
    CHECK_OK(ovk_tokenizer_create(&d, &tok));
    if (tok) {
        int32_t want3[] = {261};
        check_encode(tok, " ab", 3, 0, 1, want3, 1, "bpe ignore_merges");
        ovk_tokenizer_destroy(tok);
    }

    /* rejected descriptions */
    ovk_tokenizer_desc bad = d;
    tok = (ovk_tokenizer *)&bad; /* must be reset to NULL on failure */
    bad.pre = "no-such-pre";
    CHECK_STATUS(ovk_tokenizer_create(&bad, &tok), OSCAR_ERROR_UNSUPPORTED);
    CHECK(tok == NULL);
    bad = d;
    bad.model = "bert";
    CHECK_STATUS(ovk_tokenizer_create(&bad, &tok), OSCAR_ERROR_UNSUPPORTED);
    static const char *bad_merges[] = {"a b", "a q"}; /* "aq" is not a token */
    bad = d;
    bad.merges = bad_merges;
    bad.n_merges = 2;
    CHECK_STATUS(ovk_tokenizer_create(&bad, &tok), OSCAR_ERROR_INVALID_ARGUMENT);
    bad = d;
    bad.bos_id = 263;
    CHECK_STATUS(ovk_tokenizer_create(&bad, &tok), OSCAR_ERROR_INVALID_ARGUMENT);
    bad = d;
    bad.n_tokens = 0;
    CHECK_STATUS(ovk_tokenizer_create(&bad, &tok), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_tokenizer_create(NULL, &tok), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_tokenizer_encode(NULL, "a", 1, 0, 0, NULL, 0, &n), OSCAR_ERROR_INVALID_ARGUMENT);
    ovk_tokenizer_destroy(NULL);
}

/* ---- 1b. synthetic SentencePiece ------------------------------------------------------- */

static void test_synthetic_spm(void)
{
    enum { N = 270 };
    char names[256][8];
    const char *tokens[N];
    float scores[N];
    int32_t types[N];
    tokens[0] = "<unk>"; types[0] = OSCAR_TOKEN_UNKNOWN;
    tokens[1] = "<s>"; types[1] = OSCAR_TOKEN_CONTROL;
    tokens[2] = "</s>"; types[2] = OSCAR_TOKEN_CONTROL;
    for (int b = 0; b < 256; b++) {
        snprintf(names[b], sizeof names[b], "<0x%02X>", b);
        tokens[3 + b] = names[b];
        types[3 + b] = OSCAR_TOKEN_BYTE;
    }
    static const struct { const char *text; float score; } pieces[] = {
        {"\xE2\x96\x81", -10},                /* 259 "▁" */
        {"h", -20}, {"e", -20}, {"l", -20}, {"o", -20}, /* 260..263 */
        {"ll", -3},                           /* 264 */
        {"\xE2\x96\x81h", -5},                /* 265 "▁h" */
        {"\xE2\x96\x81he", -4},               /* 266 "▁he" */
        {"llo", -2},                          /* 267 */
        {"\xE2\x96\x81hello", -1},            /* 268 "▁hello" */
        {"\xC3\xA9", -20},                    /* 269 "é" */
    };
    for (int i = 0; i < N; i++) scores[i] = 0;
    for (int i = 0; i < 11; i++) {
        tokens[259 + i] = pieces[i].text;
        scores[259 + i] = pieces[i].score;
        types[259 + i] = OSCAR_TOKEN_NORMAL;
    }
    ovk_tokenizer_desc d = ovk_tokenizer_desc_default();
    d.model = "llama";
    d.n_tokens = N;
    d.tokens = tokens;
    d.scores = scores;
    d.token_types = types;
    d.bos_id = 1;
    d.eos_id = 2;
    ovk_tokenizer *tok = NULL;
    CHECK_OK(ovk_tokenizer_create(&d, &tok));
    if (!tok) return;
    CHECK(ovk_tokenizer_adds_bos(tok)); /* llama default: add_bos_token 1 */
    /* "▁hello▁hellé▁hi": ll (-3) merges first, leftmost; then llo (-2); then the second ll;
     * then ▁h (-5, leftmost), ▁he (-4), ▁hello (-1); then the second ▁h and ▁he.
     * "▁hell" is no token, so: ▁hello ▁he ll é; "▁hi" -> ▁h + 'i' by byte fallback <0x69>. */
    const char *text = "hello hell\xC3\xA9 hi";
    int32_t want[] = {1, 268, 266, 264, 269, 265, 3 + 0x69};
    check_encode(tok, text, strlen(text), 1, 1, want, 7, "spm synthetic");
    check_decode(tok, want, 7, 0, text, strlen(text), "spm synthetic");
    /* "a</s>b": a space prefix at the start and again after the special token */
    int32_t want2[] = {259, 3 + 'a', 2, 259, 3 + 'b'};
    check_encode(tok, "a</s>b", 6, 0, 1, want2, 5, "spm special");
    /* invalid byte: "▁" then <0xFF> */
    int32_t want3[] = {259, 3 + 0xFF};
    check_encode(tok, "\xFF", 1, 0, 1, want3, 2, "spm invalid byte");
    check_decode(tok, want3, 2, 0, "\xFF", 1, "spm invalid byte");
    /* "<unk>" is UNKNOWN: special only with parse_special */
    int32_t want4[] = {0};
    check_encode(tok, "<unk>", 5, 0, 1, want4, 1, "spm unk text");
    char buf[16];
    size_t l = 0;
    CHECK_OK(ovk_tokenizer_token_to_piece(tok, 266, 0, buf, sizeof buf, &l));
    CHECK(l == 3 && memcmp(buf, " he", 3) == 0);
    CHECK_OK(ovk_tokenizer_token_to_piece(tok, 3 + 0x0A, 0, buf, sizeof buf, &l));
    CHECK(l == 1 && buf[0] == '\n');
    CHECK(ovk_tokenizer_is_eog(tok, 2) && !ovk_tokenizer_is_eog(tok, 1));
    /* random bytes round-trip exactly: every byte has a fallback token */
    test_rng_seed(7);
    for (int it = 0; it < 200; it++) {
        char in[64];
        size_t len = test_rng_u32() % sizeof in;
        for (size_t i = 0; i < len; i++) in[i] = (char)(test_rng_u32() % 4 == 0 ? ' ' : test_rng_u32());
        int32_t ids[512];
        size_t n = 0;
        oscar_status st = ovk_tokenizer_encode(tok, in, len, 1, 0, ids, 512, &n);
        CHECK(st == OSCAR_OK);
        if (st == OSCAR_OK) check_decode(tok, ids, n, 0, in, len, "spm random bytes");
    }
    ovk_tokenizer_destroy(tok);
}

/* ---- 2. SmolLM2 --------------------------------------------------------------------------- */

/* Loads tests/data/smollm2_vocab.txt into a tokenizer (NULL on failure, with a failed check). */
static ovk_tokenizer *load_smollm2(char **keep_buf, char ***keep_lines)
{
    size_t size = 0;
    char *buf = test_read_file(data_path("smollm2_vocab.txt"), &size);
    CHECK_MSG(buf != NULL, "cannot read %s (set OSCAR_SOURCE_DIR to the source tree)", data_path("smollm2_vocab.txt"));
    if (!buf) return NULL;
    char **lines = NULL;
    size_t n_lines = split_lines(buf, &lines);
    ovk_tokenizer_desc d = ovk_tokenizer_desc_default();
    const char **tokens = NULL, **merges = NULL;
    int32_t *types = NULL;
    size_t i = 0;
    for (; i < n_lines; i++) {
        char *ln = lines[i];
        if (ln[0] == '#') continue;
        char *sp = strchr(ln, ' ');
        if (!sp) break;
        *sp = '\0';
        char *val = sp + 1;
        if (!strcmp(ln, "model")) d.model = val;
        else if (!strcmp(ln, "pre")) d.pre = val;
        else if (!strcmp(ln, "bos")) d.bos_id = atoi(val);
        else if (!strcmp(ln, "eos")) d.eos_id = atoi(val);
        else if (!strcmp(ln, "tokens")) {
            d.n_tokens = (uint32_t)atoi(val);
            tokens = calloc(d.n_tokens, sizeof *tokens);
            types = calloc(d.n_tokens, sizeof *types);
            for (uint32_t k = 0; k < d.n_tokens && i + 1 < n_lines; k++) {
                char *t = lines[++i];
                types[k] = atoi(t);
                tokens[k] = strchr(t, ' ') + 1;
            }
        } else if (!strcmp(ln, "merges")) {
            d.n_merges = (uint32_t)atoi(val);
            merges = calloc(d.n_merges, sizeof *merges);
            for (uint32_t k = 0; k < d.n_merges && i + 1 < n_lines; k++) merges[k] = lines[++i];
        }
    }
    d.tokens = tokens;
    d.token_types = types;
    d.merges = merges;
    ovk_tokenizer *tok = NULL;
    CHECK(d.n_tokens == 49152 && d.n_merges == 48900);
    CHECK_OK(ovk_tokenizer_create(&d, &tok));
    free(tokens);
    free(types);
    free(merges);
    *keep_buf = buf;
    *keep_lines = lines;
    return tok;
}

static void test_smollm2(void)
{
    char *vbuf = NULL, **vlines = NULL;
    ovk_tokenizer *tok = load_smollm2(&vbuf, &vlines);
    /* the arrays were copied: the file buffer can go now */
    free(vbuf);
    free(vlines);
    if (!tok) return;
    CHECK(ovk_tokenizer_pre(tok) == OSCAR_PRE_SMOLLM);
    CHECK(ovk_tokenizer_bos(tok) == 1 && ovk_tokenizer_eos(tok) == 2);
    CHECK(ovk_tokenizer_eot(tok) == 2);                 /* <|im_end|> */
    CHECK(ovk_tokenizer_is_eog(tok, 2));                /* <|im_end|> */
    CHECK(ovk_tokenizer_is_eog(tok, 0));                /* <|endoftext|> */
    CHECK(!ovk_tokenizer_is_eog(tok, 1));               /* <|im_start|> */

    size_t size = 0;
    char *buf = test_read_file(data_path("smollm2_golden.txt"), &size);
    CHECK_MSG(buf != NULL, "cannot read %s", data_path("smollm2_golden.txt"));
    char **lines = NULL;
    size_t n_lines = buf ? split_lines(buf, &lines) : 0, cases = 0;
    for (size_t i = 0; i < n_lines; i++) {
        if (lines[i][0] == '#' || lines[i][0] == '\0') continue;
        char *tab = strchr(lines[i], '\t');
        if (!tab) continue;
        char text[1024];
        size_t len = unhex(lines[i], (size_t)(tab - lines[i]), text);
        int32_t want[512];
        size_t n_want = 0;
        for (char *p = tab + 1; *p;) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p) break;
            want[n_want++] = (int32_t)v;
            p = end;
        }
        char label[64];
        snprintf(label, sizeof label, "smollm2 case %zu", cases);
        check_encode(tok, text, len, 0, 1, want, n_want, label);
        char spelled[1024];
        size_t sl = spellable(tok, text, len, spelled);
        check_decode(tok, want, n_want, 1, spelled, sl, label);
        /* streaming: pieces one token at a time concatenate to the text */
        char joined[2048];
        size_t jl = 0;
        for (size_t k = 0; k < n_want; k++) {
            size_t pl = 0;
            CHECK_OK(ovk_tokenizer_token_to_piece(tok, want[k], 1, joined + jl, sizeof joined - jl, &pl));
            jl += pl;
        }
        CHECK_MSG(jl == sl && memcmp(joined, spelled, sl) == 0, "%s: pieces do not join to the text", label);
        cases++;
    }
    CHECK(cases == 33);
    free(lines);
    free(buf);

    /* BOS: SmolLM2 says add_bos_token = false, so add_bos=1 adds nothing */
    int32_t ids[64];
    size_t n = 0;
    CHECK_OK(ovk_tokenizer_encode(tok, "Hi", 2, 1, 1, ids, 64, &n));
    CHECK(n == 1 && ids[0] != 1);
    /* parse_special = 0: <|im_start|> is plain text and never id 1 */
    CHECK_OK(ovk_tokenizer_encode(tok, "<|im_start|>user", 16, 0, 0, ids, 64, &n));
    int has_special = 0;
    for (size_t k = 0; k < n; k++) has_special |= ids[k] == 1;
    CHECK(n > 2 && !has_special);

    /* random bytes: never fail, and round-trip exactly */
    test_rng_seed(1234);
    for (int it = 0; it < 300; it++) {
        char in[96];
        size_t len = test_rng_u32() % sizeof in;
        for (size_t k = 0; k < len; k++) {
            uint32_t r = test_rng_u32();
            static const char pool[] = " \n\t0a'.\xC3\xA9<|>";
            in[k] = (char)(r % 3 == 0 ? pool[r / 3 % (sizeof pool - 1)] : (int)(r >> 8));
        }
        int32_t out[256];
        oscar_status st = ovk_tokenizer_encode(tok, in, len, 0, 1, out, 256, &n);
        CHECK(st == OSCAR_OK);
        char spelled[96];
        size_t sl = spellable(tok, in, len, spelled);
        if (st == OSCAR_OK) check_decode(tok, out, n, 1, spelled, sl, "smollm2 random bytes");
    }
    /* a long run of one letter stays fast (heap merging, not quadratic rescans) */
    size_t big = 200000;
    char *run = malloc(big);
    int32_t *out = malloc(big * sizeof *out);
    if (run && out) {
        memset(run, 'a', big);
        CHECK_OK(ovk_tokenizer_encode(tok, run, big, 0, 1, out, big, &n));
        /* the vocabulary has "aa" and "aaaa" but no longer run: 50000 x "aaaa" */
        int32_t aaaa = ovk_tokenizer_find(tok, "aaaa", 4);
        int all = n == big / 4;
        for (size_t k = 0; all && k < n; k++) all = out[k] == aaaa;
        CHECK(aaaa >= 0 && all);
    }
    free(run);
    free(out);
    ovk_tokenizer_destroy(tok);
}

/* ---- 3. pre-tokenizer -------------------------------------------------------------------- */

static void test_pretokenizer(void)
{
    size_t size = 0;
    char *buf = test_read_file(data_path("pretok_golden.txt"), &size);
    CHECK_MSG(buf != NULL, "cannot read %s", data_path("pretok_golden.txt"));
    if (!buf) return;
    char **lines = NULL;
    size_t n_lines = split_lines(buf, &lines), cases = 0;
    for (size_t i = 0; i < n_lines; i++) {
        if (lines[i][0] == '#' || lines[i][0] == '\0') continue;
        char *t1 = strchr(lines[i], '\t');
        char *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        if (!t2) continue;
        *t1 = '\0';
        ovk_pretokenizer pre = !strcmp(lines[i], "gpt2") ? OSCAR_PRE_GPT2
                               : !strcmp(lines[i], "smollm") ? OSCAR_PRE_SMOLLM
                               : !strcmp(lines[i], "llama-bpe") ? OSCAR_PRE_LLAMA3 : OSCAR_PRE_QWEN2;
        char text[1024];
        size_t len = unhex(t1 + 1, (size_t)(t2 - t1 - 1), text);
        size_t want[512], n_want = 0, got[512];
        for (char *p = t2 + 1; *p;) {
            char *end;
            unsigned long v = strtoul(p, &end, 10);
            if (end == p) break;
            want[n_want++] = v;
            p = end;
        }
        long n = ovk_pretokenize(pre, text, len, got, 512);
        int same = n == (long)n_want && (n_want == 0 || memcmp(got, want, n_want * sizeof *got) == 0);
        CHECK_MSG(same, "pretokenize %s case %zu: %ld words, want %zu", lines[i], cases, n, n_want);
        if (!same) {
            fprintf(stderr, "  got: ");
            for (long k = 0; k < n && k < 512; k++) fprintf(stderr, "%zu ", got[k]);
            fprintf(stderr, "\n  want:");
            for (size_t k = 0; k < n_want; k++) fprintf(stderr, " %zu", want[k]);
            fprintf(stderr, "\n");
        }
        cases++;
    }
    CHECK(cases == 4 * 33);
    free(lines);
    free(buf);
    /* random bytes through every pre-tokenizer: words cover the text, in order, none empty */
    test_rng_seed(99);
    int cover = 1;
    for (int it = 0; it < 400; it++) {
        static const char pool[] = " \n\r\t'sSlL0\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80\xE3\x80\x80";
        char in[128];
        size_t len = test_rng_u32() % sizeof in, ends[128];
        for (size_t k = 0; k < len; k++) {
            uint32_t r = test_rng_u32();
            in[k] = (char)(r % 2 ? pool[r / 2 % (sizeof pool - 1)] : (int)(r >> 8));
        }
        for (int pre = OSCAR_PRE_GPT2; pre <= OSCAR_PRE_QWEN2; pre++) {
            long n = ovk_pretokenize((ovk_pretokenizer)pre, in, len, ends, 128);
            int ok = n >= 0 && n <= (long)len && (len == 0 ? n == 0 : ends[n - 1] == len);
            for (long k = 0; ok && k < n; k++) ok = ends[k] > (k ? ends[k - 1] : 0);
            cover &= ok;
        }
    }
    CHECK(cover);
    /* classes */
    CHECK(ovk_unicode_is_letter(0x4E2D) && ovk_unicode_is_letter(0xE9) && !ovk_unicode_is_letter(0x1F600));
    CHECK(ovk_unicode_is_number(0xB2) && ovk_unicode_is_number(0x663) && !ovk_unicode_is_number('a'));
    CHECK(ovk_unicode_is_space(0x3000) && ovk_unicode_is_space(0xA0) && !ovk_unicode_is_space(0x200B));
}

int main(void)
{
    test_synthetic_bpe();
    test_synthetic_spm();
    test_pretokenizer();
    test_smollm2();
    return test_finish();
}
