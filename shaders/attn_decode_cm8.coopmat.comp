#version 450
// Decode attention on cooperative matrices with the query heads along N = 8: attn_decode_cm's
// kernel (common/attn_decode_cm_body.glsl) with each product transposed into 16 x 8 x 16 fp16
// products (common/attn_decode_cm8_ops.glsl), for devices that list that shape and caches of
// at most 8 query heads a KV head.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define APC_HEADS8
#include "common/attn_decode_cm_body.glsl"
