#version 450
// attn_decode_cm8.coopmat.comp with its matrix operations in scalar code
// (common/attn_decode_cm8_ops.glsl), as attn_decode_cm_emu.f16 is attn_decode_cm's: tests
// check its indexing where no cooperative matrices run it. Not a fast path.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define APC_EMULATE
#define APC_HEADS8
#include "common/attn_decode_cm_body.glsl"
