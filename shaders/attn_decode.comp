#version 450
// Flash-decoding over the paged KV cache, fp32 arithmetic: see common/attn_decode_body.glsl.
#extension GL_GOOGLE_include_directive : require
#include "common/attn_decode_body.glsl"
