// The merge of decode attention (included by attn_decode_body.glsl): the last workgroup of a
// (row, KV head) combines the row's partials [n_items][n_head][d + 4] of its GQA heads exactly
// (M = max m_s, L = sum l_s e^(m_s - M), o = sum o_s e^(m_s - M) / L; 0 when nothing was
// attended), applies R_Vᵀ (and + μ_V in OSCAR mode) in the rotated modes and writes
// out[row][head][d]. Uses sh_x as [LANES_M][d] lane sums, then [GQA][d] outputs.

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

// Element j of the value centering vector μ_V of KV head kvh (OSCAR mode; 0 in the others).
float mean_v(uint kvh, uint j) { return MODE == KV_MODE_ROTATED ? means[(N_KV + kvh) * D + j] : 0.0; }

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
    // sum the lanes one head at a time (sh_x [LANES_M][d]), keep o / L in registers, then
    // gather o of every head into sh_x [GQA][d]
    const uint EPT = (D + WG - 1) / WG;
    float o_fin[GQA][EPT];
    [[unroll]] for (uint h = 0; h < GQA; h++) {
        uint b = lane * D + 4 * e4;
        if (lane < LANES_M) sh_x[b] = o[h].x, sh_x[b + 1] = o[h].y, sh_x[b + 2] = o[h].z, sh_x[b + 3] = o[h].w;
        barrier();
        [[unroll]] for (uint k = 0; k < EPT; k++) {
            uint e = k * WG + t;
            float v = 0.0;
            if (e < D)
                for (uint ln = 0; ln < LANES_M; ln++) v += sh_x[ln * D + e];
            o_fin[h][k] = l[h] > 0.0 ? v / l[h] : 0.0;
        }
        barrier();
    }
    [[unroll]] for (uint h = 0; h < GQA; h++)
        [[unroll]] for (uint k = 0; k < EPT; k++)
            if (k * WG + t < D) sh_x[h * D + k * WG + t] = o_fin[h][k];
    barrier();
    // out = o·R_Vᵀ: out[j] = dot(R[j], o) (rotated modes; + μ_V[j] in OSCAR mode, whose stored
    // values are (v − μ_V)·R_V), else o. Rotated: RP threads share element j, each dotting a
    // part of row j of R (its loads all in flight) with o of every head; the parts meet in
    // sh_red.
    const uint HG = WG >= D ? WG / D : 1;
    if (ROTATED) {
        const uint RP = HG, RQ = D4 / RP;   // parts of a row, vec4s a part
        const uint RC = RQ < 16 ? RQ : 16;  // vec4s loaded together (registers: 4 RC)
        uint part = t / D;                  // < RP for the threads that take part
        for (uint j = t % D; j < D && t < RP * D; j += WG) {
            uint rbase = (ROT_PER_HEAD != 0 ? kvh : 0) * D * D4 + j * D4 + part * RQ;
            float v[GQA];
            [[unroll]] for (uint h = 0; h < GQA; h++) v[h] = 0.0;
            for (uint q0 = 0; q0 < RQ; q0 += RC) {
                vec4 r[RC];
                [[unroll]] for (uint q = 0; q < RC; q++) r[q] = rot_v[rbase + q0 + q];
                [[unroll]] for (uint h = 0; h < GQA; h++)
                    [[unroll]] for (uint q = 0; q < RC; q++) {
                        uint o4 = h * D + 4 * (part * RQ + q0 + q);
                        v[h] += dot(r[q], vec4(sh_x[o4], sh_x[o4 + 1], sh_x[o4 + 2], sh_x[o4 + 3]));
                    }
            }
            [[unroll]] for (uint h = 0; h < GQA; h++) {
                if (RP == 1) out_[(row_id * N_HEAD + head0 + h) * D + j] = v[h] + mean_v(kvh, j);
                else sh_red[h * WG + t] = v[h];
            }
        }
        if (RP > 1) {
            barrier();
            for (uint j = t; j < D; j += WG) {
                float mu = mean_v(kvh, j);
                [[unroll]] for (uint h = 0; h < GQA; h++) {
                    float v = mu;
                    for (uint p = 0; p < RP; p++) v += sh_red[h * WG + p * D + j];
                    out_[(row_id * N_HEAD + head0 + h) * D + j] = v;
                }
            }
        }
    } else {
        for (uint j = t % D; j < D && t < HG * D; j += WG)
            for (uint h = t / D; h < GQA; h += HG) out_[(row_id * N_HEAD + head0 + h) * D + j] = sh_x[h * D + j];
    }
}
