/* The short-batch cooperative-matrix product (shaders/mul_mat_short.coopmat.comp): its plan per
 * device and shape, x's fp16 layout, and the dispatch. ops.c checks the arguments and calls it;
 * see ovk_op_mul_mat_short. */
#ifndef OSCAR_MUL_MAT_SHORT_IMPL_H
#define OSCAR_MUL_MAT_SHORT_IMPL_H

#include "common/mul_mat_short.h"
#include "ops.h"

/* The most tokens the kernel takes (a subgroup holds all of them: MMS_TOKEN_PAD divides it). */
#define OVK_MMS_TOKENS_MAX 64u
/* The fewest rows of a forward step whose products take the kernel (model_gpu.c); fewer take
 * the int8 or single-row products. */
#define OVK_MMS_BATCH_MIN 2u
/* Subgroups a product aims at (row tiles x column parts x slices): enough bytes of W in flight
 * on a large GPU (an H200 runs 132 SMs); no slice shorter than OVK_MMS_MIN_STEPS steps a part. */
#define OVK_MMS_SUBGROUPS 2048u
#define OVK_MMS_MIN_STEPS 8u

/* One launch shape: the matrix shape, a subgroup's matrices, the workgroup's subgroups, the
 * column slices. */
typedef struct ovk_mms_plan {
    uint32_t tm, tn, tk; /* the device's fp16 x fp16 + fp32 shape */
    uint32_t cm, cn;     /* matrices a subgroup owns along rows and tokens */
    uint32_t sg_r, sg_k; /* subgroups of a workgroup along rows and along columns */
    uint32_t runs;       /* runs of 8 weights a lane reads a step, for the smallest subgroup */
    uint32_t workgroup;  /* threads: sg_r * sg_k subgroups of the largest size */
    uint32_t bm, rn;     /* rows and tokens a workgroup covers */
    uint32_t slices;     /* column slices (workgroups along z) summed by mul_mat_slices; 1: unsplit */
    uint32_t k_slice;    /* columns of a slice, a multiple of MMS_BK */
} ovk_mms_plan;

/* x16, the kernel's input: x [n][cols] as fp16 [ovk_x16_tokens(n)][4 * ovk_x16_stride(cols)],
 * zeros past x (x_f16_rows.f16.comp writes it). The stride is in fp16 x4. */
static inline uint32_t ovk_x16_stride(uint32_t cols) { return (cols + MMS_BK - 1) / MMS_BK * MMS_BK / 4; }
static inline uint32_t ovk_x16_tokens(uint32_t n) { return (n + MMS_TOKEN_PAD - 1) / MMS_TOKEN_PAD * MMS_TOKEN_PAD; }
static inline uint64_t ovk_x16_bytes(uint32_t n, uint32_t cols) { return (uint64_t)ovk_x16_tokens(n) * ovk_x16_stride(cols) * 8; }

/* The plan of a rows x cols product by n tokens (1..OVK_MMS_TOKENS_MAX) on ops' device at the
 * shape tm x tn x tk, for subgroups of min_sg..max_sg threads: ops->matmul_short's tuning where
 * set, else 2 x 4 subgroups of 2 row matrices (fewer column parts, then row groups, where the
 * device's workgroup or shared memory is smaller); slices as ops->matmul_split forces, else as bring
 * the subgroups to OVK_MMS_SUBGROUPS, within ops->matmul_scratch. OK, or INVALID_ARGUMENT /
 * MISSING_FEATURE saying why it cannot run. */
oscar_status ovk_mms_plan_for(const ovk_ops *ops, uint32_t tm, uint32_t tn, uint32_t tk, uint32_t min_sg, uint32_t max_sg,
                              uint32_t rows, uint32_t cols, uint32_t n, ovk_mms_plan *plan);

/* Whether the kernel runs on ops' device (fp16 cooperative matrices of a shape whose N divides
 * MMS_TOKEN_PAD); 0 records no error. */
int ovk_mms_supported(const ovk_ops *ops);

/* Records the product for checked arguments: W [rows][row bytes] of `type`, xh as x16, y
 * [n][y_stride] fp32. */
oscar_status ovk_mms_record(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w, ovk_binding xh,
                            ovk_binding y, uint32_t y_stride, uint32_t rows, uint32_t cols, uint32_t n);

/* The same product by the kernel's scalar emulation (shaders/mul_mat_short_emu.f16.comp) at the
 * shape tm x tn x tk, on any device with fp16 arithmetic and 16-bit storage: the tests check the
 * kernel's indexing with it where no cooperative matrices run. */
oscar_status ovk_mms_record_emulated(const ovk_ops *ops, ovk_cmd *cmd, uint32_t tm, uint32_t tn, uint32_t tk,
                                     uint32_t type, ovk_binding w, ovk_binding xh, ovk_binding y, uint32_t y_stride,
                                     uint32_t rows, uint32_t cols, uint32_t n);

#endif
