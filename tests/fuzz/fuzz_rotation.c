/* libFuzzer target: the RotationZoo loader (oscar_rotation_set_load's checks, through its
 * memory entry ovk_rotation_set_load_memory) on arbitrary bytes, against a fixed model shape:
 * llama, 2 layers, 4 query heads and 2 KV heads of head_dim 8, fingerprint 0123456789abcdef.
 * The model is a description only (no device, no weights): the loader reads its
 * hyperparameters and fingerprint and nothing else.
 *
 * Contract checked: no crash, out-of-bounds read, undefined behaviour or leak; a set that
 * loads has the model's shape, finite orthogonal rotations and clip ratios in (0, 1]; every
 * failure is a status with a message. Seeds: tests/fuzz/seeds/rotation (fuzz_make_seeds). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_api.h"

static oscar_model model;
static ovk_model_desc desc;

static void init_model(void)
{
    ovk_model_hparams *hp = &desc.hp;
    hp->arch = OSCAR_ARCH_LLAMA;
    hp->n_layer = 2, hp->n_head = 4, hp->n_head_kv = 2, hp->head_dim = 8, hp->head_dim_v = 8;
    hp->n_embd = 32, hp->n_ff = 64, hp->n_vocab = 320, hp->n_rot = 8, hp->n_ctx_train = 512;
    desc.fingerprint = 0x0123456789abcdefull;
    model.desc = &desc;
    model.info.fingerprint = desc.fingerprint;
    snprintf(model.info.fingerprint_hex, sizeof model.info.fingerprint_hex, "%016llx",
             (unsigned long long)desc.fingerprint);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!model.desc) init_model();
    oscar_rotation_set *s = NULL;
    oscar_status st = ovk_rotation_set_load_memory(data, size, "fuzz", &model, &s);
    if (st != OSCAR_OK) {
        if (s || !oscar_last_error()[0]) {
            fprintf(stderr, "failed load: set %p, message '%s'\n", (void *)s, oscar_last_error());
            abort();
        }
        return 0;
    }
    uint32_t d = s->head_dim;
    if (s->n_layer != 2 || d != 8 || (s->n_rot != 1 && s->n_rot != 2)) abort();
    for (uint32_t l = 0; l < s->n_layer; l++)
        if (!(s->clip_k[l] > 0 && s->clip_k[l] <= 1) || !(s->clip_v[l] > 0 && s->clip_v[l] <= 1)) abort();
    for (size_t i = 0; i < (size_t)s->n_layer * s->n_rot * d * d; i++)
        if (!isfinite(s->rot_k[i]) || !isfinite(s->rot_v[i])) abort();
    if (s->group_size && d % s->group_size) abort();
    oscar_rotation_set_destroy(s);
    return 0;
}
