#version 450
// Combines the flash-decoding partials of each row exactly: for a (row, query head) with
// items s in [item_begin, item_end) of partial (m_s, l_s, o_s):
//   M = max_s m_s,  w_s = exp(m_s - M) (0 for an empty item, m_s = -inf),
//   L = sum_s l_s w_s,  out = sum_s o_s w_s / L   (0 when the row attended nothing).
// One workgroup per (row, query head): x (+ z * num_groups.x) = row, y = head; threads over d.
// The output stays in the rotated basis; the caller applies R_V^T.
#include "common/kv_layout.h"
#include "common/attn_push.h"

layout(local_size_x_id = KV_SPEC_WORKGROUP) in;
layout(constant_id = KV_SPEC_HEAD_DIM) const uint HEAD_DIM = 128;

const uint WG = gl_WorkGroupSize.x;
const uint D = HEAD_DIM;
const float NEG_INF = -1.0 / 0.0;

layout(std430, binding = 0) readonly buffer Rows { kv_attn_row rows[]; };    // [n_rows]
layout(std430, binding = 1) readonly buffer Partials { float partials[]; }; // [n_items][n_head][d + 2]
layout(std430, binding = 2) writeonly buffer Out { float out_[]; };         // [n_rows][n_head][d] fp32

layout(push_constant) uniform Push { attn_merge_push pc; };

shared float sh_w[WG];   // weights exp(m_s - M) of a chunk of items
shared float sh_stat[2]; // M, then 1 / L

void main()
{
    uint row_id = gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x;
    if (row_id >= pc.n_rows) return; // uniform over the workgroup
    uint head = gl_WorkGroupID.y;
    uint t = gl_LocalInvocationID.x;
    kv_attn_row row = rows[row_id];
    uint stride = pc.n_head * (D + 2);
    uint base = head * (D + 2);

    // M and L by thread 0 (items per row are few; this keeps the order deterministic)
    if (t == 0) {
        float m = NEG_INF;
        for (uint s = row.item_begin; s < row.item_end; s++) m = max(m, partials[s * stride + base]);
        float l = 0.0;
        for (uint s = row.item_begin; s < row.item_end; s++) {
            float ms = partials[s * stride + base];
            if (ms != NEG_INF) l += partials[s * stride + base + 1] * exp(ms - m);
        }
        sh_stat[0] = m;
        sh_stat[1] = l > 0.0 ? 1.0 / l : 0.0;
    }
    barrier();
    float m = sh_stat[0], inv_l = sh_stat[1];

    float o[(D + WG - 1) / WG];
    for (uint k = 0; k < (D + WG - 1) / WG; k++) o[k] = 0.0;
    for (uint s0 = row.item_begin; s0 < row.item_end; s0 += WG) {
        uint n = min(WG, row.item_end - s0);
        if (t < n) {
            float ms = partials[(s0 + t) * stride + base];
            sh_w[t] = ms == NEG_INF ? 0.0 : exp(ms - m);
        }
        barrier();
        for (uint k = 0; k < (D + WG - 1) / WG; k++) {
            uint e = t + k * WG;
            if (e >= D) break;
            for (uint s = 0; s < n; s++) {
                float w = sh_w[s];
                if (w != 0.0) o[k] += partials[(s0 + s) * stride + base + 2 + e] * w;
            }
        }
        barrier();
    }
    for (uint k = 0; k < (D + WG - 1) / WG; k++) {
        uint e = t + k * WG;
        if (e < D) out_[(row_id * pc.n_head + head) * D + e] = o[k] * inv_l;
    }
}
