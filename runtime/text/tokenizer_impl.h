/* The tokenizer object, shared by its files (tokenizer.c: vocabulary and encoding;
 * tokenizer_decode.c: decoding and accessors). */
#ifndef OVK_TOKENIZER_IMPL_H
#define OVK_TOKENIZER_IMPL_H

#include "tokenizer.h"

typedef struct merge_slot {
    uint64_t key;   /* (left id << 32) | right id; UINT64_MAX when empty */
    int32_t rank;   /* index in tokenizer.ggml.merges; lower merges first */
    int32_t result; /* id of the concatenation */
} merge_slot;

#define MAX_EOG 16

struct ovk_tokenizer {
    ovk_tokenizer_model model;
    ovk_pretokenizer pre;
    int ignore_merges;          /* BPE: a word that is a token is emitted whole (Llama 3) */
    uint32_t n_tokens;
    char *pool;                 /* all token texts, each followed by a NUL */
    size_t *text_off;           /* [n_tokens] byte offset of each text in pool */
    uint32_t *text_len;         /* [n_tokens] bytes of each text (without the NUL) */
    float *scores;              /* [n_tokens] SPM merge priority, higher merges first */
    uint8_t *types;             /* [n_tokens] ovk_token_type */
    uint32_t hash_mask;         /* hash table size - 1 (a power of two minus one) */
    int32_t *hash;              /* [hash_mask + 1] token ids by text hash, -1 empty */
    uint32_t merge_mask;        /* merge table size - 1 */
    merge_slot *merges;         /* [merge_mask + 1] BPE merges by (left, right) */
    int32_t *specials;          /* [n_specials] ids matched verbatim, by first byte then
                                 * longest first */
    uint32_t n_specials;
    uint32_t special_start[257];/* specials of first byte b: [special_start[b], [b + 1]) */
    int32_t byte_token[256];    /* BPE: token of the byte's mapped character; SPM: <0xNN>;
                                 * -1 when the vocabulary lacks it */
    uint16_t cp_to_byte[512];   /* BPE decode: mapped code point -> byte + 1 (0: not mapped) */
    int32_t bos, eos, eot, unk; /* -1 when absent */
    int add_bos, add_space_prefix;
    int32_t eog[MAX_EOG];       /* end-of-generation ids */
    uint32_t n_eog;
};

static inline const char *tok_text(const ovk_tokenizer *tok, int32_t id) { return tok->pool + tok->text_off[id]; }

#endif
