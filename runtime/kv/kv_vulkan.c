/* The KV cache on an application's buffers (include/oscar/vulkan.h): checks each buffer range
 * against the step's layout, then records the same append, attention and flush as the
 * host-pointer calls of kv_step.c into the application's command buffer (its descriptor sets
 * in the cache's ext_cmd). */
#include <string.h>

#include "kv_cache_impl.h"
#include "oscar/vulkan.h"

static oscar_status check_cache(const oscar_kv_cache *c, VkCommandBuffer cb, const char *op)
{
    if (!c || !cb) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: NULL cache or command buffer", op);
    if (!c->ctx->external)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: the cache's context was not created by oscar_vk_context_create",
                           op);
    if (!c->book.plan.active) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "%s outside a step (call oscar_kv_step_begin)", op);
    if (c->ext_flushed) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "%s after oscar_vk_kv_flush in the same step", op);
    return OSCAR_OK;
}

/* Checks that `b` holds the step's [T][heads][head_dim] tensor of an allowed type and wraps it
 * as a binding of exactly those bytes (wrap lives in the caller's frame: descriptors are
 * written while recording). */
static oscar_status bind(const oscar_kv_cache *c, const oscar_vk_buffer *b, uint32_t heads, int f16_ok, const char *op,
                         const char *name, ovk_buffer *wrap, ovk_binding *out)
{
    if (!b || !b->buffer) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", op, name);
    if (b->type != OSCAR_VK_F32 && !(f16_ok && b->type == OSCAR_VK_F16))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: %s.type %d is not %s", op, name, (int)b->type,
                           f16_ok ? "OSCAR_VK_F32 or OSCAR_VK_F16" : "OSCAR_VK_F32");
    uint64_t align = c->ctx->limits.minStorageBufferOffsetAlignment;
    if (align < 4) align = 4;
    if (b->offset % align)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: %s.offset %llu is not a multiple of %llu (the device's "
                           "minStorageBufferOffsetAlignment, at least 4)", op, name, (unsigned long long)b->offset,
                           (unsigned long long)align);
    uint32_t T = c->book.plan.n_tokens;
    uint64_t bytes = (uint64_t)T * heads * c->p.head_dim * (b->type == OSCAR_VK_F16 ? 2 : 4);
    if (b->size < bytes)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: %s.size is %llu bytes; the step's %u tokens x %u heads x %u "
                           "dims need %llu", op, name, (unsigned long long)b->size, T, heads, c->p.head_dim,
                           (unsigned long long)bytes);
    memset(wrap, 0, sizeof *wrap);
    wrap->buffer = b->buffer;
    wrap->size = b->offset + bytes;
    *out = (ovk_binding){ wrap, b->offset, bytes };
    return OSCAR_OK;
}

/* The checks both record calls begin with: the cache and cb, then the step's tensors a and b of
 * [T][heads][head_dim] each (k and v may be fp16, q and out not). */
static oscar_status bind_pair(const oscar_kv_cache *c, VkCommandBuffer cb, const char *op, const oscar_vk_buffer *a,
                              const oscar_vk_buffer *b, const char *const names[2], int kv, ovk_buffer wrap[2],
                              ovk_binding bound[2])
{
    oscar_status st = check_cache(c, cb, op);
    uint32_t heads = st == OSCAR_OK ? (kv ? c->p.n_kv_head : c->p.n_head) : 0;
    if (st == OSCAR_OK) st = bind(c, a, heads, kv, op, names[0], &wrap[0], &bound[0]);
    if (st == OSCAR_OK) st = bind(c, b, heads, kv, op, names[1], &wrap[1], &bound[1]);
    return st;
}

OSCAR_API oscar_status oscar_vk_kv_append(oscar_kv_cache *c, VkCommandBuffer cb, uint32_t layer, const oscar_vk_buffer *k,
                                         const oscar_vk_buffer *v)
{
    static const char *const names[2] = { "k", "v" };
    ovk_buffer wrap[2];
    ovk_binding kv[2];
    const char *op = "oscar_vk_kv_append";
    oscar_status st = bind_pair(c, cb, op, k, v, names, 1, wrap, kv);
    if (st != OSCAR_OK) return st;
    if (k->type != v->type) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: k and v have different types", op);
    ovk_cmd_adopt(&c->ext_cmd, cb);
    st = ovk_kv_record_append(c, &c->ext_cmd, layer, &kv[0], &kv[1], k->type == OSCAR_VK_F16);
    c->ext_cmd.recording = 0;
    return st;
}

OSCAR_API oscar_status oscar_vk_kv_attention(oscar_kv_cache *c, VkCommandBuffer cb, uint32_t layer,
                                            const oscar_vk_buffer *q, const oscar_vk_buffer *out)
{
    static const char *const names[2] = { "q", "out" };
    ovk_buffer wrap[2];
    ovk_binding qo[2];
    const char *op = "oscar_vk_kv_attention";
    oscar_status st = bind_pair(c, cb, op, q, out, names, 0, wrap, qo);
    if (st != OSCAR_OK) return st;
    if (q->buffer == out->buffer && q->offset < out->offset + qo[1].range && out->offset < q->offset + qo[0].range)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: out overlaps q", op);
    ovk_cmd_adopt(&c->ext_cmd, cb);
    st = ovk_kv_record_attention(c, &c->ext_cmd, layer, &qo[0], &qo[1]);
    c->ext_cmd.recording = 0;
    return st;
}

OSCAR_API oscar_status oscar_vk_kv_flush(oscar_kv_cache *c, VkCommandBuffer cb)
{
    oscar_status st = OSCAR_OK;
    OSCAR_TRY(check_cache(c, cb, "oscar_vk_kv_flush"));
    ovk_cmd_adopt(&c->ext_cmd, cb);
    st = ovk_kv_record_flushes(c, &c->ext_cmd, 1);
    c->ext_cmd.recording = 0;
    if (st == OSCAR_OK) c->ext_flushed = 1;
fail:
    return st;
}
