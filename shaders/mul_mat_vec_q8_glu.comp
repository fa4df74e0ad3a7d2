#version 450
// The gate and up products of one token with int8-quantized x and SwiGLU after them, h and its
// int8 blocks out (common/mv_q8_body.glsl, MV_Q8_GLU), the bytes multiplied by scalar code:
// every device with subgroup arithmetic.
#extension GL_GOOGLE_include_directive : require

#define MV_Q8_GLU 1
#include "common/dot4_scalar.glsl"
#include "common/mv_q8_body.glsl"
