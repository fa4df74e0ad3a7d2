#version 450
// Decode product of Q4_0/Q4_1/Q8_0 weights with int8-quantized x (common/mv_q8_body.glsl), the
// bytes multiplied by OpSDot (VK_KHR_shader_integer_dot_product): the same integers as
// mul_mat_vec_q8.comp, so the same result up to the order of fp32 additions.
#extension GL_GOOGLE_include_directive : require

#include "common/dot4_idot.glsl"
#include "common/mv_q8_body.glsl"
