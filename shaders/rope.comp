#version 450
// Rotary position embedding of rows of heads, in place or not (y may alias x).
// Pair i (< n_rot/2) of a head rotates by theta = pos * inv_freq[i]:
//   MODE 0 (normal, llama): elements (2i, 2i+1);  MODE 1 (neox, qwen): (i, i + n_rot/2)
//   y0 = x0 cos(theta) - x1 sin(theta),  y1 = x0 sin(theta) + x1 cos(theta)
// Elements n_rot..head_dim-1 pass through. inv_freq comes from the host (ovk_rope_inv_freq:
// base^(-2i/n_rot) * freq_scale / factor_i, in double), so any scaling scheme is a table.
// The arithmetic is common/rope.glsl's, which the KV cache's kernels share when they apply
// RoPE on load. One invocation per pair.
#extension GL_GOOGLE_include_directive : require
#include "common/rope.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128;
layout(constant_id = 1) const uint MODE = 0;        // 0 normal (adjacent pairs), 1 neox (halves)

layout(std430, binding = 0) readonly buffer X { float x[]; };        // [n_tok][n_heads][head_dim] fp32
layout(std430, binding = 1) readonly buffer Pos { int pos[]; };      // [n_tok] positions
layout(std430, binding = 2) readonly buffer Freq { float inv_freq[]; }; // [n_rot/2] radians per position
layout(std430, binding = 3) writeonly buffer Y { float y[]; };       // [n_tok][n_heads][head_dim] fp32

layout(push_constant) uniform Push {
    uint head_dim;  // even
    uint n_heads;
    uint n_tok;
    uint n_rot;     // rotated dims, even, <= head_dim
} pc;

#include "common/grid.glsl"

void main()
{
    uint half_dim = pc.head_dim >> 1;
    uint p = grid_invocation();
    if (p >= pc.n_tok * pc.n_heads * half_dim) return;
    uint i = p % half_dim, head = p / half_dim, tok = head / pc.n_heads;
    uint base = head * pc.head_dim;
    if (2u * i >= pc.n_rot) { // pass-through pair
        y[base + 2u * i] = x[base + 2u * i];
        y[base + 2u * i + 1u] = x[base + 2u * i + 1u];
        return;
    }
    uint i0 = MODE == 0u ? 2u * i : i;
    uint i1 = MODE == 0u ? 2u * i + 1u : i + (pc.n_rot >> 1);
    vec2 r = rope_pair(x[base + i0], x[base + i1], pos[tok], inv_freq[i]);
    y[base + i0] = r.x;
    y[base + i1] = r.y;
}
