// The end of a decode-attention merge, shared by the chunked and the streaming kernels: sums
// the per-lane partial outputs, divides by L, applies R_Vᵀ (and + μ_V in OSCAR mode) in the
// rotated modes and writes out[row][head][d] of the GQA heads of KV head kvh.
// The includer defines OUT_SCRATCH, a shared float array of at least max(LANES_M, GQA) * d
// floats, and provides sh_red [GQA][WG], rot_v, means, out_ and the shape constants.

// Element j of the value centering vector μ_V of KV head kvh (OSCAR mode; 0 in the others).
float mean_v(uint kvh, uint j) { return MODE == KV_MODE_ROTATED ? means[(N_KV + kvh) * D + j] : 0.0; }

// o[h]: this thread's 4 output elements 4 e4 .. 4 e4 + 3 of head h summed over its lane's items
// (lanes >= LANES_M hold nothing); l[h]: L of head h, the same in every thread. With `keep`
// (uniform), the outputs are also left in OUT_SCRATCH [GQA][d] on return.
void write_output(vec4 o[GQA], float l[GQA], uint lane, uint e4, uint kvh, uint row_id, uint head0, bool keep)
{
    uint t = gl_LocalInvocationID.x;
    // sum the lanes one head at a time (OUT_SCRATCH [LANES_M][d]), keep o / L in registers, then
    // gather o of every head into OUT_SCRATCH [GQA][d]
    const uint EPT = (D + WG - 1) / WG;
    float o_fin[GQA][EPT];
    [[unroll]] for (uint h = 0; h < GQA; h++) {
        uint b = lane * D + 4 * e4;
        if (lane < LANES_M)
            OUT_SCRATCH[b] = o[h].x, OUT_SCRATCH[b + 1] = o[h].y, OUT_SCRATCH[b + 2] = o[h].z, OUT_SCRATCH[b + 3] = o[h].w;
        barrier();
        [[unroll]] for (uint k = 0; k < EPT; k++) {
            uint e = k * WG + t;
            float v = 0.0;
            if (e < D)
                for (uint ln = 0; ln < LANES_M; ln++) v += OUT_SCRATCH[ln * D + e];
            o_fin[h][k] = l[h] > 0.0 ? v / l[h] : 0.0;
        }
        barrier();
    }
    [[unroll]] for (uint h = 0; h < GQA; h++)
        [[unroll]] for (uint k = 0; k < EPT; k++)
            if (k * WG + t < D) OUT_SCRATCH[h * D + k * WG + t] = o_fin[h][k];
    barrier();
    // out = o·R_Vᵀ: out[j] = dot(R[j], o) (rotated modes; + μ_V[j] in OSCAR mode, whose stored
    // values are (v − μ_V)·R_V), else o. Rotated: RP threads share element j, each dotting a
    // part of row j of R (its loads all in flight) with o of every head; the parts meet in
    // sh_red. (One thread a row for two of four heads made a call 5 µs longer at 4K on the H200.)
    const uint HG = WG >= D ? WG / D : 1;
    if (ROTATED) {
        const uint RP = HG, RQ = D4 / RP;   // parts of a row, vec4s a part
        const uint RC = RQ < 16 ? RQ : 16;  // vec4s loaded together (registers: 4 RC)
        uint part = t / D;                  // < RP for the threads that take part
        float kept[GQA][EPT];               // (RP == 1, keep) this thread's outputs, element t + k WG
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
                        v[h] += dot(r[q], vec4(OUT_SCRATCH[o4], OUT_SCRATCH[o4 + 1], OUT_SCRATCH[o4 + 2], OUT_SCRATCH[o4 + 3]));
                    }
            }
            [[unroll]] for (uint h = 0; h < GQA; h++) {
                if (RP == 1) {
                    float y = v[h] + mean_v(kvh, j);
                    out_[(row_id * N_HEAD + head0 + h) * D + j] = y;
                    [[unroll]] for (uint k = 0; k < EPT; k++)
                        if (j == t + k * WG) kept[h][k] = y;
                } else
                    sh_red[h * WG + t] = v[h];
            }
        }
        if (RP > 1 || keep) barrier(); // OUT_SCRATCH's o is read (and with RP > 1, sh_red written)
        if (RP == 1 && keep)
            [[unroll]] for (uint h = 0; h < GQA; h++)
                [[unroll]] for (uint k = 0; k < EPT; k++)
                    if (t < D && t + k * WG < D) OUT_SCRATCH[h * D + t + k * WG] = kept[h][k];
        if (RP > 1) {
            for (uint j = t; j < D; j += WG) {
                float mu = mean_v(kvh, j);
                [[unroll]] for (uint h = 0; h < GQA; h++) {
                    float v = mu;
                    for (uint p = 0; p < RP; p++) v += sh_red[h * WG + p * D + j];
                    out_[(row_id * N_HEAD + head0 + h) * D + j] = v;
                    if (keep) OUT_SCRATCH[h * D + j] = v;
                }
            }
        }
    } else {
        for (uint j = t % D; j < D && t < HG * D; j += WG)
            for (uint h = t / D; h < GQA; h += HG) out_[(row_id * N_HEAD + head0 + h) * D + j] = OUT_SCRATCH[h * D + j];
    }
    if (keep) barrier();
}
