/* Small random llama-family GGUF models (see model_gen.h). */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "gguf.h"
#include "model_gen.h"

#define N_SPECIAL 3u
#define N_BYTES 256u

/* Merges in rank order; each result is a token, and both sides exist before it. "\xC4\xA0" is
 * "Ġ", the byte-level spelling of a space. */
static const char *const gen_merges[] = {
    "\xC4\xA0 t", "\xC4\xA0 a", "h e", "i n", "r e", "o n", "\xC4\xA0t he", "e r", "\xC4\xA0 s", "a t",
    "\xC4\xA0 c", "in g", "\xC4\xA0 o", "\xC4\xA0 P", "a r", "i s", "\xC4\xA0 i", "e n", "\xC4\xA0 f",
    "o r", "\xC4\xA0 w", "a n", "\xC4\xA0P ar", "\xC4\xA0Par is",
};
#define N_MERGES (sizeof gen_merges / sizeof gen_merges[0])

static const char chatml_template[] =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

uint32_t ovk_model_gen_min_vocab(void) { return N_SPECIAL + N_BYTES + (uint32_t)N_MERGES; }

ovk_model_gen_params ovk_model_gen_params_default(ovk_arch arch)
{
    ovk_model_gen_params p;
    memset(&p, 0, sizeof p);
    p.arch = arch;
    p.weight_type = OSCAR_GGML_TYPE_F32;
    p.embd_type = OSCAR_GGML_TYPE_F32;
    p.n_layer = 2;
    p.n_embd = 64;
    p.n_head = 4;
    p.n_head_kv = 2;
    p.head_dim = 16;
    p.n_ff = 128;
    p.n_vocab = 320;
    p.n_ctx_train = 512;
    p.rope_freq_base = arch == OSCAR_ARCH_LLAMA ? 10000.0f : 1000000.0f;
    p.norm_eps = arch == OSCAR_ARCH_LLAMA ? 1e-5f : 1e-6f;
    p.rope_scale_factor = 1.0f;
    p.seed = 1;
    p.tokenizer = 1;
    return p;
}

/* ---- random numbers: xorshift64* seeded through splitmix64 --------------------------------- */

typedef struct gen_rng {
    uint64_t s;
    int has_spare;
    double spare;
} gen_rng;

static void rng_seed(gen_rng *r, uint64_t seed)
{
    uint64_t z = seed + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    r->s = (z ^ (z >> 31)) | 1u;
    r->has_spare = 0;
}

static uint64_t rng_next(gen_rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545f4914f6cdd1dull;
}

static double rng_uniform(gen_rng *r) /* (0, 1) */
{
    return ((double)(rng_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static double rng_normal(gen_rng *r) /* N(0, 1), Box-Muller */
{
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    double u = rng_uniform(r), v = rng_uniform(r);
    double rad = sqrt(-2.0 * log(u));
    r->spare = rad * sin(2.0 * M_PI * v);
    r->has_spare = 1;
    return rad * cos(2.0 * M_PI * v);
}

/* ---- tensors ---------------------------------------------------------------------------------- */

/* The tensor's rows come in chunks of GEN_CHUNK_ROWS, each from a generator of its own seeded
 * from the tensor's seed and the chunk's index, so that threads can fill them in any order and
 * the file is the same for any number of threads. */
#define GEN_CHUNK_ROWS 64u
#define GEN_MAX_THREADS 32

typedef struct gen_job {
    uint32_t type, n_in, n_out;
    uint64_t row_bytes, seed;
    double mean, std;
    uint8_t *data;             /* [n_out][row_bytes] */
    atomic_uint next_chunk;    /* the next chunk a thread takes */
    atomic_int failed;         /* a row failed to quantize */
} gen_job;

static void *gen_worker(void *arg)
{
    gen_job *job = arg;
    float *row = malloc((size_t)job->n_in * sizeof *row); /* [n_in] */
    if (!row) {
        atomic_store(&job->failed, 1);
        return NULL;
    }
    uint32_t n_chunks = (job->n_out + GEN_CHUNK_ROWS - 1) / GEN_CHUNK_ROWS;
    for (uint32_t c; (c = atomic_fetch_add(&job->next_chunk, 1)) < n_chunks && !atomic_load(&job->failed);) {
        gen_rng rng;
        rng_seed(&rng, job->seed + 0x9e3779b97f4a7c15ull * (c + 1ull));
        uint32_t o_end = (c + 1) * GEN_CHUNK_ROWS < job->n_out ? (c + 1) * GEN_CHUNK_ROWS : job->n_out;
        for (uint32_t o = c * GEN_CHUNK_ROWS; o < o_end; o++) {
            for (uint32_t i = 0; i < job->n_in; i++) row[i] = (float)(job->mean + job->std * rng_normal(&rng));
            if (ovk_ggml_quantize_row(job->type, row, job->data + (size_t)o * job->row_bytes, job->n_in) != OSCAR_OK)
                atomic_store(&job->failed, 1);
        }
    }
    free(row);
    return NULL;
}

static unsigned gen_thread_count(uint32_t n_out)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned n = cpus > 0 ? (unsigned)cpus : 1;
    unsigned chunks = (n_out + GEN_CHUNK_ROWS - 1) / GEN_CHUNK_ROWS;
    if (n > GEN_MAX_THREADS) n = GEN_MAX_THREADS;
    return n < chunks ? n : chunks;
}

/* Adds a [n_in, n_out] tensor (n_out = 1 for a vector) of values mean + std * N(0,1),
 * quantized to `type`, on as many threads as the machine has (at most GEN_MAX_THREADS). */
static oscar_status add_random(ovk_gguf_writer *w, gen_rng *rng, const char *name, uint32_t type, uint32_t n_in,
                               uint32_t n_out, double mean, double std)
{
    oscar_status st = OSCAR_OK;
    gen_job job = { .type = type, .n_in = n_in, .n_out = n_out, .mean = mean, .std = std };
    if (ovk_ggml_row_size(type, n_in, &job.row_bytes) != OSCAR_OK)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "model_gen: tensor %s: row length %u does not fit type %s",
                           name, n_in, ovk_ggml_type_name(type));
    job.seed = rng_next(rng);
    atomic_init(&job.next_chunk, 0);
    atomic_init(&job.failed, 0);
    job.data = malloc((size_t)job.row_bytes * n_out);
    if (!job.data) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "model_gen: out of memory for %s", name);
    pthread_t threads[GEN_MAX_THREADS];
    unsigned n_threads = gen_thread_count(n_out), started = 0;
    while (started + 1 < n_threads && pthread_create(&threads[started], NULL, gen_worker, &job) == 0) started++;
    gen_worker(&job); /* this thread works too: the tensor is made even where no thread starts */
    for (unsigned t = 0; t < started; t++) pthread_join(threads[t], NULL);
    if (atomic_load(&job.failed)) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "model_gen: cannot make tensor %s", name);
    uint64_t ne[2] = {n_in, n_out};
    OSCAR_TRY(ovk_gguf_writer_add_tensor(w, name, type, n_out > 1 ? 2 : 1, ne, job.data));
fail:
    free(job.data);
    return st;
}

/* ---- tokenizer ------------------------------------------------------------------------------- */

/* GPT-2 bytes_to_unicode: printable Latin-1 bytes map to themselves, the other 68 to 256, 257, ...
 * in byte order. Writes the UTF-8 spelling of byte b (NUL-terminated) to out[4]. */
static void byte_token(uint32_t b, char out[4])
{
    uint32_t cp;
    int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    if (printable) {
        cp = b;
    } else {
        uint32_t n = 0;
        for (uint32_t c = 0; c < b; c++)
            if (!((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || (c >= 174 && c <= 255))) n++;
        cp = 256 + n;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = 0;
    } else { /* cp < 0x800 */
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 63));
        out[2] = 0;
    }
}

static oscar_status write_tokenizer(ovk_gguf_writer *w, uint32_t n_vocab)
{
    oscar_status st = OSCAR_OK;
    char **tokens = calloc(n_vocab, sizeof *tokens); /* [n_vocab] owned strings */
    int32_t *types = calloc(n_vocab, sizeof *types); /* [n_vocab] ovk_token_type */
    if (!tokens || !types) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "model_gen: out of memory");
    static const char *const specials[N_SPECIAL] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    uint32_t id = 0;
    for (uint32_t i = 0; i < N_SPECIAL; i++, id++) {
        tokens[id] = strdup(specials[i]);
        types[id] = OSCAR_TOKEN_CONTROL;
    }
    for (uint32_t b = 0; b < N_BYTES; b++, id++) {
        char s[4];
        byte_token(b, s);
        tokens[id] = strdup(s);
        types[id] = OSCAR_TOKEN_NORMAL;
    }
    for (size_t m = 0; m < N_MERGES; m++, id++) {
        const char *sp = strchr(gen_merges[m], ' ');
        size_t a = (size_t)(sp - gen_merges[m]);
        tokens[id] = malloc(strlen(gen_merges[m]));
        if (tokens[id]) {
            memcpy(tokens[id], gen_merges[m], a);
            strcpy(tokens[id] + a, sp + 1);
        }
        types[id] = OSCAR_TOKEN_NORMAL;
    }
    for (uint32_t k = 0; id < n_vocab; id++, k++) {
        char s[32];
        snprintf(s, sizeof s, "<|reserved_%u|>", k);
        tokens[id] = strdup(s);
        types[id] = OSCAR_TOKEN_CONTROL;
    }
    for (uint32_t i = 0; i < n_vocab; i++)
        if (!tokens[i]) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "model_gen: out of memory");
    OSCAR_TRY(ovk_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2"));
    OSCAR_TRY(ovk_gguf_writer_set_str(w, "tokenizer.ggml.pre", "smollm"));
    OSCAR_TRY(ovk_gguf_writer_set_array(w, "tokenizer.ggml.tokens", OSCAR_GGUF_TYPE_STRING,
                                          (const char *const *)tokens, n_vocab));
    OSCAR_TRY(ovk_gguf_writer_set_array(w, "tokenizer.ggml.token_type", OSCAR_GGUF_TYPE_INT32, types, n_vocab));
    OSCAR_TRY(ovk_gguf_writer_set_array(w, "tokenizer.ggml.merges", OSCAR_GGUF_TYPE_STRING, gen_merges, N_MERGES));
    OSCAR_TRY(ovk_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1));
    OSCAR_TRY(ovk_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2));
    OSCAR_TRY(ovk_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0));
    OSCAR_TRY(ovk_gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", 2));
    OSCAR_TRY(ovk_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", 0));
    OSCAR_TRY(ovk_gguf_writer_set_str(w, "tokenizer.chat_template", chatml_template));
fail:
    if (tokens)
        for (uint32_t i = 0; i < n_vocab; i++) free(tokens[i]);
    free(tokens);
    free(types);
    return st;
}

/* ---- model ------------------------------------------------------------------------------------ */

static oscar_status check_params(const ovk_model_gen_params *p)
{
    if (p->arch != OSCAR_ARCH_LLAMA && p->arch != OSCAR_ARCH_QWEN2 && p->arch != OSCAR_ARCH_QWEN3)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "model_gen: unknown architecture %d", (int)p->arch);
    if (!p->n_layer || !p->n_embd || !p->n_head || !p->n_head_kv || !p->head_dim || !p->n_ff)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "model_gen: zero dimension");
    if (p->n_head % p->n_head_kv)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "model_gen: n_head %u not a multiple of n_head_kv %u",
                           p->n_head, p->n_head_kv);
    if (p->head_dim % 2 || p->n_rot > p->head_dim || p->n_rot % 2)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "model_gen: head_dim %u / n_rot %u must be even, n_rot <= "
                           "head_dim", p->head_dim, p->n_rot);
    if (p->tokenizer && p->n_vocab < ovk_model_gen_min_vocab())
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "model_gen: n_vocab %u below the tokenizer's %u", p->n_vocab,
                           ovk_model_gen_min_vocab());
    if (!p->n_vocab) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "model_gen: n_vocab is 0");
    return OSCAR_OK;
}

static oscar_status build(const ovk_model_gen_params *p, ovk_gguf_writer **out)
{
    oscar_status st = OSCAR_OK;
    ovk_gguf_writer *w = NULL;
    *out = NULL;
    OSCAR_TRY(check_params(p));
    OSCAR_TRY(ovk_gguf_writer_create(&w));
    const char *arch = ovk_arch_name(p->arch);
    char key[128], name[96];
#define SET_U32(suffix, v)                                                   \
    do {                                                                     \
        snprintf(key, sizeof key, "%s.%s", arch, suffix);                    \
        OSCAR_TRY(ovk_gguf_writer_set_u32(w, key, (v)));                   \
    } while (0)
#define SET_F32(suffix, v)                                                   \
    do {                                                                     \
        snprintf(key, sizeof key, "%s.%s", arch, suffix);                    \
        OSCAR_TRY(ovk_gguf_writer_set_f32(w, key, (v)));                   \
    } while (0)
    OSCAR_TRY(ovk_gguf_writer_set_str(w, "general.architecture", arch));
    snprintf(name, sizeof name, "oscar-gen-%s-%s-seed%llu", arch, ovk_ggml_type_name(p->weight_type),
             (unsigned long long)p->seed);
    OSCAR_TRY(ovk_gguf_writer_set_str(w, "general.name", name));
    SET_U32("block_count", p->n_layer);
    SET_U32("context_length", p->n_ctx_train);
    SET_U32("embedding_length", p->n_embd);
    SET_U32("feed_forward_length", p->n_ff);
    SET_U32("attention.head_count", p->n_head);
    SET_U32("attention.head_count_kv", p->n_head_kv);
    if (p->write_head_dim || p->head_dim * p->n_head != p->n_embd) {
        SET_U32("attention.key_length", p->head_dim);
        SET_U32("attention.value_length", p->head_dim);
    }
    SET_F32("attention.layer_norm_rms_epsilon", p->norm_eps);
    SET_F32("rope.freq_base", p->rope_freq_base);
    if (p->n_rot) SET_U32("rope.dimension_count", p->n_rot);
    if (p->rope_scaling) {
        snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
        OSCAR_TRY(ovk_gguf_writer_set_str(w, key, p->rope_scaling));
        SET_F32("rope.scaling.factor", p->rope_scale_factor);
        if (p->rope_orig_ctx) SET_U32("rope.scaling.original_context_length", p->rope_orig_ctx);
    }
    SET_U32("vocab_size", p->n_vocab);
    OSCAR_TRY(ovk_gguf_writer_set_u32(w, "general.file_type", 0));
#undef SET_U32
#undef SET_F32
    if (p->tokenizer) OSCAR_TRY(write_tokenizer(w, p->n_vocab));

    gen_rng rng;
    rng_seed(&rng, p->seed);
    uint32_t q_dim = p->n_head * p->head_dim, kv_dim = p->n_head_kv * p->head_dim;
    double embd_std = p->embd_std > 0.0f ? p->embd_std : 1.0 / sqrt((double)p->n_embd);
    double qk_scale = p->attn_scale > 0.0f ? p->attn_scale : 4.0;
    OSCAR_TRY(add_random(w, &rng, "token_embd.weight", p->embd_type, p->n_embd, p->n_vocab, 0.0, embd_std));
    OSCAR_TRY(add_random(w, &rng, "output_norm.weight", OSCAR_GGML_TYPE_F32, p->n_embd, 1, 1.0, 0.1));
    if (!p->tied_embeddings)
        OSCAR_TRY(add_random(w, &rng, "output.weight", p->embd_type, p->n_embd, p->n_vocab, 0.0, embd_std));
    for (uint32_t il = 0; il < p->n_layer; il++) {
#define T(what) (snprintf(name, sizeof name, "blk.%u.%s", il, what), name)
        double s_embd = 1.0 / sqrt((double)p->n_embd), s_q = 1.0 / sqrt((double)q_dim);
        double s_ff = 1.0 / sqrt((double)p->n_ff);
        OSCAR_TRY(add_random(w, &rng, T("attn_norm.weight"), OSCAR_GGML_TYPE_F32, p->n_embd, 1, 1.0, 0.1));
        OSCAR_TRY(add_random(w, &rng, T("attn_q.weight"), p->weight_type, p->n_embd, q_dim, 0.0, s_embd * qk_scale));
        OSCAR_TRY(add_random(w, &rng, T("attn_k.weight"), p->weight_type, p->n_embd, kv_dim, 0.0, s_embd * qk_scale));
        OSCAR_TRY(add_random(w, &rng, T("attn_v.weight"), p->weight_type, p->n_embd, kv_dim, 0.0, s_embd));
        if (p->arch == OSCAR_ARCH_QWEN2) {
            OSCAR_TRY(add_random(w, &rng, T("attn_q.bias"), OSCAR_GGML_TYPE_F32, q_dim, 1, 0.0, 0.1));
            OSCAR_TRY(add_random(w, &rng, T("attn_k.bias"), OSCAR_GGML_TYPE_F32, kv_dim, 1, 0.0, 0.1));
            OSCAR_TRY(add_random(w, &rng, T("attn_v.bias"), OSCAR_GGML_TYPE_F32, kv_dim, 1, 0.0, 0.1));
        }
        if (p->arch == OSCAR_ARCH_QWEN3) {
            OSCAR_TRY(add_random(w, &rng, T("attn_q_norm.weight"), OSCAR_GGML_TYPE_F32, p->head_dim, 1, qk_scale,
                                 0.1 * qk_scale));
            OSCAR_TRY(add_random(w, &rng, T("attn_k_norm.weight"), OSCAR_GGML_TYPE_F32, p->head_dim, 1, qk_scale,
                                 0.1 * qk_scale));
        }
        OSCAR_TRY(add_random(w, &rng, T("attn_output.weight"), p->weight_type, q_dim, p->n_embd, 0.0, s_q));
        OSCAR_TRY(add_random(w, &rng, T("ffn_norm.weight"), OSCAR_GGML_TYPE_F32, p->n_embd, 1, 1.0, 0.1));
        OSCAR_TRY(add_random(w, &rng, T("ffn_gate.weight"), p->weight_type, p->n_embd, p->n_ff, 0.0, s_embd));
        OSCAR_TRY(add_random(w, &rng, T("ffn_up.weight"), p->weight_type, p->n_embd, p->n_ff, 0.0, s_embd));
        OSCAR_TRY(add_random(w, &rng, T("ffn_down.weight"), p->weight_type, p->n_ff, p->n_embd, 0.0, s_ff));
#undef T
    }
    *out = w;
    return OSCAR_OK;
fail:
    ovk_gguf_writer_destroy(w);
    return st;
}

oscar_status ovk_model_gen_write(const ovk_model_gen_params *p, const char *path)
{
    ovk_gguf_writer *w = NULL;
    if (!p || !path) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_model_gen_write: NULL argument");
    oscar_status st = build(p, &w);
    if (st != OSCAR_OK) return st;
    st = ovk_gguf_writer_write_file(w, path);
    ovk_gguf_writer_destroy(w);
    return st;
}

oscar_status ovk_model_gen_write_memory(const ovk_model_gen_params *p, void **out, size_t *size)
{
    ovk_gguf_writer *w = NULL;
    if (!p || !out || !size)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_model_gen_write_memory: NULL argument");
    oscar_status st = build(p, &w);
    if (st != OSCAR_OK) return st;
    st = ovk_gguf_writer_write_memory(w, out, size);
    ovk_gguf_writer_destroy(w);
    return st;
}
