/* The cooperative-matrix matmul (shaders/mul_mat.coopmat.comp): its tile plan per device and
 * the dispatch. ops.c checks the shapes and bindings and calls it; see ovk_op_mul_mat_coopmat. */
#ifndef OSCAR_MUL_MAT_COOPMAT_IMPL_H
#define OSCAR_MUL_MAT_COOPMAT_IMPL_H

#include "common/mul_mat_coopmat.h"
#include "ops.h"

/* One launch shape of the kernel: the matrix shape, the warp-tile grid and the matrices per
 * warp tile, the threads and the tile a workgroup covers. */
typedef struct ovk_mmc_plan {
    uint32_t tm, tn, tk;   /* the device's fp16 x fp16 + fp32 shape */
    uint32_t sg_m, sg_n;   /* warp tiles along rows and tokens */
    uint32_t cm, cn;       /* matrices per warp tile along rows and tokens */
    uint32_t workgroup;    /* threads: sg_m * sg_n subgroups of the largest size */
    uint32_t bm, bn;       /* rows and tokens a workgroup covers */
    uint32_t slices;       /* column slices (workgroups along z), each summed into its own part of
                            * ops->matmul_scratch and added up by mul_mat_slices; 1: unsplit */
    uint32_t k_slice;      /* columns of a slice, a multiple of MMC_BK */
    uint32_t f16_decode;   /* 1: Q4_0 weights decoded in packed fp16 (a batch of at most
                            * OVK_MMC_SPLIT_TOKENS tokens: shaders/mul_mat_decode.coopmat.comp, or
                            * the emulation's spec constant), 0: in fp32 then rounded; set where
                            * the product is recorded, which knows the weight type */
} ovk_mmc_plan;

/* A batch of at most this many tokens may have its columns split (a decode batch: too few tiles
 * of rows x tokens to keep the device's cores busy); longer ones keep the plan tuned for prefill. */
#define OVK_MMC_SPLIT_TOKENS 64u
/* Workgroups a split product aims at (tiles times slices); slices of at least MMC_SPLIT_STEPS
 * steps of MMC_BK columns. */
#define OVK_MMC_SPLIT_GROUPS 512u
#define OVK_MMC_SPLIT_STEPS 4u
/* Bytes of the scratch a session gives the split products (ops->matmul_scratch): slices x tokens
 * x rows fp32; a product whose slices would not fit takes fewer. Room for a decode step of 32
 * sequences' gate and up products of Llama-3-8B together (2 x 9.2 MB), so that they run as one
 * group (ovk_op_mul_mat_group_begin). */
#define OVK_MMC_SCRATCH_BYTES (32ull << 20)
/* The fewest tokens ovk_op_mul_mat gives this kernel rather than the batched lanes product when
 * ops has a scratch to split them. H200, Q4_0 14336 x 4096, us by tokens 2 / 4 / 8 / 16 / 32:
 * split here 85 / 85 / 86 / 85 / 101, lanes 35 / 40 / 71 / 136 / 264 (docs/forward-kernels.md). */
#define OVK_MMC_BATCH_MIN 16u

/* The plan for n tokens on ops' device (ops->matmul_coopmat tuning, else the defaults), unsplit:
 * 0 and *plan filled, or a MISSING_FEATURE / INVALID_ARGUMENT status saying why it cannot run
 * there (no cooperative matrices, no usable shape, too little shared memory or too many threads). */
oscar_status ovk_mmc_plan_for(const ovk_ops *ops, uint32_t n, ovk_mmc_plan *plan);

/* The column slices of plan p for a product of rows x cols by n tokens: ops->matmul_split where
 * set (1: none), else as many as bring the workgroups to OVK_MMC_SPLIT_GROUPS for a batch of at
 * most OVK_MMC_SPLIT_TOKENS; never more than ops->matmul_scratch holds, nor slices shorter than
 * OVK_MMC_SPLIT_STEPS steps. Sets p->slices and p->k_slice. */
void ovk_mmc_plan_split(const ovk_ops *ops, ovk_mmc_plan *p, uint32_t rows, uint32_t cols, uint32_t n);

/* Records the product for arguments ops.c has checked (check_mul_mat): W [rows][row bytes] of
 * `type`, bound at a multiple of 16 bytes (else OSCAR_ERROR_INVALID_ARGUMENT: the kernel reads the
 * float types' and K-quants' rows 16 bytes at a time), x [n][cols] fp32, y [n][y_stride] fp32. */
oscar_status ovk_mmc_record(const ovk_ops *ops, ovk_cmd *cmd, uint32_t type, ovk_binding w, ovk_binding x,
                            ovk_binding y, uint32_t y_stride, uint32_t rows, uint32_t cols, uint32_t n);

/* The same product by the kernel's scalar emulation (shaders/mul_mat_emu.f16.comp: its tiles,
 * offsets and stores, the matrix operations in plain code, the fp16 rounding the same) for the
 * shape tm x tn x tk, on any device with fp16 arithmetic: the tests check the kernel's indexing
 * with it where no cooperative matrices run. Arguments checked as ovk_mmc_record's. */
oscar_status ovk_mmc_record_emulated(const ovk_ops *ops, ovk_cmd *cmd, uint32_t tm, uint32_t tn, uint32_t tk,
                                     uint32_t type, ovk_binding w, ovk_binding x, ovk_binding y, uint32_t y_stride,
                                     uint32_t rows, uint32_t cols, uint32_t n);

#endif
