/* OSCAR calibrator: the math core (DESIGN.md §1), pure CPU, float64 accumulation.
 *
 * Flow: ovk_calib_create() -> for each calibration sequence: ovk_calib_begin_sequence(),
 * then per layer, batches of post-RoPE rows in token order with ovk_calib_add() -> either
 * ovk_calib_solve() for every layer at once, or the pieces (ovk_calib_covariance(),
 * ovk_rotation_build(), ovk_calib_fit_clip()) one by one.
 *
 * Conventions used throughout:
 *  - Row-vector convention, as in the runtime: a rotation R is float32 [d][d] row-major and the
 *    rotated row is y = x·R, y_j = Σ_i x_i R[i][j]. Undoing it is x = y·Rᵀ.
 *  - Matrices are row-major. An eigenvector matrix U holds eigenvector i in COLUMN i
 *    (U[r][i] = component r of u_i), eigenvalues sorted descending.
 *  - GQA: query head i uses KV head i / (n_head / n_kv_head).
 *
 * What is accumulated, per (layer, KV head h), in float64:
 *  - C_Q,h = Σ q qᵀ / n over the post-RoPE queries of every query head sharing KV head h.
 *    Keys' target C_K: per-layer grouping = mean over h of C_Q,h; per-head grouping = C_Q,h.
 *  - C_V (a), the proxy: w_t = k_t C_Q,h k_tᵀ, C_V,h = Σ w_t v_t v_tᵀ / Σ w_t (identical to
 *    normalising w to mean 1 and dividing by n). w needs the FINAL C_Q, which a one-pass stream
 *    does not have yet. Choice: the first `proxy_buffer_tokens` tokens of each layer are kept
 *    (float32 K and V) and weighted with the final C_Q when the covariance is read, so a stream
 *    no longer than the buffer is exact; once the buffer is full it is flushed with the C_Q
 *    accumulated so far, and later batches are weighted with the running C_Q (all tokens up to
 *    and including their own batch). The buffer is freed after the flush.
 *  - C_S (b), the paper's: o = softmax(q Kᵀ/sqrt(d)) V, causal within the current sequence,
 *    for every query head i of the group; C_S,h = Σ o oᵀ / (number of o rows). The keys and
 *    values of the current sequence are kept per layer (at most `max_seq_len` tokens, default
 *    2048): feed a calibration sequence of up to max_seq_len tokens in one or more chunks after
 *    ovk_calib_begin_sequence(); cost O(T²·d) per sequence and head. Feeding more tokens than
 *    max_seq_len into one sequence is an error (OSCAR_ERROR_CONTEXT_FULL), never a silent cut.
 *    Per-layer C_S and C_V are the mean over h, like C_K.
 *  - A reservoir (uniform sample, Algorithm R, seeded) of `reservoir_rows` K and V rows per
 *    (layer, KV head), default 1024 (SmolLM2-135M: 30 x 3 x 1024 rows x 64 x 2 x 4 B = 47 MB),
 *    used to fit the clip ratios.
 *  - With vfit_sequences > 0, the K and V rows of the first vfit_sequences sequences (up to
 *    max_seq_len tokens each) and every vfit_query_stride-th query row of them, per layer, to fit
 *    the value clip on attention outputs (ovk_calib_clip_curve_output): SmolLM2-135M at 4
 *    sequences of 512, stride 4: 30 x 4 x 512 x (2 x 3 + 9 / 4) x 64 x 4 B = 130 MB.
 */
#ifndef OSCAR_CALIB_H
#define OSCAR_CALIB_H

#include <stddef.h>
#include <stdint.h>

#include "oscar/oscar.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest head_dim the calibrator accepts (the INT2 reference handles groups up to 256). */
#define OSCAR_CALIB_MAX_HEAD_DIM 256u
/* Most least-squares refit rounds (ovk_calib_params.refit_rounds) the calibrator takes. */
#define OSCAR_CALIB_MAX_REFIT_ROUNDS 8u
/* Passed as `head` to ask for the layer-level matrix (mean over KV heads). */
#define OSCAR_CALIB_ALL_HEADS UINT32_MAX

typedef enum ovk_calib_grouping {
    OSCAR_CALIB_PER_LAYER = 0, /* one R_K and one R_V per layer */
    OSCAR_CALIB_PER_HEAD = 1,  /* one per layer and KV head */
} ovk_calib_grouping;

typedef enum ovk_calib_target {
    OSCAR_CALIB_KEYS = 0,          /* C_K: GQA-pooled query covariance */
    OSCAR_CALIB_VALUES_PROXY = 1,  /* C_V (a): key-score-weighted value covariance */
    OSCAR_CALIB_VALUES_SCORES = 2, /* C_S (b): covariance of attention outputs S·V */
} ovk_calib_target;

typedef enum ovk_rotation_kind {
    OSCAR_ROTATION_IDENTITY = 0, /* R = I (plain INT2) */
    OSCAR_ROTATION_HADAMARD = 1, /* R = H (QuaRot-style) */
    OSCAR_ROTATION_OSCAR = 2,    /* R = U·H·P */
    OSCAR_ROTATION_OSCAR_NO_PERM = 3, /* R = U·H, for ablation of P only */
} ovk_rotation_kind;

/* Progress hook: `stage` is a constant string ("solve"), done <= total. Called from the
 * calling thread; must not call back into the calibrator. */
typedef void (*ovk_calib_progress_fn)(void *user, const char *stage, uint64_t done, uint64_t total);

typedef struct ovk_calib_params {
    uint32_t n_layer, n_head, n_kv_head, head_dim; /* head_dim: power of two, <= 256 */
    uint32_t group_size;          /* quantization group G (divides head_dim); 0 = min(head_dim, 128), the runtime's default */
    ovk_calib_grouping grouping;
    int score_objective;          /* 1: also accumulate C_S (b) (needs K/V history); default 1 */
    uint32_t max_seq_len;         /* tokens of history per sequence for C_S; default 2048 */
    uint32_t proxy_buffer_tokens; /* tokens per layer weighted exactly for C_V (a); default 2048 */
    uint32_t reservoir_rows;      /* sample rows per (layer, KV head) for clip fitting; default 1024 */
    uint32_t min_tokens;          /* fewer tokens in a layer is an error; default head_dim */
    uint32_t vfit_sequences;      /* sequences kept to fit the value clip on attention outputs; default 0
                                     (off: the value clip is fitted on the reservoir's rows) */
    uint32_t vfit_query_stride;   /* every n-th position of those is a query of the fit; 0 (default):
                                     max(4, max_seq_len / 128), so the fit's cost grows with max_seq_len,
                                     not its square */
    uint32_t vfit_sink;           /* positions below this are never quantized (the fp16 sink); default 0 */
    uint32_t vfit_recent;         /* nor the last vfit_recent positions before a query (the fp16 recent
                                     window); default 0 */
    float clip_min, clip_max, clip_step; /* clip-ratio grid; default 0.80 .. 1.00 step 0.01 */
    int key_feedback;             /* 1: key codes by error feedback (ovk_key_feedback_matrix per
                                   * rotation, key clip fitted with it); default 0 */
    double feedback_damp;         /* its damping (and the refit metric's); default 0.01 */
    const float *rope_theta;      /* [rope_n_rot / 2] the model's RoPE angles per position (borrowed), or
                                   * NULL: the feedback's query covariance as calibrated */
    uint32_t rope_n_rot;          /* rotary dims */
    int rope_neox;                /* 1: pairs (i, i + n_rot/2); 0: (2i, 2i + 1) */
    uint32_t feedback_span;       /* positions the query covariance is spread over for the feedback
                                   * (ovk_rope_spread_covariance); 0: not spread */
    int key_spread;               /* 1: the key rotation's target C_K is spread the same way (over
                                   * feedback_span positions, when rope_theta is set), so R_K fits
                                   * the queries of a whole context, not those of the calibration
                                   * sequences' positions; default 0 */
    uint32_t key_center_block;    /* > 0: the key centers given to the clip fit (ovk_calib_solve's
                                   * center_k, ovk_calib_clip_curve's center) are pre-RoPE key means,
                                   * and a sampled key at position p is centered by RoPE(mean) averaged
                                   * over positions [bB, (b+1)B), b = p / B, B = this (needs
                                   * rope_theta), as the runtime's key-center table does
                                   * (oscar_kv_experimental.key_centers); 0 (default): centers are constant */
    uint32_t refit_rounds;        /* rounds of the least-squares refit of each row's min and scale
                                   * (ovk_int2_fake_quantize_refit) the clip fit quantizes with:
                                   * keys under their metric (ovk_key_metric_matrix, damped with
                                   * feedback_damp), values under the identity; 0: the min–max grid.
                                   * Default 0; at most OSCAR_CALIB_MAX_REFIT_ROUNDS; needs one group
                                   * per row, so it resolves to 0 when group_size < head_dim */
    uint64_t seed;                /* reservoir sampling */
    ovk_calib_progress_fn progress; /* may be NULL */
    void *progress_user;
} ovk_calib_params;

typedef struct ovk_calib ovk_calib;

/* ---- the calibrator object ------------------------------------------------------------- */

ovk_calib_params ovk_calib_params_default(void);

/* Validates the shapes (head_dim a power of two, n_head a multiple of n_kv_head, G divides
 * head_dim) and allocates every accumulator. *out is NULL on failure. */
oscar_status ovk_calib_create(const ovk_calib_params *params, ovk_calib **out);
/* Frees everything; NULL is a no-op. */
void ovk_calib_destroy(ovk_calib *cal);

/* Starts a new calibration sequence: the key/value history of every layer is emptied, so the
 * next ovk_calib_add() rows sit at position 0. Needed only for C_S (b); harmless otherwise. */
oscar_status ovk_calib_begin_sequence(ovk_calib *cal);

/* Adds a batch of n_tokens consecutive tokens of the current sequence to `layer`:
 *   q [n_tokens][n_head][head_dim], k and v [n_tokens][n_kv_head][head_dim], float32, post-RoPE.
 * All values must be finite: a NaN or Inf anywhere rejects the whole batch with
 * OSCAR_ERROR_INVALID_ARGUMENT (the message names layer, tensor, token, head and dim) and
 * leaves the calibrator unchanged. OSCAR_ERROR_CONTEXT_FULL when the sequence would exceed
 * max_seq_len while score_objective is on. The caller keeps ownership of the arrays. */
oscar_status ovk_calib_add(ovk_calib *cal, uint32_t layer, uint32_t n_tokens,
                             const float *q, const float *k, const float *v);

/* Adds n_tokens rows to the means of `layer` (a separate stream from ovk_calib_add, so the
 * caller picks the rows: oscar-calib gives the positions past the fp16 sink):
 *   k_pre [n_tokens][n_kv_head][head_dim] keys BEFORE RoPE (their mean does not depend on the
 *   position, so the runtime can rotate it to any context: ovk_rope_average), and
 *   v [n_tokens][n_kv_head][head_dim] values. A non-finite value rejects the batch unchanged. */
oscar_status ovk_calib_add_means(ovk_calib *cal, uint32_t layer, uint32_t n_tokens, const float *k_pre,
                                   const float *v);
/* The mean (float64 [d]) of the pre-RoPE keys (values = 0) or the values (1) of (layer, KV head)
 * from ovk_calib_add_means; INVALID_STATE when no row was added. */
oscar_status ovk_calib_mean(const ovk_calib *cal, uint32_t layer, uint32_t head, int values, double *out);

/* Tokens added so far to `layer` (0 for a layer out of range). */
uint64_t ovk_calib_tokens(const ovk_calib *cal, uint32_t layer);

/* Writes the finished target covariance, float64 [d][d] symmetric, of (layer, head) into
 * out; head < n_kv_head picks one KV head, OSCAR_CALIB_ALL_HEADS the mean over KV heads.
 * OSCAR_ERROR_INVALID_STATE when the layer has fewer than min_tokens tokens or the target was
 * not accumulated (C_S with score_objective = 0). */
oscar_status ovk_calib_covariance(ovk_calib *cal, uint32_t layer, uint32_t head,
                                    ovk_calib_target target, double *out);

/* The parameters in use, with defaults resolved (group_size, min_tokens, refit_rounds); NULL
 * for NULL. */
const ovk_calib_params *ovk_calib_get_params(const ovk_calib *cal);

/* The reservoir of (layer, KV head): *n rows of keys *k and values *v, float32 [n][d] each,
 * owned by the calibrator and valid until the next ovk_calib_add() or destroy. */
oscar_status ovk_calib_reservoir(const ovk_calib *cal, uint32_t layer, uint32_t head, const float **k,
                                   const float **v, uint32_t *n);
/* The positions of those rows in their sequences, [n] (same lifetime); NULL for a bad layer / head. */
const uint32_t *ovk_calib_reservoir_positions(const ovk_calib *cal, uint32_t layer, uint32_t head);

/* Attention-weighted INT2 error of the reservoir rows of (layer, head) (head as above),
 * centered (center: NULL, or float32 [n_kv_head][d], row of KV head h minus center[h], as the
 * runtime stores x − μ; keys with params.key_center_block: center[h] is the pre-RoPE key mean
 * and a row at position p is centered by its block's RoPE average of it, see there), rotated by
 * R (float32 [d][d]) and fake-quantized with group G at each
 * clip ratio:
 *   keys   (values = 0): (y − ŷ)ᵀ (Rᵀ C_Q,h R) (y − ŷ) = E_q[(q·(k − k̂))²] per row,
 *   values (values = 1): w_t ‖y − ŷ‖² with w_t = k_t C_Q,h k_tᵀ normalised to mean 1 per head.
 * ADDS the per-ratio sums to err_sum[0..n_ratios) and the row count to *rows (the mean is
 * err_sum / rows), so curves of several heads with their own R can be pooled. feedback (keys
 * only; NULL: nearest rounding): the keys' error-feedback matrix for R, float32 [d][d]
 * (ovk_key_feedback_matrix), with which the codes are chosen. With refit_rounds > 0 every
 * row is then refitted (ovk_int2_fake_quantize_refit): keys under `metric` (float32 [d][d],
 * ovk_key_metric_matrix for R; NULL: the identity), values under the identity. */
oscar_status ovk_calib_clip_curve(ovk_calib *cal, uint32_t layer, uint32_t head, int values,
                                    const float *R, const float *feedback, const float *metric, const float *center,
                                    const float *ratios, uint32_t n_ratios, double *err_sum, uint64_t *rows);

/* Error of the attention OUTPUT when the values of the kept sequences (vfit_sequences) are
 * centered, rotated by R and fake-quantized at each clip ratio: for every kept query a (every
 * vfit_query_stride-th position, of every query head of the group of KV head `head`; head as
 * above), with its exact causal softmax weights p_aj over the sequence's real keys,
 *   ‖Σ_j p_aj (ŷ_j − y_j)‖²   over vfit_sink <= j < pos_a − vfit_recent (the tokens the runtime
 * holds in INT2 when that query attends: the sink and the recent window stay fp16); queries
 * that see no such token are skipped.
 * Unlike the per-row curve this sees that independent rounding errors average out over many
 * attended tokens while an error shared by them (clipping shrinks the same outliers) does not.
 * ADDS to err_sum and *rows (queries) like ovk_calib_clip_curve; INVALID_STATE when no
 * sequence was kept (vfit_sequences = 0). With refit_rounds > 0 the values are refitted under
 * the identity, as in ovk_calib_clip_curve. */
oscar_status ovk_calib_clip_curve_output(ovk_calib *cal, uint32_t layer, uint32_t head, const float *R,
                                           const float *center, const float *ratios, uint32_t n_ratios,
                                           double *err_sum, uint64_t *rows);
/* Kept sequence s of `layer` (s < vfit_sequences): *n tokens of keys *k and values *v, float32
 * [n][n_kv_head][d] each, and *nq query rows *q [nq][n_head][d] at positions *qpos [nq]; owned by
 * the calibrator, valid until the next ovk_calib_add() or destroy. */
oscar_status ovk_calib_kept_sequence(const ovk_calib *cal, uint32_t layer, uint32_t s, const float **k,
                                       const float **v, uint32_t *n, const float **q, const uint32_t **qpos,
                                       uint32_t *nq);
/* Whether sequences were kept for ovk_calib_clip_curve_output (vfit_sequences > 0 and at
 * least one query row was kept in some layer). */
int ovk_calib_has_output_fit(const ovk_calib *cal);

/* The params' clip-ratio grid: clip_min, clip_min + step, ..., up to clip_max (included within
 * step/2), at most cap ratios into ratios; returns how many. OSCAR_CALIB_CLIP_GRID_MAX holds any. */
#define OSCAR_CALIB_CLIP_GRID_MAX 1024u
uint32_t ovk_calib_clip_grid(const ovk_calib_params *p, float *ratios, uint32_t cap);

/* Picks the clip ratio of the params grid with the smallest error for (layer, head) and R;
 * writes it and its mean error (err may be NULL). Ties go to the larger ratio. Key codes by
 * nearest rounding; with refit_rounds > 0 the keys are refitted under their metric
 * (ovk_calib_spread_key_covariance, then ovk_key_metric_matrix), as ovk_calib_solve does. */
oscar_status ovk_calib_fit_clip(ovk_calib *cal, uint32_t layer, uint32_t head, int values,
                                  const float *R, const float *center, float *ratio, double *err);

/* ---- solving every layer ---------------------------------------------------------------- */

typedef struct ovk_calib_result {
    uint32_t n_layer, n_rot, head_dim; /* n_rot: 1 per layer, or n_kv_head per-head */
    float *rot_k, *rot_v;   /* [n_layer][n_rot][d][d] row-major, y = x·R */
    double *eig_k, *eig_v;  /* [n_layer][n_rot][d] target eigenvalues, descending (0 unless OSCAR) */
    float *clip_k, *clip_v; /* [n_layer] fitted clip ratios */
    double *err_k, *err_v;  /* [n_layer] mean fitted objective at that ratio */
    float *feedback_k;      /* [n_layer][n_rot][d][d] key error feedback (params.key_feedback), else NULL */
    float *metric_k;        /* [n_layer][n_rot][d][d] the keys' refit metric (params.refit_rounds > 0,
                             * resolved), else NULL: symmetric, mean diagonal 1 */
} ovk_calib_result;

/* Builds R_K from C_K and R_V from `v_target` (VALUES_PROXY or VALUES_SCORES) for every layer
 * with `kind`, checks each R (orthogonal, finite), fits both clip ratios per layer on rows
 * centered by center_k / center_v (NULL, or float32 [n_layer][n_kv_head][d]: what the runtime
 * will subtract), and reports progress after each layer. With key_feedback and refit_rounds > 0
 * it also builds each key rotation's feedback and refit metric from the spread C_K
 * (ovk_calib_spread_key_covariance), and the clip fit quantizes with them. Fills *out (free
 * with ovk_calib_result_free); on failure *out is empty. */
oscar_status ovk_calib_solve(ovk_calib *cal, ovk_rotation_kind kind, ovk_calib_target v_target,
                               const float *center_k, const float *center_v, ovk_calib_result *out);
/* Frees the arrays of a result and zeroes it; NULL or an empty result is a no-op. */
void ovk_calib_result_free(ovk_calib_result *res);

/* ---- matrices (no calibrator needed) ---------------------------------------------------- */

/* Normalised Sylvester Walsh–Hadamard matrix, float64 [d][d]: H[i][j] = (−1)^popcount(i&j)/√d
 * (ovk_hadamard_entry, runtime/kv/orthogonal.h: the same matrix as mode int2-hadamard's).
 * Symmetric and orthogonal. OSCAR_ERROR_INVALID_ARGUMENT unless d is a power of two <= 4096. */
oscar_status ovk_hadamard_matrix(uint32_t d, double *H);

/* Bit-reversal permutation of 0..d−1 (d a power of two): perm[p] = p with its log2(d) bits
 * reversed. It is an involution, and the Sylvester H is invariant under it (B·H·B = H).
 * As P in R = U·H·P: position p of x·U·H·P takes column perm[p] of U·H; since
 * U·H·B = U·B·H, this equals placing eigen-direction of rank r (sorted by eigenvalue,
 * descending) at position perm[r] BEFORE the Hadamard. What it buys with G < d: the d/G
 * within-group-constant patterns of H (one per output group, absorbed exactly by each group's
 * min) receive the top d/G ranks, and every group sees every direction with weight G/d
 * (diag(RᵀCR) = tr(C)/d for all coordinates, for any P). With G = d the output is a
 * permutation of the U·H output and the error of a row-wise quantizer cannot change. */
oscar_status ovk_bit_reversal_permutation(uint32_t d, uint32_t *perm);

/* Symmetric eigendecomposition with LAPACKE_dsyevd: C (float64 [d][d], upper triangle read)
 * = U diag(lambda) Uᵀ, lambda descending, U's columns the eigenvectors (each signed so that its
 * largest-magnitude component is positive, for reproducible output). U and lambda may not
 * alias C. OSCAR_ERROR_INVALID_ARGUMENT for a non-finite C, OSCAR_ERROR_UNSUPPORTED if LAPACK
 * fails to converge. */
oscar_status ovk_eigh_descending(uint32_t d, const double *C, double *U, double *lambda);

/* Builds a rotation of `kind` for head_dim d into R (float32 [d][d], y = x·R). C (float64
 * [d][d] target covariance) is needed only for the OSCAR kinds (may be NULL otherwise);
 * lambda (float64 [d], may be NULL) receives its eigenvalues, descending, or zeros. */
oscar_status ovk_rotation_build(ovk_rotation_kind kind, uint32_t d, const double *C, float *R,
                                  double *lambda);

/* The key codes' error feedback for rotation R (float32 [d][d]) of keys whose query covariance
 * is C (float64 [d][d], the C_K target): with M = Rᵀ C R, the logit error of a key error e
 * (rotated basis) averaged over queries is eᵀ M e. Rounding element by element and taking
 * element i's error times F[i][j] out of each later element j (ovk_int2_feedback_codes)
 * minimises it greedily when F[i][j] = U[i][j] / U[i][i], U the upper Cholesky factor of
 * (M + damp · tr(M)/d · I)⁻¹ (GPTQ's update; damp > 0 keeps it finite where the queries never
 * look). Writes F (float32 [d][d], 0 on and below the diagonal). OSCAR_ERROR_UNSUPPORTED if
 * LAPACK fails. */
oscar_status ovk_key_feedback_matrix(uint32_t d, const double *C, const float *R, double damp, float *F);

/* The keys' metric for the least-squares refit (ovk_int2_refit_row) with rotation R and query
 * covariance C: the same damped M = Rᵀ C R + damp · tr(Rᵀ C R)/d · I the feedback is built
 * from, scaled so its mean diagonal is 1 (the refit's solve does not depend on the scale, its
 * fp32 sums do), written as float32 [d][d]: exactly symmetric, entries below 1e-30 in
 * magnitude set to 0. Same arguments and errors as ovk_key_feedback_matrix (no LAPACK). */
oscar_status ovk_key_metric_matrix(uint32_t d, const double *C, const float *R, double damp, float *metric);

/* The covariance the key feedback and the refit's metric are built from for (layer, head)
 * (head as in ovk_calib_covariance), and with params.key_spread the key rotation's target:
 * C_K, spread by RoPE over feedback_span positions (ovk_rope_spread_covariance) when
 * params.rope_theta is set. float64 [d][d] into C. */
oscar_status ovk_calib_spread_key_covariance(ovk_calib *cal, uint32_t layer, uint32_t head, double *C);

/* The positions C_K is spread over by ovk_calib_spread_key_covariance under params p: their
 * feedback_span when the model has RoPE (rope_theta set, rope_n_rot >= 2) and the span is at
 * least 2; 0 when it leaves C_K as calibrated. */
uint32_t ovk_calib_key_rope_span(const ovk_calib_params *p);

/* Averages the covariance C (float64 [d][d], in place) of post-RoPE rows over RoPE shifts by
 * every position 0..span−1: C ← (1/span) Σ_p Rot(p) C Rot(p)ᵀ, Rot(p) turning pair i by p·θ_i
 * (pairs (2i, 2i+1), or (i, i + n_rot/2) with neox; dims from n_rot on unrotated). Calibration
 * queries sit at positions below the sequence length; a cache serving a longer context meets
 * them turned further, so a metric meant for it (the key feedback) should be spread so. Exact
 * (closed-form sums), symmetric in, symmetric out. span < 2: unchanged. */
void ovk_rope_spread_covariance(uint32_t d, uint32_t n_rot, int neox, const float *theta, uint32_t span, double *C);

/* Check of a rotation the calibrator built or wrote: every entry finite and ‖RᵀR − I‖_max <= tol
 * (1e-4 is a good tolerance for float32 data). Writes the deviation to *max_dev (may be NULL;
 * +inf when not finite). OSCAR_ERROR_BAD_FORMAT with the offending entry or deviation in the
 * message. The measure is the runtime's (ovk_rotation_max_error, runtime/kv/orthogonal.h),
 * which the KV cache and the RotationZoo loader apply with their own tolerance of 1e-3. */
oscar_status ovk_rotation_check(const float *R, uint32_t d, double tol, double *max_dev);

/* y = x·R (transpose = 0) or y = x·Rᵀ (transpose = 1) for n rows of x [n][x_stride] (first d
 * used), y [n][d]. x and y must not alias. */
void ovk_rotate_rows(const float *x, uint32_t n, size_t x_stride, uint32_t d, const float *R,
                       int transpose, float *y);

/* Causal softmax attention of one query head, float32 with a float64 softmax sum:
 *   out[a] = Σ_{j <= n_past + a} softmax_j(q_a·k_j / sqrt(d)) v_j,   a < n_new,
 * query row a sitting at position n_past + a. q [n_new][q_stride], k and v
 * [n_past + n_new][kv_stride] (first d of each row used), out [n_new][d].
 * O(n_new·(n_past+n_new)·d); processes 64 query rows at a time and touches only the keys they
 * may see. OSCAR_ERROR_OUT_OF_HOST_MEMORY if the score block cannot be allocated. */
/* Softmax in place of a score row whose first `seen` entries are visible (max subtracted, float64
 * sum), the rest of its n entries set to 0: the causal softmax of ovk_attention_causal. */
void ovk_softmax_causal_row(float *row, uint32_t seen, uint32_t n);

oscar_status ovk_attention_causal(const float *q, size_t q_stride, uint32_t n_new, const float *k,
                                    const float *v, size_t kv_stride, uint32_t n_past, uint32_t d,
                                    float *out);

#ifdef __cplusplus
}
#endif
#endif
