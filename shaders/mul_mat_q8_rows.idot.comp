#version 450
// Product of Q4_0 weights with several tokens of int8-quantized x, a thread a row
// (common/mm_q8_rows_body.glsl), the bytes multiplied by OpSDot (VK_KHR_shader_integer_dot_product):
// the same integers as mul_mat_q8_rows.comp.
#extension GL_GOOGLE_include_directive : require

#include "common/dot4_idot.glsl"
#include "common/mm_q8_rows_body.glsl"
