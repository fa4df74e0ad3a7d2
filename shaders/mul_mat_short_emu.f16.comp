#version 450
// The short-batch matmul (mul_mat_short.coopmat.comp) with its matrix operations in scalar code
// (common/mul_mat_short_ops.glsl): the same rows, blocks, stages, decoding, offsets and edge
// stores on any device with fp16 arithmetic, so that its indexing is tested
// where no cooperative matrices run it (lavapipe). Not a fast path: only ovk_mms_record_emulated
// records it.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#define MMC_EMULATE
#include "common/mul_mat_short_body.glsl"
