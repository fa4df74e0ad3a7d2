#version 450
// Decode attention, workgroup-wide chunks, with the INT2 value sums in packed fp16 (needs
// shaderFloat16): see common/attn_chunked_body.glsl.
#extension GL_GOOGLE_include_directive : require
#define ATTN_F16 1
#include "common/attn_chunked_body.glsl"
