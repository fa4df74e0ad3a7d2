/* Test hooks of the KV cache (kv_snapshot.c): its device state copied to host memory for the C
 * attention reference. In the reference library, not in liboscar. */
#ifndef OVK_KV_SNAPSHOT_H
#define OVK_KV_SNAPSHOT_H

#include "attn_ref.h"
#include "kv_cache.h"

/* Test hook: copies layer `layer`'s pools and the page tables to host memory and describes
 * them for the C attention reference (attn_ref.h), with each sequence's INT2 boundary as the
 * attention of the open step sees it. Free with ovk_kv_snapshot_free. */
oscar_status ovk_kv_snapshot(oscar_kv_cache *c, uint32_t layer, struct attn_ref_cache *out);
void ovk_kv_snapshot_free(struct attn_ref_cache *snap);
/* The rotations of a layer as the cache applies them: [n_rot][d][d] each (NULL allowed). */
oscar_status ovk_kv_rotations(oscar_kv_cache *c, uint32_t layer, float *rot_k, float *rot_v, uint32_t *n_rot);

#endif
