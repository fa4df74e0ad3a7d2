/* The environment variables of the library, read in one place (vk_env.h). */
#include <stdlib.h>
#include <string.h>

#include "vk_env.h"

const ovk_env_row ovk_env_table[] = {
    { "OSCAR_DEVICE", "choose a device by index (1) or name substring (H200, llvmpipe)" },
    { "OSCAR_VALIDATION", "1: enable the Khronos validation layer; its messages are counted (tests fail on any)" },
    { "OSCAR_VULKAN_LIBRARY", "path of the Vulkan loader to use instead of libvulkan.so.1" },
    { "OSCAR_PROFILE", "1: GPU time per shader and host time per step phase, printed at context destruction; host: the host's only" },
    { "OSCAR_PIPELINE_STATS", "1: print each pipeline's compiler statistics (where the driver reports them) and each kernel choice" },
    { "OSCAR_SHADER_DIR", "development: load a pipeline's SPIR-V from DIR/NAME.spv when that file exists" },
    { "OSCAR_STEP_FLUSH", "a forward step goes to the GPU in parts growing N times (default 4); 0: one part" },
    { "OSCAR_MATVEC_F16", "1: single-token Q4_0/Q8_0 products in packed fp16 (faster, ~1e-7 relative error)" },
    { "OSCAR_MATMUL_COOPMAT", "0: prefill products in fp32; 1 or unset: on cooperative matrices where the device has them "
                              "(fp16 inputs, ~1e-7 relative error)" },
    { "OSCAR_MATMUL_SPLIT", "cooperative-matrix products: column slices of a short batch's product, 1 never splits (tuning; "
                            "default: per shape)" },
    { "OSCAR_MATVEC_Q8", "0: single-token products of the quant types in fp32; 1: with x in int8 (the default where integer "
                         "dot products are accelerated; it can flip a greedy near-tie)" },
    { "OSCAR_MATVEC_PLANES", "1: the products of Q4_0/Q4_1/Q8_0/Q4_K/Q6_K weights read weight planes by texel fetches (a second copy of "
                             "those weights; the default on CPU devices); 0: never" },
    { "OSCAR_ATTN_F16", "0: decode attention's fp32 fallback; 1: its packed-fp16 variant (the default where the device has fp16)" },
    { "OSCAR_ATTN_IDOT", "1: decode attention scores INT2 keys by integer dot products with q in two levels of int8 "
                         "(slower on an H100 today); 0 or unset: in fp32" },
    { "OSCAR_ATTN_CM_N", "16 or 8: decode attention on 16 x 16 x 16 or on 16 x 8 x 16 cooperative matrices (default: 8 where "
                         "the device lists it and a KV head has at most 8 query heads)" },
    { "OSCAR_ATTN_KERNEL", "chunked, stream, rows or coopmat: decode attention's kernel (default: rows on a CPU device, else chunked where it fits)" },
    { "OSCAR_ATTN_PREFILL", "0: prefill attention runs the decode kernel instead of the tiled prefill kernel; 1: the tiled kernel also where the rows kernel would take prefill (CPU devices); 2: the tiled fp32 kernel where the cooperative-matrix one would run" },
    { "OSCAR_ATTN_PREFILL_SPLIT", "cooperative-matrix prefill attention: 0 never splits a long walk over several workgroups; N: "
                                  "steps of any size split, a part holding at least N chunks (unset: steps of under 128 workgroups split, parts of 64)" },
    { "OSCAR_ATTN_PREFILL_PAIRS", "cooperative-matrix prefill attention: (row, query head) pairs a workgroup aims at, 16..128 (tuning; default 128)" },
    { "OSCAR_ATTN_WG", "decode attention workgroup size, 64..1024, a multiple of head_dim/4 (tuning)" },
    { "OSCAR_ATTN_KU", "decode attention: key tokens a lane (stream), thread (chunked) or invocation (rows) scores at once, or 16-token blocks a step (coopmat), 1..4 (tuning)" },
    { "OSCAR_ATTN_VE", "decode attention: INT2 value elements a lane sums, 4, 8 or 16 (tuning)" },
    { "OSCAR_ATTN_VU", "decode attention (chunked): INT2 and fp16 value tokens a lane loads at once, 1..16 (tuning; default 16 with integer-dot keys, else 8)" },
    { "OSCAR_ATTN_FKU", "decode attention: fp16 tile tokens per lane group, 1..8 (tuning)" },
    { "OSCAR_ATTN_PREFETCH", "decode attention: INT2 prefetch, 1 next tile's keys + 2 tile's values early (tuning; default 3)" },
    { "OSCAR_ATTN_TARGET_GROUPS", "workgroups a decode attention call aims for (tuning; default 256 chunked, 768 stream)" },
    { "OSCAR_ATTN_MIN_SPLIT", "fewest tokens of a decode attention item, a multiple of 64 (tuning)" },
    { "OSCAR_KV_ZONE_BYTES", "KV cache: cut each page pool into zones of at most this many bytes, as if the device's storage bindings were that small (testing; default: the device's limit)" },
    { "OSCAR_DISABLE_COOPMAT", "1: leave VK_KHR_cooperative_matrix off: no cooperative-matrix kernel runs" },
    { "OSCAR_DISABLE_INTEGER_DOT", "1: leave VK_KHR_shader_integer_dot_product off: int8 dot products run as scalar code" },
    { "OSCAR_DISABLE_F16", "1: leave shaderFloat16 off: every kernel computes in fp32" },
    { NULL, NULL },
};

static const char *text(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static int flag(const char *name)
{
    const char *v = text(name);
    return v && strcmp(v, "0") != 0;
}

/* a whole decimal number in [lo, hi], else `fallback` */
static long number(const char *name, long lo, long hi, long fallback)
{
    const char *v = text(name);
    if (!v) return fallback;
    char *end;
    long x = strtol(v, &end, 10);
    return *end == '\0' && x >= lo && x <= hi ? x : fallback;
}

void ovk_env_read(ovk_env *env)
{
    memset(env, 0, sizeof *env);
    env->validation = flag("OSCAR_VALIDATION");
    env->device = text("OSCAR_DEVICE");
    const char *profile = text("OSCAR_PROFILE");
    env->profile = !flag("OSCAR_PROFILE") ? 0 : strcmp(profile, "host") == 0 ? 2 : 1;
    env->pipeline_stats = flag("OSCAR_PIPELINE_STATS");
    env->shader_dir = text("OSCAR_SHADER_DIR");
    env->step_flush = (int)number("OSCAR_STEP_FLUSH", 0, 1 << 20, -1);
    env->matvec_f16 = flag("OSCAR_MATVEC_F16");
    env->matmul_coopmat = (int)number("OSCAR_MATMUL_COOPMAT", 0, 1, -1);
    env->matmul_split = (uint32_t)number("OSCAR_MATMUL_SPLIT", 1, 256, 0);
    env->matvec_q8 = (int)number("OSCAR_MATVEC_Q8", 0, 1, -1);
    env->matvec_planes = (int)number("OSCAR_MATVEC_PLANES", 0, 1, -1);
    env->attn_wg = (uint32_t)number("OSCAR_ATTN_WG", 64, 1024, 0);
    env->attn_ku = (uint32_t)number("OSCAR_ATTN_KU", 1, 4, 0);
    long ve = number("OSCAR_ATTN_VE", 4, 16, 0);
    env->attn_ve = ve == 4 || ve == 8 || ve == 16 ? (uint32_t)ve : 0;
    env->attn_fku = (uint32_t)number("OSCAR_ATTN_FKU", 1, 8, 0);
    env->attn_prefetch = (int)number("OSCAR_ATTN_PREFETCH", 0, 3, -1);
    env->attn_target_groups = (uint32_t)number("OSCAR_ATTN_TARGET_GROUPS", 1, (1l << 20) - 1, 0);
    long ms = number("OSCAR_ATTN_MIN_SPLIT", 64, 65536, 0);
    env->attn_min_split = ms % 64 == 0 ? (uint32_t)ms : 0;
    env->attn_f16 = (int)number("OSCAR_ATTN_F16", 0, 1, -1);
    env->attn_idot = (int)number("OSCAR_ATTN_IDOT", 0, 1, -1);
    env->attn_vu = (uint32_t)number("OSCAR_ATTN_VU", 1, 16, 0);
    long cm_n = number("OSCAR_ATTN_CM_N", 8, 16, 0);
    env->attn_cm_n = cm_n == 8 || cm_n == 16 ? (uint32_t)cm_n : 0;
    const char *kernel = text("OSCAR_ATTN_KERNEL");
    env->attn_kernel = !kernel ? -1 : !strcmp(kernel, "chunked") ? 0 : !strcmp(kernel, "stream") ? 1 : !strcmp(kernel, "rows") ? 2 : !strcmp(kernel, "coopmat") ? 3 : -1;
    env->attn_prefill = (int)number("OSCAR_ATTN_PREFILL", 0, 2, -1);
    env->attn_prefill_split = (int)number("OSCAR_ATTN_PREFILL_SPLIT", 0, 1 << 20, -1);
    env->attn_prefill_pairs = (uint32_t)number("OSCAR_ATTN_PREFILL_PAIRS", 16, 128, 0);
    env->kv_zone_bytes = (uint64_t)number("OSCAR_KV_ZONE_BYTES", 1, 1l << 40, 0);
    env->disable_coopmat = flag("OSCAR_DISABLE_COOPMAT");
    env->disable_integer_dot = flag("OSCAR_DISABLE_INTEGER_DOT");
    env->disable_f16 = flag("OSCAR_DISABLE_F16");
}
