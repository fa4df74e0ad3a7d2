#version 450
// Int8 block dot products with VK_KHR_shader_integer_dot_product (common/dot_q8_body.glsl says
// what it computes; common/dot4_idot.glsl how): the same integers as dot_q8.comp, so the same
// result up to the order of fp32 additions.
#extension GL_GOOGLE_include_directive : require

#include "common/dot4_idot.glsl"
#include "common/dot_q8_body.glsl"
