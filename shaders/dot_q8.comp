#version 450
// Int8 block dot products, scalar: every device (common/dot_q8_body.glsl says what it computes;
// common/dot4_scalar.glsl how the bytes are multiplied).
#extension GL_GOOGLE_include_directive : require

#include "common/dot4_scalar.glsl"
#include "common/dot_q8_body.glsl"
