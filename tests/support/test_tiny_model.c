/* The small generated model of the app tests (test_tiny_model.h). */
#include "model_gen.h"
#include "test_tiny_model.h"
#include "test_util.h"

int test_tiny_model(const char *path, oscar_model_info *info, oscar_context **ctx_out, oscar_model **model_out)
{
    ovk_model_gen_params gp = ovk_model_gen_params_default(OSCAR_ARCH_LLAMA);
    gp.n_embd = 128, gp.n_head = 2, gp.n_head_kv = 1, gp.head_dim = 64, gp.n_ff = 256;
    gp.weight_type = gp.embd_type = OSCAR_GGML_TYPE_Q4_0;
    gp.n_ctx_train = 1024;
    CHECK_OK(ovk_model_gen_write(&gp, path));
    oscar_context *ctx = NULL;
    oscar_model *m = NULL;
    CHECK_OK(oscar_context_create(NULL, &ctx));
    if (ctx) CHECK_OK(oscar_model_load(ctx, path, NULL, &m));
    int ok = m && oscar_model_get_info(m, info) == OSCAR_OK;
    if (ok && ctx_out && model_out) {
        *ctx_out = ctx, *model_out = m;
        return 1;
    }
    oscar_model_destroy(m);
    oscar_context_destroy(ctx);
    return ok;
}
