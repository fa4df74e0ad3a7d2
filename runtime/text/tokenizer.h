/* Tokenizer: text <-> token ids for the llama family, pure CPU, no file parsing.
 *
 * Two models, selected by the GGUF key tokenizer.ggml.model:
 *  - "gpt2": byte-level BPE (SmolLM2, Qwen2/3, Llama 3). Bytes map to printable code points
 *    (GPT-2's bytes_to_unicode), a pre-tokenizer regex chosen by tokenizer.ggml.pre splits the
 *    text into words, and each word is merged pair by pair in order of merge rank
 *    (tokenizer.ggml.merges, rank = index).
 *  - "llama": SentencePiece-style BPE (Llama 2). Spaces become U+2581 "▁", a "▁" is prepended
 *    (add_space_prefix), adjacent pieces merge while their concatenation is a token, highest
 *    score first (tokenizer.ggml.scores), and characters with no token fall back to the byte
 *    tokens <0xNN>.
 *
 * Special tokens (type CONTROL or UNKNOWN) are matched verbatim in the input, longest first,
 * before any splitting when the caller asks for it (parse_special); USER_DEFINED tokens are
 * always matched (llama.cpp does the same).
 *
 * Arbitrary bytes never fail: an invalid UTF-8 byte is kept as that byte (it is a class of its
 * own for the pre-tokenizer, like punctuation) and tokenizes through the byte mapping or the
 * byte-fallback tokens, so decode(encode(x)) == x for every x the vocabulary can spell.
 * (llama.cpp substitutes U+FFFD for such bytes instead; we keep them.) A byte-level
 * vocabulary may lack some byte tokens (SmolLM2 has no token for 0x04, 0xC0, 0xFF and 18
 * others); such bytes are dropped, as HF tokenizers and llama.cpp drop them. SPM falls back
 * to <unk> for a byte without a <0xNN> token.
 *
 * A tokenizer is immutable after creation and may be shared between threads.
 */
#ifndef OSCAR_TOKENIZER_H
#define OSCAR_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "oscar/oscar.h"

/* Token types, numbered as the GGUF key tokenizer.ggml.token_type (llama.cpp's
 * llama_token_type). */
typedef enum ovk_token_type {
    OSCAR_TOKEN_UNDEFINED = 0,
    OSCAR_TOKEN_NORMAL = 1,
    OSCAR_TOKEN_UNKNOWN = 2,
    OSCAR_TOKEN_CONTROL = 3,
    OSCAR_TOKEN_USER_DEFINED = 4,
    OSCAR_TOKEN_UNUSED = 5,
    OSCAR_TOKEN_BYTE = 6,
} ovk_token_type;

typedef enum ovk_tokenizer_model {
    OSCAR_TOKENIZER_BPE = 1, /* "gpt2": byte-level BPE */
    OSCAR_TOKENIZER_SPM = 2, /* "llama": SentencePiece BPE with byte fallback */
} ovk_tokenizer_model;

/* Pre-tokenizer (word splitting) of the byte-level BPE, from tokenizer.ggml.pre. */
typedef enum ovk_pretokenizer {
    OSCAR_PRE_GPT2 = 0,   /* "gpt2", "default": 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+|
                           *  ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
    OSCAR_PRE_SMOLLM = 1, /* "smollm", "starcoder", "refact", "codeshell": every \p{N} on its
                           * own first, then the gpt2 regex on each piece */
    OSCAR_PRE_LLAMA3 = 2, /* "llama-bpe", "llama3", "smaug-bpe", "dbrx": (?i:'s|'t|'re|'ve|'m|
                           * 'll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
                           * \s*[\r\n]+|\s+(?!\S)|\s+ */
    OSCAR_PRE_QWEN2 = 3,  /* "qwen2", "deepseek-r1-qwen": as LLAMA3 with \p{N} (single digits) */
} ovk_pretokenizer;

/* What the model loader passes in, straight from the GGUF metadata. Nothing is retained:
 * the tokenizer copies what it needs, so the arrays may point into a mapping that goes away. */
typedef struct ovk_tokenizer_desc {
    const char *model;              /* tokenizer.ggml.model: "gpt2" or "llama" */
    const char *pre;                /* tokenizer.ggml.pre, or NULL for "default" (gpt2 only) */
    uint32_t n_tokens;              /* vocabulary size */
    const char *const *tokens;      /* [n_tokens] token texts, UTF-8 (byte-level form for gpt2) */
    const uint32_t *token_lens;     /* [n_tokens] bytes of each text, or NULL: NUL-terminated */
    const float *scores;            /* [n_tokens] merge scores (SPM); NULL: all 0 */
    const int32_t *token_types;     /* [n_tokens] ovk_token_type; NULL: all NORMAL */
    uint32_t n_merges;              /* BPE only */
    const char *const *merges;      /* [n_merges] "left right", rank = index (BPE only) */
    const uint32_t *merge_lens;     /* [n_merges] bytes of each merge, or NULL: NUL-terminated */
    int32_t bos_id;                 /* tokenizer.ggml.bos_token_id, -1 when absent */
    int32_t eos_id;                 /* tokenizer.ggml.eos_token_id, -1 when absent */
    int32_t eot_id;                 /* tokenizer.ggml.eot_token_id, -1: found by token text */
    int32_t unk_id;                 /* tokenizer.ggml.unknown_token_id, -1: found by type */
    int add_bos;                    /* tokenizer.ggml.add_bos_token: 1, 0, or -1 for the
                                     * model's default (SPM 1, BPE 0) */
    int add_space_prefix;           /* tokenizer.ggml.add_space_prefix: 1, 0, or -1 for the
                                     * model's default (SPM 1, BPE 0; BPE ignores it) */
} ovk_tokenizer_desc;

/* A desc with every id -1, defaults -1 and no arrays. */
ovk_tokenizer_desc ovk_tokenizer_desc_default(void);

typedef struct ovk_tokenizer ovk_tokenizer;

/* Builds a tokenizer from the arrays in `desc` (copied). Fails with INVALID_ARGUMENT on a
 * missing array, an id out of range or a merge that does not name two tokens whose
 * concatenation is a token; UNSUPPORTED for an unknown model or pre-tokenizer name;
 * OUT_OF_HOST_MEMORY. On failure *out is NULL. */
oscar_status ovk_tokenizer_create(const ovk_tokenizer_desc *desc, ovk_tokenizer **out);
/* Frees the tokenizer. NULL is a no-op. */
void ovk_tokenizer_destroy(ovk_tokenizer *tok);

/* Encodes `len` bytes of `text` (any bytes; need not be NUL-terminated or valid UTF-8).
 * add_bos: prepend the BOS token when the model asks for it (add_bos_token) and has one.
 * parse_special: match CONTROL tokens such as "<|im_start|>" in the text; otherwise they are
 * tokenized as plain text.
 * Writes up to `capacity` ids to `tokens` and sets *n_tokens to the number the text needs.
 * Returns OK when they all fit or when tokens is NULL (a count query); INVALID_ARGUMENT when
 * `capacity` was too small (the first `capacity` ids are written, *n_tokens says how many
 * are needed); OUT_OF_HOST_MEMORY. */
oscar_status ovk_tokenizer_encode(const ovk_tokenizer *tok, const char *text, size_t len,
                                    int add_bos, int parse_special, int32_t *tokens,
                                    size_t capacity, size_t *n_tokens);

/* The bytes one token stands for: byte-level text mapped back to bytes (gpt2), "▁" as space
 * and <0xNN> as the byte NN (llama). CONTROL/UNKNOWN tokens give their text when
 * render_special is 1 and nothing otherwise. The bytes of one token may be part of a UTF-8
 * character; a streaming caller concatenates pieces and prints whole characters.
 * Writes up to `capacity` bytes (no NUL), sets *len to the full length; returns OK when it
 * fit, INVALID_ARGUMENT for a bad id or too small a buffer. */
oscar_status ovk_tokenizer_token_to_piece(const ovk_tokenizer *tok, int32_t token,
                                            int render_special, char *buf, size_t capacity,
                                            size_t *len);

/* Concatenated pieces of `n` tokens. For llama (SPM) with add_space_prefix, the space the
 * encoder prepended is removed from the first piece (when skip_prefix_space is 1), so
 * decode(encode(x)) == x. Buffer semantics as token_to_piece (buf may be NULL to measure). */
oscar_status ovk_tokenizer_decode(const ovk_tokenizer *tok, const int32_t *tokens, size_t n,
                                    int render_special, int skip_prefix_space, char *buf,
                                    size_t capacity, size_t *len);

/* The raw vocabulary text of a token (NUL-terminated, as stored), or NULL for a bad id. */
const char *ovk_tokenizer_token_text(const ovk_tokenizer *tok, int32_t token);
/* The token with exactly this vocabulary text, or -1. */
int32_t ovk_tokenizer_find(const ovk_tokenizer *tok, const char *text, size_t len);
/* The type of a token (OSCAR_TOKEN_UNDEFINED for a bad id). */
ovk_token_type ovk_tokenizer_token_type(const ovk_tokenizer *tok, int32_t token);

uint32_t ovk_tokenizer_vocab_size(const ovk_tokenizer *tok);
ovk_tokenizer_model ovk_tokenizer_model_kind(const ovk_tokenizer *tok);
ovk_pretokenizer ovk_tokenizer_pre(const ovk_tokenizer *tok);
int32_t ovk_tokenizer_bos(const ovk_tokenizer *tok);  /* -1 when none */
int32_t ovk_tokenizer_eos(const ovk_tokenizer *tok);  /* -1 when none */
/* End of turn: eot_id if given, else the first of <|eot_id|>, <|im_end|>, <|end|>,
 * <end_of_turn>, <|endoftext|> in the vocabulary, else eos. */
int32_t ovk_tokenizer_eot(const ovk_tokenizer *tok);
/* Whether add_bos=1 in encode prepends BOS (add_bos_token and a BOS id exist). */
int ovk_tokenizer_adds_bos(const ovk_tokenizer *tok);
/* End of generation: eos, eot, and any of <|im_end|>, <|eot_id|>, <|eom_id|>,
 * <|endoftext|>, <|end_of_text|>, <|end|>, <end_of_turn> that the vocabulary has. */
int ovk_tokenizer_is_eog(const ovk_tokenizer *tok, int32_t token);

/* ---- internals exposed for tests ------------------------------------------------------- */

/* Splits `len` bytes into pre-tokenizer words as the byte-level BPE does (no special token
 * handling, no byte mapping). Writes up to `capacity` word end offsets (exclusive, in bytes,
 * increasing, the last = len) to `ends` and returns the number of words (may exceed
 * capacity), or -1 when out of memory. */
long ovk_pretokenize(ovk_pretokenizer pre, const char *text, size_t len, size_t *ends,
                       size_t capacity);

/* Unicode classes (generated tables, see scripts/gen_unicode_tables.py). */
int ovk_unicode_is_letter(uint32_t cp);
int ovk_unicode_is_number(uint32_t cp);
int ovk_unicode_is_space(uint32_t cp);
extern const char ovk_unicode_version[];
extern const uint32_t ovk_unicode_letter_ranges[][2];
extern const size_t ovk_unicode_letter_ranges_count;
extern const uint32_t ovk_unicode_number_ranges[][2];
extern const size_t ovk_unicode_number_ranges_count;

#endif
