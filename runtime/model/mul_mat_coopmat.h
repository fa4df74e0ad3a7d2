/* The cooperative-matrix matmul (shaders/mul_mat.coopmat.comp): its tile plan per device and
 * the dispatch. ops.c checks the shapes and bindings and calls it; see ovk_op_mul_mat_coopmat. */
#ifndef OSCAR_MUL_MAT_COOPMAT_IMPL_H
#define OSCAR_MUL_MAT_COOPMAT_IMPL_H

#include "ops.h"

/* One launch shape of the kernel: the matrix shape, the warp-tile grid and the matrices per
 * warp tile, the threads and the tile a workgroup covers. */
typedef struct ovk_mmc_plan {
    uint32_t tm, tn, tk;   /* the device's fp16 x fp16 + fp32 shape */
    uint32_t sg_m, sg_n;   /* warp tiles along rows and tokens */
    uint32_t cm, cn;       /* matrices per warp tile along rows and tokens */
    uint32_t workgroup;    /* threads: sg_m * sg_n subgroups of the largest size */
    uint32_t bm, bn;       /* rows and tokens a workgroup covers */
} ovk_mmc_plan;

/* The plan for n tokens on ops' device (ops->matmul_coopmat tuning, else the defaults): 0 and
 * *plan filled, or a MISSING_FEATURE / INVALID_ARGUMENT status saying why it cannot run there
 * (no cooperative matrices, no usable shape, too little shared memory or too many threads). */
oscar_status ovk_mmc_plan_for(const ovk_ops *ops, uint32_t n, ovk_mmc_plan *plan);

/* Records the product for arguments ops.c has checked (check_mul_mat): W [rows][row bytes] of
 * `type`, x [n][cols] fp32, y [n][y_stride] fp32. */
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
