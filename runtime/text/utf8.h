/* UTF-8 for the tokenizer (pretokenize.c), shared by the pre-tokenizer and the BPE. */
#ifndef OVK_UTF8_H
#define OVK_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Code point given to an invalid UTF-8 byte b: the lone surrogate U+DC00+b, as Python's
 * "surrogateescape" does. It is in no class (not letter, number or space), so the
 * pre-tokenizer treats it like punctuation, and its bytes are the original byte. */
#define INVALID_BYTE_CP(b) (0xDC00u | (uint32_t)(b))

/* Decodes one UTF-8 character at s[0..n) (n >= 1). Returns its length in bytes (1..4) and
 * the code point in *cp; an invalid or truncated sequence, an overlong form, a surrogate or a
 * value above U+10FFFF yields length 1 and INVALID_BYTE_CP(s[0]). */
size_t ovk_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
/* Writes the UTF-8 form of a valid code point to out (>= 4 bytes); returns its length. */
size_t ovk_utf8_encode(uint32_t cp, unsigned char *out);
/* GPT-2's bytes_to_unicode: bytes that are printable and not space keep their value, the
 * other 68 bytes map to U+0100, U+0101, ... in byte order. */
uint32_t ovk_byte_to_cp(unsigned b);

#endif
