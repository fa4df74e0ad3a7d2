/* UTF-8, Unicode classes and the pre-tokenizer: hand-written matchers for the regexes named in
 * tokenizer.h, which split text into the words that BPE merges within. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"
#include "utf8.h"

/* ==== 1. UTF-8 and Unicode classes ====================================================== */

/* Decodes one UTF-8 character at s[0..n) (n >= 1). Returns its length in bytes (1..4) and
 * the code point in *cp; an invalid or truncated sequence, an overlong form, a surrogate or a
 * value above U+10FFFF yields length 1 and INVALID_BYTE_CP(s[0]). */
size_t ovk_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned c = s[0];
    size_t len;
    uint32_t v, min;
    if (c < 0x80) { *cp = c; return 1; }
    if (c >= 0xC2 && c <= 0xDF) { len = 2; v = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; v = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; v = c & 0x07; min = 0x10000; }
    else goto invalid;
    if (len > n) goto invalid;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) goto invalid;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) goto invalid;
    *cp = v;
    return len;
invalid:
    *cp = INVALID_BYTE_CP(c);
    return 1;
}

/* Writes the UTF-8 form of a valid code point to out (>= 4 bytes); returns its length. */
size_t ovk_utf8_encode(uint32_t cp, unsigned char *out)
{
    if (cp < 0x80) { out[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

static int in_ranges(uint32_t cp, const uint32_t (*r)[2], size_t n)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < r[mid][0]) hi = mid;
        else if (cp > r[mid][1]) lo = mid + 1;
        else return 1;
    }
    return 0;
}

int ovk_unicode_is_letter(uint32_t cp)
{
    if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
    return in_ranges(cp, ovk_unicode_letter_ranges, ovk_unicode_letter_ranges_count);
}

int ovk_unicode_is_number(uint32_t cp)
{
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    return in_ranges(cp, ovk_unicode_number_ranges, ovk_unicode_number_ranges_count);
}

/* The Unicode White_Space property: what \s matches in the regex engines HF tokenizers and
 * Python's `regex` use. */
int ovk_unicode_is_space(uint32_t cp)
{
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

/* GPT-2's bytes_to_unicode: bytes that are printable and not space keep their value, the
 * other 68 bytes map to U+0100, U+0101, ... in byte order. */
uint32_t ovk_byte_to_cp(unsigned b)
{
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) return b;
    uint32_t n = 0;
    for (unsigned x = 0; x < b; x++)
        if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF))) n++;
    return 256 + n;
}

/* ==== 2. The pre-tokenizer ============================================================== */

enum { CLS_OTHER = 0, CLS_L = 1, CLS_N = 2, CLS_S = 4 };

/* The text as code points: cp[i] spans bytes off[i]..off[i+1]. */
typedef struct cp_text {
    uint32_t *cp;   /* [n] code points (INVALID_BYTE_CP for bad bytes) */
    uint8_t *cls;   /* [n] CLS_* flags */
    size_t *off;    /* [n + 1] byte offsets */
    size_t n;
} cp_text;

static void cp_text_free(cp_text *t)
{
    free(t->cp);
    free(t->cls);
    free(t->off);
    memset(t, 0, sizeof *t);
}

/* Decodes `len` bytes into code points with classes. Returns 0, or -1 out of memory. */
static int cp_text_init(cp_text *t, const char *text, size_t len)
{
    memset(t, 0, sizeof *t);
    t->cp = malloc((len + 1) * sizeof *t->cp);
    t->cls = malloc(len + 1);
    t->off = malloc((len + 1) * sizeof *t->off);
    if (!t->cp || !t->cls || !t->off) { cp_text_free(t); return -1; }
    const unsigned char *s = (const unsigned char *)text;
    size_t pos = 0, n = 0;
    while (pos < len) {
        uint32_t cp;
        size_t l = ovk_utf8_decode(s + pos, len - pos, &cp);
        t->cp[n] = cp;
        t->cls[n] = (uint8_t)((ovk_unicode_is_letter(cp) ? CLS_L : 0) |
                              (ovk_unicode_is_number(cp) ? CLS_N : 0) |
                              (ovk_unicode_is_space(cp) ? CLS_S : 0));
        t->off[n] = pos;
        pos += l;
        n++;
    }
    t->off[n] = pos;
    t->n = n;
    return 0;
}

static int lower_ascii(uint32_t c) { return (c >= 'A' && c <= 'Z') ? (int)(c + 32) : (int)c; }

/* Length of a contraction 's 't 're 've 'm 'll 'd at i (0 if none); case-insensitive when
 * `icase` (Llama 3 and Qwen2 use (?i:...)). */
static size_t match_contraction(const cp_text *t, size_t i, size_t end, int icase)
{
    if (t->cp[i] != '\'' || i + 1 >= end) return 0;
    uint32_t a = t->cp[i + 1];
    uint32_t b = i + 2 < end ? t->cp[i + 2] : 0;
    if (icase) { a = (uint32_t)lower_ascii(a); b = (uint32_t)lower_ascii(b); }
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

/* End of a whitespace run starting at i. */
static size_t space_run_end(const cp_text *t, size_t i, size_t end)
{
    while (i < end && (t->cls[i] & CLS_S)) i++;
    return i;
}

/* \s+(?!\S)|\s+ at i (cls[i] is space): the whole run when it reaches `end` or is one
 * character long, else the run minus its last character (which joins the next word). */
static size_t match_spaces(const cp_text *t, size_t i, size_t end)
{
    size_t j = space_run_end(t, i, end);
    if (j == end || j - i == 1) return j - i;
    return j - i - 1;
}

/* One word of the GPT-2 regex at i (i < end):
 * 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static size_t match_gpt2(const cp_text *t, size_t i, size_t end)
{
    size_t k = match_contraction(t, i, end, 0);
    if (k) return k;
    size_t j = i + (t->cp[i] == ' ' && i + 1 < end ? 1 : 0);
    uint8_t c = t->cls[j];
    if (c & CLS_L) { while (j < end && (t->cls[j] & CLS_L)) j++; return j - i; }
    if (c & CLS_N) { while (j < end && (t->cls[j] & CLS_N)) j++; return j - i; }
    if (c == CLS_OTHER) { while (j < end && t->cls[j] == CLS_OTHER) j++; return j - i; }
    return match_spaces(t, i, end);
}

static int is_crlf(uint32_t c) { return c == '\r' || c == '\n'; }

/* One word of the Llama 3 regex at i (max_digits 3), or Qwen2's (max_digits 1):
 * (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
 * \s*[\r\n]+|\s+(?!\S)|\s+ */
static size_t match_llama3(const cp_text *t, size_t i, size_t end, size_t max_digits)
{
    size_t k = match_contraction(t, i, end, 1);
    if (k) return k;
    uint8_t c = t->cls[i];
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    size_t j = i;
    if (!(c & (CLS_L | CLS_N)) && !is_crlf(t->cp[i]) && i + 1 < end && (t->cls[i + 1] & CLS_L)) j = i + 1;
    if (t->cls[j] & CLS_L) { while (j < end && (t->cls[j] & CLS_L)) j++; return j - i; }
    /* \p{N}{1,max} */
    if (c & CLS_N) {
        j = i;
        while (j < end && j - i < max_digits && (t->cls[j] & CLS_N)) j++;
        return j - i;
    }
    /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
    j = i + (t->cp[i] == ' ' && i + 1 < end ? 1 : 0);
    if (t->cls[j] == CLS_OTHER) {
        while (j < end && t->cls[j] == CLS_OTHER) j++;
        while (j < end && is_crlf(t->cp[j])) j++;
        return j - i;
    }
    /* \s*[\r\n]+ : up to the last CR/LF of the whitespace run, if it has one */
    size_t run = space_run_end(t, i, end), last = 0;
    for (j = i; j < run; j++)
        if (is_crlf(t->cp[j])) last = j + 1;
    if (last) return last - i;
    return match_spaces(t, i, end);
}

/* Appends the word ends of t[begin..end) (code point indices) to ends[] as byte offsets;
 * *count runs past capacity to count. */
static void split_range(ovk_pretokenizer pre, const cp_text *t, size_t begin, size_t end,
                        size_t *ends, size_t capacity, size_t *count)
{
    size_t i = begin;
    while (i < end) {
        size_t k;
        switch (pre) {
        case OSCAR_PRE_LLAMA3: k = match_llama3(t, i, end, 3); break;
        case OSCAR_PRE_QWEN2: k = match_llama3(t, i, end, 1); break;
        default: k = match_gpt2(t, i, end); break;
        }
        if (k == 0) k = 1; /* cannot happen: every class is matched; keeps progress certain */
        i += k;
        if (*count < capacity) ends[*count] = t->off[i];
        (*count)++;
    }
}

/* Splits a decoded text into words (see ovk_pretokenize). */
static size_t split_words(ovk_pretokenizer pre, const cp_text *t, size_t *ends, size_t capacity)
{
    size_t count = 0;
    if (pre == OSCAR_PRE_SMOLLM) {
        /* Digits(individual_digits) first: each \p{N} is a piece of its own, and the gpt2
         * regex runs on the text between them as on separate strings. */
        size_t start = 0;
        for (size_t i = 0; i < t->n; i++) {
            if (!(t->cls[i] & CLS_N)) continue;
            split_range(OSCAR_PRE_GPT2, t, start, i, ends, capacity, &count);
            split_range(OSCAR_PRE_GPT2, t, i, i + 1, ends, capacity, &count);
            start = i + 1;
        }
        split_range(OSCAR_PRE_GPT2, t, start, t->n, ends, capacity, &count);
    } else {
        split_range(pre, t, 0, t->n, ends, capacity, &count);
    }
    return count;
}

long ovk_pretokenize(ovk_pretokenizer pre, const char *text, size_t len, size_t *ends,
                       size_t capacity)
{
    cp_text t;
    if (cp_text_init(&t, text, len) != 0) return -1;
    size_t n = split_words(pre, &t, ends, capacity);
    cp_text_free(&t);
    return (long)n;
}

