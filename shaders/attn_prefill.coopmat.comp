#version 450
// Prefill attention on cooperative matrices: attn_prefill.comp's interface and output, with
// Q·Kᵀ and P·V as 16 x 16 x 16 fp16 products with fp32 sums (common/attn_prefill_cm_body.glsl
// describes the kernel and its rounding).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common/attn_prefill_cm_body.glsl"
