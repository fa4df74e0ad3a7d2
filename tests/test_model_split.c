/* Weight matrices larger than one storage binding (model_gpu.h: stored split by rows, one
 * product or lookup per part) against the same model unsplit and against the C reference.
 *
 * 1. A forced small part limit (ovk_model_gpu_create_split) splits every matrix of small
 *    generated models: the embedding and LM head (vocabulary 333) into parts of 36 rows and a
 *    last one of 9, each layer matrix into 4..16 parts. Models: llama F32 untied, qwen2 Q4_K
 *    with a Q6_K embedding tied to the LM head (as Qwen2.5-Coder), qwen3 Q4_0 untied (also
 *    with the packed-fp16 single-row products where the device has them; qwen2 again with the
 *    int8 single-row products where it has subgroup arithmetic). A scenario of 23
 *    logits rows: a 40-token prefill (the tiled matmul) and 7 greedy decode steps (the
 *    mat-vec), then 3 sequences prefilled with 5 tokens each (the batched lanes product for
 *    block types) and 4 decode steps of the 3 together (a 3-row LM head: parts write their
 *    columns of rows vocab floats apart). Every logit is bit for bit the unsplit model's and
 *    the greedy tokens are the same; in fp32 the prefill logits are within NSE 1e-4 of the C
 *    reference and the greedy tokens equal the reference's, or first differ at a near-tie
 *    (test_greedy.h: the GPU sums in another order than the reference's double sums, so these
 *    are not bit-exact; test_ops_matvec checks the lookup bit for bit against the reference).
 * 2. The device's own limit, where a storage binding holds at most 256 MiB (lavapipe: 128 MiB):
 *    a tied model whose F32 embedding (vocabulary x 2048 floats: few, long rows, which lavapipe
 *    runs in a fraction of a second, where the rows of a quantized table of the same size take
 *    seconds) is 301 rows over the limit loads through the public API in 2 parts and runs the
 *    scenario's first sequence (24-token prompt, Q8_0 layers: products of up to 32 tokens in the
 *    batched lanes product, not the tiled matmul, whose 64-token tiles take minutes there; no
 *    batched sequences: a multi-row F32 LM head would be the tiled matmul); the prompt holds
 *    ids of both parts. Its
 *    logits are within NSE 1e-4 of the reference and its greedy tokens the reference's, and
 *    every logit is bit for bit that of the same model split into 3 parts (no run of it
 *    unsplit is possible on such a device).
 */
#include <stdlib.h>
#include <string.h>

#include "ggml_types.h"
#include "half.h"
#include "model_api.h"
#include "model_gen.h"
#include "model_ref.h"
#include "test_greedy.h"
#include "test_gpu.h"

static oscar_context *ctx;

enum { N_GREEDY = 8, N_SEQS = 3, N_SEQ_PROMPT = 5, N_BATCH_STEPS = 4 };
/* logits rows of the scenario, with or without its batched sequences */
#define SCENARIO_ROWS(batched) (N_GREEDY + ((batched) ? N_SEQS + N_BATCH_STEPS * N_SEQS : 0))

/* The reference's K/V rounded to fp16 as the fp16 cache stores them. */
static void round_kv_f16(void *user, uint32_t layer, uint32_t pos, float *k, float *v)
{
    const ovk_model_hparams *hp = user;
    (void)layer, (void)pos;
    for (uint32_t i = 0; i < hp->n_head_kv * hp->head_dim; i++) k[i] = ovk_round_f16(k[i]), v[i] = ovk_round_f16(v[i]);
}

/* Runs the scenario on model m: lg [SCENARIO_ROWS(batched)][V] logits, greedy [N_GREEDY] the
 * first sequence's argmax tokens. The batched sequences' prompts are prompt + 7 j (n_prompt >= 19). */
static int run_scenario(oscar_model *m, uint32_t V, const int32_t *prompt, uint32_t n_prompt, int batched, float *lg,
                        int32_t *greedy)
{
    oscar_session_params sp = oscar_session_params_default();
    sp.n_ctx = 256;
    sp.n_batch = 64;
    oscar_session *s = NULL;
    int32_t seq, seqs[N_SEQS], toks[N_SEQS];
    int ok = 0;
    if (oscar_session_create(m, &sp, &s) != OSCAR_OK || oscar_session_seq_add(s, &seq) != OSCAR_OK) goto done;
    if (oscar_session_prefill(s, seq, prompt, n_prompt, lg) != OSCAR_OK || oscar_session_last_argmax(s, greedy, 1) != OSCAR_OK)
        goto done;
    for (uint32_t i = 1; i < N_GREEDY; i++)
        if (oscar_session_decode(s, 1, &seq, &greedy[i - 1], lg + (size_t)i * V) != OSCAR_OK ||
            oscar_session_last_argmax(s, &greedy[i], 1) != OSCAR_OK)
            goto done;
    oscar_session_destroy(s);
    s = NULL;
    if (!batched) {
        ok = 1;
        goto done;
    }
    sp.n_seq_max = N_SEQS;
    if (oscar_session_create(m, &sp, &s) != OSCAR_OK) goto done;
    float *row = lg + (size_t)N_GREEDY * V;
    for (uint32_t j = 0; j < N_SEQS; j++, row += V)
        if (oscar_session_seq_add(s, &seqs[j]) != OSCAR_OK ||
            oscar_session_prefill(s, seqs[j], prompt + 7 * j, N_SEQ_PROMPT, row) != OSCAR_OK ||
            oscar_session_last_argmax(s, &toks[j], 1) != OSCAR_OK)
            goto done;
    for (uint32_t k = 0; k < N_BATCH_STEPS; k++, row += (size_t)N_SEQS * V)
        if (oscar_session_decode(s, N_SEQS, seqs, toks, row) != OSCAR_OK || oscar_session_last_argmax(s, toks, N_SEQS) != OSCAR_OK)
            goto done;
    ok = 1;
done:
    CHECK_MSG(ok, "scenario: %s", oscar_last_error());
    oscar_session_destroy(s);
    return ok;
}

/* Replaces m's device weights by a copy split into parts of at most `limit` bytes (0: the
 * device's limit). */
static int resplit(oscar_model *m, uint64_t limit)
{
    ovk_model_gpu *g = NULL;
    CHECK_OK(ovk_model_gpu_create_split(ctx, m->desc, limit, NULL, NULL, &g));
    if (!g) return 0;
    ovk_model_gpu_destroy(m->gpu);
    m->gpu = g;
    return 1;
}

/* The scenario's logits row 0 and greedy tokens against the reference. */
static void check_reference(oscar_model *m, const int32_t *prompt, uint32_t n_prompt, const float *lg,
                            const int32_t *greedy, const char *name)
{
    ovk_model_ref_params rp = ovk_model_ref_params_default();
    rp.n_ctx = 256;
    rp.max_batch = 64;
    rp.predequantize = 0; /* rows dequantized as they are used: the large model's would take 0.5 GB as floats */
    rp.kv_transform = round_kv_f16;
    rp.kv_transform_user = &m->desc->hp;
    ovk_model_ref *ref = NULL;
    CHECK_OK(ovk_model_ref_create(m->desc, &rp, &ref));
    if (!ref) return;
    uint32_t V = m->desc->hp.n_vocab, n_ref = 0;
    float *lr = malloc((size_t)V * sizeof *lr);
    int32_t ref_tok[N_GREEDY];
    CHECK_OK(ovk_model_ref_eval(ref, prompt, n_prompt, 0, lr, 0));
    double nse = test_nse(lg, lr, V);
    CHECK_MSG(nse <= 1e-4, "%s: prefill logits NSE %.3g against the reference", name, nse);
    CHECK_OK(ovk_model_ref_generate_greedy(ref, prompt, n_prompt, N_GREEDY, NULL, NULL, ref_tok, &n_ref));
    int same = n_ref == N_GREEDY && !memcmp(ref_tok, greedy, sizeof ref_tok);
    CHECK_MSG(n_ref == N_GREEDY && test_greedy_matches(ref, prompt, n_prompt, ref_tok, greedy, N_GREEDY, V, 0, name),
              "%s: greedy tokens differ from the reference's (not at a near-tie)", name);
    printf("  %s: prefill logits NSE %.3g against the reference, %u greedy tokens %s\n", name, nse, N_GREEDY,
           same ? "equal" : "equal up to a near-tie");
    free(lr);
    ovk_model_ref_destroy(ref);
}

/* Logits rows of [n_rows][V] that differ in any bit. */
static size_t rows_differing(const float *a, const float *b, uint32_t n_rows, uint32_t V)
{
    size_t bad = 0;
    for (size_t r = 0; r < n_rows; r++) bad += memcmp(a + r * V, b + r * V, (size_t)V * 4) != 0;
    return bad;
}

/* ---- 1. a forced part limit ----------------------------------------------------------------- */

/* products: 0 fp32, 1 packed-fp16 single-row products, 2 int8 single-row products (the
 * context's OSCAR_MATVEC_F16 / OSCAR_MATVEC_Q8, read when a session is created) */
static void check_forced(const char *path, ovk_arch arch, uint32_t type, uint32_t embd_type, int tied, int products)
{
    char name[96];
    snprintf(name, sizeof name, "%s %s (embedding %s)%s%s", ovk_arch_name(arch), ovk_ggml_type_name(type),
             ovk_ggml_type_name(embd_type), tied ? " tied" : "", products == 1 ? " packed-fp16" : products == 2 ? " int8" : "");
    ovk_model_gen_params gp = ovk_model_gen_params_default(arch);
    gp.weight_type = type, gp.embd_type = embd_type;
    gp.n_layer = 2, gp.n_embd = 256, gp.n_head = 4, gp.n_head_kv = 2, gp.head_dim = 64, gp.n_ff = 512;
    gp.n_vocab = 333;
    gp.tied_embeddings = tied;
    gp.seed = 5 + type + 10 * arch;
    CHECK_OK(ovk_model_gen_write(&gp, path));
    oscar_model *m = NULL;
    CHECK_OK(oscar_model_load(ctx, path, NULL, &m));
    if (!m) return;
    const ovk_model_hparams *hp = &m->desc->hp;
    uint32_t V = hp->n_vocab, n_prompt = 40;
    int32_t prompt[40], g_whole[N_GREEDY], g_split[N_GREEDY];
    for (uint32_t i = 0; i < n_prompt; i++) prompt[i] = 3 + (int32_t)(test_rng_u32() % (V - 3));
    float *whole = malloc((size_t)SCENARIO_ROWS(1) * V * 4), *split = malloc((size_t)SCENARIO_ROWS(1) * V * 4);
    ctx->env.matvec_f16 = products == 1;
    ctx->env.matvec_q8 = products == 2;
    CHECK(m->gpu->split_matrices == 0);
    if (!run_scenario(m, V, prompt, n_prompt, 1, whole, g_whole)) goto done;

    /* parts of 36 rows of the embedding (more where output offsets align to more than 16 bytes) */
    uint64_t row_bytes;
    CHECK_OK(ovk_ggml_row_size(embd_type, hp->n_embd, &row_bytes));
    uint32_t align = ctx->limits.minStorageBufferOffsetAlignment, unit = align > 4 ? align / 4 : 1;
    uint32_t per = (36 + unit - 1) / unit * unit;
    if (!resplit(m, (per + 1) * row_bytes - 1)) goto done;
    const ovk_gpu_weight *te = &m->gpu->token_embd;
    CHECK_MSG(te->part_rows == per && te->n_parts == (V + per - 1) / per && m->gpu->split_matrices == (tied ? 1u : 2u) + 7 * hp->n_layer,
              "%s: embedding in %u parts of %u rows, %u matrices split", name, te->n_parts, te->part_rows,
              m->gpu->split_matrices);
    if (!run_scenario(m, V, prompt, n_prompt, 1, split, g_split)) goto done;
    size_t bad = rows_differing(split, whole, SCENARIO_ROWS(1), V);
    CHECK_MSG(bad == 0 && !memcmp(g_split, g_whole, sizeof g_whole), "%s: %zu of %u logits rows differ from the unsplit "
              "model's, greedy tokens %s", name, bad, SCENARIO_ROWS(1), memcmp(g_split, g_whole, sizeof g_whole) ? "differ" : "equal");
    printf("%s: %u matrices split (embedding: %u parts of %u rows, last %u): %u logits rows %s the unsplit model's\n", name,
           m->gpu->split_matrices, te->n_parts, te->part_rows, V - (te->n_parts - 1) * te->part_rows, SCENARIO_ROWS(1),
           bad ? "DIFFER FROM" : "bit for bit");
    if (!products) check_reference(m, prompt, n_prompt, split, g_split, name);
done:
    ctx->env.matvec_f16 = 0;
    ctx->env.matvec_q8 = 0;
    free(whole), free(split);
    oscar_model_destroy(m);
}

/* ---- 2. the device's limit ------------------------------------------------------------------ */

static void check_device_limit(const char *path)
{
    uint64_t limit = ctx->limits.maxStorageBufferRange;
    if (limit > (256ull << 20)) {
        printf("device limit: a storage binding holds %llu bytes, a matrix over it would take minutes here: skipped\n",
               (unsigned long long)limit);
        return;
    }
    double t0 = test_now();
    uint32_t align = ctx->limits.minStorageBufferOffsetAlignment, unit = align > 4 ? align / 4 : 1, D = 2048;
    uint64_t row_bytes;
    CHECK_OK(ovk_ggml_row_size(OSCAR_GGML_TYPE_F32, D, &row_bytes));
    uint32_t part_rows = (uint32_t)(limit / row_bytes) / unit * unit;
    ovk_model_gen_params gp = ovk_model_gen_params_default(OSCAR_ARCH_LLAMA);
    gp.weight_type = OSCAR_GGML_TYPE_Q8_0, gp.embd_type = OSCAR_GGML_TYPE_F32;
    gp.n_layer = 2, gp.n_embd = D, gp.n_head = 4, gp.n_head_kv = 2, gp.head_dim = 64, gp.n_ff = 512;
    gp.n_vocab = (uint32_t)(limit / row_bytes) + 301;
    gp.tied_embeddings = 1;
    gp.seed = 77;
    CHECK_OK(ovk_model_gen_write(&gp, path));
    oscar_model *m = NULL;
    CHECK_OK(oscar_model_load(ctx, path, NULL, &m));
    if (!m) return;
    uint32_t V = m->desc->hp.n_vocab, n_prompt = 24;
    const ovk_gpu_weight *te = &m->gpu->token_embd;
    CHECK_MSG(te->n_parts == 2 && te->part_rows == part_rows, "embedding of %u rows in %u parts of %u", V, te->n_parts,
              te->part_rows);
    int32_t prompt[24], g2[N_GREEDY], g3[N_GREEDY];
    for (uint32_t i = 0; i < n_prompt; i++) prompt[i] = 3 + (int32_t)(test_rng_u32() % (V - 3));
    /* both sides of the boundary, the last row, more rows of the second part */
    prompt[1] = (int32_t)te->part_rows - 1, prompt[2] = (int32_t)te->part_rows, prompt[3] = (int32_t)V - 1;
    for (uint32_t j = 0; j < 3; j++) prompt[7 * j + 4] = (int32_t)(te->part_rows + 17 * j);
    float *lg2 = malloc((size_t)SCENARIO_ROWS(0) * V * 4), *lg3 = malloc((size_t)SCENARIO_ROWS(0) * V * 4);
    printf("device limit: %u x %u F32 embedding and LM head (%.1f MiB, the limit %.0f MiB) in %u parts (%.1f s)\n", V, D,
           (double)V * row_bytes / 1048576, limit / 1048576.0, te->n_parts, test_now() - t0);
    if (run_scenario(m, V, prompt, n_prompt, 0, lg2, g2)) {
        check_reference(m, prompt, n_prompt, lg2, g2, "device limit");
        uint64_t third = ((uint64_t)V / 3 + unit) / unit * unit; /* rows per part of a 3-part split */
        if (resplit(m, third * row_bytes) && run_scenario(m, V, prompt, n_prompt, 0, lg3, g3)) {
            te = &m->gpu->token_embd;
            size_t bad = rows_differing(lg3, lg2, SCENARIO_ROWS(0), V);
            CHECK_MSG(te->n_parts == 3 && bad == 0 && !memcmp(g2, g3, sizeof g2), "device limit: in %u parts %zu of %u logits "
                      "rows differ from the 2-part model's", te->n_parts, bad, SCENARIO_ROWS(0));
            printf("  in %u parts: %u logits rows %s the 2-part model's (%.1f s)\n", te->n_parts, SCENARIO_ROWS(0),
                   bad ? "DIFFER FROM" : "bit for bit", test_now() - t0);
        }
    }
    free(lg2), free(lg3);
    oscar_model_destroy(m);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    ctx = test_gpu_context();
    test_tmp_dir_make("ovk_model_split");
    double t0 = test_now();
    test_rng_seed(99);
    /* fp32 products where the reference's tokens are expected (the int8 mat-vec and the
     * cooperative-matrix matmul, the defaults where they are fast, round their inputs) */
    ctx->env.matvec_q8 = 0;
    ctx->env.matmul_coopmat = 0;
    const char *path = test_tmp_path("m.gguf");
    check_forced(path, OSCAR_ARCH_LLAMA, OSCAR_GGML_TYPE_F32, OSCAR_GGML_TYPE_F32, 0, 0);
    check_forced(path, OSCAR_ARCH_QWEN2, OSCAR_GGML_TYPE_Q4_K, OSCAR_GGML_TYPE_Q6_K, 1, 0);
    check_forced(path, OSCAR_ARCH_QWEN3, OSCAR_GGML_TYPE_Q4_0, OSCAR_GGML_TYPE_Q4_0, 0, 0);
    if (ctx->info.float16_arithmetic) check_forced(path, OSCAR_ARCH_QWEN3, OSCAR_GGML_TYPE_Q4_0, OSCAR_GGML_TYPE_Q4_0, 0, 1);
    else printf("packed-fp16 products: skipped (no shaderFloat16)\n");
    if (ctx->info.subgroup_arithmetic) check_forced(path, OSCAR_ARCH_QWEN2, OSCAR_GGML_TYPE_Q4_K, OSCAR_GGML_TYPE_Q6_K, 1, 2);
    else printf("int8 products: skipped (no subgroup arithmetic)\n");
    printf("forced part limit: %.1f s\n", test_now() - t0);
    check_device_limit(path);
    test_tmp_dir_remove();
    return test_gpu_finish(ctx);
}
