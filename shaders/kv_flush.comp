#version 450
// Flush tokens from fp16 pages into INT2 pages (kv_layout.h): per token, KV head and K/V, read
// the fp16 row, clip at the r-quantile of |x|, quantize per group of G with fp16 min/scale,
// pack 16 codes per word; K codes by error feedback and each row's min and scale refitted by
// least squares when the push constants ask for them.
// Bit-exact with kv_ref_flush (runtime/kv_ref.c), see common/int2_quant.glsl.
//
// Dispatch: (min(n_tokens, 65535), NKV, 2) workgroups; z = 0 flushes K, z = 1 flushes V; x loops
// over the tokens with stride gl_NumWorkGroups.x. Any workgroup size (spec 0).
#include "common/kv_layout.h"
#include "common/kv_write.h"

layout(local_size_x_id = KV_SPEC_WORKGROUP) in;
layout(constant_id = KV_SPEC_HEAD_DIM) const uint HEAD_DIM = 128;
layout(constant_id = KV_SPEC_GROUP) const uint GROUP = 128;
layout(constant_id = KV_SPEC_PAGE) const uint PAGE = 16;
layout(constant_id = KV_SPEC_N_KV) const uint N_KV = 1;

const uint WG = gl_WorkGroupSize.x;
const uint HALF_D = HEAD_DIM / 2u;
const uint CODE_WORDS = HEAD_DIM / 16u;   // per row
const uint PARAM_WORDS = HEAD_DIM / GROUP; // per row

#include "common/int2_quant.glsl"

layout(std430, binding = 0) readonly buffer Slots { kv_token_slot slots[]; }; // [n_tokens] (src_row = fp16 page, src_slot) -> (dst_page, dst_slot)
layout(std430, binding = 1) readonly buffer F16Pool { uint f16_pool[]; };    // [page][K,V][NKV][P][d/2] fp16 pairs
layout(std430, binding = 2) writeonly buffer Int2Pool { uint int2_pool[]; }; // [page][K codes, K params, V codes, V params] (kv_layout.h)
layout(std430, binding = 3) readonly buffer Feedback { float feedback[]; };  // [1 or NKV][d][d] of the layer (read with key_feedback)
layout(std430, binding = 4) readonly buffer Metric { float metric[]; };      // [1 or NKV][d][d] of the layer, keys' refit metric (read with key_metric)

shared uint q_code[KV_MAX_HEAD_DIM]; // [d] codes chosen by error feedback
const uint FB = 16u;                 // elements per feedback block (d is a multiple of 16)
shared float q_fb[FB * FB];          // [FB][FB] the block's own part of F
shared float q_err[FB];              // [FB] the block's rounding errors

// Error-feedback codes of the clamped row in q_x (ovk_int2_feedback_codes in
// runtime/int2_quant.c, bit for bit): element i is rounded by its group's thresholds once all
// earlier errors were taken out of it, then its error leaves the later elements. In blocks of
// FB elements: one thread rounds the block's elements in order, updating the rest of the block
// (F's block staged in shared memory, the block's x in registers), then every thread takes the
// block's errors, in the same order, out of its own later elements; each x_j so sees its
// updates in the order of the reference: 3 barriers a block instead of one an element. The
// one thread's loops have constant bounds (an update of an element at or before the one just
// rounded is dropped by a select) so that they unroll and xb stays in registers: with the
// inner loop starting at a + 1 the H200 kept xb in local memory and the flush took 3.3x as
// long; with registers it takes 0.54x as long as with x in shared memory (docs/performance.md).
// F: word offset of the head's [d][d].
void feedback_codes(uint F)
{
    const uint n = HEAD_DIM, tid = gl_LocalInvocationID.x;
    for (uint b0 = 0u; b0 < n; b0 += FB) {
        for (uint k = tid; k < FB * FB; k += WG) q_fb[k] = feedback[F + (b0 + k / FB) * n + b0 + k % FB];
        barrier();
        if (tid == 0u) {
            // the block's x in registers (constant indices once the loops are unrolled): each
            // element's rounding then waits on the one before through registers, not shared memory
            float xb[FB];
            for (uint b = 0u; b < FB; b++) xb[b] = q_x[b0 + b];
            for (uint a = 0u; a < FB; a++) {
                uint i = b0 + a;
                vec4 t = q_thr[i / GROUP];
                float x = xb[a];
                uint c = int2_code(x, t);
                q_code[i] = c;
                float mn = f16_bits_to_f32(q_param[i / GROUP] >> 16);
                precise float step = float(c) * t.w;
                precise float q = mn + step;
                precise float e = x - q;
                q_err[a] = e;
                for (uint b = 0u; b < FB; b++) { // constant bounds: unrolled, xb stays in registers
                    precise float u = e * q_fb[a * FB + b];
                    precise float y = xb[b] - u;
                    xb[b] = b > a ? y : xb[b];
                }
            }
            for (uint b = 0u; b < FB; b++) q_x[b0 + b] = xb[b]; // the targets, as the reference leaves x
        }
        barrier();
        for (uint j = b0 + FB + tid; j < n; j += WG) {
            float x = q_x[j];
            for (uint a = 0u; a < FB; a++) {
                precise float u = q_err[a] * feedback[F + (b0 + a) * n + j];
                precise float y = x - u;
                x = y;
            }
            q_x[j] = x;
        }
        barrier();
    }
}

// Word w of the packed codes chosen by feedback_codes.
uint feedback_code_word(uint w)
{
    uint word = 0u;
    for (uint k = 0u; k < 16u; k++) word |= q_code[16u * w + k] << (2u * k);
    return word;
}

shared float q_y[KV_MAX_HEAD_DIM];         // [d] the row before clipping (the refit's target)
shared float q_mc[KV_MAX_HEAD_DIM];        // [d] (M c)_j of the current codes
shared float q_m1[KV_MAX_HEAD_DIM];        // [d] (M 1)_j
shared uint q_best_code[KV_MAX_HEAD_DIM];  // [d] codes of the best grid so far
shared uint q_best_param;                  // its fp16 scale | min << 16
shared uint q_refit_go;                    // 1 while the rounds go on

// score(a, b) of oscar_int2_refit_row (int2_quant.h): larger is a smaller error
float refit_score(float a, float b, float m11, float m12, float m22, float r1, float r2)
{
    precise float ar = a * r1, br = b * r2, lin = ar + br, lin2 = lin + lin;
    precise float aa = a * a, q1 = aa * m11, ab = a * b, ab2 = ab + ab, q2 = ab2 * m12, bb = b * b, q3 = bb * m22;
    precise float s1 = lin2 - q1, s2 = s1 - q2, s3 = s2 - q3;
    return s3;
}

// 1/d (d > 0, normal) as ovk_int2_recip: an integer first guess, four Newton steps
float refit_recip(float d)
{
    float r = uintBitsToFloat(0x7EF311C3u - floatBitsToUint(d));
    for (int k = 0; k < 4; k++) {
        precise float t = d * r;
        precise float u = 2.0 - t;
        precise float v = r * u;
        r = v;
    }
    return r;
}

// Grid (params word) into q_param[0] and q_thr[0] as int2_quantize_row sets them.
void set_grid(uint param)
{
    float sc = f16_bits_to_f32(param & 0xFFFFu), mn = f16_bits_to_f32(param >> 16);
    precise float t0 = mn + 0.5 * sc;
    precise float t1 = mn + 1.5 * sc;
    precise float t2 = mn + 2.5 * sc;
    q_thr[0] = vec4(t0, t1, t2, sc);
    q_param[0] = param;
}

// oscar_int2_refit_row (runtime/int2_quant.c) bit for bit, for one group per row: q_code holds
// the clipped row's codes on the grid in q_param[0], q_y the row before clipping. Each round,
// every thread forms (M c)_j and (M 1)_j of its elements (M: the metric at word M, or the
// identity; (M 1)_j in the first round only), one thread sums, scores, solves and keeps the best; the new grid's codes follow
// (by feedback at word F when fb). Ends with the best codes in q_code and grid in q_param[0].
void refit_row(uint rounds, bool use_metric, uint M, bool fb, uint F)
{
    const uint n = HEAD_DIM, tid = gl_LocalInvocationID.x;
    float best = uintBitsToFloat(0xFF800000u); // -inf, thread 0's
    for (uint j = tid; j < n; j += WG) q_best_code[j] = q_code[j];
    if (tid == 0u) q_best_param = q_param[0];
    barrier();
    for (uint r = 0u; r < rounds; r++) {
        for (uint j = tid; j < n; j += WG) {
            if (use_metric) {
                precise float mc = 0.0, m1 = 0.0;
                for (uint i = 0u; i < n; i++) {
                    float m = metric[M + j * n + i];
                    precise float p = m * float(q_code[i]);
                    mc = mc + p;
                    if (r == 0u) m1 = m1 + m;
                }
                q_mc[j] = mc;
                if (r == 0u) q_m1[j] = m1; // M 1 does not change with the codes
            } else {
                q_mc[j] = float(q_code[j]);
                if (r == 0u) q_m1[j] = 1.0;
            }
        }
        barrier();
        if (tid == 0u) {
            precise float m11 = 0.0, m12 = 0.0, m22 = 0.0, r1 = 0.0, r2 = 0.0;
            for (uint j = 0u; j < n; j++) {
                float mc = q_mc[j], m1 = q_m1[j], y = q_y[j];
                precise float t22 = mc * float(q_code[j]), t1 = m1 * y, t2 = mc * y;
                m11 = m11 + m1;
                m12 = m12 + mc;
                m22 = m22 + t22;
                r1 = r1 + t1;
                r2 = r2 + t2;
            }
            uint cur = q_param[0];
            float s = refit_score(f16_bits_to_f32(cur >> 16), f16_bits_to_f32(cur & 0xFFFFu), m11, m12, m22, r1, r2);
            if (s > best) {
                best = s;
                q_best_param = cur;
                for (uint j = 0u; j < n; j++) q_best_code[j] = q_code[j];
            }
            precise float p11 = m11 * m22, p12 = m12 * m12, det = p11 - p12, lim = p11 * uintBitsToFloat(0x35800000u); // 2^-20
            uint go = 0u;
            if (det > lim) {
                float inv = refit_recip(det);
                precise float u1 = r1 * m22, u2 = r2 * m12, u3 = m11 * r2, u4 = m12 * r1;
                precise float na = u1 - u2, nb = u3 - u4, a = na * inv, b = nb * inv;
                uint min_h = f32_to_f16_bits(a), scale_h = f32_to_f16_bits(b);
                float bs = f16_bits_to_f32(scale_h);
                if (bs > 0.0) {
                    s = refit_score(f16_bits_to_f32(min_h), bs, m11, m12, m22, r1, r2);
                    if (s > best) {
                        best = s;
                        q_best_param = scale_h | (min_h << 16);
                        for (uint j = 0u; j < n; j++) q_best_code[j] = q_code[j];
                    }
                    set_grid(scale_h | (min_h << 16));
                    go = 1u;
                }
            }
            q_refit_go = go;
        }
        barrier();
        if (q_refit_go == 0u) break;
        if (fb) {
            for (uint j = tid; j < n; j += WG) q_x[j] = q_y[j];
            barrier();
            feedback_codes(F);
        } else {
            vec4 t = q_thr[0];
            for (uint j = tid; j < n; j += WG) {
                float x = q_y[j];
                q_code[j] = int2_code(x, t);
            }
            barrier();
        }
    }
    for (uint j = tid; j < n; j += WG) q_code[j] = q_best_code[j];
    if (tid == 0u) set_grid(q_best_param);
    barrier();
}

layout(push_constant) uniform Push { kv_flush_push pc; };

void main()
{
    const uint h = gl_WorkGroupID.y, kind = gl_WorkGroupID.z, tid = gl_LocalInvocationID.x;
    const float r = kind == 0u ? pc.clip_k : pc.clip_v;
    for (uint t = gl_WorkGroupID.x; t < pc.n_tokens; t += gl_NumWorkGroups.x) {
        kv_token_slot s = slots[t];
        uint src = s.src_row * KV_F16_PAGE_WORDS(N_KV, PAGE, HEAD_DIM) + kind * (N_KV * PAGE * HALF_D) +
                   (h * PAGE + s.src_slot) * HALF_D;
        barrier(); // the previous token's readers of q_x are done
        bool refit = pc.refit != 0u && GROUP == HEAD_DIM;
        for (uint w = tid; w < HALF_D; w += WG) {
            uint word = f16_pool[src + w];
            q_x[2u * w] = f16_bits_to_f32(word & 0xFFFFu);
            q_x[2u * w + 1u] = f16_bits_to_f32(word >> 16);
            if (refit) {
                q_y[2u * w] = q_x[2u * w];
                q_y[2u * w + 1u] = q_x[2u * w + 1u];
            }
        }
        barrier();
        int2_quantize_row(r);
        bool fb = kind == 0u && pc.key_feedback != 0u;
        if (fb) feedback_codes(pc.key_feedback == 2u ? h * HEAD_DIM * HEAD_DIM : 0u);
        if (refit) {
            if (!fb) {
                vec4 t = q_thr[0];
                for (uint j = tid; j < HEAD_DIM; j += WG) {
                    float x = q_x[j];
                    q_code[j] = int2_code(x, t);
                }
                barrier();
            }
            bool km = kind == 0u && pc.key_metric != 0u;
            refit_row(pc.refit, km, pc.key_metric == 2u ? h * HEAD_DIM * HEAD_DIM : 0u, fb,
                      pc.key_feedback == 2u ? h * HEAD_DIM * HEAD_DIM : 0u);
            fb = true; // the codes are in q_code
        }
        uint half_page = N_KV * PAGE * (CODE_WORDS + PARAM_WORDS); // K half, then V half
        uint base = s.dst_page * KV_INT2_PAGE_WORDS(N_KV, PAGE, HEAD_DIM, GROUP) + kind * half_page;
        uint codes = base + (h * PAGE + s.dst_slot) * CODE_WORDS;
        uint params = base + N_KV * PAGE * CODE_WORDS + (h * PAGE + s.dst_slot) * PARAM_WORDS;
        for (uint w = tid; w < CODE_WORDS; w += WG) int2_pool[codes + w] = fb ? feedback_code_word(w) : int2_code_word(w);
        for (uint g = tid; g < PARAM_WORDS; g += WG) int2_pool[params + g] = q_param[g];
    }
}
