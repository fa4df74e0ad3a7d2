#version 450
// RMS norm per row: y[r][i] = (x[r][i] * s) * w[i], s = 1 / sqrt(mean_i(x[r][i]^2) + eps).
// With RESIDUAL, a residual add comes first: x[r][i] += res[r][i] (written back to x, equal
// bit for bit to the add kernel's sum), then the norm of the sum (y must not alias x then).
// Rows of `dim` elements share the weight w: the hidden-state norm (rows = tokens, dim =
// n_embd) and qwen3's per-head q/k norm (rows = tokens * heads, dim = head_dim) alike.
// One workgroup per row; sum of squares in fp32, reduced in shared memory in two levels. y may
// alias x.
// With Q8_OUT, y is also quantized into int8 blocks for the integer dot products, as
// quantize_q8.comp would from y (dim a multiple of 32, WORKGROUP a multiple of 8; rows are
// consecutive blocks): the second pass then goes a word of 4 elements per thread, each thread
// reading only the elements it writes (x with RESIDUAL among them).
// Each thread reads UNROLL elements before using them: a loop of one load at a time waits a
// full memory latency per element (a 4096-wide decode row took ~20 us on the H200).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common/q8_layout.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128; // a power of two
layout(constant_id = 1) const uint RESIDUAL = 0;    // 1: x += res first
layout(constant_id = 2) const uint Q8_OUT = 0;      // 1: y also into q8_codes and q8_scales

layout(std430, binding = 0) buffer X { float x[]; };           // [n_rows][dim] fp32 (updated with RESIDUAL)
layout(std430, binding = 1) readonly buffer Wt { float w[]; }; // [dim] fp32
layout(std430, binding = 2) writeonly buffer Y { float y[]; }; // [n_rows][dim] fp32
layout(std430, binding = 3) readonly buffer R { float res[]; }; // [n_rows][dim] fp32 (RESIDUAL; else unread)
layout(std430, binding = 4) writeonly buffer Q { uint q8_codes[]; };  // [n_rows * dim / 4] (Q8_OUT; else unwritten)
layout(std430, binding = 5) writeonly buffer S { float q8_scales[]; }; // [n_rows * dim / 32] (Q8_OUT; else unwritten)

layout(push_constant) uniform Push {
    uint dim;     // elements per row
    uint n_rows;  // rows (= workgroups, x-major over x and y)
    float eps;
} pc;

#include "common/grid.glsl"

const uint UNROLL = 8;

const uint PARTS = WORKGROUP < 32u ? WORKGROUP : 32u; // first-level sums
shared float red[WORKGROUP];
shared float part[PARTS];
#define q8_amax red
#define Q8_WORDS_BY_THREADS
#include "common/q8_quantize.glsl"

void main()
{
    uint row = grid_group(), tid = gl_LocalInvocationID.x;
    if (row >= pc.n_rows) return;
    uint base = row * pc.dim;
    float s = 0.0;
    for (uint i0 = tid; i0 < pc.dim; i0 += UNROLL * WORKGROUP) {
        float v[UNROLL];
        [[unroll]] for (uint u = 0u; u < UNROLL; u++) {
            uint i = i0 + u * WORKGROUP;
            uint j = base + min(i, pc.dim - 1u); // past the row: a valid element, not counted
            float a = RESIDUAL != 0u ? x[j] + res[j] : x[j];
            v[u] = i < pc.dim ? a : 0.0;
        }
        [[unroll]] for (uint u = 0u; u < UNROLL; u++) s += v[u] * v[u];
    }
    // two levels, two barriers (a tree over 1024 threads waits at ten): PARTS threads each sum
    // WORKGROUP / PARTS values, then every thread sums the PARTS partial sums in the same order
    red[tid] = s;
    barrier();
    if (tid < PARTS) {
        float p = 0.0;
        for (uint k = tid; k < WORKGROUP; k += PARTS) p += red[k];
        part[tid] = p;
    }
    barrier();
    float ss = 0.0;
    for (uint k = 0u; k < PARTS; k++) ss += part[k];
    float scale = 1.0 / sqrt(ss / float(pc.dim) + pc.eps);
    if (Q8_OUT != 0u) {
        // a word of 4 elements per thread (q8_store_word); loads before stores, as y may alias x
        // (red is free since the second barrier: it becomes q8_amax)
        uint words = pc.dim / 4u;
        for (uint w0 = 0u; w0 < words; w0 += WORKGROUP) {
            uint wd = w0 + tid, i = 4u * wd;
            bool live = wd < words;
            vec4 a = vec4(0.0), g = vec4(0.0);
            if (live) {
                [[unroll]] for (uint u = 0u; u < 4u; u++) {
                    a[u] = RESIDUAL != 0u ? x[base + i + u] + res[base + i + u] : x[base + i + u];
                    g[u] = w[i + u];
                }
            }
            vec4 v;
            [[unroll]] for (uint u = 0u; u < 4u; u++) v[u] = (a[u] * scale) * g[u];
            if (live) {
                [[unroll]] for (uint u = 0u; u < 4u; u++) {
                    if (RESIDUAL != 0u) x[base + i + u] = a[u];
                    y[base + i + u] = v[u];
                }
            }
            q8_store_word(tid, live, row * words + wd, v);
        }
        return;
    }
    for (uint i0 = tid; i0 < pc.dim; i0 += UNROLL * WORKGROUP) {
        float v[UNROLL], g[UNROLL];
        [[unroll]] for (uint u = 0u; u < UNROLL; u++) {
            uint i = min(i0 + u * WORKGROUP, pc.dim - 1u); // past the row: a valid element, not stored
            v[u] = RESIDUAL != 0u ? x[base + i] + res[base + i] : x[base + i];
            g[u] = w[i];
        }
        [[unroll]] for (uint u = 0u; u < UNROLL; u++)
            if (i0 + u * WORKGROUP < pc.dim) {
                uint i = base + i0 + u * WORKGROUP;
                if (RESIDUAL != 0u) x[i] = v[u];
                y[i] = (v[u] * scale) * g[u];
            }
    }
}
