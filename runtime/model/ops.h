/* Recording the forward-pass kernels other than attention into a command stream: each
 * ovk_op_* checks its shapes and bindings, picks the pipeline (shader + specialization
 * constants) and the dispatch grid, and records one dispatch. Nothing runs until the stream
 * is submitted; the caller puts ovk_cmd_barrier() between dependent ops.
 *
 * Every tensor is fp32 and row-major unless named otherwise; weights stay in their raw GGUF
 * block layout. A binding may point into a larger buffer (offset + range; range 0 means to
 * the end); the op checks it holds the bytes the shape needs. Weight bindings are read in
 * whole 32-bit words, so they must hold their bytes rounded up to a multiple of 4 (GGUF data
 * is 32-byte aligned, so a tensor inside an uploaded data blob always does). Outputs may alias inputs where
 * the op says so. */
#ifndef OSCAR_OPS_H
#define OSCAR_OPS_H

#include "common/q8_layout.h"
#include "rope.h"
#include "vk_context.h"

/* Weight types the matmul, mat-vec and get_rows kernels read (shaders/common/dequant.glsl). */
int ovk_op_type_supported(uint32_t type);

/* Elements per kernel block of a weight type: the ggml block size, or 8 for F32/F16/BF16
 * (which the kernels read 8 at a time). cols must be a multiple of it; 0 for an unsupported type. */
uint32_t ovk_op_type_block(uint32_t type);

typedef struct ovk_ops {
    oscar_context *ctx;
    uint32_t workgroup;    /* threads per workgroup: 32, 64, 128 or 256 */
    uint32_t matvec_rows;  /* rows per mat-vec workgroup, 1..workgroup; 0: chosen per weight type */
    /* mat-vec tuning (0 everywhere: chosen per weight type; oscar-bench ops sweeps them) */
    uint32_t matvec_shader;    /* OSCAR_MATVEC_* */
    uint32_t matvec_workgroup; /* threads per mat-vec workgroup, as workgroup; 0: workgroup */
    uint32_t matvec_unroll;    /* units (lanes: words) per thread per pass, 1..8; 0: per type */
    uint32_t matvec_split;     /* subgroups of the int8 mat-vec that share a row, 1..8 dividing its subgroups; 0: per
                                * shape (4 for a one-token long row, else 1: ovk_op_mul_mat_q8_bias) */
    uint32_t matvec_tokens;    /* tokens per workgroup of ovk_op_mul_mat_batch (0: 4) and of
                                * ovk_op_mul_mat_q8 (0: OVK_Q8_TOKENS), per thread of the planes
                                * product (0: by n, ovk_op_mul_mat_vec_planes) */
    uint32_t matmul_workgroup; /* threads of the tiled matmul (tiles of 64 rows x threads/4 tokens), a
                                * power of two in 32..256; 0: 256 where the device allows, else 128 */
    uint32_t matmul_coopmat[4]; /* the cooperative-matrix matmul's warp tiles along rows and tokens, then
                                 * matrices per warp tile along rows and tokens; 0: the default plan's
                                 * (mul_mat_coopmat.c: 4, 4, 2 and 4, fewer along tokens for a short
                                 * batch) */
    uint32_t matmul_split;      /* column slices of a cooperative-matrix product (tuning; 0: chosen per
                                 * shape for short batches, 1: never split; OSCAR_MATMUL_SPLIT) */
    ovk_binding matmul_scratch; /* fp32 partial sums of split products [slices][n][rows]; no buffer: no
                                 * product is split (OVK_MMC_SCRATCH_BYTES is what a session gives).
                                 * Split products share it: each records a barrier before it, but
                                 * in a group (below) */
    struct ovk_mm_group *mm_group; /* NULL, or the open group of products of one input
                                    * (ovk_op_mul_mat_group_begin) */
} ovk_ops;

/* Which decode mat-vec shader ovk_op_mul_mat_vec records. */
enum {
    OSCAR_MATVEC_AUTO = 0,  /* per weight type: RUN8 for F32/F16/BF16 and Q8_0, LANES for Q4_0 and Q4_1,
                             * UNITS for the K-quants */
    OSCAR_MATVEC_UNITS = 1, /* shaders/mul_mat_vec.comp: 16-byte units per thread, x from memory */
    OSCAR_MATVEC_RUN8 = 2,  /* shaders/mul_mat_vec_run8.comp: 8 elements per thread, dequant8 */
    OSCAR_MATVEC_LANES = 3, /* shaders/mul_mat_vec_lanes.comp: a word of a unit per thread (block types only) */
};

/* Fills ops with the defaults for ctx (128 threads, mat-vec variant and rows by weight type). */
void ovk_ops_init(ovk_ops *ops, oscar_context *ctx);

/* Batches of at most this many tokens may go through the batched lanes product (block types;
 * K-quants up to 16). */
#define OSCAR_MATVEC_BATCH_MAX 32u

/* y[t][r] = sum_c W[r][c] * x[t][c]: W [rows][cols] of `type` (GGUF order, cols contiguous),
 * x [n][cols] fp32, y [n][rows] fp32. n = 1 records the mat-vec kernel (decode); a few tokens
 * of a block type (1 < n <= 16, or <= OSCAR_MATVEC_BATCH_MAX for Q4_0/Q4_1/Q8_0) the batched
 * lanes product (batched decode), unless cooperative matrices run and ops has a matmul_scratch,
 * where from OVK_MMC_BATCH_MIN tokens on they take the split cooperative-matrix product; else
 * the cooperative-matrix matmul where the device has it, the tiled matmul elsewhere or with
 * OSCAR_MATMUL_COOPMAT=0 (prefill). */
oscar_status ovk_op_mul_mat(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w,
                              ovk_binding x, ovk_binding y, uint32_t rows, uint32_t cols, uint32_t n);

/* The same product by the mat-vec kernel for any n (W is read once per token). */
oscar_status ovk_op_mul_mat_vec(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w,
                                  ovk_binding x, ovk_binding y, uint32_t rows, uint32_t cols, uint32_t n);

/* The same product by the lanes mat-vec shader with several tokens per workgroup
 * (ops->matvec_tokens, default 4): each weight word is decoded once per workgroup and applied
 * to its tokens, so W is read n / tokens times. Block types only (else OSCAR_ERROR_UNSUPPORTED). */
oscar_status ovk_op_mul_mat_batch(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w,
                                    ovk_binding x, ovk_binding y, uint32_t rows, uint32_t cols, uint32_t n);

/* The same product by the tiled matmul kernel (fp32 FMAs, shaders/mul_mat.comp) for any n. */
oscar_status ovk_op_mul_mat_tiled(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w,
                                    ovk_binding x, ovk_binding y, uint32_t rows, uint32_t cols, uint32_t n);

/* Whether the device runs the cooperative-matrix matmul (VK_KHR_cooperative_matrix with an fp16 x
 * fp16 + fp32 subgroup shape whose K divides 32, the variant built, not OSCAR_DISABLE_COOPMAT). */
int ovk_op_mul_mat_coopmat_supported(const ovk_ops *ops);

/* The same product by the cooperative-matrix matmul (shaders/mul_mat.coopmat.comp) for any n:
 * dequantized W and x rounded to fp16, sums in fp32 (ovk_ref_mul_mat_f16 is its faithful
 * reference; NSE ~1e-7 against the fp32 product). MISSING_FEATURE where not supported.
 * ovk_op_mul_mat takes it in place of the tiled kernel where supported. */
oscar_status ovk_op_mul_mat_coopmat(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w,
                                      ovk_binding x, ovk_binding y, uint32_t rows, uint32_t cols, uint32_t n);

/* ovk_op_mul_mat (the same kernel choice) with token t's rows written at y[t * y_stride + r],
 * y [n][y_stride] fp32, y_stride >= rows (only columns 0..rows-1 are written): W is a row range
 * of a larger matrix and y the matching columns of that matrix's output, the binding starting at
 * the range's first column. A matrix over the storage-binding limit runs as such parts
 * (model_gpu.c), each result bit for bit the unsplit product's, since a row's sum does not
 * depend on the rows around it. */
oscar_status ovk_op_mul_mat_strided(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w,
                                      ovk_binding x, ovk_binding y, uint32_t y_stride, uint32_t rows, uint32_t cols,
                                      uint32_t n);

/* Whether ovk_op_mul_mat gives n tokens the split cooperative-matrix product (a short batch of
 * at least OVK_MMC_BATCH_MIN tokens, ops with a scratch, cooperative matrices on). */
int ovk_op_mul_mat_splits(const ovk_ops *ops, uint32_t n);

/* Products of one input recorded as a group (the forward pass's q, k and v, or gate and up):
 * between begin and end, each split cooperative-matrix product takes its own part of
 * ops->matmul_scratch and records no barrier, and the sums of their slices wait for end, which
 * records one barrier and all of them. Where the scratch has no room left for a product, the
 * sums so far are recorded first (a barrier, the sums, a barrier) and the scratch starts over.
 * Products that do not split are recorded as always. The caller records a barrier before
 * begin's first product (its input was just written) and after end (before reading y). */
#define OVK_MM_GROUP_MAX 8u
typedef struct ovk_mm_group {
    uint64_t used;  /* bytes of the scratch taken by the pending products */
    uint32_t count; /* pending products */
    struct ovk_mm_pending {
        ovk_binding part;   /* their slices in the scratch: [slices][n][rows] fp32 */
        ovk_binding y;      /* [n][y_stride] fp32, columns 0..rows-1 written by the sum */
        uint32_t rows, n, y_stride, slices;
    } p[OVK_MM_GROUP_MAX];
} ovk_mm_group;
void ovk_op_mul_mat_group_begin(ovk_ops *ops, ovk_mm_group *g);
oscar_status ovk_op_mul_mat_group_end(ovk_ops *ops, ovk_cmd *cmd);

/* The packed-fp16 decode mat-vec (shaders/mul_mat_vec_f16.comp): Q4_0 and Q8_0 weights on
 * devices with shaderFloat16, x prepared once by ovk_op_x_f16_blocks and shared by every
 * mat-vec that reads the same x. Error ~1e-7 normalised squared (fp16 products; see the
 * shader), where the fp32 kernels are exact to fp32 summation order. On the H200 it takes a
 * Q4_0 14336 x 4096 product from 27 to ~17 us (docs/performance.md). */
int ovk_op_mul_mat_vec_f16_supported(const ovk_ops *ops, uint32_t type);

/* Bytes of the prepared x of n rows of cols (a multiple of 32) elements: per 32-element block
 * 16 fp16 pairs, then per block an fp32 scale. */
#define OSCAR_X_F16_BYTES(n, cols) ((uint64_t)(n) * (cols) * 2 + (uint64_t)(n) * (cols) / 8)

/* xq [OSCAR_X_F16_BYTES(n, cols)] <- x [n][cols] fp32 (cols a multiple of 32). Needs no
 * shaderFloat16 (packHalf2x16 is core); only its consumer does. */
oscar_status ovk_op_x_f16_blocks(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding x, ovk_binding xq,
                                   uint32_t cols, uint32_t n);

/* y [n][rows] = W [rows][cols] x for the x prepared in xq; type Q4_0 or Q8_0 (see
 * ovk_op_mul_mat_vec_f16_supported), the other settings as ovk_op_mul_mat_vec's UNITS. */
oscar_status ovk_op_mul_mat_vec_f16(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w,
                                      ovk_binding xq, ovk_binding y, uint32_t rows, uint32_t cols, uint32_t n);

/* The texel-fetch product (shaders/mul_mat_vec_planes.comp): Q4_0, Q4_1, Q8_0, Q4_K and Q6_K weights as
 * planes (weight_planes.h) times fp32 x, for devices whose storage-buffer loads are slow and
 * texel fetches fast (lavapipe; the model keeps planes on CPU devices). y [n][y_stride] = W x for
 * x [n][cols]; a thread computes a few rows of a few tokens, each weight fetched and decoded once
 * for its tokens, one workgroup row per group of tokens; planes and x bound as texel buffers
 * (offsets aligned to minTexelBufferOffsetAlignment). Exact to fp32 summation order, as the
 * other fp32 products. ops->matvec_workgroup (threads, 1..256, default 8), matvec_rows (rows per
 * thread, 1..16; default 4 for one token, 12 for more) and matvec_tokens (tokens per thread,
 * 1..8; default 1 for one token, else 8 or n if fewer) tune it. */
int ovk_op_mul_mat_vec_planes_supported(const ovk_ops *ops, uint32_t type);
oscar_status ovk_op_mul_mat_vec_planes(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding planes,
                                       ovk_binding x, ovk_binding y, uint32_t y_stride, uint32_t rows, uint32_t cols,
                                       uint32_t n);
/* SwiGLU's two products in one dispatch of the same kernel: y [n][y_stride] = silu(G x) * (U x)
 * for planes of gate and up weights G and U of one type and shape (rows x cols), bit for bit
 * ovk_op_mul_mat_vec_planes of each then ovk_op_swiglu. A thread takes matvec_rows / 2 rows of
 * each weight (matvec_rows even; by default 6 and 6 for more than one token, 2 and 2 for one),
 * so the work a thread holds is the plain product's. */
oscar_status ovk_op_mul_mat_vec_planes_glu(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding gate,
                                           ovk_binding up, ovk_binding x, ovk_binding y, uint32_t y_stride, uint32_t rows,
                                           uint32_t cols, uint32_t n);

/* The int8 decode mat-vec (shaders/mul_mat_vec_q8[.idot].comp): Q4_0, Q4_1, Q8_0, Q4_K, Q5_K and
 * Q6_K weights times x quantized to int8 blocks of 32 (common/q8_layout.h), exact integer block sums scaled in
 * fp32, one subgroup per few rows and its sums added by subgroupAdd. Needs subgroup arithmetic;
 * the integer dot products are OpSDot where the device runs them fast, scalar code elsewhere.
 * Error against the unrounded x ~3e-5 normalised squared (the int8 rounding of x; docs/accuracy.md). */
int ovk_op_mul_mat_vec_q8_supported(const ovk_ops *ops, uint32_t type);

/* Prepared x of cols elements: OSCAR_X_Q8_BYTES (common/q8_layout.h). */

/* xq [OSCAR_X_Q8_BYTES(cols)] <- one row x [cols] fp32 (finite), by quantize_q8.comp. */
oscar_status ovk_op_x_q8(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding x, ovk_binding xq, uint32_t cols);

/* y [n][y_stride] = W [rows][cols] x for the n rows of x prepared in xq
 * [OSCAR_X_Q8_BYTES(n * cols)] as one vector (ovk_op_x_q8 over n * cols elements); one token is
 * the decode mat-vec. `variant` NULL picks mul_mat_vec_q8.idot where integer dot products are
 * fast, else mul_mat_vec_q8; a name forces one (MISSING_FEATURE where the context cannot run it).
 * ops->matvec_rows (rows a subgroup sums at once; default 1, 2 for Q4_K and Q5_K; over two or more
 * groups of tokens 2 for 8192 rows or more, else 4), matvec_unroll
 * (blocks, K-quant chunks or Q6_K x blocks per lane per pass; default 2, 1 for Q4_K and Q5_K) and
 * matvec_workgroup tune it. A workgroup takes ops->matvec_tokens tokens (default OVK_Q8_TOKENS):
 * it reads each weight once for them. Token t's result is the single-token product of its x at
 * the same rows, tasks and subgroups a row, bit for bit where the device's subgroup sums are (the
 * defaults differ with the token count: a one-token long row in four parts sums in another
 * order). */
#define OVK_Q8_TOKENS 8u
/* The most rows of a decode step the forward pass gives the int8 product (model_gpu.c) where no
 * split cooperative-matrix product takes longer steps (else OVK_Q8_BATCH_MAX_SPLIT); longer steps
 * take ovk_op_mul_mat, whose split product is faster at 24 and 32 tokens. H200, Q4_0, us at 16 /
 * 32 tokens with the int8 product's default rows a subgroup: 14336 x 4096 int8 76.9 / 145.5, split
 * cooperative-matrix 82.0 / 97.4; 4096 x 14336 64.9 / 128.8 against 78.4 / 85.6; Llama-3-8B batch
 * 16 decoded at 1,023 tok/s with int8 products, 981 with split products recorded one by one, batch
 * 24 at 1,029 against 1,200 (docs/forward-kernels.md). */
#define OVK_Q8_BATCH_MAX 16u
/* The same where the split cooperative-matrix product takes that many tokens
 * (ovk_op_mul_mat_splits): with a step's products of one input as a group, it
 * decodes Llama-3-8B's batch 16 at 1,075-1,079 tok/s against 1,049-1,055 with int8 products
 * (H200, two rounds; docs/performance.md, "Batched decode"). */
#define OVK_Q8_BATCH_MAX_SPLIT 15u
oscar_status ovk_op_mul_mat_q8(const ovk_ops *ops, ovk_cmd *cmd, const char *variant, uint32_t type, ovk_binding w,
                                 ovk_binding xq, ovk_binding y, uint32_t y_stride, uint32_t rows, uint32_t cols, uint32_t n);
/* The same with a bias b [rows] fp32 (NULL: none) added to each token's row as it is written:
 * y[t][r] = (W x_t)[r] + b[r], bit for bit the product followed by ovk_op_add, one dispatch and
 * barrier fewer. */
oscar_status ovk_op_mul_mat_q8_bias(const ovk_ops *ops, ovk_cmd *cmd, const char *variant, uint32_t type, ovk_binding w,
                                      ovk_binding xq, const ovk_binding *bias, ovk_binding y, uint32_t y_stride, uint32_t rows,
                                      uint32_t cols, uint32_t n);

/* Embedding lookup: out[t][c] = W[ids[t]][c] as fp32. W [vocab][cols] of `type`, ids [n] uint32
 * (each < vocab: not checked on the GPU), out [n][cols]. */
oscar_status ovk_op_get_rows(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w,
                               ovk_binding ids, ovk_binding out, uint32_t cols, uint32_t n);

/* The lookup from one part of a table split by rows: W [rows][cols] holds the table's rows
 * row0 .. row0 + rows - 1; out[t] is written for the tokens whose id falls in that range and
 * left as it is for the others, so one dispatch per part, unordered among each other, fills
 * every row. */
oscar_status ovk_op_get_rows_part(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w,
                                    ovk_binding ids, ovk_binding out, uint32_t cols, uint32_t n, uint32_t row0,
                                    uint32_t rows);

/* RMS norm of n_rows rows of dim: y = (x * rsqrt(mean(x^2) + eps)) * w. x, y [n_rows][dim]
 * (y may alias x), w [dim]. For qwen3's q/k norm pass rows of head_dim. */
oscar_status ovk_op_rms_norm(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding x, ovk_binding w,
                               ovk_binding y, uint32_t dim, uint32_t n_rows, float eps);

/* The residual add and the next norm in one dispatch: x += res, then y = rms_norm(x) * w as
 * ovk_op_rms_norm (x equal bit for bit to ovk_op_add's sum). x, res, y [n_rows][dim]; y must
 * not overlap x. */
oscar_status ovk_op_add_rms_norm(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding x, ovk_binding res,
                                   ovk_binding w, ovk_binding y, uint32_t dim, uint32_t n_rows, float eps);

/* One row of ovk_op_rms_norm (res NULL) or ovk_op_add_rms_norm (res), y the same, and y also
 * prepared for the int8 mat-vec: xq [OSCAR_X_Q8_BYTES(dim)] as ovk_op_x_q8 would write it from
 * y (dim a multiple of 32). Saves the decode step a dispatch and a barrier per product group. */
oscar_status ovk_op_rms_norm_x_q8(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding x, const ovk_binding *res,
                                    ovk_binding w, ovk_binding y, ovk_binding xq, uint32_t dim, float eps);

/* Host side: the rope frequency table inv_freq[i] = freq_scale * freq_base^(-2i/n_rot) / f_i
 * for i < n_rot/2 (f_i = factors[i], or 1 when factors is NULL), computed in double. Upload it
 * once per model; theta_i = pos * inv_freq[i]. Linear scaling: freq_scale = 1 / factor. The
 * model description's rope_theta (model_desc.h) is the same table. */
oscar_status ovk_rope_inv_freq(float *inv_freq, uint32_t n_rot, double freq_base, double freq_scale,
                                 const float *factors);

/* Rotary embedding, pairs by `mode` (OSCAR_ROPE_NORMAL: (2i, 2i+1), llama; OSCAR_ROPE_NEOX:
 * (i, i + n_rot/2), qwen). x, y [n_tok][n_heads][head_dim] (y may alias x), pos [n_tok] int32,
 * inv_freq [n_rot/2] from ovk_rope_inv_freq. head_dim and n_rot even, n_rot <= head_dim. */
oscar_status ovk_op_rope(const ovk_ops *ops, ovk_cmd *cmd, ovk_rope_type mode, ovk_binding x,
                           ovk_binding pos, ovk_binding inv_freq, ovk_binding y, uint32_t head_dim,
                           uint32_t n_heads, uint32_t n_tok, uint32_t n_rot);

/* The bandwidth probe (shaders/read_bandwidth.comp): reads the first `bytes` (a multiple of 16)
 * of src in 16-byte loads and writes sink [1] only in a case that does not happen in practice,
 * so nothing observable is computed. oscar_measure_read_bandwidth times it over a large buffer;
 * oscar-bench ops chains it over each product's weight bytes, the read-only bound of that
 * product at its size, and oscar-bench floor over a decode step's. The grid gives each thread
 * about `per_thread` 16-byte loads (0: READ_STREAM_PER_THREAD; fewer spread a small read over
 * more of the GPU), at most 65535 workgroups, beyond which the reads go grid-stride. */
#define READ_STREAM_WORKGROUP 256u
#define READ_STREAM_PER_THREAD 16u
oscar_status ovk_op_read_stream(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding src, uint64_t bytes,
                                  uint32_t per_thread, ovk_binding sink);

/* y = silu(gate) * up, elementwise over n. y may alias gate or up. */
oscar_status ovk_op_swiglu(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding gate, ovk_binding up,
                             ovk_binding y, uint32_t n);

/* ovk_op_swiglu of one row, y the same, and y also prepared for the int8 mat-vec: xq
 * [OSCAR_X_Q8_BYTES(n)] as ovk_op_x_q8 would write it from y (n a multiple of 32). */
oscar_status ovk_op_swiglu_x_q8(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding gate, ovk_binding up, ovk_binding y,
                                  ovk_binding xq, uint32_t n);

/* y[i] = a[i] + b[i % nb]: residual (nb = n) or a bias broadcast over rows (nb = row length).
 * a, y [n] (y may alias a), b [nb]. */
oscar_status ovk_op_add(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding a, ovk_binding b,
                          ovk_binding y, uint32_t n, uint32_t nb);

/* y = x * s over n elements; y may alias x. */
oscar_status ovk_op_scale(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding x, ovk_binding y,
                            uint32_t n, float s);

/* out[r] = argmax of logits[r][0..n) (uint32, ties to the lowest index, NaNs never chosen, 0
 * for a row of NaNs). logits [n_rows][n], out [n_rows]. */
oscar_status ovk_op_argmax(const ovk_ops *ops, ovk_cmd *cmd, ovk_binding logits, ovk_binding out,
                             uint32_t n, uint32_t n_rows);

#endif
