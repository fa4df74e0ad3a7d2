/* The model-level public API (include/oscar/model.h): model loading and information,
 * tokenizer and chat wrappers, sessions with their sequences, prefill and batched decode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_template.h"
#include "error.h"
#include "kv_cache.h"
#include "model_api.h"
#include "oscar/experimental.h"
#include "rope.h"

/* ---- model --------------------------------------------------------------------------------- */

OSCAR_API oscar_model_params oscar_model_params_default(void)
{
    oscar_model_params p;
    memset(&p, 0, sizeof p);
    return p;
}

/* The GPU path's limits beyond model_desc's checks: the KV cache holds heads of 64, 128 or
 * 256 dimensions with equal K and V sizes and at most 16 query heads per KV head. */
static oscar_status check_gpu_shape(const ovk_model_desc *d)
{
    const ovk_model_hparams *hp = &d->hp;
    const char *path = d->gguf->path;
    if (hp->head_dim != 64 && hp->head_dim != 128 && hp->head_dim != 256)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED_FORMAT, "%s: head_dim %u is not supported by the KV cache (64, 128 or 256)",
                           path, hp->head_dim);
    if (hp->head_dim_v != hp->head_dim)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED_FORMAT, "%s: value head size %u differs from key head size %u", path,
                           hp->head_dim_v, hp->head_dim);
    if (hp->n_head / hp->n_head_kv > 16)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED_FORMAT, "%s: %u query heads per KV head (at most 16)", path,
                           hp->n_head / hp->n_head_kv);
    return OSCAR_OK;
}

static void fill_info(oscar_model *m)
{
    oscar_model_info *in = &m->info;
    const ovk_model_hparams *hp = &m->desc->hp;
    const ovk_gguf *g = m->desc->gguf;
    memset(in, 0, sizeof *in);
    snprintf(in->arch, sizeof in->arch, "%s", ovk_arch_name(hp->arch));
    const ovk_gguf_kv *name = ovk_gguf_find_key(g, "general.name");
    if (name && name->value.type == OSCAR_GGUF_TYPE_STRING) snprintf(in->name, sizeof in->name, "%s", name->value.cstr);
    in->n_layer = hp->n_layer, in->n_embd = hp->n_embd, in->n_ff = hp->n_ff;
    in->n_head = hp->n_head, in->n_head_kv = hp->n_head_kv, in->head_dim = hp->head_dim;
    in->n_vocab = hp->n_vocab, in->n_ctx_train = hp->n_ctx_train;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        in->n_params += g->tensors[i].n_elements;
        in->weight_bytes += g->tensors[i].n_bytes;
    }
    in->fingerprint = m->desc->fingerprint;
    snprintf(in->fingerprint_hex, sizeof in->fingerprint_hex, "%016llx", (unsigned long long)in->fingerprint);
    in->tied_embeddings = hp->tied_embeddings;
    in->bos = m->tok ? ovk_tokenizer_bos(m->tok) : -1;
    in->eos = m->tok ? ovk_tokenizer_eos(m->tok) : -1;
    in->eot = m->tok ? ovk_tokenizer_eot(m->tok) : -1;
}

OSCAR_API oscar_status oscar_model_load(oscar_context *ctx, const char *path, const oscar_model_params *params,
                                        oscar_model **out)
{
    oscar_status st = OSCAR_OK;
    oscar_model *m = NULL;
    if (!ctx || !path || !out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_model_load: NULL argument");
    *out = NULL;
    oscar_model_params p = params ? *params : oscar_model_params_default();
    m = calloc(1, sizeof *m);
    if (!m) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    m->ctx = ctx;
    OSCAR_TRY(ovk_model_desc_load(path, &m->desc));
    OSCAR_TRY(check_gpu_shape(m->desc));
    if (ovk_gguf_find_key(m->desc->gguf, "tokenizer.ggml.tokens"))
        OSCAR_TRY(ovk_model_tokenizer_create(m->desc->gguf, &m->tok));
    /* one id space for the tokenizer, the embedding and the LM head (as llama.cpp requires):
     * otherwise a prompt token has no embedding row, or a sampled id has no text, mid-turn */
    if (m->tok && ovk_tokenizer_vocab_size(m->tok) != m->desc->hp.n_vocab)
        OSCAR_FAIL(OSCAR_ERROR_BAD_FORMAT, "%s: the tokenizer has %u tokens but token_embd.weight%s has %u rows", path,
                   ovk_tokenizer_vocab_size(m->tok), m->desc->hp.tied_embeddings ? "" : " (and output.weight)",
                   m->desc->hp.n_vocab);
    const ovk_gguf_kv *tmpl = ovk_gguf_find_key(m->desc->gguf, "tokenizer.chat_template");
    if (tmpl && tmpl->value.type == OSCAR_GGUF_TYPE_STRING) m->chat_template = tmpl->value.cstr;
    OSCAR_TRY(ovk_model_gpu_create(ctx, m->desc, p.progress, p.progress_user, &m->gpu));
    fill_info(m);
    *out = m;
    return OSCAR_OK;
fail:
    oscar_model_destroy(m);
    return st;
}

OSCAR_API void oscar_model_destroy(oscar_model *m)
{
    if (!m) return;
    ovk_model_gpu_destroy(m->gpu);
    ovk_tokenizer_destroy(m->tok);
    ovk_model_desc_destroy(m->desc);
    free(m);
}

OSCAR_API oscar_status oscar_model_get_info(const oscar_model *m, oscar_model_info *out)
{
    if (!m || !out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_model_get_info: NULL argument");
    *out = m->info;
    return OSCAR_OK;
}

/* ---- tokens, text and chat ----------------------------------------------------------------- */

static oscar_status need_tokenizer(const oscar_model *m, const char *what)
{
    if (!m) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: NULL model", what);
    if (!m->tok) OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "%s: %s has no tokenizer (tokenizer.ggml.tokens)", what,
                                    m->desc->gguf->path);
    return OSCAR_OK;
}

OSCAR_API oscar_status oscar_model_tokenize(const oscar_model *m, const char *text, size_t len, int add_bos,
                                            int parse_special, int32_t *tokens, size_t capacity, size_t *n_tokens)
{
    oscar_status st = need_tokenizer(m, "oscar_model_tokenize");
    if (st != OSCAR_OK) return st;
    if (!text || !n_tokens) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_model_tokenize: NULL argument");
    return ovk_tokenizer_encode(m->tok, text, len, add_bos, parse_special, tokens, capacity, n_tokens);
}

OSCAR_API oscar_status oscar_model_detokenize(const oscar_model *m, const int32_t *tokens, size_t n, int render_special,
                                              char *buf, size_t capacity, size_t *len)
{
    oscar_status st = need_tokenizer(m, "oscar_model_detokenize");
    if (st != OSCAR_OK) return st;
    if ((!tokens && n) || !len) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_model_detokenize: NULL argument");
    return ovk_tokenizer_decode(m->tok, tokens, n, render_special, 1, buf, capacity, len);
}

OSCAR_API oscar_status oscar_model_token_to_piece(const oscar_model *m, int32_t token, int render_special, char *buf,
                                                  size_t capacity, size_t *len)
{
    oscar_status st = need_tokenizer(m, "oscar_model_token_to_piece");
    if (st != OSCAR_OK) return st;
    if (!len) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_model_token_to_piece: NULL len");
    return ovk_tokenizer_token_to_piece(m->tok, token, render_special, buf, capacity, len);
}

OSCAR_API int oscar_model_is_eog(const oscar_model *m, int32_t token)
{
    return m && m->tok ? ovk_tokenizer_is_eog(m->tok, token) : 0;
}

OSCAR_API oscar_status oscar_model_chat_format(const oscar_model *m, const oscar_chat_message *messages, size_t n,
                                               int add_generation_prompt, const char *system_prompt, char *buf,
                                               size_t capacity, size_t *len)
{
    if (!m || (!messages && n) || !len) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_model_chat_format: NULL argument");
    ovk_chat_params cp = ovk_chat_params_default();
    cp.template_src = m->chat_template;
    cp.system_prompt = system_prompt;
    cp.add_generation_prompt = add_generation_prompt;
    return ovk_chat_apply(&cp, messages, n, buf, capacity, len);
}

/* ---- sessions ------------------------------------------------------------------------------ */

struct oscar_session {
    oscar_model *model;            /* borrowed */
    oscar_session_params p;        /* resolved (n_ctx, n_batch set; rotations cleared) */
    oscar_kv_cache *kv;
    ovk_gpu_state *g;
    int32_t *kv_seq;               /* [n_seq_max] cache sequence of each public id, -1: free */
    int32_t *step_seqs;            /* [n_seq_max] scratch: cache ids of a decode step */
    uint32_t *step_n;              /* [n_seq_max] scratch: 1 each */
    int32_t *last_amax;            /* [n_seq_max] argmax rows of the last step */
    uint32_t last_rows;
};

OSCAR_API oscar_session_params oscar_session_params_default(void)
{
    oscar_session_params p;
    memset(&p, 0, sizeof p);
    p.kv_mode = OSCAR_KV_FP16;
    p.n_seq_max = 1;
    p.n_batch = 0; /* chosen for the device at session creation (default_batch) */
    p.page_tokens = 64, p.sink_tokens = 64, p.recent_tokens = 256, p.flush_tokens = 8;
    return p;
}

/* The prompt step when the caller leaves n_batch at 0: 256 tokens on a CPU device (a step there
 * takes seconds, and the chat app checks for Ctrl-C between steps); on a GPU 2048, where larger
 * steps keep the matrix units and the prefill attention busy (a 2K prompt of a Llama-3-8B Q4_0
 * at 7,830 against 5,785 tok/s with 512 on an H100, docs/performance.md), halved while one
 * step's widest activation (n_ff, q or n_embd floats a token) would pass a storage binding. */
static uint32_t default_batch(const oscar_context *ctx, const ovk_model_hparams *hp)
{
    if (ctx->info.type == OSCAR_DEVICE_CPU) return 256;
    uint64_t widest = hp->n_ff > hp->n_embd ? hp->n_ff : hp->n_embd;
    uint64_t q = (uint64_t)hp->n_head * hp->head_dim;
    widest = q > widest ? q : widest;
    uint32_t n = 2048;
    while (n > 64 && (uint64_t)n * widest * 4 > ctx->limits.maxStorageBufferRange) n /= 2;
    return n;
}

OSCAR_API oscar_status oscar_session_create(oscar_model *model, const oscar_session_params *params, oscar_session **out)
{
    oscar_status st = OSCAR_OK;
    oscar_session *s = NULL;
    if (!model || !out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_session_create: NULL argument");
    *out = NULL;
    oscar_session_params p = params ? *params : oscar_session_params_default();
    const ovk_model_hparams *hp = &model->desc->hp;
    const oscar_rotation_set *rs = p.rotations;
    if (p.n_ctx == 0) p.n_ctx = hp->n_ctx_train && hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096;
    if (p.n_seq_max == 0) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "session: n_seq_max must be positive");
    if (p.n_batch == 0) p.n_batch = default_batch(model->ctx, hp);
    uint32_t key_center_block = p.experimental ? p.experimental->key_center_block : 0;
    if (key_center_block && key_center_block < OSCAR_KEY_CENTER_BLOCK_MIN)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "session: key_center_block %u is below %u", key_center_block,
                           OSCAR_KEY_CENTER_BLOCK_MIN);
    if (p.kv_mode == OSCAR_KV_INT2_ROTATED && !rs)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "session: kv_mode oscar needs a rotation set (params.rotations)");
    if (rs && (rs->n_layer != hp->n_layer || rs->head_dim != hp->head_dim || rs->fingerprint != model->info.fingerprint))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_MISMATCH, "session: the rotation set was made for another model (fingerprint %016llx, "
                           "%u layers, head_dim %u)", (unsigned long long)rs->fingerprint, rs->n_layer, rs->head_dim);
    if (rs && p.kv_mode == OSCAR_KV_INT2_ROTATED && rs->group_size) { /* its clips and P were fitted for it */
        if (p.group_size && p.group_size != rs->group_size)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_MISMATCH, "session: group_size %u, but the rotation set was calibrated for groups "
                               "of %u (oscar.group_size)", p.group_size, rs->group_size);
        p.group_size = rs->group_size;
    }
    p.rotations = NULL;
    p.experimental = NULL;

    s = calloc(1, sizeof *s);
    if (!s) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    s->model = model;
    s->p = p;
    s->kv_seq = malloc(p.n_seq_max * sizeof *s->kv_seq);
    s->step_seqs = malloc(p.n_seq_max * sizeof *s->step_seqs);
    s->step_n = malloc(p.n_seq_max * sizeof *s->step_n);
    s->last_amax = calloc(p.n_seq_max, sizeof *s->last_amax);
    if (!s->kv_seq || !s->step_seqs || !s->step_n || !s->last_amax) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    for (uint32_t i = 0; i < p.n_seq_max; i++) s->kv_seq[i] = -1, s->step_n[i] = 1;

    uint32_t step_tokens = p.n_batch > p.n_seq_max ? p.n_batch : p.n_seq_max;
    oscar_kv_params kp = oscar_kv_params_default();
    kp.mode = p.kv_mode;
    kp.n_layer = hp->n_layer, kp.n_head = hp->n_head, kp.n_kv_head = hp->n_head_kv, kp.head_dim = hp->head_dim;
    kp.group_size = p.group_size;
    if (p.page_tokens) kp.page_tokens = p.page_tokens;
    kp.sink_tokens = p.sink_tokens;
    kp.recent_tokens = p.recent_tokens;
    if (p.flush_tokens) kp.flush_tokens = p.flush_tokens;
    kp.max_sequences = p.n_seq_max;
    kp.max_context = p.n_ctx;
    kp.max_step_tokens = step_tokens;
    kp.memory_budget = p.kv_memory_budget;
    oscar_kv_experimental kx = { 0 }; /* the rotation file's research settings */
    float *center_k = NULL; /* the key centers: per block of positions, or RoPE-averaged over this context */
    if (rs) {
        if (p.kv_mode == OSCAR_KV_INT2_ROTATED) {
            kp.rot_k = rs->rot_k, kp.rot_v = rs->rot_v;
            kp.rot_per_head = rs->n_rot > 1;
            kx.key_feedback = rs->key_feedback;
            kx.key_metric = rs->key_metric;
            kx.refit_rounds = rs->refit_rounds;
            kp.experimental = &kx;
            kp.mean_v = rs->mean_v;
        }
        if (p.kv_mode == OSCAR_KV_INT2_ROTATED && rs->mean_k) {
            /* RoPE(mean_k) averaged per block of B positions (kx.key_centers), or over the
             * context's positions sink .. n_ctx-1 as one center (kp.mean_k, one "block"):
             * [n_layer][n_blocks][n_kv][d] */
            uint32_t B = key_center_block ? key_center_block : rs->key_center_block;
            int blocks = B && B != OSCAR_KEY_CENTER_CONTEXT;
            uint32_t d = hp->head_dim, nkv = hp->n_head_kv, n_blocks = blocks ? (uint32_t)(((uint64_t)p.n_ctx + B - 1) / B) : 1;
            center_k = malloc((size_t)hp->n_layer * n_blocks * nkv * d * sizeof *center_k);
            if (!center_k) OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
            for (uint32_t l = 0; l < hp->n_layer; l++)
                for (uint32_t b = 0; b < n_blocks; b++)
                    for (uint32_t h = 0; h < nkv; h++)
                        ovk_rope_average(rs->mean_k + ((size_t)l * nkv + h) * d, d, hp->n_rot, hp->rope_type,
                                           model->desc->rope_theta, blocks ? b * B : p.sink_tokens,
                                           blocks ? (b + 1) * B : p.n_ctx, center_k + (((size_t)l * n_blocks + b) * nkv + h) * d);
            if (blocks) kx.key_centers = center_k, kx.key_center_block = B;
            else kp.mean_k = center_k;
        }
        kp.clip_k = rs->clip_k, kp.clip_v = rs->clip_v;
    }
    st = oscar_kv_cache_create(model->ctx, &kp, &s->kv);
    free(center_k);
    if (st != OSCAR_OK) goto fail;
    OSCAR_TRY(ovk_gpu_state_create(model->gpu, s->kv, step_tokens, p.n_seq_max, &s->g));
    OSCAR_TRY(ovk_gpu_prepare(s->g)); /* the first prompt does not make its pipelines */
    *out = s;
    return OSCAR_OK;
fail:
    oscar_session_destroy(s);
    return st;
}

OSCAR_API void oscar_session_destroy(oscar_session *s)
{
    if (!s) return;
    ovk_gpu_state_destroy(s->g);
    oscar_kv_cache_destroy(s->kv);
    free(s->kv_seq), free(s->step_seqs), free(s->step_n), free(s->last_amax);
    free(s);
}

/* The cache sequence behind a public id, or an INVALID_STATE error naming it. */
static oscar_status lookup(const oscar_session *s, int32_t seq, int32_t *kv_id)
{
    if (seq < 0 || (uint32_t)seq >= s->p.n_seq_max || s->kv_seq[seq] < 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "sequence %d does not exist (ids 0..%u in use only)", (int)seq,
                           s->p.n_seq_max - 1);
    *kv_id = s->kv_seq[seq];
    return OSCAR_OK;
}

static oscar_status free_slot(const oscar_session *s, int32_t *slot)
{
    for (uint32_t i = 0; i < s->p.n_seq_max; i++)
        if (s->kv_seq[i] < 0) {
            *slot = (int32_t)i;
            return OSCAR_OK;
        }
    OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_PAGES, "all %u sequences of the session are in use (n_seq_max)", s->p.n_seq_max);
}

OSCAR_API oscar_status oscar_session_seq_add(oscar_session *s, int32_t *seq)
{
    oscar_status st = OSCAR_OK;
    int32_t slot = -1, id = -1;
    if (!s || !seq) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_session_seq_add: NULL argument");
    OSCAR_TRY(free_slot(s, &slot));
    OSCAR_TRY(oscar_kv_seq_add(s->kv, &id));
    s->kv_seq[slot] = id;
    *seq = slot;
fail:
    return st;
}

OSCAR_API oscar_status oscar_session_seq_fork(oscar_session *s, int32_t src, int32_t *dst)
{
    oscar_status st = OSCAR_OK;
    int32_t slot = -1, src_id = -1, id = -1;
    if (!s || !dst) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_session_seq_fork: NULL argument");
    OSCAR_TRY(lookup(s, src, &src_id));
    OSCAR_TRY(free_slot(s, &slot));
    OSCAR_TRY(oscar_kv_seq_fork(s->kv, src_id, &id));
    s->kv_seq[slot] = id;
    *dst = slot;
fail:
    return st;
}

OSCAR_API oscar_status oscar_session_seq_free(oscar_session *s, int32_t seq)
{
    oscar_status st = OSCAR_OK;
    int32_t id = -1;
    if (!s) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_session_seq_free: NULL session");
    OSCAR_TRY(lookup(s, seq, &id));
    OSCAR_TRY(oscar_kv_seq_free(s->kv, id));
    s->kv_seq[seq] = -1;
fail:
    return st;
}

OSCAR_API oscar_status oscar_session_seq_reset(oscar_session *s, int32_t seq)
{
    oscar_status st = OSCAR_OK;
    int32_t id = -1;
    if (!s) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_session_seq_reset: NULL session");
    OSCAR_TRY(oscar_session_seq_free(s, seq));
    OSCAR_TRY(oscar_kv_seq_add(s->kv, &id)); /* a slot was just freed, so this cannot run out */
    s->kv_seq[seq] = id;
fail:
    return st;
}

OSCAR_API oscar_status oscar_session_seq_length(const oscar_session *s, int32_t seq, uint32_t *length)
{
    oscar_status st = OSCAR_OK;
    int32_t id = -1;
    if (!s || !length) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_session_seq_length: NULL argument");
    OSCAR_TRY(lookup(s, seq, &id));
    OSCAR_TRY(oscar_kv_seq_length(s->kv, id, length));
fail:
    return st;
}

/* CONTEXT_FULL when seq (cache id kv_id) cannot take n more tokens. */
static oscar_status check_room(const oscar_session *s, int32_t seq, int32_t kv_id, uint64_t n)
{
    oscar_status st = OSCAR_OK;
    uint32_t len;
    OSCAR_TRY(oscar_kv_seq_length(s->kv, kv_id, &len));
    if (len + n > s->p.n_ctx)
        OSCAR_FAIL(OSCAR_ERROR_CONTEXT_FULL, "sequence %d: %llu new tokens after %u would exceed the session's n_ctx of %u",
                   (int)seq, (unsigned long long)n, len, s->p.n_ctx);
fail:
    return st;
}

OSCAR_API oscar_status oscar_session_prefill(oscar_session *s, int32_t seq, const int32_t *tokens, uint32_t n, float *logits)
{
    oscar_status st = OSCAR_OK;
    int32_t id = -1;
    if (!s || !tokens || n == 0) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_session_prefill: NULL argument or no token");
    OSCAR_TRY(lookup(s, seq, &id));
    OSCAR_TRY(check_room(s, seq, id, n));
    uint32_t V = s->model->info.n_vocab;
    for (uint32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || (uint32_t)tokens[i] >= V)
            OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "prefill: token %d at index %u is outside the vocabulary of %u", tokens[i], i, V);
    s->last_rows = 0;
    for (uint32_t done = 0; done < n;) {
        uint32_t chunk = n - done < s->p.n_batch ? n - done : s->p.n_batch;
        int last = done + chunk == n;
        OSCAR_TRY(ovk_gpu_step(s->g, 1, &id, &chunk, tokens + done, last, last ? logits : NULL, last ? s->last_amax : NULL));
        done += chunk;
    }
    s->last_rows = 1;
fail:
    return st;
}

OSCAR_API oscar_status oscar_session_fill_synthetic(oscar_session *s, int32_t seq, uint32_t n)
{
    oscar_status st = OSCAR_OK;
    int32_t id = -1;
    if (!s || n == 0) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_session_fill_synthetic: NULL session or no token");
    OSCAR_TRY(lookup(s, seq, &id));
    OSCAR_TRY(check_room(s, seq, id, n));
    s->last_rows = 0;
    OSCAR_TRY(ovk_gpu_fill_synthetic(s->g, id, n, (uint32_t)seq + 1u));
fail:
    return st;
}

OSCAR_API oscar_status oscar_session_decode(oscar_session *s, uint32_t n_seqs, const int32_t *seqs, const int32_t *tokens,
                                            float *logits)
{
    oscar_status st = OSCAR_OK;
    if (!s || !seqs || !tokens || n_seqs == 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_session_decode: NULL argument or no sequence");
    if (n_seqs > s->p.n_seq_max)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "decode of %u sequences (n_seq_max %u)", n_seqs, s->p.n_seq_max);
    for (uint32_t i = 0; i < n_seqs; i++) {
        OSCAR_TRY(lookup(s, seqs[i], &s->step_seqs[i]));
        for (uint32_t j = 0; j < i; j++)
            if (seqs[j] == seqs[i]) OSCAR_FAIL(OSCAR_ERROR_INVALID_ARGUMENT, "decode: sequence %d appears twice", (int)seqs[i]);
        OSCAR_TRY(check_room(s, seqs[i], s->step_seqs[i], 1));
    }
    s->last_rows = 0;
    OSCAR_TRY(ovk_gpu_step(s->g, n_seqs, s->step_seqs, s->step_n, tokens, 1, logits, s->last_amax));
    s->last_rows = n_seqs;
fail:
    return st;
}

OSCAR_API oscar_status oscar_session_last_argmax(const oscar_session *s, int32_t *out, uint32_t n)
{
    if (!s || (!out && n)) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_session_last_argmax: NULL argument");
    if (n > s->last_rows)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "the last step produced %u logits rows, %u asked", s->last_rows, n);
    memcpy(out, s->last_amax, (size_t)n * sizeof *out);
    return OSCAR_OK;
}

OSCAR_API uint32_t oscar_session_n_batch(const oscar_session *s) { return s ? s->p.n_batch : 0; }

OSCAR_API oscar_status oscar_session_kv_stats(const oscar_session *s, oscar_kv_stats *out)
{
    oscar_status st = OSCAR_OK;
    if (!s || !out) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "oscar_session_kv_stats: NULL argument");
    OSCAR_TRY(oscar_kv_get_stats(s->kv, out));
    out->last_gpu_ms = s->g->last_gpu_ms;
fail:
    return st;
}
