#version 450
// mul_mat_vec_q8_glu.comp with the bytes multiplied by OpSDot (VK_KHR_shader_integer_dot_product).
#extension GL_GOOGLE_include_directive : require

#define MV_Q8_GLU
#include "common/dot4_idot.glsl"
#include "common/mv_q8_body.glsl"
