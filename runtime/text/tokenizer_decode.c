/* Tokenizer: token ids back to text, and accessors (tokenizer.h). */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tokenizer_impl.h"
#include "utf8.h"

/* ==== 6. Decoding and accessors ======================================================== */

/* Output of decoding: bytes go to buf while they fit; len counts all of them. */
typedef struct sink {
    char *buf;          /* [cap] or NULL to measure */
    size_t cap, len;    /* bytes */
    int strip_space;    /* drop the first byte written if it is a space, then clear */
} sink;

static void put(sink *o, const char *s, size_t n)
{
    if (n == 0) return;
    if (o->strip_space) {
        o->strip_space = 0;
        if (s[0] == ' ') { s++; n--; }
    }
    if (o->buf && o->len < o->cap) {
        size_t k = o->cap - o->len < n ? o->cap - o->len : n;
        memcpy(o->buf + o->len, s, k);
    }
    o->len += n;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Appends the bytes of one token (see ovk_tokenizer_token_to_piece). */
static void piece(const ovk_tokenizer *tok, int32_t id, int render_special, sink *o)
{
    const char *s = tok_text(tok, id);
    size_t n = tok->text_len[id];
    uint8_t type = tok->types[id];
    if (type == OSCAR_TOKEN_CONTROL || type == OSCAR_TOKEN_UNKNOWN) {
        if (render_special) put(o, s, n);
        return;
    }
    if (type == OSCAR_TOKEN_UNUSED) return;
    if (type == OSCAR_TOKEN_USER_DEFINED) { put(o, s, n); return; }
    if (tok->model == OSCAR_TOKENIZER_SPM) {
        if (type == OSCAR_TOKEN_BYTE && n == 6 && s[0] == '<' && s[1] == '0' && s[2] == 'x' && s[5] == '>' &&
            hexval(s[3]) >= 0 && hexval(s[4]) >= 0) {
            char c = (char)(hexval(s[3]) * 16 + hexval(s[4]));
            put(o, &c, 1);
            return;
        }
        size_t run = 0; /* bytes of s copied through unchanged, flushed before each "▁" */
        for (size_t i = 0; i < n;) {
            if (i + 3 <= n && (unsigned char)s[i] == 0xE2 && (unsigned char)s[i + 1] == 0x96 &&
                (unsigned char)s[i + 2] == 0x81) {
                put(o, s + i - run, run);
                put(o, " ", 1);
                run = 0;
                i += 3;
            } else {
                run++;
                i++;
            }
        }
        put(o, s + n - run, run);
        return;
    }
    /* byte-level: each mapped character is one byte; anything else passes through */
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t l = ovk_utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (cp < 512 && tok->cp_to_byte[cp]) {
            char c = (char)(tok->cp_to_byte[cp] - 1);
            put(o, &c, 1);
        } else {
            put(o, s + i, l);
        }
        i += l;
    }
}

oscar_status ovk_tokenizer_token_to_piece(const ovk_tokenizer *tok, int32_t token,
                                            int render_special, char *buf, size_t capacity,
                                            size_t *len)
{
    if (!tok || !len) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "token_to_piece: NULL argument");
    *len = 0;
    if (token < 0 || (uint32_t)token >= tok->n_tokens)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "token_to_piece: token %d out of range [0, %u)", token, tok->n_tokens);
    sink o = {buf, capacity, 0, 0};
    piece(tok, token, render_special, &o);
    *len = o.len;
    if (buf && o.len > capacity)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "token_to_piece: %zu bytes do not fit in %zu", o.len, capacity);
    return OSCAR_OK;
}

oscar_status ovk_tokenizer_decode(const ovk_tokenizer *tok, const int32_t *tokens, size_t n,
                                    int render_special, int skip_prefix_space, char *buf,
                                    size_t capacity, size_t *len)
{
    if (!tok || !len || (!tokens && n > 0)) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "decode: NULL argument");
    *len = 0;
    /* the space the SPM encoder prefixed is the first byte of the first non-empty piece */
    sink o = {buf, capacity, 0, skip_prefix_space && tok->model == OSCAR_TOKENIZER_SPM && tok->add_space_prefix};
    for (size_t i = 0; i < n; i++) {
        if (tokens[i] < 0 || (uint32_t)tokens[i] >= tok->n_tokens)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "decode: token %d at %zu out of range", tokens[i], i);
        piece(tok, tokens[i], render_special, &o);
    }
    *len = o.len;
    if (buf && o.len > capacity)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "decode: %zu bytes do not fit in %zu", o.len, capacity);
    return OSCAR_OK;
}

const char *ovk_tokenizer_token_text(const ovk_tokenizer *tok, int32_t token)
{
    if (!tok || token < 0 || (uint32_t)token >= tok->n_tokens) return NULL;
    return tok_text(tok, token);
}

ovk_token_type ovk_tokenizer_token_type(const ovk_tokenizer *tok, int32_t token)
{
    if (!tok || token < 0 || (uint32_t)token >= tok->n_tokens) return OSCAR_TOKEN_UNDEFINED;
    return (ovk_token_type)tok->types[token];
}

uint32_t ovk_tokenizer_vocab_size(const ovk_tokenizer *tok) { return tok ? tok->n_tokens : 0; }
ovk_tokenizer_model ovk_tokenizer_model_kind(const ovk_tokenizer *tok) { return tok->model; }
ovk_pretokenizer ovk_tokenizer_pre(const ovk_tokenizer *tok) { return tok->pre; }
int32_t ovk_tokenizer_bos(const ovk_tokenizer *tok) { return tok ? tok->bos : -1; }
int32_t ovk_tokenizer_eos(const ovk_tokenizer *tok) { return tok ? tok->eos : -1; }
int32_t ovk_tokenizer_eot(const ovk_tokenizer *tok) { return tok ? tok->eot : -1; }
int ovk_tokenizer_adds_bos(const ovk_tokenizer *tok) { return tok && tok->add_bos && tok->bos >= 0; }

int ovk_tokenizer_is_eog(const ovk_tokenizer *tok, int32_t token)
{
    if (!tok || token < 0) return 0;
    for (uint32_t i = 0; i < tok->n_eog; i++)
        if (tok->eog[i] == token) return 1;
    return 0;
}
