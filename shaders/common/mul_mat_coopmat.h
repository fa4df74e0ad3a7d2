/* The cooperative-matrix matmul's specialization-constant ids and step, shared by C
 * (runtime/model/mul_mat_coopmat.c) and GLSL (shaders/mul_mat.coopmat.comp). */
#ifndef OSCAR_MUL_MAT_COOPMAT_H
#define OSCAR_MUL_MAT_COOPMAT_H

#define MMC_SPEC_WORKGROUP 0 /* threads: SG_M * SG_N subgroups of the largest size */
#define MMC_SPEC_TYPE 1      /* GGML type id of W (the id mul_mat.comp reads too) */
#define MMC_SPEC_TM 2        /* the coopmat shape M x N x K (fp16 x fp16 + fp32 -> fp32, subgroup) */
#define MMC_SPEC_TN 3
#define MMC_SPEC_TK 4
#define MMC_SPEC_SG_M 5      /* warp tiles of a workgroup along rows (W) */
#define MMC_SPEC_SG_N 6      /* along tokens (x) */
#define MMC_SPEC_CM 7        /* matrices of a warp tile along rows */
#define MMC_SPEC_CN 8        /* along tokens */
#define MMC_SPEC_F16_DECODE 9 /* the emulation: 1 decodes Q4_0 weights in packed fp16, as
                                 * mul_mat_decode.coopmat.comp does for a short batch */
#define MMC_SPEC_COUNT 10

#define MMC_BK 32u /* columns per step: one Q4_0/Q4_1/Q8_0 block, an eighth of a K-quant block */
#define MMC_Q4_RAW_TOKENS 32u /* the short batches' build stages Q4_0 words in tiles of this many tokens */
#define MMC_Q4_RAW_WORDS 5u   /* words a row's 18-byte Q4_0 block lies in: its shared copy, uint [rows][5] */
#define MMC_EMU_ELEMS 64u /* the emulation (mul_mat_emu.f16.comp): accumulator elements a lane holds at most */

#endif
