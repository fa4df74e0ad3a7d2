// The merge of decode attention (included by both kernels' bodies): the last workgroup of a
// (row, KV head) combines the row's partials [n_items][n_head][d + 4] of its GQA heads exactly
// (M = max m_s, L = sum l_s e^(m_s - M), o = sum o_s e^(m_s - M) / L; 0 when nothing was
// attended), applies R_Vᵀ (and + μ_V in OSCAR mode) in the rotated modes and writes
// out[row][head][d]. Uses OUT_SCRATCH (the includer's shared array) as [LANES_M][d] lane sums,
// then [GQA][d] outputs.
// With ATTN_MERGE_Q8 (the decode kernels; attn_decode_decl.glsl declares the buffers) and
// pc.q8_out, count_and_merge also writes the outputs' int8 blocks (common/q8_layout.h), as
// quantize_q8.comp would from out: the input of the next product, without its own dispatch.

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

// The merge of row row_id's items [item_begin, item_end) for KV head kvh. keep: the outputs are
// also left in OUT_SCRATCH [GQA][d] (write_output).
// A thread takes 4 elements (e4) of every head over the items of its lane, two items an
// iteration with their loads issued together, and keeps its own running max: m, l and o of an
// item are loaded at once, with no wait for the row's max (a row may have tens of thousands of
// items: lavapipe ends any loop after 65535 iterations per invocation, hence the lanes). Empty
// items (m = -inf) weigh 0. The lanes then meet at the row's max M.
void merge_items(uint row_id, uint item_begin, uint item_end, uint kvh, bool keep)
{
    uint t = gl_LocalInvocationID.x;
    uint head0 = kvh * GQA;
    uint e4 = t % D4, lane = t / D4;
    float mx[GQA], l[GQA];
    vec4 o[GQA];
    [[unroll]] for (uint h = 0; h < GQA; h++) mx[h] = NEG_INF, l[h] = 0.0, o[h] = vec4(0.0);
    if (lane < LANES_M)
        for (uint s0 = item_begin + lane; s0 < item_end; s0 += 2 * LANES_M) {
            float ms[2][GQA], ls[2][GQA];
            vec4 os[2][GQA];
            [[unroll]] for (uint u = 0; u < 2; u++) {
                uint s = min(s0 + u * LANES_M, item_end - 1u);
                [[unroll]] for (uint h = 0; h < GQA; h++) {
                    uint b = (s * N_HEAD + head0 + h) * PF;
                    ms[u][h] = partials[b], ls[u][h] = partials[b + 1], os[u][h] = partials4[b / 4 + 1 + e4];
                }
            }
            [[unroll]] for (uint u = 0; u < 2; u++)
                [[unroll]] for (uint h = 0; h < GQA; h++) {
                    bool live = ms[u][h] != NEG_INF && s0 + u * LANES_M < item_end;
                    float m_new = live ? max(mx[h], ms[u][h]) : mx[h];
                    float a = mx[h] == m_new ? 1.0 : exp(mx[h] - m_new); // what was summed, at the new max
                    float w = live ? exp(ms[u][h] - m_new) : 0.0;
                    mx[h] = m_new;
                    l[h] = l[h] * a + ls[u][h] * w;
                    o[h] = o[h] * a + os[u][h] * w;
                }
        }
    float lane_m[GQA];
    [[unroll]] for (uint h = 0; h < GQA; h++) lane_m[h] = mx[h];
    reduce_heads(mx, true);
    [[unroll]] for (uint h = 0; h < GQA; h++) {
        float f = lane_m[h] == NEG_INF ? 0.0 : exp(lane_m[h] - mx[h]);
        o[h] *= f;
        l[h] = e4 == 0 ? l[h] * f : 0.0; // one thread per lane counts l
    }
    reduce_heads(l, false);
    write_output(o, l, lane, e4, kvh, row_id, head0, keep);
}

// merge_items over all of row row_id's items.
void merge_row(uint row_id, uint kvh, bool keep)
{
    kv_attn_row row = rows[row_id];
    merge_items(row_id, row.item_begin, row.item_end, kvh, keep);
}

#ifdef ATTN_MERGE_Q8
#define q8_amax sh_red
#define Q8_WORDS_BY_THREADS
#include "common/q8_quantize.glsl"

// The int8 blocks of the outputs of row row_id's heads head0 .. head0 + GQA - 1, from
// OUT_SCRATCH [GQA][d]: a word of 4 elements a thread; a block (8 words) never spans two rows,
// since d is a multiple of 32. Every thread calls it.
void store_out_q8(uint row_id, uint head0)
{
    const uint WORDS = GQA * D / 4;
    uint t = gl_LocalInvocationID.x, base = (row_id * N_HEAD + head0) * D / 4;
    for (uint w0 = 0; w0 < WORDS; w0 += WG) {
        uint w = w0 + t;
        bool live = w < WORDS;
        vec4 v = vec4(0.0);
        if (live) v = vec4(OUT_SCRATCH[4 * w], OUT_SCRATCH[4 * w + 1], OUT_SCRATCH[4 * w + 2], OUT_SCRATCH[4 * w + 3]);
        q8_store_word(t, live, base + w, v);
    }
}
#endif

// Called by every thread once its partials are written: counts the workgroup in
// counters[row][kvh]; the workgroup that completes the count merges the row (merge_row) and
// resets the counter for the next call. Uses the includer's shared bool sh_last.
void count_and_merge(uint row_id, uint kvh)
{
    kv_attn_row row = rows[row_id]; // loaded while the count is taken
    memoryBarrierBuffer();
    barrier();
    if (gl_LocalInvocationID.x == 0) {
        uint done = atomicAdd(counters[row_id * N_KV + kvh], 1u) + 1u;
        sh_last = done == row.item_end - row.item_begin;
        if (sh_last) counters[row_id * N_KV + kvh] = 0u; // ready for the next call
    }
    barrier();
    if (sh_last) {
        memoryBarrierBuffer();
#ifdef ATTN_MERGE_Q8
        merge_items(row_id, row.item_begin, row.item_end, kvh, pc.q8_out != 0u);
        if (pc.q8_out != 0u) store_out_q8(row_id, kvh * GQA);
#else
        merge_items(row_id, row.item_begin, row.item_end, kvh, false);
#endif
    }
}
