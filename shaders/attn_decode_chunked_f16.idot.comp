#version 450
// Decode attention, workgroup-wide chunks: INT2 keys scored by integer dot products
// (VK_KHR_shader_integer_dot_product) of their codes with q in two levels of int8, the INT2 value
// sums in packed fp16 (needs shaderFloat16): see common/attn_chunked_body.glsl.
#extension GL_GOOGLE_include_directive : require
#define ATTN_F16 1
#define ATTN_IDOT 1
#include "common/attn_chunked_body.glsl"
