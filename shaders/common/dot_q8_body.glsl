// y[v][r] = sum over blocks b of  (ws[r][b] * xs[v][b]) * sum_{i in b} w[r][i] * x[v][i],
// W and x int8 blocks (common/q8_layout.h). The includer defines `int dot4(uint a, uint b)`, the
// dot product of the four signed bytes of a and b: shaders/dot_q8.comp spells it out,
// dot_q8.idot.comp uses OpSDot. One workgroup per (row, vector); its invocations take blocks in
// turn and add their terms in fp32, then a tree in shared memory adds the invocations' sums (no
// subgroup operation, so any subgroup size works). Each block's integer sum is exact (|sum| <=
// 32 * 127 * 127), so every variant computes the same terms and differs only in the order of the
// fp32 additions.
#include "common/q8_layout.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 64; // a power of two

layout(std430, binding = 0) readonly buffer W { uint w_codes[]; };   // [rows][n / 4]
layout(std430, binding = 1) readonly buffer WS { float w_scales[]; }; // [rows][n / 32]
layout(std430, binding = 2) readonly buffer X { uint x_codes[]; };   // [n_vec][n / 4]
layout(std430, binding = 3) readonly buffer XS { float x_scales[]; }; // [n_vec][n / 32]
layout(std430, binding = 4) writeonly buffer Y { float y[]; };        // [n_vec][rows] fp32

layout(push_constant) uniform Push { q8_dot_push pc; };

shared float partial[WORKGROUP];

void main()
{
    uint r = gl_WorkGroupID.x, v = gl_WorkGroupID.y, t = gl_LocalInvocationID.x;
    uint w_row = r * pc.n_blocks, x_row = v * pc.n_blocks;
    float acc = 0.0;
    for (uint b = t; b < pc.n_blocks; b += WORKGROUP) {
        uint wb = (w_row + b) * OSCAR_Q8_WORDS, xb = (x_row + b) * OSCAR_Q8_WORDS;
        int isum = 0;
        for (uint k = 0; k < OSCAR_Q8_WORDS; k++) isum += dot4(w_codes[wb + k], x_codes[xb + k]);
        acc += float(isum) * (w_scales[w_row + b] * x_scales[x_row + b]);
    }
    partial[t] = acc;
    barrier();
    for (uint s = WORKGROUP / 2; s > 0; s >>= 1) {
        if (t < s) partial[t] += partial[t + s];
        barrier();
    }
    if (t == 0) y[v * pc.rows + r] = partial[0];
}
