#version 450
// Decode product of Q4_0/Q4_1/Q8_0 weights with int8-quantized x (common/mv_q8_body.glsl), the
// bytes multiplied by scalar code: every device with subgroup arithmetic.
#extension GL_GOOGLE_include_directive : require

#include "common/dot4_scalar.glsl"
#include "common/mv_q8_body.glsl"
