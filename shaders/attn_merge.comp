#version 450
// Combines the flash-decoding partials of each row exactly: for a (row, query head) with
// items s in [item_begin, item_end) of partial (m_s, l_s, o_s):
//   M = max_s m_s,  w_s = exp(m_s - M) (0 for an empty item, m_s = -inf),
//   L = sum_s l_s w_s,  out = sum_s o_s w_s / L   (0 when the row attended nothing).
// One workgroup per (row, query head): x (+ z * num_groups.x) = row, y = head; threads over d.
// M is reduced over the items by all threads (strided) and shared memory; then every thread
// walks all items for its elements, computing w_s and L itself (the same value in every
// thread), so the item loop has no barrier. Lavapipe stops loops after 65535 iterations per
// invocation: keep a row under ~60000 items there. The output stays in the rotated basis; the
// caller applies R_V^T.
#include "common/kv_layout.h"
#include "common/attn_push.h"

layout(local_size_x_id = KV_SPEC_WORKGROUP) in;
layout(constant_id = KV_SPEC_HEAD_DIM) const uint HEAD_DIM = 128;

const uint WG = gl_WorkGroupSize.x;
const uint D = HEAD_DIM;
const uint EPT = (D + WG - 1) / WG; // elements per thread
const float NEG_INF = -1.0 / 0.0;

layout(std430, binding = 0) readonly buffer Rows { kv_attn_row rows[]; };    // [n_rows]
layout(std430, binding = 1) readonly buffer Partials { float partials[]; }; // [n_items][n_head][d + 2]
layout(std430, binding = 2) writeonly buffer Out { float out_[]; };         // [n_rows][n_head][d] fp32

layout(push_constant) uniform Push { attn_merge_push pc; };

shared float sh_m[WG];   // per-thread maxima
shared float sh_max;     // M

void main()
{
    uint row_id = gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x;
    if (row_id >= pc.n_rows) return; // uniform over the workgroup
    uint head = gl_WorkGroupID.y;
    uint t = gl_LocalInvocationID.x;
    kv_attn_row row = rows[row_id];
    uint stride = pc.n_head * (D + 2);
    uint base = head * (D + 2);

    float m_own = NEG_INF;
    for (uint s = row.item_begin + t; s < row.item_end; s += WG) m_own = max(m_own, partials[s * stride + base]);
    sh_m[t] = m_own;
    barrier();
    if (t == 0) {
        float m = NEG_INF;
        for (uint i = 0; i < WG; i++) m = max(m, sh_m[i]);
        sh_max = m;
    }
    barrier();
    float m = sh_max;

    float l = 0.0;
    float o[EPT];
    for (uint k = 0; k < EPT; k++) o[k] = 0.0;
    for (uint s = row.item_begin; s < row.item_end; s++) {
        uint p = s * stride + base;
        float ms = partials[p];
        if (ms == NEG_INF) continue; // empty item: l = 0, o = 0
        float w = exp(ms - m);
        l += partials[p + 1] * w;
        for (uint k = 0; k < EPT; k++) {
            uint e = t + k * WG;
            if (e < D) o[k] += partials[p + 2 + e] * w;
        }
    }
    float inv_l = l > 0.0 ? 1.0 / l : 0.0;
    for (uint k = 0; k < EPT; k++) {
        uint e = t + k * WG;
        if (e < D) out_[(row_id * pc.n_head + head) * D + e] = o[k] * inv_l;
    }
}
