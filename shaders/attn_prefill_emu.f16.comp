#version 450
// Prefill attention on cooperative matrices (attn_prefill.coopmat.comp) with its matrix
// operations in scalar code (common/attn_prefill_cm_ops.glsl): the same tiles, offsets, strides,
// softmax and rescales on any device with fp16 arithmetic, so that its indexing is tested where
// no cooperative matrices run it (lavapipe). Not a fast path: only tests record it.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define APC_EMULATE
#include "common/attn_prefill_cm_body.glsl"
