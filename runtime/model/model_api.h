/* Internal view of the model-level public handles (include/oscar/model.h): what a model, a
 * session and a rotation set hold. model_api.c implements the model and session calls,
 * rotation_set.c the rotation sets. */
#ifndef OSCAR_MODEL_API_H
#define OSCAR_MODEL_API_H

#include "model_desc.h"
#include "model_gpu.h"
#include "oscar/oscar.h"
#include "tokenizer.h"

struct oscar_model {
    oscar_context *ctx;            /* borrowed */
    ovk_model_desc *desc;        /* owns the GGUF mapping */
    ovk_tokenizer *tok;
    ovk_model_gpu *gpu;          /* device weights */
    const char *chat_template;     /* tokenizer.chat_template in the mapping, or NULL */
    oscar_model_info info;
};

struct oscar_rotation_set {
    uint32_t n_layer, n_rot, head_dim; /* n_rot: 1 (per layer) or n_kv_head (per KV head) */
    float *rot_k, *rot_v;          /* [n_layer][n_rot][head_dim][head_dim] fp32, y = x·R */
    float *clip_k, *clip_v;        /* [n_layer] ratios in (0, 1] */
    float *mean_k, *mean_v;        /* NULL, or [n_layer][n_kv][head_dim]: pre-RoPE key means and value
                                    * means (centering, oscar_rotation_set_set_means) */
    float *key_feedback;           /* NULL, or [n_layer][n_rot][head_dim][head_dim]: error feedback of
                                    * the key codes (oscar_kv_experimental.key_feedback; from the file) */
    float *key_metric;             /* NULL, or [n_layer][n_rot][head_dim][head_dim]: the keys' refit
                                    * metric (oscar_kv_experimental.key_metric; from the file) */
    uint32_t refit_rounds;         /* oscar_kv_experimental.refit_rounds (oscar.refit_rounds; 0: none) */
    uint32_t n_kv;                 /* the model's KV heads */
    uint32_t group_size;           /* INT2 group the set was calibrated for (oscar.group_size); 0: not stated */
    uint32_t key_center_block;     /* positions per key-center block sessions use (the file's
                                    * oscar.key_center_block); 0: one center for the context */
    uint64_t fingerprint;          /* of the model it was checked against */
};

/* oscar_rotation_set_load from a RotationZoo image in memory (`data` borrowed for the call;
 * `name` labels the messages): the same checks against the model, for tests and fuzzing. */
oscar_status ovk_rotation_set_load_memory(const void *data, size_t size, const char *name, const oscar_model *model,
                                          oscar_rotation_set **out);

#endif
