#version 450
// The gate or up product of SwiGLU with int8-quantized x, the last workgroup of each block of 32
// rows making h = silu(gate) * up and its int8 block (common/mv_q8_body.glsl, MV_Q8_GLU): every
// device with subgroup arithmetic.
#extension GL_GOOGLE_include_directive : require

#define MV_Q8_GLU
#include "common/dot4_scalar.glsl"
#include "common/mv_q8_body.glsl"
