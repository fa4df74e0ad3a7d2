/* Every environment variable the library reads, read once when a context is created into one
 * struct (ovk_env), and listed with its effect in one table (vk_env.c). A variable that is
 * unset or malformed leaves the built-in default. OSCAR_VULKAN_LIBRARY alone is read earlier,
 * when the loader is opened, since no context exists yet. */
#ifndef OVK_VK_ENV_H
#define OVK_VK_ENV_H

#include <stdint.h>

typedef struct ovk_env {
    int validation;          /* OSCAR_VALIDATION: 1 enables the Khronos validation layer */
    const char *device;      /* OSCAR_DEVICE: index or name substring; NULL: the params' choice */
    int profile;             /* OSCAR_PROFILE: 0 off, 1 GPU and host times, 2 host times only */
    int pipeline_stats;      /* OSCAR_PIPELINE_STATS: 1 prints compiler statistics and kernel choices */
    const char *shader_dir;  /* OSCAR_SHADER_DIR: SPIR-V overrides (development); NULL: none */
    int step_flush;          /* OSCAR_STEP_FLUSH: growth of a step's submitted parts; -1: default */
    int matvec_f16;          /* OSCAR_MATVEC_F16: 1 runs single-token products in packed fp16 */
    int matmul_coopmat;      /* OSCAR_MATMUL_COOPMAT: 1 runs batched products on cooperative matrices; 0, -1: fp32 */
    uint32_t matmul_split;   /* OSCAR_MATMUL_SPLIT: column slices of a cooperative-matrix product; 0: per shape */
    int matvec_q8;           /* OSCAR_MATVEC_Q8: 1/0 forces the int8 single-token products on/off; -1 unset */
    int matvec_planes;       /* OSCAR_MATVEC_PLANES: 1/0 forces the texel-fetch products over weight planes on/off; -1 unset */
    /* decode attention tuning (0 or -1: the cache's default) */
    uint32_t attn_wg;        /* OSCAR_ATTN_WG: workgroup size of attn_decode, 64..1024 */
    uint32_t attn_ku;        /* OSCAR_ATTN_KU: INT2 key tokens a lane scores per tile, 1..4 */
    uint32_t attn_ve;        /* OSCAR_ATTN_VE: INT2 value elements a lane sums, 4, 8 or 16 */
    uint32_t attn_fku;       /* OSCAR_ATTN_FKU: fp16 tile tokens per lane group, 1..8 */
    int attn_prefetch;       /* OSCAR_ATTN_PREFETCH: INT2 tile prefetch bits 0..3; -1: default */
    uint32_t attn_target_groups; /* OSCAR_ATTN_TARGET_GROUPS: workgroups a call aims for */
    uint32_t attn_min_split; /* OSCAR_ATTN_MIN_SPLIT: fewest tokens of an item, a multiple of 64 */
    int attn_kernel;         /* OSCAR_ATTN_KERNEL: chunked (0), stream (1), rows (2) or coopmat (3) decode
                              * attention; -1: the picker's */
    int attn_f16;            /* OSCAR_ATTN_F16: 0 forces decode attention's fp32 fallback, 1 packed fp16 where
                              * the device has it; -1: the picker's choice */
    uint32_t attn_vu;        /* OSCAR_ATTN_VU: chunked decode attention's value tokens a lane loads at once */
    uint32_t attn_cm_n;      /* OSCAR_ATTN_CM_N: 16 or 8, the cooperative-matrix decode kernel's N; 0: the picker's */
    int attn_idot;           /* OSCAR_ATTN_IDOT: 1 integer dot products for INT2 key scores where enabled; 0 or
                              * -1 (unset): fp32 */
    int attn_prefill;        /* OSCAR_ATTN_PREFILL: 0 runs prefill through the decode kernel; 1 the tiled
                              * kernel on CPU devices too; 2 the fp32 tiled kernel instead of the
                              * cooperative-matrix one; -1 (unset): the device's default */
    int attn_prefill_split;  /* OSCAR_ATTN_PREFILL_SPLIT: 0 never splits a prefill walk; N >= 1 chunks a part of
                              * a split walk holds at least, steps of any size splitting; -1 (unset): the
                              * cache's default (kv_cache_impl.h, ATTN_PF_SPLIT_BELOW) */
    uint32_t attn_prefill_pairs; /* OSCAR_ATTN_PREFILL_PAIRS: (row, query head) pairs a cooperative-matrix prefill
                              * workgroup aims at, 16..128; 0 (unset): OVK_ATTN_PF_CM_PAIRS */
    uint64_t kv_zone_bytes;  /* OSCAR_KV_ZONE_BYTES: page-pool zones at most this large (testing); 0: the device's binding */
    /* fallbacks forced (each optional feature only speeds things up) */
    int disable_coopmat;     /* OSCAR_DISABLE_COOPMAT: VK_KHR_cooperative_matrix stays off */
    int disable_integer_dot; /* OSCAR_DISABLE_INTEGER_DOT: VK_KHR_shader_integer_dot_product stays off */
    int disable_f16;         /* OSCAR_DISABLE_F16: shaderFloat16 stays off */
} ovk_env;

/* Reads every variable of the table into *env. */
void ovk_env_read(ovk_env *env);

/* The table: name and effect of each variable, NULL-terminated (oscar-info --env prints it). */
typedef struct ovk_env_row {
    const char *name, *effect;
} ovk_env_row;
extern const ovk_env_row ovk_env_table[];

#endif
