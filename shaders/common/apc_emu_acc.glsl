// The accumulator of the attention kernels' emulated matrix operations (APC_EMULATE in
// common/attn_prefill_cm_ops.glsl and common/attn_decode_cm8_ops.glsl) and the operation macros
// both spell alike: the includer declares APC_ELEMS, the elements of an accumulator (256 for
// 16 x 16, 128 for 8 x 16), in rows of 16, and defines apc_qa, apc_qk and apc_pv.
// A lane holds elements i = lane + e * gl_SubgroupSize; element i is row i / 16, column i % 16,
// at off + row * stride + column of ss when stored or loaded.
#ifndef OSCAR_APC_EMU_ACC_GLSL
#define OSCAR_APC_EMU_ACC_GLSL

#define APC_UNROLL
#define APC_ACC apc_acc
#define APC_ZERO apc_zero()
#define APC_QA apc_qa
#define APC_QK(acc, qa, b) acc = apc_qk(qa, b, acc)
#define APC_PV(acc, a, b) acc = apc_pv(a, b, acc)
#define APC_STORE(acc, off, stride) apc_store(acc, off, stride)
#define APC_LOAD(acc, off, stride) acc = apc_load(off, stride)

const uint APC_E = APC_ELEMS / 4u; // elements a lane holds at most (subgroups of 4 lanes or more)
struct apc_acc {
    float e[APC_E];
};

apc_acc apc_zero()
{
    apc_acc c;
    for (uint e = 0u; e < APC_E; e++) c.e[e] = 0.0;
    return c;
}

void apc_store(apc_acc c, uint off, uint stride)
{
    for (uint e = 0u; e < APC_E; e++) {
        uint i = gl_SubgroupInvocationID + e * gl_SubgroupSize;
        if (i < APC_ELEMS) ss[off + (i / 16u) * stride + i % 16u] = c.e[e];
    }
}

apc_acc apc_load(uint off, uint stride)
{
    apc_acc c = apc_zero();
    for (uint e = 0u; e < APC_E; e++) {
        uint i = gl_SubgroupInvocationID + e * gl_SubgroupSize;
        if (i < APC_ELEMS) c.e[e] = ss[off + (i / 16u) * stride + i % 16u];
    }
    return c;
}

#endif
