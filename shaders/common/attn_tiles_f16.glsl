// fp16 tiles of decode attention (included by attn_decode_body.glsl): every token of fp16 mode,
// the sink and recent windows of the INT2 modes.
//
// A row of K or V is d/8 16-byte chunks (8 fp16 each). FL = d/8 lanes share a token, lane c
// holding chunk c of its row (with fewer lanes than chunks, a lane holds several), so a
// subgroup covers SG / FL tokens at once, each load instruction reading whole rows; a tile is
// FKU such steps, TT = min(FKU * SG / FL, P) tokens of one page. q of every query head stays in
// registers (the lane's chunks); a token's score is the sum over its FL lanes (shuffles), so
// every lane has it and the lanes that hold a token's keys also do its values: nothing goes
// through shared memory. Subgroup s of the workgroup takes tiles s, s + n_subgroups, ...

void f16_tiles(kv_attn_item it, uint kvh, inout float m_run[GQA], inout float l[GQA], inout float acc[FC_MAX][GQA][8])
{
    uint sgs = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
    uint tg_n = max(sgs / FL, 1u), fc_n = max(FL / sgs, 1u), lanes = min(FL, sgs); // token groups, chunks a lane, lanes a token
    uint tg = lane / FL, ch0 = lane % FL;
    uint tt = min(tg_n * FKU, PAGE), nt = (PAGE + tt - 1u) / tt;
    uint n_tiles = it.end > it.begin ? ((it.end - 1u) / PAGE - it.begin / PAGE + 1u) * nt : 0u;
    if (gl_SubgroupID >= n_tiles) return; // uniform in the subgroup

    // q of this lane's chunks, scaled: elements 8c .. 8c + 7 as two vec4
    vec4 qa[FC_MAX][GQA], qb[FC_MAX][GQA];
    uint qbase = (it.row * N_HEAD + kvh * GQA) * D4;
    [[unroll]] for (uint fc = 0; fc < FC_MAX; fc++) {
        uint ch = min(ch0 + sgs * fc, FL - 1u);
        [[unroll]] for (uint h = 0; h < GQA; h++) {
            qa[fc][h] = q4[qbase + h * D4 + 2 * ch] * pc.scale;
            qb[fc][h] = q4[qbase + h * D4 + 2 * ch + 1] * pc.scale;
        }
    }

    for (uint g = gl_SubgroupID; g < n_tiles; g += gl_NumSubgroups) {
        uint lp = it.begin / PAGE + g / nt, s0 = lp * PAGE + (g % nt) * tt;
        uint t0 = max(s0, it.begin), t1 = min(min(s0 + tt, lp * PAGE + PAGE), it.end);
        if (t1 <= t0) continue; // uniform in the subgroup
        uint pbase = item_page(it, lp) * F16_PAGE_VEC4;
        // K and V chunks of this lane's tokens t0 + tg + tg_n * i (past t1: the tile's last row)
        uvec4 kv[FKU][FC_MAX], vv[FKU][FC_MAX];
        [[unroll]] for (uint i = 0; i < FKU; i++) {
            uint k = min(t0 + tg + tg_n * i, t1 - 1u);
            uint row = pbase + (kvh * PAGE + k % PAGE) * F16_ROW_VEC4;
            [[unroll]] for (uint fc = 0; fc < FC_MAX; fc++) {
                uint ch = min(ch0 + sgs * fc, FL - 1u);
                kv[i][fc] = f16_pool4[row + ch];
                vv[i][fc] = f16_pool4[row + F16_PAGE_VEC4 / 2 + ch];
            }
        }
        float s[FKU][GQA];
        [[unroll]] for (uint i = 0; i < FKU; i++)
            [[unroll]] for (uint h = 0; h < GQA; h++) {
                s[i][h] = 0.0;
                [[unroll]] for (uint fc = 0; fc < FC_MAX; fc++) {
                    if (fc >= fc_n) continue;
                    uvec4 w = kv[i][fc];
                    s[i][h] += dot(qa[fc][h], vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y))) +
                               dot(qb[fc][h], vec4(unpackHalf2x16(w.z), unpackHalf2x16(w.w)));
                }
            }
        // key centers (OSCAR mode with a key-center table): every stored key lacks its block's
        // rotated center c_b·R_K; q·(c_b·R_K) over this lane's chunks, summed with the score
        if (CENTERED) {
            uint cbk = max(CENTER_BLOCK, 1u);
            [[unroll]] for (uint i = 0; i < FKU; i++) {
                uint pos = min(t0 + tg + tg_n * i, t1 - 1u);
                uint cb = KV_CENTER_TABLE_OFF(N_KV, D) + ((pos / cbk) * N_KV + kvh) * (D / 2);
                [[unroll]] for (uint fc = 0; fc < FC_MAX; fc++) {
                    if (fc >= fc_n) continue;
                    uint w0 = cb + 4 * min(ch0 + sgs * fc, FL - 1u);
                    [[unroll]] for (uint h = 0; h < GQA; h++)
                        s[i][h] += dot(qa[fc][h], vec4(unpackHalf2x16(means_w[w0]), unpackHalf2x16(means_w[w0 + 1]))) +
                                   dot(qb[fc][h], vec4(unpackHalf2x16(means_w[w0 + 2]), unpackHalf2x16(means_w[w0 + 3])));
                }
            }
        }
        // the sum over a token's lanes, in each of them
        for (uint mask = 1u; mask < lanes; mask <<= 1)
            [[unroll]] for (uint i = 0; i < FKU; i++)
                [[unroll]] for (uint h = 0; h < GQA; h++) s[i][h] += subgroupShuffleXor(s[i][h], mask);
        [[unroll]] for (uint h = 0; h < GQA; h++) {
            float mt = NEG_INF;
            [[unroll]] for (uint i = 0; i < FKU; i++)
                if (t0 + tg + tg_n * i < t1) mt = max(mt, s[i][h]);
            float m_new = max(m_run[h], subgroupMax(mt));
            float alpha = exp(m_run[h] - m_new); // 0 on the first tile (m_run = -inf)
            m_run[h] = m_new;
            l[h] *= alpha;
            [[unroll]] for (uint fc = 0; fc < FC_MAX; fc++)
                [[unroll]] for (uint j = 0; j < 8; j++) acc[fc][h][j] *= alpha;
        }
        [[unroll]] for (uint i = 0; i < FKU; i++) {
            if (t0 + tg + tg_n * i >= t1) continue;
            [[unroll]] for (uint h = 0; h < GQA; h++) {
                float p = exp(s[i][h] - m_run[h]);
                if (ch0 == 0u) l[h] += p; // one lane of the token counts it
                [[unroll]] for (uint fc = 0; fc < FC_MAX; fc++) {
                    uvec4 w = vv[i][fc];
                    vec2 v0 = unpackHalf2x16(w.x), v1 = unpackHalf2x16(w.y), v2 = unpackHalf2x16(w.z), v3 = unpackHalf2x16(w.w);
                    acc[fc][h][0] += p * v0.x, acc[fc][h][1] += p * v0.y;
                    acc[fc][h][2] += p * v1.x, acc[fc][h][3] += p * v1.y;
                    acc[fc][h][4] += p * v2.x, acc[fc][h][5] += p * v2.y;
                    acc[fc][h][6] += p * v3.x, acc[fc][h][7] += p * v3.y;
                }
            }
        }
    }
}

// This lane's value sums of head h, times w, into its subgroup's region of sh_x at `off`:
// [token group][d].
void f16_store_sums(uint h, float w, uint off, float acc[FC_MAX][GQA][8])
{
    uint sgs = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
    uint fc_n = max(FL / sgs, 1u), tg = lane / FL, ch0 = lane % FL;
    [[unroll]] for (uint fc = 0; fc < FC_MAX; fc++) {
        if (fc >= fc_n) continue;
        uint e = 8 * (ch0 + sgs * fc);
        [[unroll]] for (uint j = 0; j < 8; j++) sh_x[off + tg * D + e + j] = w * acc[fc][h][j];
    }
}
