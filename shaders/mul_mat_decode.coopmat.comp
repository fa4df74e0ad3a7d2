#version 450
// The cooperative-matrix matmul (mul_mat.coopmat.comp) for a decode step's short batch (at most
// 64 tokens): the same kernel, with Q4_0 weights decoded in packed fp16 arithmetic
// (q4_0_run_f16), the same values in fewer instructions, which such a batch's products wait on,
// and in 32-token tiles read as whole words staged in shared memory (Q4_RAW). A build of its own
// so that the prefill kernel keeps its code (see STORE_STEP in common/mul_mat_coopmat_body.glsl).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define MMC_F16_DECODE
#include "common/mul_mat_coopmat_body.glsl"
