// The merge of decode attention (included by both kernels' bodies): the last workgroup of a
// (row, KV head) combines the row's partials [n_items][n_head][d + 4] of its GQA heads exactly
// (M = max m_s, L = sum l_s e^(m_s - M), o = sum o_s e^(m_s - M) / L; 0 when nothing was
// attended), applies R_Vᵀ (and + μ_V in OSCAR mode) in the rotated modes and writes
// out[row][head][d]. Uses OUT_SCRATCH (the includer's shared array) as [LANES_M][d] lane sums,
// then [GQA][d] outputs.

// v[h] <- max (is_max) or sum of v[h] over the workgroup, in every thread. All threads call it.
void reduce_heads(inout float v[GQA], bool is_max)
{
    const uint NPART = 16;
    uint t = gl_LocalInvocationID.x;
    for (uint h = 0; h < GQA; h++) sh_red[h * WG + t] = v[h];
    barrier();
    for (uint i = t; i < GQA * NPART; i += WG) {
        uint h = i / NPART, c = i % NPART;
        float r = is_max ? NEG_INF : 0.0;
        for (uint k = c; k < WG; k += NPART) r = is_max ? max(r, sh_red[h * WG + k]) : r + sh_red[h * WG + k];
        sh_part[i] = r;
    }
    barrier();
    for (uint h = 0; h < GQA; h++) {
        float r = is_max ? NEG_INF : 0.0;
        for (uint c = 0; c < NPART; c++) r = is_max ? max(r, sh_part[h * NPART + c]) : r + sh_part[h * NPART + c];
        v[h] = r;
    }
    barrier();
}

#include "common/attn_finish.glsl"

void merge_row(uint row_id, uint kvh)
{
    uint t = gl_LocalInvocationID.x;
    kv_attn_row row = rows[row_id];
    uint head0 = kvh * GQA;
    // M per head, strided over the items and reduced (a row may have tens of thousands of
    // items: lavapipe ends any loop after 65535 iterations per invocation)
    float mx[GQA];
    [[unroll]] for (uint h = 0; h < GQA; h++) mx[h] = NEG_INF;
    for (uint s = row.item_begin + t; s < row.item_end; s += WG)
        [[unroll]] for (uint h = 0; h < GQA; h++) mx[h] = max(mx[h], partials[(s * N_HEAD + head0 + h) * PF]);
    reduce_heads(mx, true);
    // thread: 4 elements (e4) of every head over the items of its lane; empty items (m = -inf)
    // weigh 0
    uint e4 = t % D4, lane = t / D4;
    float l[GQA];
    vec4 o[GQA];
    [[unroll]] for (uint h = 0; h < GQA; h++) l[h] = 0.0, o[h] = vec4(0.0);
    // (two items an iteration, their loads issued together)
    if (lane < LANES_M)
        for (uint s0 = row.item_begin + lane; s0 < row.item_end; s0 += 2 * LANES_M) {
            float ms[2][GQA], ls[2][GQA];
            vec4 os[2][GQA];
            [[unroll]] for (uint u = 0; u < 2; u++) {
                uint s = min(s0 + u * LANES_M, row.item_end - 1u);
                [[unroll]] for (uint h = 0; h < GQA; h++) {
                    uint b = (s * N_HEAD + head0 + h) * PF;
                    ms[u][h] = partials[b], ls[u][h] = partials[b + 1], os[u][h] = partials4[b / 4 + 1 + e4];
                }
            }
            [[unroll]] for (uint u = 0; u < 2; u++)
                [[unroll]] for (uint h = 0; h < GQA; h++) {
                    float w = ms[u][h] == NEG_INF || s0 + u * LANES_M >= row.item_end ? 0.0 : exp(ms[u][h] - mx[h]);
                    l[h] += ls[u][h] * w;
                    o[h] += os[u][h] * w;
                }
        }
    [[unroll]] for (uint h = 0; h < GQA; h++) l[h] = e4 == 0 ? l[h] : 0.0; // one thread per lane counts l
    reduce_heads(l, false);
    write_output(o, l, lane, e4, kvh, row_id, head0);
}

// Called by every thread once its partials are written: counts the workgroup in
// counters[row][kvh]; the workgroup that completes the count merges the row (merge_row) and
// resets the counter for the next call. Uses the includer's shared bool sh_last.
void count_and_merge(uint row_id, uint kvh)
{
    memoryBarrierBuffer();
    barrier();
    if (gl_LocalInvocationID.x == 0) {
        kv_attn_row row = rows[row_id];
        uint done = atomicAdd(counters[row_id * N_KV + kvh], 1u) + 1u;
        sh_last = done == row.item_end - row.item_begin;
        if (sh_last) counters[row_id * N_KV + kvh] = 0u; // ready for the next call
    }
    barrier();
    if (sh_last) {
        memoryBarrierBuffer();
        merge_row(row_id, kvh);
    }
}
