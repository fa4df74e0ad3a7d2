/* Random paged KV caches for the attention kernel tests (test_attn_decode, test_attn_prefill):
 * host pools and page tables in the layout of shaders/common/kv_layout.h, with sequence
 * lengths at every window and page boundary, flush points anywhere (natural, random, all,
 * none), shuffled physical pages, every third sequence a fork sharing half of its parent's
 * pages, random INT2 codes and params (one all-equal group per row where d/G > 1), fp16
 * values with outliers (their fp32 originals kept for exact references), and every slot no
 * sequence owns poisoned with fp16 NaNs. The rows (queries) are the caller's. */
#ifndef OSCAR_TEST_ATTN_SCENE_H
#define OSCAR_TEST_ATTN_SCENE_H

#include <stddef.h>
#include <stdint.h>

#include "attn_ref.h"
#include "vk_context.h"

#define ATTN_SCENE_POISON 0x7E007E00u /* two fp16 NaNs */

typedef struct attn_scene_shape {
    uint32_t mode, d, G, P, nkv; /* KV_MODE_*, head_dim, group, page tokens, KV heads */
    uint32_t sink, recent;       /* window sizes (int2 modes) */
    float mn_mul;                /* INT2 min magnitude: large mins with small scales cancel */
    uint32_t long_len;           /* nonzero: one sequence of this length instead of the boundary list */
} attn_scene_shape;

/* One generated cache: host pools/tables in kv_layout.h format plus fp32 originals. */
typedef struct attn_scene {
    attn_scene_shape shape;          /* what it was built for */
    uint32_t n_seq, n_int2_pages, n_f16_pages, max_int2_pages, max_f16_pages;
    uint32_t *len, *sink, *flushed;  /* [n_seq] */
    int32_t *int2_table, *f16_table; /* [n_seq][max_*_pages] */
    uint32_t *int2_pool, *f16_pool;  /* [pages][page words] */
    float *f16_orig;                 /* [f16 pages][2][NKV][P][d] fp32 values before rounding */
    uint32_t n_rows;                 /* rows: filled by the caller (attn_scene_free frees them) */
    uint32_t *row_seq, *row_n;       /* [n_rows] */
} attn_scene;

/* Sequences, flush points, tables and pools for shape c (test_rng draws). */
void attn_scene_build(const attn_scene_shape *c, attn_scene *s);
void attn_scene_free(attn_scene *s);
/* 1 when position p of sequence seq is stored in INT2. */
int attn_scene_is_int2(const attn_scene_shape *c, const attn_scene *s, uint32_t seq, uint32_t p);
/* n_rot random d x d matrices (N(0, 1/d) entries: not symmetric, so a transposed use fails),
 * malloc'ed. */
float *attn_scene_random_rv(uint32_t n_rot, uint32_t d);
/* out [n_rows][n_head][d] <- out·R_Vᵀ per head, in double: R = rot[(h / gqa)] when per_head,
 * else rot[0]. What the kernels apply after attention in the rotated modes. */
void attn_scene_unrotate(float *out, uint32_t n_rows, uint32_t n_head, uint32_t gqa, uint32_t d, const float *rot,
                         int per_head);

/* Centering vectors [K,V][n_kv][d] (OSCAR mode): normal values times 2; caller frees. */
float *attn_scene_random_means(uint32_t n_kv, uint32_t d);

/* out[row][h] += mean_v[h / gqa] for out [n_rows][n_head][d]: the value offset the OSCAR mode's
 * attention adds back after o·R_Vᵀ. */
void attn_scene_add_mean_v(float *out, uint32_t n_rows, uint32_t n_head, uint32_t gqa, uint32_t d, const float *mean_v);
/* Queries for the rows: [n_rows][n_head][d] normal values times q_mul, malloc'ed. */
float *attn_scene_random_q(const attn_scene *s, uint32_t n_head, float q_mul);

/* The cache as the C reference reads it (no key centers): views of s's tables and pools. */
attn_ref_cache attn_scene_ref_cache(const attn_scene *s);

/* The cache on the device: pools (with 16 spare bytes each) and page tables, bound as the
 * attention kernels bind them. */
typedef struct attn_scene_buffers {
    ovk_buffer int2_pool, f16_pool, int2_table, f16_table;
} attn_scene_buffers;
oscar_status attn_scene_upload(oscar_context *ctx, const attn_scene *s, attn_scene_buffers *b);
void attn_scene_buffers_destroy(oscar_context *ctx, attn_scene_buffers *b);

/* The reference output out [n_rows][n_kv * gqa][d] (in the stored basis) turned into what the
 * kernels return: o·R_Vᵀ in the rotated modes (rot, per_head: as attn_scene_unrotate), and
 * μ_V added in OSCAR mode (means: attn_scene_random_means's [K,V][n_kv][d]). */
void attn_scene_kernel_output(const attn_scene *s, float *out, uint32_t gqa, const float *rot, int per_head,
                              const float *means);

/* Records the pipeline twice in one submission with out poisoned in between (the second call
 * must write all of it) and waits. */
oscar_status attn_scene_run_twice(oscar_context *ctx, const ovk_pipeline *p, const ovk_binding *bindings,
                                  const void *push, const uint32_t grid[3], const ovk_buffer *out);

/* Normalised squared error of got against want [n]; *bad counts got's non-finite values. A
 * non-finite value in want fails the test (`name` says which case). */
double attn_scene_nse(const char *name, const float *got, const float *want, size_t n, size_t *bad);

/* Uniform in [0, n) (0 for n = 0). */
uint32_t attn_scene_rng_below(uint32_t n);

#endif
