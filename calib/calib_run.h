/* The whole calibration, as the oscar-calib program runs it (calib/main_oscar_calib.c):
 * load the model, tokenize the text, run the batched prefill (capture.h) over sequences of
 * seq_len tokens streaming post-RoPE Q/K/V into the calibrator (calib.h), solve every
 * layer, write the RotationZoo GGUF (rotation_file.h).
 *
 * Every input is checked before the expensive part starts (model loads, text readable and
 * long enough, output path writable), and a failure leaves no output file behind. Errors come
 * back as a status with a one-line oscar_last_error() naming the problem.
 */
#ifndef OSCAR_CALIB_RUN_H
#define OSCAR_CALIB_RUN_H

#include <stdint.h>

#include "oscar/oscar.h"
#include "calib.h"

/* ovk_calib_run_params.center: which sides are centered (--center no|keys|values|yes = 0..3) */
#define OSCAR_CALIB_CENTER_KEYS 1u
#define OSCAR_CALIB_CENTER_VALUES 2u
#define OSCAR_CALIB_CENTER_BOTH 3u

typedef struct ovk_calib_run_params {
    const char *model_path;      /* GGUF model */
    const char *text_path;       /* plain UTF-8 text */
    const char *out_path;        /* RotationZoo GGUF to write */
    const char *text_source;     /* oscar.calib.text_source; NULL: text_path */
    uint64_t tokens;             /* calibration tokens (positions, BOS included); default 20000 */
    uint32_t seq_len;            /* tokens per sequence (positions 0..seq_len-1); default 512 */
    uint32_t chunk;              /* prefill batch; 0: min(seq_len, 256) */
    ovk_calib_grouping grouping;   /* default per layer */
    ovk_calib_target values;       /* VALUES_PROXY (default) or VALUES_SCORES */
    ovk_rotation_kind kind;        /* default OSCAR */
    int clip_fitted;             /* 1 (default): fitted ratios; 0: the fixed 0.96 / 0.92 */
    int clip_v_output;           /* 1 (default): the value clip is fitted on attention outputs over the
                                  * first 4 calibration sequences; 0: on the reservoir's rows */
    unsigned center;             /* OSCAR_CALIB_CENTER_* bits: the means (positions >= sink_tokens) of
                                  * those sides written and subtracted before the clip fit; default
                                  * OSCAR_CALIB_CENTER_KEYS (the keys' mean, RoPE-averaged over the
                                  * key spread's context in the clip fit; values centered measured
                                  * worse, docs/decisions.md); 0: none, as the reference */
    uint32_t key_center_block;   /* with key centering: > 0 (default 128), the runtime centers keys
                                  * per block of that many positions (written as
                                  * oscar.key_center_block); 0: one center for the context
                                  * (nothing written) */
    int key_clip_blocks;         /* 1: the key clip fit centers each sampled key by its block's center
                                  * too; 0 (default): by the context's (key_center_span), which
                                  * measured better with block centers at run time
                                  * (docs/decisions.md) */
    int key_feedback;            /* 1 (default): key codes by error feedback (blk.N.attn_k_feedback
                                  * written, the key clip fitted with it); 0: nearest rounding */
    uint32_t feedback_span;      /* positions the feedback's query covariance is spread over (RoPE);
                                  * 0 (default): the model's context_length */
    int key_spread;              /* 1 (default): the key rotation's target C_K spread by RoPE over the
                                  * same positions (written as oscar.calib.key_rope_span); 0: C_K of the
                                  * calibration positions, as the reference */
    uint32_t group_size;         /* quantization group G; 0: min(head_dim, 128) */
    uint32_t refit_rounds;       /* least-squares refit rounds of each row's min and scale (keys under
                                  * their metric, blk.N.attn_k_metric written), 0..8; default 0 (it
                                  * measured worse on SmolLM2, docs/quality.md); N > 0 needs
                                  * G = head_dim, else INVALID_ARGUMENT */
    uint32_t sink_tokens, recent_tokens; /* metadata; default 64 and 256 */
    uint64_t seed;               /* reservoir sampling; default 1 */
    /* Progress: stage "capture" (done/total tokens) and "solve" (done/total layers). */
    ovk_calib_progress_fn progress;
    void *progress_user;
} ovk_calib_run_params;

ovk_calib_run_params ovk_calib_run_params_default(void);

typedef struct ovk_calib_run_report {
    uint64_t tokens;             /* tokens captured */
    uint64_t text_tokens;        /* tokens the text was tokenized into (at least `tokens`) */
    uint32_t sequences;          /* calibration sequences */
    uint32_t n_layer;
    uint32_t refit_rounds;       /* refit rounds used (AUTO resolved) */
    uint32_t key_center_span;    /* with key centering and key_center_block 0: the context (positions)
                                  * whose RoPE-averaged key mean centered the clip fit's keys; 0 else */
    uint64_t fingerprint;        /* the model's */
    float *clip_k_fit, *clip_v_fit; /* [n_layer] fitted ratios (also when not written) */
    float *clip_k, *clip_v;      /* [n_layer] ratios written */
    double *err_k, *err_v;       /* [n_layer] fitted objective at the fitted ratio */
    double t_load, t_tokenize, t_capture, t_solve, t_write; /* seconds */
} ovk_calib_run_report;

/* Runs everything; fills *report when non-NULL (free with ovk_calib_run_report_free, also
 * after a failure). Statuses: INVALID_ARGUMENT (a bad parameter, text shorter than `tokens`),
 * IO (a file that cannot be read or written), BAD_FORMAT / UNSUPPORTED_FORMAT (the model),
 * UNSUPPORTED (a model shape the calibrator cannot handle), OUT_OF_HOST_MEMORY. */
oscar_status ovk_calib_run(const ovk_calib_run_params *params, ovk_calib_run_report *report);

/* What the command line needs of a model before a run: its fingerprint (as a RotationZoo file
 * records it), head_dim, and the INT2 group a run uses by default. Any argument may be NULL. */
oscar_status ovk_calib_model_shape(const char *model_path, uint64_t *fingerprint, uint32_t *head_dim,
                                   uint32_t *default_group);

void ovk_calib_run_report_free(ovk_calib_run_report *report);

#endif
