/* Writing a RotationZoo GGUF file (docs/rotationzoo.md, format version 1) from a calibrator
 * result. The reader is oscar_rotation_set_load (include/oscar/model.h), written elsewhere. */
#ifndef OSCAR_ROTATION_FILE_H
#define OSCAR_ROTATION_FILE_H

#include <stdint.h>

#include "oscar/oscar.h"
#include "calib.h"

#define OSCAR_ROTATIONZOO_FORMAT_VERSION 1u

/* Everything the file says besides the tensors (docs/rotationzoo.md, "Metadata"). */
typedef struct ovk_rotation_file_meta {
    const char *objective_k;      /* "query_covariance", "hadamard", "identity" */
    const char *objective_v;      /* "proxy_score_weighted", "attention_output", "hadamard", "identity" */
    ovk_calib_grouping grouping;
    uint32_t group_size;          /* G */
    const float *clip_k, *clip_v; /* [n_layer] ratios in (0, 1] */
    int clip_fitted;              /* 1: fitted on calibration data, 0: the fixed 0.96 / 0.92 */
    uint32_t sink_tokens, recent_tokens;
    const char *architecture;     /* "llama", ... */
    uint32_t n_layer, n_head, n_kv_head, head_dim;
    uint64_t fingerprint;         /* ovk_model_fingerprint(); written as 16 hex digits */
    uint64_t calib_tokens;
    uint32_t sequence_length;
    const char *text_source;
    int write_eigenvalues;        /* 1: also write blk.<l>.attn_{k,v}_eig */
    const float *mean_k, *mean_v; /* NULL, or [n_layer][n_kv_head][d]: pre-RoPE key and value means,
                                   * written as blk.<l>.attn_{k,v}_mean (each side on its own) */
    uint32_t key_rope_span;       /* > 0: oscar.calib.key_rope_span written (the key rotation's target
                                   * was spread by RoPE over that many positions); 0: not written */
    uint32_t key_center_block;    /* > 0: oscar.key_center_block written (sessions center keys per
                                   * block of that many positions); 0: not written (one center for
                                   * the context) */
    uint32_t refit_rounds;        /* > 0: oscar.refit_rounds and blk.<l>.attn_k_metric (from the
                                   * result's metric_k, needed then; one group per row) written;
                                   * 0: neither */
} ovk_rotation_file_meta;

/* The objective names of docs/rotationzoo.md for a rotation kind and value target. */
const char *ovk_rotation_objective_k(ovk_rotation_kind kind);
const char *ovk_rotation_objective_v(ovk_rotation_kind kind, ovk_calib_target v_target);

/* Writes res (rotations [n_layer][n_rot][d][d], y = x·R, stored row-major exactly as in memory:
 * element (i, j) at float offset i*d + j) and meta to `path`, through a temporary file beside it
 * renamed on success: a failure leaves no file. Checks that res matches meta (layers, head_dim, n_rot vs
 * grouping), that every clip ratio is in (0, 1] and that a refit has its metric and one group
 * per row: INVALID_ARGUMENT otherwise; IO when the file cannot be written. */
oscar_status ovk_rotation_file_write(const char *path, const ovk_calib_result *res,
                                       const ovk_rotation_file_meta *meta);

#endif
