// INT2 tiles of decode attention (included by attn_decode_body.glsl).
//
// A tile is TT = min(SG * KU, P) tokens of one page (the item's first and last pages may give
// shorter tiles); subgroup s of the workgroup takes tiles s, s + n_subgroups, ... of the item.
// For its tile, a lane:
//   keys:   scores tokens lane, lane + SG, ... (KU of them) for every query head against q in
//           shared memory: s_h = sum_g scale_g * (q_h·c)_g + min_g * qsum_hg. Those codes,
//           scales and the page id were loaded during the previous tile.
//   values: owns VE elements of the row (a "slot": half-word pairs (e, e + 8) of one code
//           word) of tokens tl, tl + SG/NS, ... (NS = d/VE slots; with fewer lanes than
//           slots, a lane takes several slots of every token); their code words are loaded
//           at the tile's start, before the key math.
// The lanes exchange the tile's weights (p * scale with one V group a row, else p) through the
// subgroup's part of sh_x [SG * KU][GQA]: no workgroup barrier.
// The codes become numbers through code_x4 and code_pair (common/attn_decode_decl.glsl).

// q of the KV head's query heads, scaled: sh_q (fp32; the fp32 variant, or for key centers),
// sh_q2 (fp16 pairs (e, e + 8) of each code word: the f16 variant) and the group sums sh_qs of
// the values the dot products use. Read from the q buffer, so no barrier between the parts.
void int2_load_q(uint row, uint kvh)
{
    uint t = gl_LocalInvocationID.x;
    uint qb = (row * N_HEAD + kvh * GQA) * D4;
    if (ATTN_F16 == 0 || CENTERED)
        for (uint i = t; i < GQA * D4; i += WG) sh_q[i] = q4[qb + i] * pc.scale;
#if ATTN_F16
    for (uint i = t; i < GQA * D / 8; i += WG) {
        uint h = i / (D / 8), r = i % (D / 8), w = r / 2, j0 = (r % 2) * 4;
        uvec4 v;
        [[unroll]] for (uint jj = 0; jj < 4; jj++) {
            uint e = 16 * w + j0 + jj;
            vec2 x = vec2(q4[qb + h * D4 + e / 4][e % 4], q4[qb + h * D4 + (e + 8) / 4][e % 4]) * pc.scale;
            v[jj] = packFloat2x16(f16vec2(x));
        }
        sh_q2[i] = v;
    }
#endif
    for (uint i = t; i < GQA * PWD; i += WG) {
        uint h = i / PWD, g = i % PWD;
        float s = 0.0;
        for (uint k = 0; k < GROUP / 4; k++) {
            vec4 v = q4[qb + h * D4 + g * (GROUP / 4) + k] * pc.scale;
#if ATTN_F16
            v = vec4(f16vec4(v)); // the rounded q the dot products use
#endif
            s += (v.x + v.y) + (v.z + v.w);
        }
        sh_qs[i] = s;
    }
}

// Tokens [t0, t1) of tile g of the item (logical page lp of its kind).
void int2_tile_range(kv_attn_item it, uint g, uint tt, uint nt, out uint lp, out uint t0, out uint t1)
{
    lp = it.begin / PAGE + g / nt;
    uint s = lp * PAGE + (g % nt) * tt;
    t0 = max(s, it.begin);
    t1 = min(min(s + tt, lp * PAGE + PAGE), it.end);
}

// Tile g's page base (word), range, and this lane's keys: K codes, K params and (one V group a
// row) the V params of tokens t0 + lane + SG * u. Past t1 a lane reads the tile's last row.
void int2_load_keys(kv_attn_item it, uint kvh, uint g, uint tt, uint nt, out uint base, out uint t0, out uint t1,
                    out uvec4 kc[KU][CW4], out uint kp[KU][PWD], out uint vp[KU])
{
    uint lp;
    int2_tile_range(it, g, tt, nt, lp, t0, t1);
    base = item_page(it, lp) * INT2_PAGE_WORDS;
    [[unroll]] for (uint u = 0; u < KU; u++) {
        uint k = min(t0 + gl_SubgroupInvocationID + gl_SubgroupSize * u, t1 - 1u);
        uint row = kvh * PAGE + k % PAGE, krow = base + row * CW;
        [[unroll]] for (uint c4 = 0; c4 < CW4; c4++)
            kc[u][c4] = K_VEC4 ? int2_pool4[krow / 4 + c4]
                               : uvec4(int2_pool[krow + 4 * c4], int2_pool[krow + 4 * c4 + 1],
                                       int2_pool[krow + 4 * c4 + 2], int2_pool[krow + 4 * c4 + 3]);
        [[unroll]] for (uint g2 = 0; g2 < PWD; g2++) kp[u][g2] = int2_pool[base + K_PARAM_OFF + row * PWD + g2];
        vp[u] = PRE_W ? int2_pool[base + V_PARAM_OFF + row] : 0u;
    }
}

// s[u][h] = q_h · k of this lane's KU tokens (fp32: x = 1 + c/4; f16: exact codes, fp16 sums
// of one word, fp32 beyond).
void int2_scores(uvec4 kc[KU][CW4], uint kp[KU][PWD], out float s[KU][GQA])
{
    [[unroll]] for (uint u = 0; u < KU; u++)
        [[unroll]] for (uint h = 0; h < GQA; h++) s[u][h] = 0.0;
    [[unroll]] for (uint g = 0; g < PWD; g++) {
        float dq[KU][GQA]; // fp32: sum_{e in g} q_h[e] * x_e; f16: sum q_h[e] * c_e
        [[unroll]] for (uint u = 0; u < KU; u++)
            [[unroll]] for (uint h = 0; h < GQA; h++) dq[u][h] = 0.0;
        [[unroll]] for (uint w = g * WPG; w < (g + 1) * WPG; w++) {
#if ATTN_F16
            f16vec2 x[KU][8];
            [[unroll]] for (uint u = 0; u < KU; u++)
                [[unroll]] for (uint j = 0; j < 8; j++) x[u][j] = code_pair(kc[u][w / 4][w % 4], j);
            [[unroll]] for (uint h = 0; h < GQA; h++) {
                uvec4 qa = sh_q2[h * (D / 8) + 2 * w], qb = sh_q2[h * (D / 8) + 2 * w + 1];
                f16vec2 q2[8] = f16vec2[8](unpackFloat2x16(qa.x), unpackFloat2x16(qa.y), unpackFloat2x16(qa.z),
                                           unpackFloat2x16(qa.w), unpackFloat2x16(qb.x), unpackFloat2x16(qb.y),
                                           unpackFloat2x16(qb.z), unpackFloat2x16(qb.w));
                [[unroll]] for (uint u = 0; u < KU; u++) {
                    f16vec2 a = q2[0] * x[u][0];
                    [[unroll]] for (uint j = 1; j < 8; j++) a = fma(q2[j], x[u][j], a);
                    dq[u][h] += float(a.x) + float(a.y);
                }
            }
#else
            [[unroll]] for (uint j = 0; j < 4; j++) {
                vec4 x[KU];
                [[unroll]] for (uint u = 0; u < KU; u++) x[u] = code_x4(kc[u][w / 4][w % 4], 4 * j);
                [[unroll]] for (uint h = 0; h < GQA; h++) {
                    vec4 qv = sh_q[h * D4 + w * 4 + j];
                    [[unroll]] for (uint u = 0; u < KU; u++) dq[u][h] += dot(qv, x[u]);
                }
            }
#endif
        }
        [[unroll]] for (uint u = 0; u < KU; u++) {
            vec2 sm = unpackHalf2x16(kp[u][g]); // x = scale, y = min
            [[unroll]] for (uint h = 0; h < GQA; h++) {
                float qs = sh_qs[h * PWD + g];
#if ATTN_F16
                s[u][h] += sm.x * dq[u][h] + sm.y * qs;
#else
                s[u][h] += 4.0 * sm.x * (dq[u][h] - qs) + sm.y * qs;
#endif
            }
        }
    }
}

// Key centers: sh_cb [block][GQA] of this subgroup = q_h·(c_b·R_K) for the blocks of positions
// SINK + t0 .. SINK + t1 - 1; returns the first block.
uint int2_center_logits(uint kvh, uint t0, uint t1)
{
    uint cbk = max(CENTER_BLOCK, 1u), b0 = (SINK + t0) / cbk, nb = (SINK + t1 - 1u) / cbk - b0 + 1u;
    uint base = gl_SubgroupID * CB_MAX * GQA;
    for (uint i = gl_SubgroupInvocationID; i < nb * GQA; i += gl_SubgroupSize) {
        uint bi = i / GQA, h = i % GQA;
        uint cb = KV_CENTER_TABLE_OFF(N_KV, D) + ((b0 + bi) * N_KV + kvh) * (D / 2);
        float s = 0.0;
        for (uint w = 0; w < D4; w++)
            s += dot(sh_q[h * D4 + w], vec4(unpackHalf2x16(means_w[cb + 2 * w]), unpackHalf2x16(means_w[cb + 2 * w + 1])));
        sh_cb[base + i] = s;
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    return b0;
}

// Value code words (and, with several V groups a row, the V params of each slot's group) of
// this lane's tokens tl + tln * (i0 + i), i < VL, of a tile of n tokens from t0; 0 past n.
void int2_load_values(uint kvh, uint t0, uint n, uint base, uint i0, out uint vc[VL][SP_MAX], out uint vg[VL][SP_MAX])
{
    uint sgs = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
    uint tln = max(sgs / NS, 1u), sp_n = max(NS / sgs, 1u), tl = lane / NS, slot0 = lane % NS;
    [[unroll]] for (uint i = 0; i < VL; i++)
        [[unroll]] for (uint sp = 0; sp < SP_MAX; sp++) {
            vc[i][sp] = 0u, vg[i][sp] = 0u;
            uint k = tl + tln * (i0 + i), slot = slot0 + sgs * sp;
            if (k < n && sp < sp_n) {
                uint row = kvh * PAGE + (t0 + k) % PAGE;
                vc[i][sp] = int2_pool[base + V_CODE_OFF + row * CW + slot * VE / 16];
                if (!PRE_W) vg[i][sp] = int2_pool[base + V_PARAM_OFF + row * PWD + slot * VE / GROUP];
            }
        }
}

// One tile: tokens [t0, t1) at page base `base`, this lane's keys already loaded.
void int2_tile(uint kvh, uint t0, uint t1, uint base, uvec4 kc[KU][CW4], uint kp[KU][PWD], uint vp[KU],
               inout float m_run[GQA], inout float l[GQA], inout float b[GQA], inout float acc[SP_MAX][GQA][VE],
               inout float acc_b[SP_MAX][GQA])
{
    uint sgs = gl_SubgroupSize, lane = gl_SubgroupInvocationID, n = t1 - t0;
    uint tln = max(sgs / NS, 1u), sp_n = max(NS / sgs, 1u); // value token lanes, slots a lane
    uint tl = lane / NS, slot0 = lane % NS;
    // value code words (and V params with several groups a row) of this lane's tokens and slots:
    // all of the tile's before the key math where they fit in VT_MAX * SP_MAX <= 32 registers,
    // else VB tokens at a time in the value loop
    uint vc[VL][SP_MAX], vg[VL][SP_MAX];
    if (V_PRELOAD) int2_load_values(kvh, t0, n, base, 0u, vc, vg);
    float s[KU][GQA];
    int2_scores(kc, kp, s);
    if (CENTERED) {
        uint cbk = max(CENTER_BLOCK, 1u), b0 = int2_center_logits(kvh, t0, t1);
        [[unroll]] for (uint u = 0; u < KU; u++) {
            uint k = min(lane + sgs * u, n - 1u);
            [[unroll]] for (uint h = 0; h < GQA; h++)
                s[u][h] += sh_cb[(gl_SubgroupID * CB_MAX + (SINK + t0 + k) / cbk - b0) * GQA + h];
        }
    }
    // the tile's max; the running state moves to it
    [[unroll]] for (uint h = 0; h < GQA; h++) {
        float mt = NEG_INF;
        [[unroll]] for (uint u = 0; u < KU; u++)
            if (lane + sgs * u < n) mt = max(mt, s[u][h]);
        float m_new = max(m_run[h], subgroupMax(mt));
        float alpha = exp(m_run[h] - m_new); // 0 on the first tile (m_run = -inf)
        m_run[h] = m_new;
        l[h] *= alpha, b[h] *= alpha;
        [[unroll]] for (uint sp = 0; sp < SP_MAX; sp++) {
            acc_b[sp][h] *= alpha;
            [[unroll]] for (uint j = 0; j < VE; j++) acc[sp][h][j] *= alpha;
        }
    }
    // weights of this lane's tokens into the subgroup's part of sh_x [token][GQA]
    uint xb = gl_SubgroupID * sgs * KU * GQA;
    subgroupBarrier(); // the previous tile's readers are done
    [[unroll]] for (uint u = 0; u < KU; u++) {
        uint k = lane + sgs * u;
        if (k < n) {
            vec2 sm = unpackHalf2x16(vp[u]); // x = scale, y = min (one V group a row)
            [[unroll]] for (uint h = 0; h < GQA; h++) {
                float p = exp(s[u][h] - m_run[h]);
                l[h] += p;
                float w = p;
                if (PRE_W) {
#if ATTN_F16
                    w = p * sm.x, b[h] += p * sm.y;
#else
                    w = p * (4.0 * sm.x), b[h] += p * (sm.y - 4.0 * sm.x);
#endif
                }
                sh_x[xb + k * GQA + h] = w;
            }
        }
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();

    // values
#if ATTN_F16
    f16vec2 a16[SP_MAX][GQA][VE / 2];
    [[unroll]] for (uint sp = 0; sp < SP_MAX; sp++)
        [[unroll]] for (uint h = 0; h < GQA; h++)
            [[unroll]] for (uint jj = 0; jj < VE / 2; jj++) a16[sp][h][jj] = f16vec2(0.0hf);
#endif
    for (uint i0 = 0; i0 < VT_MAX && tln * i0 < n; i0 += VL) { // one pass when preloaded
        if (!V_PRELOAD) int2_load_values(kvh, t0, n, base, i0, vc, vg);
        [[unroll]] for (uint i = 0; i < VL; i++) {
            uint k = tl + tln * (i0 + i);
            if (k < n) {
                float w[GQA];
                [[unroll]] for (uint h = 0; h < GQA; h++) w[h] = sh_x[xb + k * GQA + h];
                [[unroll]] for (uint sp = 0; sp < SP_MAX; sp++) {
                    if (sp >= sp_n) continue;
                    uint j0 = ((slot0 + sgs * sp) * VE % 16) / 2, c = vc[i][sp];
                    vec2 sm = unpackHalf2x16(vg[i][sp]);
#if ATTN_F16
                    f16vec2 x[VE / 2];
                    [[unroll]] for (uint jj = 0; jj < VE / 2; jj++) x[jj] = code_pair(c >> (2 * j0), jj); // elements j0 + jj (+ 8)
                    [[unroll]] for (uint h = 0; h < GQA; h++) {
                        float ps = w[h];
                        if (!PRE_W) acc_b[sp][h] += w[h] * sm.y, ps = w[h] * sm.x;
                        f16vec2 p2 = f16vec2(float16_t(ps));
                        [[unroll]] for (uint jj = 0; jj < VE / 2; jj++) a16[sp][h][jj] = fma(p2, x[jj], a16[sp][h][jj]);
                    }
#else
                    float x[VE];
                    [[unroll]] for (uint jj = 0; jj < VE / 2; jj++) {
                        x[2 * jj] = code_x(c, j0 + jj);
                        x[2 * jj + 1] = code_x(c, j0 + jj + 8);
                    }
                    [[unroll]] for (uint h = 0; h < GQA; h++) {
                        float ps = w[h];
                        if (!PRE_W) acc_b[sp][h] += w[h] * (sm.y - 4.0 * sm.x), ps = w[h] * (4.0 * sm.x);
                        [[unroll]] for (uint j = 0; j < VE; j++) acc[sp][h][j] += ps * x[j];
                    }
#endif
                }
            }
#if ATTN_F16
            // fp16 sums of at most VB tokens (bounded: VB * 3 * |scale|), then fp32
            if (i % VB == VB - 1 || i == VL - 1)
                [[unroll]] for (uint sp = 0; sp < SP_MAX; sp++)
                    [[unroll]] for (uint h = 0; h < GQA; h++)
                        [[unroll]] for (uint jj = 0; jj < VE / 2; jj++) {
                            acc[sp][h][2 * jj] += float(a16[sp][h][jj].x);
                            acc[sp][h][2 * jj + 1] += float(a16[sp][h][jj].y);
                            a16[sp][h][jj] = f16vec2(0.0hf);
                        }
#endif
        }
    }
}

// The item's INT2 tiles of this subgroup, each tile's keys loaded during the previous tile
// (K_NEXT) or at its start.
void int2_tiles(kv_attn_item it, uint kvh, inout float m_run[GQA], inout float l[GQA], inout float b[GQA],
                inout float acc[SP_MAX][GQA][VE], inout float acc_b[SP_MAX][GQA])
{
    uint tt = min(gl_SubgroupSize * KU, PAGE), nt = (PAGE + tt - 1u) / tt;
    uint n_tiles = it.end > it.begin ? ((it.end - 1u) / PAGE - it.begin / PAGE + 1u) * nt : 0u;
    uint g = gl_SubgroupID;
    if (g >= n_tiles) return; // uniform in the subgroup
    uvec4 kc[KU][CW4];
    uint kp[KU][PWD], vp[KU], base, t0, t1;
    if (!K_NEXT) {
        for (; g < n_tiles; g += gl_NumSubgroups) {
            int2_load_keys(it, kvh, g, tt, nt, base, t0, t1, kc, kp, vp);
            if (t1 > t0) int2_tile(kvh, t0, t1, base, kc, kp, vp, m_run, l, b, acc, acc_b);
        }
        return;
    }
    int2_load_keys(it, kvh, g, tt, nt, base, t0, t1, kc, kp, vp);
    for (; g < n_tiles; g += gl_NumSubgroups) {
        uvec4 kc_n[KU][CW4];
        uint kp_n[KU][PWD], vp_n[KU], base_n = 0u, t0_n = 0u, t1_n = 0u;
        if (g + gl_NumSubgroups < n_tiles)
            int2_load_keys(it, kvh, g + gl_NumSubgroups, tt, nt, base_n, t0_n, t1_n, kc_n, kp_n, vp_n);
        if (t1 > t0) int2_tile(kvh, t0, t1, base, kc, kp, vp, m_run, l, b, acc, acc_b);
        [[unroll]] for (uint u = 0; u < KU; u++) {
            [[unroll]] for (uint c4 = 0; c4 < CW4; c4++) kc[u][c4] = kc_n[u][c4];
            [[unroll]] for (uint g2 = 0; g2 < PWD; g2++) kp[u][g2] = kp_n[u][g2];
            vp[u] = vp_n[u];
        }
        base = base_n, t0 = t0_n, t1 = t1_n;
    }
}

// This lane's value sums of head h, times w (its min terms included), into its subgroup's
// region of sh_x at `off`: [token lane][d].
void int2_store_sums(uint h, float w, uint off, float acc[SP_MAX][GQA][VE], float acc_b[SP_MAX][GQA])
{
    uint sgs = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
    uint sp_n = max(NS / sgs, 1u), tl = lane / NS, slot0 = lane % NS;
    [[unroll]] for (uint sp = 0; sp < SP_MAX; sp++) {
        if (sp >= sp_n) continue;
        uint slot = slot0 + sgs * sp, e0 = slot * VE / 16 * 16 + (slot * VE % 16) / 2;
        [[unroll]] for (uint jj = 0; jj < VE / 2; jj++) {
            sh_x[off + tl * D + e0 + jj] = w * (acc[sp][h][2 * jj] + acc_b[sp][h]);
            sh_x[off + tl * D + e0 + jj + 8] = w * (acc[sp][h][2 * jj + 1] + acc_b[sp][h]);
        }
    }
}
