/* Buffers: one VkDeviceMemory per buffer (the runtime makes few, large ones: weight arenas,
 * cache page pools), staging uploads and downloads through the context's stream. */
#include <string.h>

#include "vk_context.h"

static int find_memory_type(const oscar_context *ctx, uint32_t type_bits, VkMemoryPropertyFlags want)
{
    for (uint32_t i = 0; i < ctx->mem_props.memoryTypeCount; i++)
        if ((type_bits & (1u << i)) && (ctx->mem_props.memoryTypes[i].propertyFlags & want) == want) return (int)i;
    return -1;
}

oscar_status ovk_buffer_create(oscar_context *ctx, VkDeviceSize size, ovk_buffer_kind kind, ovk_buffer *out)
{
    oscar_status st = OSCAR_OK;
    memset(out, 0, sizeof *out);
    if (size == 0) size = 4; /* a zero-sized VkBuffer is invalid; keep callers simple */
    VkBufferCreateInfo bci = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = ovk_texel_bytes(size), /* whole texels, so a texel view reaches the last bytes */
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                 (ctx->texel_buffers ? VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT : 0),
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    OSCAR_VK(ctx->vk.vkCreateBuffer(ctx->device, &bci, NULL, &out->buffer));
    VkMemoryRequirements req;
    ctx->vk.vkGetBufferMemoryRequirements(ctx->device, out->buffer, &req);

    int type = -1;
    switch (kind) {
    case OSCAR_BUFFER_DEVICE:
        type = find_memory_type(ctx, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
        break;
    case OSCAR_BUFFER_STAGING:
        type = find_memory_type(ctx, req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
        break;
    case OSCAR_BUFFER_READBACK:
        type = find_memory_type(ctx, req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
        if (type < 0) type = find_memory_type(ctx, req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
        break;
    }
    if (type < 0 && kind == OSCAR_BUFFER_DEVICE) type = find_memory_type(ctx, req.memoryTypeBits, 0);
    if (type < 0) OSCAR_FAIL(OSCAR_ERROR_MISSING_FEATURE, "no suitable memory type for a buffer of kind %d", (int)kind);

    VkMemoryAllocateInfo mai = { .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                                 .memoryTypeIndex = (uint32_t)type };
    VkResult r = ctx->vk.vkAllocateMemory(ctx->device, &mai, NULL, &out->memory);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
        OSCAR_FAIL(OSCAR_ERROR_OUT_OF_DEVICE_MEMORY, "cannot allocate %llu bytes of %s memory",
                   (unsigned long long)req.size, kind == OSCAR_BUFFER_DEVICE ? "device" : "host-visible");
    OSCAR_VK(r);
    OSCAR_VK(ctx->vk.vkBindBufferMemory(ctx->device, out->buffer, out->memory, 0));
    out->size = size;
    out->memory_type = (uint32_t)type;
    VkMemoryPropertyFlags flags = ctx->mem_props.memoryTypes[type].propertyFlags;
    out->host_coherent = (flags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
    if (flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
        OSCAR_VK(ctx->vk.vkMapMemory(ctx->device, out->memory, 0, VK_WHOLE_SIZE, 0, &out->mapped));
    return OSCAR_OK;
fail:
    ovk_buffer_destroy(ctx, out);
    return st;
}

oscar_status ovk_buffer_texel_view(oscar_context *ctx, const ovk_buffer *b, VkDeviceSize offset, VkDeviceSize range,
                                   VkBufferView *out)
{
    oscar_status st = OSCAR_OK;
    ovk_buffer *cache = (ovk_buffer *)b; /* the view cache only: see vk_context.h */
    int free_slot = -1;
    for (int i = 0; i < OVK_BUFFER_VIEWS; i++) {
        if (b->views[i] && b->view_offset[i] == offset && b->view_range[i] == range) {
            *out = b->views[i];
            return OSCAR_OK;
        }
        if (!b->views[i] && free_slot < 0) free_slot = i;
    }
    if (!ctx->texel_buffers || offset % ctx->limits.minTexelBufferOffsetAlignment || range == 0 || range % 16 ||
        offset + range > ovk_texel_bytes(b->size) || range / 16 > ctx->limits.maxTexelBufferElements)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "texel view of bytes %llu..+%llu of a %llu-byte buffer: needs "
                           "R32G32B32A32_UINT texel buffers, an offset aligned to %llu, whole 16-byte texels, at most %u",
                           (unsigned long long)offset, (unsigned long long)range, (unsigned long long)b->size,
                           (unsigned long long)ctx->limits.minTexelBufferOffsetAlignment, ctx->limits.maxTexelBufferElements);
    if (free_slot < 0)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "a buffer bound as more than %d texel ranges", OVK_BUFFER_VIEWS);
    VkBufferViewCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO, .buffer = b->buffer,
                                  .format = VK_FORMAT_R32G32B32A32_UINT, .offset = offset, .range = range };
    OSCAR_VK(ctx->vk.vkCreateBufferView(ctx->device, &ci, NULL, &cache->views[free_slot]));
    cache->view_offset[free_slot] = offset;
    cache->view_range[free_slot] = range;
    *out = b->views[free_slot];
fail:
    return st;
}

void ovk_buffer_destroy(oscar_context *ctx, ovk_buffer *buf)
{
    if (!ctx || !buf) return;
    for (int i = 0; i < OVK_BUFFER_VIEWS; i++)
        if (buf->views[i]) ctx->vk.vkDestroyBufferView(ctx->device, buf->views[i], NULL);
    if (buf->buffer) ctx->vk.vkDestroyBuffer(ctx->device, buf->buffer, NULL);
    if (buf->memory) ctx->vk.vkFreeMemory(ctx->device, buf->memory, NULL);
    memset(buf, 0, sizeof *buf);
}

/* Staging chunk: large transfers go through in pieces of this many bytes. */
#define STAGING_BYTES (16u << 20)

static oscar_status ensure_staging(oscar_context *ctx)
{
    if (ctx->staging.buffer) return OSCAR_OK;
    return ovk_buffer_create(ctx, STAGING_BYTES, OSCAR_BUFFER_STAGING, &ctx->staging);
}

static oscar_status check_range(const ovk_buffer *buf, VkDeviceSize offset, size_t bytes, const char *what)
{
    if (!buf || !buf->buffer || offset > buf->size || bytes > buf->size - offset)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: range [%llu, +%zu) outside a buffer of %llu bytes", what,
                           (unsigned long long)offset, bytes, buf ? (unsigned long long)buf->size : 0ull);
    return OSCAR_OK;
}

oscar_status ovk_buffer_upload(oscar_context *ctx, ovk_buffer *dst, VkDeviceSize offset, const void *src, size_t bytes)
{
    oscar_status st = check_range(dst, offset, bytes, "ovk_buffer_upload");
    if (st != OSCAR_OK || bytes == 0) return st;
    if (dst->mapped && dst->host_coherent) {
        memcpy((char *)dst->mapped + offset, src, bytes);
        return OSCAR_OK;
    }
    OSCAR_TRY(ensure_staging(ctx));
    for (size_t done = 0; done < bytes;) {
        size_t n = bytes - done < STAGING_BYTES ? bytes - done : STAGING_BYTES;
        memcpy(ctx->staging.mapped, (const char *)src + done, n);
        OSCAR_TRY(ovk_cmd_begin(ctx, &ctx->cmd));
        ovk_cmd_copy(ctx, &ctx->cmd, &ctx->staging, 0, dst, offset + done, n);
        OSCAR_TRY(ovk_cmd_submit_wait(ctx, &ctx->cmd));
        done += n;
    }
fail:
    return st;
}

oscar_status ovk_buffer_download(oscar_context *ctx, const ovk_buffer *src, VkDeviceSize offset, void *dst, size_t bytes)
{
    oscar_status st = check_range(src, offset, bytes, "ovk_buffer_download");
    if (st != OSCAR_OK || bytes == 0) return st;
    if (src->mapped && src->host_coherent) {
        memcpy(dst, (const char *)src->mapped + offset, bytes);
        return OSCAR_OK;
    }
    OSCAR_TRY(ensure_staging(ctx));
    for (size_t done = 0; done < bytes;) {
        size_t n = bytes - done < STAGING_BYTES ? bytes - done : STAGING_BYTES;
        OSCAR_TRY(ovk_cmd_begin(ctx, &ctx->cmd));
        ovk_cmd_copy(ctx, &ctx->cmd, src, offset + done, &ctx->staging, 0, n);
        ovk_cmd_host_barrier(ctx, &ctx->cmd);
        OSCAR_TRY(ovk_cmd_submit_wait(ctx, &ctx->cmd));
        memcpy((char *)dst + done, ctx->staging.mapped, n);
        done += n;
    }
fail:
    return st;
}

oscar_status ovk_buffer_fill(oscar_context *ctx, ovk_buffer *dst, VkDeviceSize offset, VkDeviceSize bytes, uint32_t word)
{
    oscar_status st = check_range(dst, offset, bytes, "ovk_buffer_fill");
    if (st != OSCAR_OK || bytes == 0) return st;
    if ((offset | bytes) & 3) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "ovk_buffer_fill: offset and size must be multiples of 4");
    OSCAR_TRY(ovk_cmd_begin(ctx, &ctx->cmd));
    ctx->vk.vkCmdFillBuffer(ctx->cmd.cb, dst->buffer, offset, bytes, word);
    OSCAR_TRY(ovk_cmd_submit_wait(ctx, &ctx->cmd));
fail:
    return st;
}

oscar_status ovk_binding_check(const ovk_binding *b, uint64_t bytes, const char *op, const char *what)
{
    if (!b->buffer || b->buffer->buffer == VK_NULL_HANDLE)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: binding %s has no buffer", op, what);
    VkDeviceSize size = b->buffer->size;
    if (b->offset > size || (b->range && b->range > size - b->offset))
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: binding %s (offset %llu, range %llu) exceeds its buffer of %llu bytes",
                           op, what, (unsigned long long)b->offset, (unsigned long long)b->range, (unsigned long long)size);
    VkDeviceSize avail = b->range ? b->range : size - b->offset;
    if (avail < bytes)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "%s: binding %s holds %llu bytes, the shape needs %llu",
                           op, what, (unsigned long long)avail, (unsigned long long)bytes);
    return OSCAR_OK;
}
