#version 450
// SwiGLU gate: y[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)). y may alias either.
// With Q8_OUT, a thread per word of 4 elements (n a multiple of 32, WORKGROUP a multiple of 8)
// also quantizes its y into int8 blocks for the integer dot products, as quantize_q8.comp would
// from y (common/q8_quantize.glsl, q8_store_word).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common/q8_layout.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128;
layout(constant_id = 1) const uint Q8_OUT = 0; // 1: y also into q8_codes and q8_scales

layout(std430, binding = 0) readonly buffer G { float gate[]; }; // [n] fp32
layout(std430, binding = 1) readonly buffer U { float up[]; };   // [n] fp32
layout(std430, binding = 2) writeonly buffer Y { float y[]; };   // [n] fp32
layout(std430, binding = 3) writeonly buffer Q { uint q8_codes[]; };  // [n / 4] (Q8_OUT; else unwritten)
layout(std430, binding = 4) writeonly buffer S { float q8_scales[]; }; // [n / 32] (Q8_OUT; else unwritten)

layout(push_constant) uniform Push { uint n; } pc;

#include "common/grid.glsl"

shared float q8_amax[WORKGROUP];
#define Q8_WORDS_BY_THREADS
#include "common/q8_quantize.glsl"

#include "common/silu.glsl"

void main()
{
    uint i = grid_invocation();
    if (Q8_OUT != 0u) { // i is a word; every thread reaches the barriers of q8_store_word
        bool live = i < pc.n / 4u;
        vec4 g = vec4(0.0), v = vec4(0.0);
        if (live) {
            // every load before the first store to y (which may alias gate or up)
            [[unroll]] for (uint u = 0u; u < 4u; u++) g[u] = gate[4u * i + u], v[u] = up[4u * i + u];
            [[unroll]] for (uint u = 0u; u < 4u; u++) {
                v[u] = silu(g[u]) * v[u];
                y[4u * i + u] = v[u];
            }
        }
        q8_store_word(gl_LocalInvocationID.x, live, i, v);
        return;
    }
    if (i >= pc.n) return;
    y[i] = silu(gate[i]) * up[i];
}
