#version 450
// Q4_0 matrix product for a short batch (decode steps of up to 64 tokens) on cooperative
// matrices: y[t][r] = sum_c W[r][c] * x[t][c], W [rows][cols] in its GGUF blocks, x [n][cols]
// fp32, y [n][y_stride] fp32. Rounding as mul_mat.coopmat.comp's (W dequantized in fp32 then
// rounded to fp16, x rounded to fp16, products summed in fp32 by the matrix units;
// ovk_ref_mul_mat_f16 is the faithful reference).
//
// A decode step's product is a read of the weights: its few tokens give the matrix units
// little to do, and a workgroup barrier a block of weights (the prefill kernel's way of sharing
// its tiles) costs more than the block. Here each subgroup owns CM * TM rows and walks the
// columns on its own: per 32-column block its lanes decode half a row's block each (8 code
// bytes: 16 weights in packed fp16) into the subgroup's part of shared memory, read the next
// block's words, and multiply. The workgroup's subgroups share the tokens' x, a stage of KS
// blocks at a time, in fp16 in shared memory: two workgroup barriers a stage. Workgroup z sums
// only its slice of the columns into its own part of y; mul_mat_slices adds the parts up.
//
// No subgroup size is assumed: the lanes' arrays are sized for the smallest subgroup the device
// may run (SG_MIN), and subgroups past SG_M only load x.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#include "common/mul_mat_short_body.glsl"
