#version 450
// Product of Q4_0, Q4_1 or Q8_0 weights stored as planes (runtime/model/weight_planes.h), read
// through 16-byte texel fetches: y[t][r] = sum_c W[r][c] * x[t][c], token t = workgroup z.
//
// For devices where a texel fetch is the cheap load: lavapipe turns every storage-buffer load
// into a loop over the SIMD lanes with a bounds check per lane, and a texel fetch into a plain
// gather (~15x the read bandwidth on a 2-core x86). Each thread owns ROWS whole rows and walks
// them block by block: no shared memory, no barrier, no reduction, any subgroup size. A
// block's 32 x values (8 texels) are fetched once for the ROWS rows; its codes are one texel
// (Q4_0, Q4_1) or two (Q8_0), its scale word one of the four in a scale texel.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 8; // threads
layout(constant_id = 1) const uint TYPE = 3;      // GGML type id of W: 2 (Q4_0), 3 (Q4_1) or 8 (Q8_0)
layout(constant_id = 2) const uint ROWS = 4;      // rows per thread

layout(binding = 0) uniform usamplerBuffer wt;   // the planes: [rows][blocks] code texels, then [rows][scale words / 4] scale texels
layout(binding = 1) uniform usamplerBuffer xt;   // [n][cols / 4] texels of fp32 x bits
layout(std430, binding = 2) writeonly buffer Y { float y[]; }; // [n][y_stride] fp32, columns 0..rows-1 written

layout(push_constant) uniform Push {
    uint rows;         // rows of W
    uint cols;         // columns of W, a multiple of 32
    uint scale_texel;  // texel index of the scale plane
    uint y_stride;     // floats from y[t][0] to y[t + 1][0]
} pc;

#include "common/grid.glsl"

const uint Q4_0 = 2u, Q4_1 = 3u;
const uint CODE_TEXELS = TYPE == 8u ? 2u : 1u; // per block

// Sum of code * x over a Q4 block: word w of the code texel holds elements 4w..4w+3 in its low
// nibbles (x texel w) and 16+4w.. in its high ones (x texel w + 4).
float dot_nibbles(uvec4 c, vec4 xs[8])
{
    float s = 0.0;
    for (uint w = 0u; w < 4u; w++) {
        uint q = c[w];
        vec4 lo = vec4(uvec4(q, q >> 8, q >> 16, q >> 24) & 15u);
        vec4 hi = vec4(uvec4(q >> 4, q >> 12, q >> 20, q >> 28) & 15u);
        s += dot(lo, xs[w]) + dot(hi, xs[w + 4u]);
    }
    return s;
}

// Sum of code * x over half a Q8_0 block: word w of the texel holds int8 elements 4w..4w+3 of
// the half, against x texels base + w.
float dot_bytes(uvec4 c, vec4 xs[8], uint base)
{
    float s = 0.0;
    for (uint w = 0u; w < 4u; w++) {
        int q = int(c[w]);
        vec4 b = vec4(bitfieldExtract(q, 0, 8), bitfieldExtract(q, 8, 8), bitfieldExtract(q, 16, 8), bitfieldExtract(q, 24, 8));
        s += dot(b, xs[base + w]);
    }
    return s;
}

void main()
{
    uint row0 = grid_invocation() * ROWS;
    if (row0 >= pc.rows) return;
    uint tok = gl_WorkGroupID.z;
    uint blocks = pc.cols / 32u, scale_texels = (blocks + 3u) / 4u, x0 = tok * (pc.cols / 4u);
    int code[ROWS], scale[ROWS]; // first code texel and scale texel of each row (rows past the end repeat the last)
    float acc[ROWS];
    for (uint i = 0u; i < ROWS; i++) {
        uint r = min(row0 + i, pc.rows - 1u);
        code[i] = int(r * blocks * CODE_TEXELS);
        scale[i] = int(pc.scale_texel + r * scale_texels);
        acc[i] = 0.0;
    }
    for (uint b4 = 0u; b4 < blocks; b4 += 4u) {
        uvec4 sc[ROWS];
        for (uint i = 0u; i < ROWS; i++) sc[i] = texelFetch(wt, scale[i] + int(b4 / 4u));
        for (uint k = 0u; k < 4u; k++) {
            uint b = b4 + k;
            if (b >= blocks) break;
            vec4 xs[8];
            for (uint j = 0u; j < 8u; j++) xs[j] = uintBitsToFloat(texelFetch(xt, int(x0 + b * 8u + j)));
            float xsum = 0.0;
            if (TYPE != 8u)
                for (uint j = 0u; j < 8u; j++) xsum += (xs[j].x + xs[j].y) + (xs[j].z + xs[j].w);
            for (uint i = 0u; i < ROWS; i++) {
                vec2 dm = unpackHalf2x16(sc[i][k]);
                int t = code[i] + int(b * CODE_TEXELS);
                if (TYPE == 8u) {
                    float s = dot_bytes(texelFetch(wt, t), xs, 0u) + dot_bytes(texelFetch(wt, t + 1), xs, 4u);
                    acc[i] += dm.x * s;
                } else {
                    float s = dot_nibbles(texelFetch(wt, t), xs);
                    acc[i] += TYPE == Q4_0 ? dm.x * (s - 8.0 * xsum) : dm.x * s + dm.y * xsum;
                }
            }
        }
    }
    for (uint i = 0u; i < ROWS; i++)
        if (row0 + i < pc.rows) y[tok * pc.y_stride + row0 + i] = acc[i];
}
