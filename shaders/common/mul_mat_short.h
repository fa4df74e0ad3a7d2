/* The short-batch cooperative-matrix product's specialization-constant ids and layout constants,
 * shared by C (runtime/model/mul_mat_short.c) and GLSL (shaders/mul_mat_short.coopmat.comp). */
#ifndef OSCAR_MUL_MAT_SHORT_H
#define OSCAR_MUL_MAT_SHORT_H

#define MMS_SPEC_WORKGROUP 0 /* threads: SG_R * SG_K subgroups of the largest size */
#define MMS_SPEC_TYPE 1      /* GGML type id of W */
#define MMS_SPEC_TM 2        /* the coopmat shape M x N x K (fp16 x fp16 + fp32 -> fp32, subgroup) */
#define MMS_SPEC_TN 3
#define MMS_SPEC_TK 4
#define MMS_SPEC_CM 5        /* matrices along rows a subgroup owns */
#define MMS_SPEC_CN 6        /* along tokens */
#define MMS_SPEC_SG_R 7      /* subgroups of a workgroup along rows (each CM * TM rows) */
#define MMS_SPEC_SG_K 8      /* along columns: each walks its part of the workgroup's columns */
#define MMS_SPEC_RUNS 9      /* runs of 8 weights a lane reads per step, for the smallest subgroup */
#define MMS_SPEC_COUNT 10

#define MMS_BK 32u          /* columns per step */
#define MMS_TOKEN_PAD 16u   /* x16's token rows are padded to a multiple of this (tn divides it) */
#define MMS_EMU_ELEMS 64u   /* the emulation: accumulator elements a lane holds at most */

#endif
