#version 450
// Decode attention on cooperative matrices with the query heads along N = 8 and the INT2 rows'
// A operands built in registers: attn_decode_cm8 (common/attn_decode_cm_body.glsl) whose K and V
// codes go from the loads to the products by shuffles instead of through shared memory
// (common/attn_decode_cm8_ops.glsl, APC_REGS). For devices whose 16 x 16 fp16 A matrices the
// lanes of a 32-lane subgroup hold in the order those operands are built in
// (runtime/kv/coopmat_fragments.h reads it); 16-token steps.
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
#define APC_REGS
#include "common/attn_decode_cm_body.glsl"
