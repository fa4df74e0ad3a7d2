/* Tokenizer: byte-level BPE ("gpt2") and SentencePiece BPE ("llama"), see tokenizer.h. The
 * pre-tokenizer and UTF-8 are pretokenize.c, decoding and accessors tokenizer_decode.c.
 *
 * Layout of this file:
 *   3. vocabulary storage: text pool, string -> id hash, (left, right) -> merge hash
 *   4. create / destroy
 *   5. encoding: special-token partition, BPE merge loop, SPM merge loop
 */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tokenizer.h"
#include "tokenizer_impl.h"
#include "utf8.h"

/* ==== 3. Vocabulary storage ============================================================= */

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}


static int32_t lookup(const ovk_tokenizer *tok, const char *s, size_t n)
{
    uint32_t i = (uint32_t)hash_bytes(s, n) & tok->hash_mask;
    for (;;) {
        int32_t id = tok->hash[i];
        if (id < 0) return -1;
        if (tok->text_len[id] == n && memcmp(tok_text(tok, id), s, n) == 0) return id;
        i = (i + 1) & tok->hash_mask;
    }
}

int32_t ovk_tokenizer_find(const ovk_tokenizer *tok, const char *text, size_t len)
{
    if (!tok || (!text && len)) return -1;
    return lookup(tok, text, len);
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static const merge_slot *find_merge(const ovk_tokenizer *tok, int32_t left, int32_t right)
{
    if (!tok->merges) return NULL;
    uint64_t key = ((uint64_t)(uint32_t)left << 32) | (uint32_t)right;
    uint32_t i = (uint32_t)mix64(key) & tok->merge_mask;
    for (;;) {
        const merge_slot *s = &tok->merges[i];
        if (s->key == UINT64_MAX) return NULL;
        if (s->key == key) return s;
        i = (i + 1) & tok->merge_mask;
    }
}

static uint32_t table_size_for(uint32_t n)
{
    uint32_t size = 16;
    while (size < 2 * (uint64_t)n + 1) size <<= 1;
    return size;
}

/* ==== 4. Create / destroy ============================================================== */

ovk_tokenizer_desc ovk_tokenizer_desc_default(void)
{
    ovk_tokenizer_desc d;
    memset(&d, 0, sizeof d);
    d.bos_id = d.eos_id = d.eot_id = d.unk_id = -1;
    d.add_bos = d.add_space_prefix = -1;
    return d;
}

static int parse_pre(const char *name, ovk_pretokenizer *out)
{
    static const struct { const char *name; ovk_pretokenizer pre; } names[] = {
        {"default", OSCAR_PRE_GPT2}, {"gpt2", OSCAR_PRE_GPT2}, {"gpt-2", OSCAR_PRE_GPT2},
        {"smollm", OSCAR_PRE_SMOLLM}, {"starcoder", OSCAR_PRE_SMOLLM},
        {"refact", OSCAR_PRE_SMOLLM}, {"codeshell", OSCAR_PRE_SMOLLM},
        {"llama-bpe", OSCAR_PRE_LLAMA3}, {"llama3", OSCAR_PRE_LLAMA3},
        {"llama-v3", OSCAR_PRE_LLAMA3}, {"smaug-bpe", OSCAR_PRE_LLAMA3}, {"dbrx", OSCAR_PRE_LLAMA3},
        {"qwen2", OSCAR_PRE_QWEN2}, {"deepseek-r1-qwen", OSCAR_PRE_QWEN2},
    };
    if (!name || !name[0]) { *out = OSCAR_PRE_GPT2; return 1; }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i].name) == 0) { *out = names[i].pre; return 1; }
    return 0;
}

static size_t desc_len(const char *s, const uint32_t *lens, uint32_t i)
{
    return lens ? lens[i] : strlen(s);
}

static int is_special_type(uint8_t t)
{
    return t == OSCAR_TOKEN_CONTROL || t == OSCAR_TOKEN_UNKNOWN || t == OSCAR_TOKEN_USER_DEFINED;
}

/* Orders the special tokens by first byte, then longest first (insertion sort: the list is
 * short, and this keeps create free of global state, so it is thread-safe). */
static void sort_specials(ovk_tokenizer *tok)
{
    for (uint32_t i = 1; i < tok->n_specials; i++) {
        int32_t v = tok->specials[i];
        uint32_t j = i;
        while (j > 0) {
            int32_t u = tok->specials[j - 1];
            unsigned char fu = (unsigned char)tok_text(tok, u)[0], fv = (unsigned char)tok_text(tok, v)[0];
            int before = fv < fu || (fv == fu && (tok->text_len[v] > tok->text_len[u] ||
                                                  (tok->text_len[v] == tok->text_len[u] && v < u)));
            if (!before) break;
            tok->specials[j] = u;
            j--;
        }
        tok->specials[j] = v;
    }
}

static void add_eog(ovk_tokenizer *tok, int32_t id)
{
    if (id < 0) return;
    for (uint32_t i = 0; i < tok->n_eog; i++)
        if (tok->eog[i] == id) return;
    if (tok->n_eog < MAX_EOG) tok->eog[tok->n_eog++] = id;
}

oscar_status ovk_tokenizer_create(const ovk_tokenizer_desc *desc, ovk_tokenizer **out)
{
    oscar_status st = OSCAR_OK;
    ovk_tokenizer *tok = NULL;
    if (!out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "tokenizer: out is NULL");
    *out = NULL;
    if (!desc || !desc->model) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "tokenizer: no desc or model name");
    if (desc->n_tokens == 0 || !desc->tokens)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "tokenizer: empty vocabulary");
    if (desc->n_tokens > (uint32_t)INT32_MAX / 2)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "tokenizer: %u tokens is too many", desc->n_tokens);

    tok = calloc(1, sizeof *tok);
    if (!tok) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "tokenizer: out of memory");
    if (strcmp(desc->model, "gpt2") == 0) tok->model = OSCAR_TOKENIZER_BPE;
    else if (strcmp(desc->model, "llama") == 0) tok->model = OSCAR_TOKENIZER_SPM;
    else OSCAR_FAIL(OSCAR_ERROR_UNSUPPORTED, "tokenizer.ggml.model \"%s\" is not supported (gpt2, llama)", desc->model);
    if (tok->model == OSCAR_TOKENIZER_BPE && !parse_pre(desc->pre, &tok->pre))
        OSCAR_FAIL(OSCAR_ERROR_UNSUPPORTED, "tokenizer.ggml.pre \"%s\" is not supported "
                   "(default, gpt2, smollm, starcoder, llama-bpe, qwen2, ...)", desc->pre);
    tok->ignore_merges = tok->model == OSCAR_TOKENIZER_BPE && tok->pre == OSCAR_PRE_LLAMA3;
    if (tok->model == OSCAR_TOKENIZER_BPE && desc->n_merges > 0 && !desc->merges)
        OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "tokenizer: n_merges %u but no merges", desc->n_merges);

    /* texts, scores, types */
    uint32_t n = desc->n_tokens;
    tok->n_tokens = n;
    size_t pool_bytes = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!desc->tokens[i]) OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "tokenizer: token %u is NULL", i);
        pool_bytes += desc_len(desc->tokens[i], desc->token_lens, i) + 1;
    }
    tok->pool = malloc(pool_bytes);
    tok->text_off = malloc(n * sizeof *tok->text_off);
    tok->text_len = malloc(n * sizeof *tok->text_len);
    tok->scores = malloc(n * sizeof *tok->scores);
    tok->types = malloc(n);
    tok->hash_mask = table_size_for(n) - 1;
    tok->hash = malloc(((size_t)tok->hash_mask + 1) * sizeof *tok->hash);
    tok->specials = malloc(n * sizeof *tok->specials);
    if (!tok->pool || !tok->text_off || !tok->text_len || !tok->scores || !tok->types || !tok->hash || !tok->specials)
        OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "tokenizer: out of memory for %u tokens", n);
    memset(tok->hash, 0xFF, ((size_t)tok->hash_mask + 1) * sizeof *tok->hash);
    size_t pos = 0;
    for (uint32_t i = 0; i < n; i++) {
        size_t l = desc_len(desc->tokens[i], desc->token_lens, i);
        if (l > UINT32_MAX - 1) OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "tokenizer: token %u too long", i);
        memcpy(tok->pool + pos, desc->tokens[i], l);
        tok->pool[pos + l] = '\0';
        tok->text_off[i] = pos;
        tok->text_len[i] = (uint32_t)l;
        pos += l + 1;
        tok->scores[i] = desc->scores ? desc->scores[i] : 0.0f;
        int32_t t = desc->token_types ? desc->token_types[i] : OSCAR_TOKEN_NORMAL;
        tok->types[i] = (uint8_t)(t >= OSCAR_TOKEN_UNDEFINED && t <= OSCAR_TOKEN_BYTE ? t : OSCAR_TOKEN_UNDEFINED);
        /* index the text; a duplicate keeps its first id */
        uint32_t h = (uint32_t)hash_bytes(tok->pool + pos - l - 1, l) & tok->hash_mask;
        int dup = 0;
        while (tok->hash[h] >= 0) {
            int32_t o = tok->hash[h];
            if (tok->text_len[o] == l && memcmp(tok_text(tok, o), tok_text(tok, (int32_t)i), l) == 0) { dup = 1; break; }
            h = (h + 1) & tok->hash_mask;
        }
        if (!dup) tok->hash[h] = (int32_t)i;
        if (is_special_type(tok->types[i]) && l > 0) tok->specials[tok->n_specials++] = (int32_t)i;
    }
    sort_specials(tok);
    for (unsigned b = 0, k = 0; b <= 256; b++) {
        while (k < tok->n_specials && (unsigned char)tok_text(tok, tok->specials[k])[0] < b) k++;
        tok->special_start[b] = k;
    }

    /* ids */
    int32_t ids[4] = {desc->bos_id, desc->eos_id, desc->eot_id, desc->unk_id};
    for (int i = 0; i < 4; i++)
        if (ids[i] < -1 || ids[i] >= (int32_t)n)
            OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "tokenizer: special id %d out of range [0, %u)", ids[i], n);
    tok->bos = desc->bos_id;
    tok->eos = desc->eos_id;
    tok->unk = desc->unk_id;
    if (tok->unk < 0)
        for (uint32_t i = 0; i < n && tok->unk < 0; i++)
            if (tok->types[i] == OSCAR_TOKEN_UNKNOWN) tok->unk = (int32_t)i;
    int spm = tok->model == OSCAR_TOKENIZER_SPM;
    tok->add_bos = desc->add_bos >= 0 ? desc->add_bos != 0 : spm;
    tok->add_space_prefix = desc->add_space_prefix >= 0 ? desc->add_space_prefix != 0 : spm;

    static const char *const eot_names[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>"};
    static const char *const eog_names[] = {"<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|endoftext|>",
                                            "<|end_of_text|>", "<|end|>", "<end_of_turn>"};
    tok->eot = desc->eot_id;
    for (size_t i = 0; i < sizeof eot_names / sizeof eot_names[0] && tok->eot < 0; i++)
        tok->eot = lookup(tok, eot_names[i], strlen(eot_names[i]));
    if (tok->eot < 0) tok->eot = tok->eos;
    add_eog(tok, tok->eos);
    add_eog(tok, tok->eot);
    for (size_t i = 0; i < sizeof eog_names / sizeof eog_names[0]; i++)
        add_eog(tok, lookup(tok, eog_names[i], strlen(eog_names[i])));

    /* byte tokens */
    for (unsigned b = 0; b < 256; b++) {
        char s[8];
        size_t l;
        if (spm) {
            static const char hex[] = "0123456789ABCDEF";
            memcpy(s, "<0x", 3);
            s[3] = hex[b >> 4];
            s[4] = hex[b & 15];
            s[5] = '>';
            l = 6;
        } else {
            uint32_t cp = ovk_byte_to_cp(b);
            l = ovk_utf8_encode(cp, (unsigned char *)s);
            tok->cp_to_byte[cp] = (uint16_t)(b + 1);
        }
        tok->byte_token[b] = lookup(tok, s, l);
    }

    /* merges */
    if (tok->model == OSCAR_TOKENIZER_BPE && desc->n_merges > 0) {
        tok->merge_mask = table_size_for(desc->n_merges) - 1;
        tok->merges = malloc(((size_t)tok->merge_mask + 1) * sizeof *tok->merges);
        if (!tok->merges) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "tokenizer: out of memory for merges");
        for (size_t i = 0; i <= tok->merge_mask; i++) tok->merges[i].key = UINT64_MAX;
        char small[256];
        for (uint32_t r = 0; r < desc->n_merges; r++) {
            const char *m = desc->merges[r];
            if (!m) OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "tokenizer: merge %u is NULL", r);
            size_t ml = desc_len(m, desc->merge_lens, r);
            const char *sp = ml > 1 ? memchr(m + 1, ' ', ml - 1) : NULL;
            if (!sp) OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "tokenizer: merge %u \"%.*s\" has no space", r, (int)ml, m);
            size_t ll = (size_t)(sp - m), rl = ml - ll - 1;
            int32_t left = lookup(tok, m, ll), right = lookup(tok, sp + 1, rl);
            int32_t result = -1;
            if (ll + rl <= sizeof small) {
                memcpy(small, m, ll);
                memcpy(small + ll, sp + 1, rl);
                result = lookup(tok, small, ll + rl);
            } else {
                char *big = malloc(ll + rl);
                if (!big) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "tokenizer: out of memory");
                memcpy(big, m, ll);
                memcpy(big + ll, sp + 1, rl);
                result = lookup(tok, big, ll + rl);
                free(big);
            }
            if (left < 0 || right < 0 || result < 0)
                OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT,
                           "tokenizer: merge %u \"%.*s\" names a piece that is not a token", r, (int)ml, m);
            uint64_t key = ((uint64_t)(uint32_t)left << 32) | (uint32_t)right;
            uint32_t h = (uint32_t)mix64(key) & tok->merge_mask;
            while (tok->merges[h].key != UINT64_MAX && tok->merges[h].key != key) h = (h + 1) & tok->merge_mask;
            if (tok->merges[h].key == key) continue; /* a repeated merge keeps its first rank */
            tok->merges[h].key = key;
            tok->merges[h].rank = (int32_t)r;
            tok->merges[h].result = result;
        }
    }
    *out = tok;
    return OSCAR_OK;
fail:
    ovk_tokenizer_destroy(tok);
    return st;
}

void ovk_tokenizer_destroy(ovk_tokenizer *tok)
{
    if (!tok) return;
    free(tok->pool);
    free(tok->text_off);
    free(tok->text_len);
    free(tok->scores);
    free(tok->types);
    free(tok->hash);
    free(tok->merges);
    free(tok->specials);
    free(tok);
}

/* ==== 5. Encoding ====================================================================== */

/* Growable output and scratch of one encode call (the tokenizer itself stays read-only). */
typedef struct enc_state {
    int32_t *ids;       /* [n_ids] output so far */
    size_t n_ids, cap_ids;
    /* symbols of the word being merged: a doubly linked list over [n_sym] */
    int32_t *sym_id;    /* BPE: token id, -1 when merged away */
    size_t *sym_off;    /* SPM: byte offset of the symbol in the word */
    size_t *sym_len;    /* SPM: bytes, 0 when merged away */
    long *prev, *next;  /* neighbour indices, -1 at the ends */
    size_t cap_sym;
    /* the merge queue: a binary min-heap */
    struct heap_item *heap;
    size_t n_heap, cap_heap;
    char *buf;          /* SPM: the escaped fragment */
    size_t cap_buf;
} enc_state;

typedef struct heap_item {
    double key;         /* BPE: merge rank; SPM: -score (lower pops first) */
    long left, right;   /* symbol indices */
    int64_t check;      /* BPE: left id << 32 | right id; SPM: left len << 32 | right len */
} heap_item;

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

static int push_id(enc_state *e, int32_t id)
{
    if (grow((void **)&e->ids, &e->cap_ids, e->n_ids + 1, sizeof *e->ids)) return -1;
    e->ids[e->n_ids++] = id;
    return 0;
}

static int reserve_symbols(enc_state *e, size_t n)
{
    if (n <= e->cap_sym) return 0;
    size_t c = e->cap_sym;
    size_t c1 = c, c2 = c, c3 = c, c4 = c;
    if (grow((void **)&e->sym_id, &c, n, sizeof *e->sym_id)) return -1;
    if (grow((void **)&e->sym_off, &c1, n, sizeof *e->sym_off)) return -1;
    if (grow((void **)&e->sym_len, &c2, n, sizeof *e->sym_len)) return -1;
    if (grow((void **)&e->prev, &c3, n, sizeof *e->prev)) return -1;
    if (grow((void **)&e->next, &c4, n, sizeof *e->next)) return -1;
    e->cap_sym = c;
    return 0;
}

static int heap_less(const heap_item *a, const heap_item *b)
{
    if (a->key != b->key) return a->key < b->key;
    return a->left < b->left;
}

static int heap_push(enc_state *e, heap_item it)
{
    if (grow((void **)&e->heap, &e->cap_heap, e->n_heap + 1, sizeof *e->heap)) return -1;
    size_t i = e->n_heap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!heap_less(&it, &e->heap[p])) break;
        e->heap[i] = e->heap[p];
        i = p;
    }
    e->heap[i] = it;
    return 0;
}

static heap_item heap_pop(enc_state *e)
{
    heap_item top = e->heap[0], last = e->heap[--e->n_heap];
    size_t i = 0, n = e->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && heap_less(&e->heap[c + 1], &e->heap[c])) c++;
        if (!heap_less(&e->heap[c], &last)) break;
        e->heap[i] = e->heap[c];
        i = c;
    }
    if (n > 0) e->heap[i] = last;
    return top;
}

/* -- byte-level BPE --------------------------------------------------------------------- */

static int bpe_try_pair(const ovk_tokenizer *tok, enc_state *e, long left, long right)
{
    if (left < 0 || right < 0) return 0;
    const merge_slot *m = find_merge(tok, e->sym_id[left], e->sym_id[right]);
    if (!m) return 0;
    heap_item it = {(double)m->rank, left, right,
                    (int64_t)(((uint64_t)(uint32_t)e->sym_id[left] << 32) | (uint32_t)e->sym_id[right])};
    return heap_push(e, it);
}

/* Encodes one pre-tokenizer word (raw bytes): bytes -> mapped single-character tokens, then
 * the lowest-rank adjacent pair merges first (leftmost on ties) until no pair has a merge. */
static int bpe_word(const ovk_tokenizer *tok, enc_state *e, const unsigned char *w, size_t n)
{
    if (tok->ignore_merges) {
        /* the word as a token, in its mapped form */
        unsigned char small[512];
        size_t ml = 0;
        if (n * 2 <= sizeof small) {
            for (size_t i = 0; i < n; i++) ml += ovk_utf8_encode(ovk_byte_to_cp(w[i]), small + ml);
            int32_t id = lookup(tok, (const char *)small, ml);
            if (id >= 0) return push_id(e, id);
        }
    }
    if (reserve_symbols(e, n)) return -1;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t id = tok->byte_token[w[i]];
        /* A byte the vocabulary cannot spell is dropped, as HF tokenizers and llama.cpp do
         * (SmolLM2 lacks 21 of the 256, e.g. 0x04, 0xC0, 0xFF). Not <unk>: GGUF files often
         * name <|endoftext|> as unknown_token_id, and an end-of-text mid-prompt is worse. */
        if (id < 0) continue;
        e->sym_id[m] = id;
        m++;
    }
    for (size_t i = 0; i < m; i++) {
        e->prev[i] = (long)i - 1;
        e->next[i] = i + 1 < m ? (long)i + 1 : -1;
    }
    e->n_heap = 0;
    for (size_t i = 0; i + 1 < m; i++)
        if (bpe_try_pair(tok, e, (long)i, (long)i + 1)) return -1;
    while (e->n_heap > 0) {
        heap_item it = heap_pop(e);
        long l = it.left, r = it.right;
        if (e->sym_id[l] < 0 || e->next[l] != r || e->sym_id[r] < 0) continue;
        int64_t check = (int64_t)(((uint64_t)(uint32_t)e->sym_id[l] << 32) | (uint32_t)e->sym_id[r]);
        if (check != it.check) continue;
        const merge_slot *ms = find_merge(tok, e->sym_id[l], e->sym_id[r]);
        e->sym_id[l] = ms->result;
        e->sym_id[r] = -1;
        e->next[l] = e->next[r];
        if (e->next[r] >= 0) e->prev[e->next[r]] = l;
        if (bpe_try_pair(tok, e, e->prev[l], l) || bpe_try_pair(tok, e, l, e->next[l])) return -1;
    }
    for (size_t i = 0; i < m; i++)
        if (e->sym_id[i] >= 0 && push_id(e, e->sym_id[i])) return -1;
    return 0;
}

static int bpe_fragment(const ovk_tokenizer *tok, enc_state *e, const char *text, size_t len)
{
    long n = ovk_pretokenize(tok->pre, text, len, NULL, 0);
    if (n < 0) return -1;
    size_t n_words = (size_t)n;
    size_t *ends = malloc((n_words + 1) * sizeof *ends);
    int rc = -1;
    if (!ends || ovk_pretokenize(tok->pre, text, len, ends, n_words) < 0) goto done;
    size_t start = 0;
    for (size_t i = 0; i < n_words; i++) {
        if (bpe_word(tok, e, (const unsigned char *)text + start, ends[i] - start)) goto done;
        start = ends[i];
    }
    rc = 0;
done:
    free(ends);
    return rc;
}

/* -- SentencePiece BPE ------------------------------------------------------------------ */

/* Whether a token may be produced by SPM merging (SentencePiece merges only normal and
 * user-defined pieces; control, unknown, byte and unused pieces are never spelled). */
static int spm_mergeable(const ovk_tokenizer *tok, int32_t id)
{
    return id >= 0 && (tok->types[id] == OSCAR_TOKEN_NORMAL || tok->types[id] == OSCAR_TOKEN_USER_DEFINED ||
                       tok->types[id] == OSCAR_TOKEN_UNDEFINED);
}

static int spm_try_pair(const ovk_tokenizer *tok, enc_state *e, long left, long right)
{
    if (left < 0 || right < 0) return 0;
    int32_t id = lookup(tok, e->buf + e->sym_off[left], e->sym_len[left] + e->sym_len[right]);
    if (!spm_mergeable(tok, id)) return 0;
    heap_item it = {-(double)tok->scores[id], left, right,
                    (int64_t)(((uint64_t)e->sym_len[left] << 32) | (uint64_t)e->sym_len[right])};
    return heap_push(e, it);
}

/* Encodes one text fragment: spaces -> "▁" (and a leading "▁" when `prefix`), characters as
 * symbols, then the adjacent pair whose concatenation is the highest-scoring token merges
 * first (leftmost on ties); symbols that are not tokens become <0xNN> byte tokens. */
static int spm_fragment(const ovk_tokenizer *tok, enc_state *e, const char *text, size_t len, int prefix)
{
    static const char sp[3] = {(char)0xE2, (char)0x96, (char)0x81}; /* U+2581 */
    size_t n_spaces = 0;
    for (size_t i = 0; i < len; i++) n_spaces += text[i] == ' ';
    size_t blen = len + 2 * n_spaces + (prefix ? 3 : 0); /* "▁" is 3 bytes */
    if (grow((void **)&e->buf, &e->cap_buf, blen + 1, 1)) return -1;
    size_t p = 0;
    if (prefix) { memcpy(e->buf, sp, 3); p = 3; }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') { memcpy(e->buf + p, sp, 3); p += 3; }
        else e->buf[p++] = text[i];
    }
    if (reserve_symbols(e, blen)) return -1;
    size_t m = 0;
    for (size_t off = 0; off < blen; m++) {
        uint32_t cp;
        size_t l = ovk_utf8_decode((const unsigned char *)e->buf + off, blen - off, &cp);
        e->sym_off[m] = off;
        e->sym_len[m] = l;
        off += l;
    }
    for (size_t i = 0; i < m; i++) {
        e->prev[i] = (long)i - 1;
        e->next[i] = i + 1 < m ? (long)i + 1 : -1;
    }
    e->n_heap = 0;
    for (size_t i = 0; i + 1 < m; i++)
        if (spm_try_pair(tok, e, (long)i, (long)i + 1)) return -1;
    while (e->n_heap > 0) {
        heap_item it = heap_pop(e);
        long l = it.left, r = it.right;
        if (e->sym_len[l] == 0 || e->next[l] != r || e->sym_len[r] == 0) continue;
        if (it.check != (int64_t)(((uint64_t)e->sym_len[l] << 32) | (uint64_t)e->sym_len[r])) continue;
        e->sym_len[l] += e->sym_len[r];
        e->sym_len[r] = 0;
        e->next[l] = e->next[r];
        if (e->next[r] >= 0) e->prev[e->next[r]] = l;
        if (spm_try_pair(tok, e, e->prev[l], l) || spm_try_pair(tok, e, l, e->next[l])) return -1;
    }
    for (size_t i = 0; i < m; i++) {
        if (e->sym_len[i] == 0) continue;
        int32_t id = lookup(tok, e->buf + e->sym_off[i], e->sym_len[i]);
        if (spm_mergeable(tok, id)) {
            if (push_id(e, id)) return -1;
            continue;
        }
        for (size_t k = 0; k < e->sym_len[i]; k++) {
            int32_t b = tok->byte_token[(unsigned char)e->buf[e->sym_off[i] + k]];
            if (b < 0) b = tok->unk;
            if (b >= 0 && push_id(e, b)) return -1;
            if (b < 0) break; /* neither byte tokens nor <unk>: the character is dropped */
        }
    }
    return 0;
}

/* -- the driver ------------------------------------------------------------------------- */

/* The longest special token at text[pos..len) that may match here, or -1. */
static int32_t match_special(const ovk_tokenizer *tok, const char *text, size_t pos, size_t len, int parse_special)
{
    unsigned char b = (unsigned char)text[pos];
    for (uint32_t k = tok->special_start[b]; k < tok->special_start[b + 1]; k++) {
        int32_t id = tok->specials[k];
        if (!parse_special && tok->types[id] != OSCAR_TOKEN_USER_DEFINED) continue;
        uint32_t l = tok->text_len[id];
        if (l <= len - pos && memcmp(text + pos, tok_text(tok, id), l) == 0) return id;
    }
    return -1;
}

static int encode_raw(const ovk_tokenizer *tok, enc_state *e, const char *text, size_t len, int prefix)
{
    if (len == 0) return 0;
    if (tok->model == OSCAR_TOKENIZER_SPM) return spm_fragment(tok, e, text, len, prefix);
    return bpe_fragment(tok, e, text, len);
}

oscar_status ovk_tokenizer_encode(const ovk_tokenizer *tok, const char *text, size_t len,
                                    int add_bos, int parse_special, int32_t *tokens,
                                    size_t capacity, size_t *n_tokens)
{
    oscar_status st = OSCAR_OK;
    enc_state e;
    memset(&e, 0, sizeof e);
    if (!tok || !n_tokens || (!text && len > 0))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "tokenizer_encode: NULL argument");
    *n_tokens = 0;
    if (add_bos && tok->add_bos && tok->bos >= 0 && push_id(&e, tok->bos)) goto oom;
    /* SPM prefixes "▁" at the start of the text and after every special token, as llama.cpp
     * and SentencePiece's legacy mode (each chunk between added tokens encoded alone) do. */
    int prefix = tok->add_space_prefix;
    size_t start = 0;
    for (size_t pos = 0; pos < len;) {
        int32_t id = tok->n_specials ? match_special(tok, text, pos, len, parse_special) : -1;
        if (id < 0) { pos++; continue; }
        if (encode_raw(tok, &e, text + start, pos - start, prefix) || push_id(&e, id)) goto oom;
        prefix = tok->add_space_prefix;
        pos += tok->text_len[id];
        start = pos;
    }
    if (encode_raw(tok, &e, text + start, len - start, start == 0 ? prefix : tok->add_space_prefix)) goto oom;

    *n_tokens = e.n_ids;
    if (tokens) {
        size_t k = e.n_ids < capacity ? e.n_ids : capacity;
        if (k) memcpy(tokens, e.ids, k * sizeof *tokens);
        if (e.n_ids > capacity)
            OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "tokenizer_encode: %zu tokens do not fit in %zu", e.n_ids, capacity);
    }
    goto done;
oom:
    st = ovk_error_set(OSCAR_ERROR_OUT_OF_HOST_MEMORY, __FILE__, __LINE__, "tokenizer_encode: out of memory");
    goto done;
fail:
done:
    free(e.ids);
    free(e.sym_id);
    free(e.sym_off);
    free(e.sym_len);
    free(e.prev);
    free(e.next);
    free(e.heap);
    free(e.buf);
    return st;
}

