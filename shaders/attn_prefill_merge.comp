#version 450
// The merge after a split prefill walk (attn_prefill.coopmat's parts, runtime/kv/attn_tiles.h):
// one workgroup per (row, KV head) of the step. A row of a split tile has one item per part,
// [item_begin, item_end), whose partials [n_items][n_head][d + 4] (m, l, -, -, O) the walk wrote;
// decode attention's merge (common/attn_merge.glsl: M = max m_s, L = sum l_s e^(m_s - M),
// o = sum O_s e^(m_s - M) / L, 0 where L = 0) combines them, applies R_Vᵀ (+ μ_V in OSCAR mode)
// and writes out[row][head][d] as the unsplit walk does. Rows of whole walks (no items) were
// written by the walk and are skipped.
//
// Decode attention's interface (common/attn_decode_decl.glsl), of which it reads rows,
// partials, R_V and the centering vectors and writes out; its push's n_items is the step's rows.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common/kv_layout.h"
#include "common/attn_push.h"
#include "common/kv_write.h"

#include "common/attn_decode_decl.glsl"

// ---- shared memory ----
shared float sh_out[(LANES_M > GQA ? LANES_M : GQA) * D]; // [LANES_M][d] lane sums, then [GQA][d] o
shared float sh_red[GQA * WG];  // [GQA][WG] per-thread maxima or sums
shared float sh_part[GQA * 16]; // [GQA][16] first-level reduction results
shared bool sh_last;            // (count_and_merge's; unused here)

const float NEG_INF = -1.0 / 0.0;

#define OUT_SCRATCH sh_out
#include "common/attn_merge.glsl"

void main()
{
    uint row_id = gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x;
    if (row_id >= pc.n_items) return; // uniform over the workgroup
    kv_attn_row row = rows[row_id];
    if (row.item_end == row.item_begin) return; // a whole walk wrote this row
    merge_row(row_id, gl_WorkGroupID.y, false);
}
