#version 450
// Product of Q4_0 weights with several tokens of int8-quantized x, a thread a row
// (common/mm_q8_rows_body.glsl), the bytes multiplied by scalar code: every device.
#extension GL_GOOGLE_include_directive : require

#include "common/dot4_scalar.glsl"
#include "common/mm_q8_rows_body.glsl"
