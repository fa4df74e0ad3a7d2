#version 450
// Flush tokens from fp16 pages into INT2 pages (kv_layout.h): per token, KV head and K/V, read
// the fp16 row, clip at the r-quantile of |x|, quantize per group of G with fp16 min/scale,
// pack 16 codes per word; K codes by error feedback when the push constant asks for it.
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

shared uint q_code[KV_MAX_HEAD_DIM]; // [d] codes chosen by error feedback
const uint FB = 16u;                 // elements per feedback block (d is a multiple of 16)
shared float q_fb[FB * FB];          // [FB][FB] the block's own part of F
shared float q_err[FB];              // [FB] the block's rounding errors

// Error-feedback codes of the clamped row in q_x (oscar_int2_feedback_codes in
// runtime/int2_quant.c, bit for bit): element i is rounded by its group's thresholds once all
// earlier errors were taken out of it, then its error leaves the later elements. In blocks of
// FB elements: one thread rounds the block's elements in order, updating the rest of the block
// (F's block staged in shared memory), then every thread takes the block's errors, in the
// same order, out of its own later elements; each x_j so sees its updates in the order of the
// reference: 3 barriers a block instead of one an element. F: word offset of the head's [d][d].
void feedback_codes(uint F)
{
    const uint n = HEAD_DIM, tid = gl_LocalInvocationID.x;
    for (uint b0 = 0u; b0 < n; b0 += FB) {
        for (uint k = tid; k < FB * FB; k += WG) q_fb[k] = feedback[F + (b0 + k / FB) * n + b0 + k % FB];
        barrier();
        if (tid == 0u) {
            for (uint a = 0u; a < FB; a++) {
                uint i = b0 + a;
                vec4 t = q_thr[i / GROUP];
                float x = q_x[i];
                uint c = t.w == 0.0 ? 0u : (x >= t.x ? 1u : 0u) + (x >= t.y ? 1u : 0u) + (x >= t.z ? 1u : 0u);
                q_code[i] = c;
                float mn = f16_bits_to_f32(q_param[i / GROUP] >> 16);
                precise float step = float(c) * t.w;
                precise float q = mn + step;
                precise float e = x - q;
                q_err[a] = e;
                for (uint b = a + 1u; b < FB; b++) {
                    precise float u = e * q_fb[a * FB + b];
                    precise float y = q_x[b0 + b] - u;
                    q_x[b0 + b] = y;
                }
            }
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
        for (uint w = tid; w < HALF_D; w += WG) {
            uint word = f16_pool[src + w];
            q_x[2u * w] = f16_bits_to_f32(word & 0xFFFFu);
            q_x[2u * w + 1u] = f16_bits_to_f32(word >> 16);
        }
        barrier();
        int2_quantize_row(r);
        bool fb = kind == 0u && pc.key_feedback != 0u;
        if (fb) feedback_codes(pc.key_feedback == 2u ? h * HEAD_DIM * HEAD_DIM : 0u);
        uint half_page = N_KV * PAGE * (CODE_WORDS + PARAM_WORDS); // K half, then V half
        uint base = s.dst_page * KV_INT2_PAGE_WORDS(N_KV, PAGE, HEAD_DIM, GROUP) + kind * half_page;
        uint codes = base + (h * PAGE + s.dst_slot) * CODE_WORDS;
        uint params = base + N_KV * PAGE * CODE_WORDS + (h * PAGE + s.dst_slot) * PARAM_WORDS;
        for (uint w = tid; w < CODE_WORDS; w += WG) int2_pool[codes + w] = fb ? feedback_code_word(w) : int2_code_word(w);
        for (uint g = tid; g < PARAM_WORDS; g += WG) int2_pool[params + g] = q_param[g];
    }
}
