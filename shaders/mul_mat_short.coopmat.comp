#version 450
// Dequantizing product for a short batch (batched decode, 2-64 tokens) on cooperative matrices:
// y[t][r] = sum_c W[r][c] * x[t][c], W [rows][cols] in its raw GGUF blocks, x as xh [tokens,
// padded][x_stride] fp16 (x_f16_rows.f16.comp wrote it once for all the products of one input),
// y [n][y_stride] fp32. W is rounded to fp16 after dequantization in fp32, x already is; products
// are accumulated in fp32 by the matrix units (ovk_ref_mul_mat_f16 in runtime/ref/ops_ref.c is
// the rounding-faithful reference).
//
// A short batch reads each weight once and does little with it, so what counts is how many bytes
// of W are in flight. Each subgroup owns a tile of RM = CM x TM rows by RN = CN x TN tokens over
// its own part of the columns, and walks it alone: per step of BK = 32 columns it dequantizes its
// W into its own slot of shared memory (a subgroup barrier, no workgroup barrier) and multiplies
// it by x matrices loaded straight from xh, which the subgroups of a workgroup share through the
// cache. W words and x matrices are read AHEAD steps before they are used. A workgroup holds
// SG_R row groups x SG_K column parts; the parts are summed through shared memory at the end,
// and workgroup z sums only its slice of the columns into its own part of y (mul_mat_slices
// adds the slices up).
//
// No subgroup size is assumed: the host sizes the workgroup as SG_R x SG_K times the largest
// subgroup size the device may use; with smaller subgroups the extra ones only join the final
// barriers, and a lane reads RUNS runs of W a step, enough for the smallest size.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#include "common/mul_mat_short_body.glsl"
