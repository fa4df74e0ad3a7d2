/* The loader's checks of what a model file says against itself, and of which kind of file it
 * is (runtime/model: model_desc.c, model_api.c, rotation_set.c):
 *  1. a norm weight (output_norm, a layer's attn_norm) with a NaN or an infinity is refused at
 *     load (BAD_FORMAT naming the tensor and element): it would make every logit NaN;
 *  2. a tokenizer whose vocabulary is not the embedding's row count is refused at load, before
 *     a prompt meets an id without an embedding row (needs a device: skipped without one);
 *  3. a RotationZoo file given as a model, and a model given as a rotation file, are MISMATCH
 *     with a message saying which file it is;
 *  4. a rotation file's check quoted inside the file's message keeps one source location.
 * The models are generated (runtime/dev), then damaged with tests/support/test_files.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "model_api.h"
#include "model_desc.h"
#include "model_gen.h"
#include "test_files.h"
#include "test_util.h"

static const char *copy_of(const char *src, const char *name)
{
    const char *dst = test_tmp_path(name);
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", src, dst);
    CHECK(system(cmd) == 0);
    return dst;
}

static void expect_desc_error(const char *path, oscar_status want, const char *needle)
{
    ovk_model_desc *d = NULL;
    oscar_status st = ovk_model_desc_load(path, &d);
    CHECK_MSG(st == want && !d && strstr(oscar_last_error(), needle), "%s: status %d, '%s' (want '%s')", path, st,
              oscar_last_error(), needle);
    ovk_model_desc_destroy(d);
}

int main(void)
{
    test_tmp_dir_make("oscar_test_model_checks");
    ovk_model_gen_params gp = ovk_model_gen_params_default(OSCAR_ARCH_LLAMA);
    gp.n_embd = 128, gp.n_head = 2, gp.n_head_kv = 1, gp.head_dim = 64, gp.n_ff = 256;
    const char *model = test_tmp_path("model.gguf");
    CHECK_OK(ovk_model_gen_write(&gp, model));
    ovk_model_desc *d = NULL;
    CHECK_OK(ovk_model_desc_load(model, &d));
    ovk_model_desc_destroy(d);

    /* 1. NaN and infinite norm weights */
    const float nan_f = NAN, inf_f = INFINITY;
    const char *nan_out = copy_of(model, "nan-output-norm.gguf"), *inf_attn = copy_of(model, "inf-attn-norm.gguf");
    CHECK(test_fill_tensor(nan_out, "output_norm.weight", &nan_f, 4));
    CHECK(test_fill_tensor(inf_attn, "blk.1.attn_norm.weight", &inf_f, 4));
    expect_desc_error(nan_out, OSCAR_ERROR_BAD_FORMAT, "output_norm.weight: element 0 is NaN");
    expect_desc_error(inf_attn, OSCAR_ERROR_BAD_FORMAT, "blk.1.attn_norm.weight: element 0 is infinite");

    /* 3. the two kinds of file swapped */
    oscar_model_info info;
    memset(&info, 0, sizeof info);
    snprintf(info.arch, sizeof info.arch, "llama");
    info.n_layer = 2, info.n_head = 2, info.n_head_kv = 1, info.head_dim = 64;
    const char *zoo = test_tmp_path("model.rot.gguf");
    CHECK_OK(test_write_identity_zoo(zoo, &info, "0123456789abcdef", 0.9f));
    expect_desc_error(zoo, OSCAR_ERROR_MISMATCH, "is a RotationZoo rotation file, not a model");

    oscar_context *ctx = NULL;
    oscar_model *m = NULL;
    uint32_t n_dev = 0;
    if (oscar_list_devices(NULL, &n_dev) != OSCAR_OK || n_dev == 0) {
        printf("no Vulkan device: the parts that load a model are skipped\n");
        test_tmp_dir_remove();
        return test_finish();
    }
    CHECK_OK(oscar_context_create(NULL, &ctx));
    if (ctx) CHECK_OK(oscar_model_load(ctx, model, NULL, &m));
    if (m) {
        oscar_rotation_set *s = NULL;
        CHECK_STATUS(oscar_rotation_set_load(model, m, &s), OSCAR_ERROR_MISMATCH);
        CHECK_MSG(!s && strstr(oscar_last_error(), "is a model (general.architecture \"llama\")"), "%s", oscar_last_error());
        /* 4. a check inside the file's message: one location */
        CHECK_OK(oscar_model_get_info(m, &info));
        const char *bad = test_tmp_path("clip.rot.gguf");
        CHECK_OK(test_write_identity_zoo(bad, &info, info.fingerprint_hex, 1.5f));
        CHECK_STATUS(oscar_rotation_set_load(bad, m, &s), OSCAR_ERROR_BAD_FORMAT);
        const char *e = oscar_last_error(), *loc = strstr(e, ".c:");
        CHECK_MSG(strstr(e, "clip ratio clip_k[0] = 1.5 is not in (0, 1]") && loc && !strstr(loc + 1, ".c:"), "%s", e);
        oscar_model_destroy(m);
        m = NULL;
    }

    /* 2. a vocabulary shorter than token_embd's rows, and longer (the embedding cut instead) */
    const char *short_vocab = test_tmp_path("short-vocab.gguf");
    CHECK(test_cut_vocabulary(model, short_vocab, 300));
    if (ctx) {
        CHECK_STATUS(oscar_model_load(ctx, short_vocab, NULL, &m), OSCAR_ERROR_BAD_FORMAT);
        CHECK_MSG(!m && strstr(oscar_last_error(), "the tokenizer has 300 tokens but token_embd.weight (and output.weight) has "
                                                   "320 rows"), "%s", oscar_last_error());
        oscar_model_destroy(m);
    }
    oscar_context_destroy(ctx);
    test_tmp_dir_remove();
    return test_finish();
}
