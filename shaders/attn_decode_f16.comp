#version 450
// Flash-decoding over the paged KV cache with the INT2 dot products and value sums in packed
// fp16 (needs shaderFloat16): see common/attn_decode_body.glsl.
#extension GL_GOOGLE_include_directive : require
#define ATTN_F16 1
#include "common/attn_decode_body.glsl"
