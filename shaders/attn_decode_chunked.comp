#version 450
// Decode attention, workgroup-wide chunks, fp32 arithmetic: see common/attn_chunked_body.glsl.
#extension GL_GOOGLE_include_directive : require
#include "common/attn_chunked_body.glsl"
