#version 450
// Dequantizing matrix product for a short batch (decode steps of a few to 64 tokens) on
// cooperative matrices: y[t][r] = sum_c W[r][c] * x[t][c], W [rows][cols] in its raw GGUF blocks,
// x [n][cols] given in fp16 (ovk_op_x_f16_pad: rows padded to the matrix size with zeros), y
// [n][y_stride] fp32. Rounding as mul_mat.coopmat.comp's (W dequantized in fp32 then rounded to
// fp16, products summed in fp32 by the matrix units; ovk_ref_mul_mat_f16 is the faithful
// reference).
//
// Each subgroup streams its own CM * TM rows with no workgroup barrier: per step of BK = 32
// columns its lanes dequantize the rows' step into the subgroup's own part of shared memory,
// and the subgroup multiplies it by the tokens' fp16 columns, which it loads straight from x
// (a short batch's x stays in the caches). The step's words are read two steps ahead of their
// use, into one of two register sets. Workgroup z sums only its slice of the columns into its own
// part of y; mul_mat_slices adds the parts up. The prefill kernel (mul_mat.coopmat.comp) shares
// its tiles among a workgroup's subgroups through barriers, which pays where many tokens reuse
// each tile and does not for a few.
//
// No subgroup size is assumed: lanes take the step's runs of 8 weights in turn, their arrays
// sized for the smallest subgroup the device may run (SG_MIN).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#include "common/mul_mat_stream_body.glsl"
