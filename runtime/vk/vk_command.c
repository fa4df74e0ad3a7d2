/* Command streams: command buffers (the parts of one recording, vk_context.h) with a fence
 * each, descriptor pools reset at each begin, and a timestamp query pool. */
#include <stdlib.h>
#include <string.h>

#include "vk_context.h"

#define SETS_PER_POOL 1024u
#define MAX_TIMESTAMPS 256u
#define MAX_PROFILE_TIMESTAMPS 16384u /* with a profile: one per dispatch of a forward step */

oscar_status ovk_cmd_init(oscar_context *ctx, ovk_cmd *cmd)
{
    oscar_status st = OSCAR_OK;
    memset(cmd, 0, sizeof *cmd);
    VkCommandPoolCreateInfo pci = { .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                    .queueFamilyIndex = ctx->queue_family };
    OSCAR_VK(ctx->vk.vkCreateCommandPool(ctx->device, &pci, NULL, &cmd->pool));
    VkCommandBufferAllocateInfo cai = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = cmd->pool,
                                        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = OSCAR_CMD_PARTS };
    OSCAR_VK(ctx->vk.vkAllocateCommandBuffers(ctx->device, &cai, cmd->parts));
    cmd->cb = cmd->parts[0];
    VkFenceCreateInfo fci = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, .flags = VK_FENCE_CREATE_SIGNALED_BIT };
    for (uint32_t i = 0; i < OSCAR_CMD_PARTS; i++) OSCAR_VK(ctx->vk.vkCreateFence(ctx->device, &fci, NULL, &cmd->fences[i]));
    if (ctx->info.timestamps) {
        uint32_t n = ctx->profile ? MAX_PROFILE_TIMESTAMPS : MAX_TIMESTAMPS;
        VkQueryPoolCreateInfo qci = { .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                      .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = n };
        OSCAR_VK(ctx->vk.vkCreateQueryPool(ctx->device, &qci, NULL, &cmd->queries));
        cmd->max_queries = n;
        if (ctx->profile && (!(cmd->prof_names = calloc(n, sizeof *cmd->prof_names)) ||
                             !(cmd->prof_ticks = calloc(n, sizeof *cmd->prof_ticks))))
            OSCAR_FAIL(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    return OSCAR_OK;
fail:
    ovk_cmd_release(ctx, cmd);
    return st;
}

void ovk_cmd_release(oscar_context *ctx, ovk_cmd *cmd)
{
    if (!cmd || !ctx->device) return;
    ovk_cmd_abort(ctx, cmd);
    if (cmd->pending) ctx->vk.vkWaitForFences(ctx->device, cmd->part + 1, cmd->fences, VK_TRUE, UINT64_MAX);
    for (uint32_t i = 0; i < cmd->n_desc_pools; i++) ctx->vk.vkDestroyDescriptorPool(ctx->device, cmd->desc_pools[i], NULL);
    free(cmd->desc_pools);
    if (cmd->queries) ctx->vk.vkDestroyQueryPool(ctx->device, cmd->queries, NULL);
    free(cmd->prof_names);
    free(cmd->prof_ticks);
    for (uint32_t i = 0; i < OSCAR_CMD_PARTS; i++)
        if (cmd->fences[i]) ctx->vk.vkDestroyFence(ctx->device, cmd->fences[i], NULL);
    if (cmd->pool) ctx->vk.vkDestroyCommandPool(ctx->device, cmd->pool, NULL);
    memset(cmd, 0, sizeof *cmd);
}

oscar_status ovk_cmd_wait(oscar_context *ctx, ovk_cmd *cmd)
{
    oscar_status st = OSCAR_OK;
    if (!cmd->pending) return OSCAR_OK;
    OSCAR_VK(ctx->vk.vkWaitForFences(ctx->device, cmd->part + 1, cmd->fences, VK_TRUE, UINT64_MAX));
    cmd->pending = 0;
    if (cmd->prof_names && cmd->n_queries > 1) {
        uint64_t *t = cmd->prof_ticks;
        if (ctx->vk.vkGetQueryPoolResults(ctx->device, cmd->queries, 0, cmd->n_queries, sizeof *t * cmd->n_queries, t,
                                          sizeof *t, VK_QUERY_RESULT_64_BIT) == VK_SUCCESS)
            for (uint32_t i = 1; i < cmd->n_queries; i++)
                if (cmd->prof_names[i])
                    ovk_profile_add(ctx->profile, cmd->prof_names[i], (double)(t[i] - t[i - 1]) * ctx->info.timestamp_period_ns);
    }
fail:
    return st;
}

oscar_status ovk_cmd_begin(oscar_context *ctx, ovk_cmd *cmd)
{
    oscar_status st = OSCAR_OK;
    if (cmd->recording) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "command stream is already recording");
    OSCAR_TRY(ovk_cmd_wait(ctx, cmd));
    OSCAR_VK(ctx->vk.vkResetFences(ctx->device, OSCAR_CMD_PARTS, cmd->fences));
    OSCAR_VK(ctx->vk.vkResetCommandPool(ctx->device, cmd->pool, 0));
    cmd->part = 0;
    cmd->cb = cmd->parts[0];
    OSCAR_TRY(ovk_cmd_reset_sets(ctx, cmd));
    VkCommandBufferBeginInfo bi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                    .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT };
    OSCAR_VK(ctx->vk.vkBeginCommandBuffer(cmd->cb, &bi));
    if (cmd->queries) ctx->vk.vkCmdResetQueryPool(cmd->cb, cmd->queries, 0, cmd->max_queries);
    cmd->n_queries = 0;
    cmd->recording = 1;
    if (cmd->prof_names) ovk_cmd_timestamp(ctx, cmd); /* the start of the first dispatch */
    /* earlier submissions' writes (e.g. a flush reading a page that is now reused) come first */
    ovk_cmd_barrier(ctx, cmd);
fail:
    return st;
}

static oscar_status add_desc_pool(oscar_context *ctx, ovk_cmd *cmd)
{
    oscar_status st = OSCAR_OK;
    VkDescriptorPool *grown = realloc(cmd->desc_pools, (cmd->n_desc_pools + 1) * sizeof *grown);
    if (!grown) OSCAR_RETURN_ERROR(OSCAR_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    cmd->desc_pools = grown;
    VkDescriptorPoolSize sizes[2] = {
        { .type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = SETS_PER_POOL * OSCAR_MAX_BINDINGS },
        { .type = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, .descriptorCount = SETS_PER_POOL * 2 },
    };
    VkDescriptorPoolCreateInfo dpci = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, .maxSets = SETS_PER_POOL,
                                        .poolSizeCount = ctx->texel_buffers ? 2 : 1, .pPoolSizes = sizes };
    OSCAR_VK(ctx->vk.vkCreateDescriptorPool(ctx->device, &dpci, NULL, &cmd->desc_pools[cmd->n_desc_pools]));
    cmd->n_desc_pools++;
fail:
    return st;
}

static oscar_status alloc_set(oscar_context *ctx, ovk_cmd *cmd, VkDescriptorSetLayout layout, VkDescriptorSet *set)
{
    oscar_status st = OSCAR_OK;
    for (;;) {
        if (cmd->cur_desc_pool == cmd->n_desc_pools) OSCAR_TRY(add_desc_pool(ctx, cmd));
        VkDescriptorSetAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                           .descriptorPool = cmd->desc_pools[cmd->cur_desc_pool],
                                           .descriptorSetCount = 1, .pSetLayouts = &layout };
        VkResult r = ctx->vk.vkAllocateDescriptorSets(ctx->device, &ai, set);
        if (r == VK_SUCCESS) return OSCAR_OK;
        if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL) OSCAR_VK(r);
        cmd->cur_desc_pool++; /* this pool is full: move on to the next (or a new one) */
    }
fail:
    return st;
}

oscar_status ovk_cmd_dispatch(oscar_context *ctx, ovk_cmd *cmd, const ovk_pipeline *p,
                                const ovk_binding *bindings, const void *push, const uint32_t groups[3])
{
    oscar_status st = OSCAR_OK;
    if (!cmd->recording) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "dispatch outside begin/submit");
    for (int i = 0; i < 3; i++)
        if (groups[i] > ctx->limits.maxComputeWorkGroupCount[i])
            OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "%s: %u workgroups in dimension %d exceed the device's %u",
                               p->name, groups[i], i, ctx->limits.maxComputeWorkGroupCount[i]);
    if (groups[0] == 0 || groups[1] == 0 || groups[2] == 0) return OSCAR_OK;
    VkDescriptorSet set;
    OSCAR_TRY(alloc_set(ctx, cmd, p->set_layout, &set));
    VkDescriptorBufferInfo infos[OSCAR_MAX_BINDINGS];
    VkBufferView views[OSCAR_MAX_BINDINGS];
    VkWriteDescriptorSet writes[OSCAR_MAX_BINDINGS];
    for (uint32_t i = 0; i < p->desc.n_buffers; i++) {
        const ovk_binding *b = &bindings[i];
        VkDeviceSize range = b->range ? b->range : b->buffer->size - b->offset;
        if ((p->desc.texel_bindings >> i) & 1) {
            if (!b->range) range = ovk_texel_bytes(range); /* the rest of the buffer, its last texel whole */
            OSCAR_TRY(ovk_buffer_texel_view(ctx, b->buffer, b->offset, range, &views[i]));
            writes[i] = (VkWriteDescriptorSet){ .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = set,
                                                .dstBinding = i, .descriptorCount = 1,
                                                .descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
                                                .pTexelBufferView = &views[i] };
            continue;
        }
        if (range > ctx->limits.maxStorageBufferRange)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "%s: binding %u covers %llu bytes; the device allows %u per binding",
                               p->name, i, (unsigned long long)range, ctx->limits.maxStorageBufferRange);
        infos[i] = (VkDescriptorBufferInfo){ .buffer = b->buffer->buffer, .offset = b->offset, .range = range };
        writes[i] = (VkWriteDescriptorSet){ .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = set, .dstBinding = i,
                                            .descriptorCount = 1, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                            .pBufferInfo = &infos[i] };
    }
    ctx->vk.vkUpdateDescriptorSets(ctx->device, p->desc.n_buffers, writes, 0, NULL);
    ctx->vk.vkCmdBindPipeline(cmd->cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
    ctx->vk.vkCmdBindDescriptorSets(cmd->cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &set, 0, NULL);
    if (p->desc.push_size) ctx->vk.vkCmdPushConstants(cmd->cb, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, p->desc.push_size, push);
    ctx->vk.vkCmdDispatch(cmd->cb, groups[0], groups[1], groups[2]);
    if (cmd->prof_names) {
        int q = ovk_cmd_timestamp(ctx, cmd);
        if (q >= 0) cmd->prof_names[q] = p->name;
    }
fail:
    return st;
}

void ovk_cmd_barrier(oscar_context *ctx, ovk_cmd *cmd)
{
    VkMemoryBarrier mb = { .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                           .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                           .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                            VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT };
    VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    ctx->vk.vkCmdPipelineBarrier(cmd->cb, stages, stages, 0, 1, &mb, 0, NULL, 0, NULL);
}

void ovk_cmd_host_barrier(oscar_context *ctx, ovk_cmd *cmd)
{
    VkMemoryBarrier mb = { .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                           .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                           .dstAccessMask = VK_ACCESS_HOST_READ_BIT };
    ctx->vk.vkCmdPipelineBarrier(cmd->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                                 VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

void ovk_cmd_copy(oscar_context *ctx, ovk_cmd *cmd, const ovk_buffer *src, VkDeviceSize src_offset,
                    const ovk_buffer *dst, VkDeviceSize dst_offset, VkDeviceSize bytes)
{
    VkBufferCopy region = { .srcOffset = src_offset, .dstOffset = dst_offset, .size = bytes };
    ctx->vk.vkCmdCopyBuffer(cmd->cb, src->buffer, dst->buffer, 1, &region);
}

int ovk_cmd_timestamp(oscar_context *ctx, ovk_cmd *cmd)
{
    if (!cmd->queries || cmd->n_queries >= cmd->max_queries) return -1;
    ctx->vk.vkCmdWriteTimestamp(cmd->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, cmd->queries, cmd->n_queries);
    if (cmd->prof_names) cmd->prof_names[cmd->n_queries] = NULL;
    return (int)cmd->n_queries++;
}

oscar_status ovk_cmd_flush(oscar_context *ctx, ovk_cmd *cmd)
{
    oscar_status st = OSCAR_OK;
    if (!cmd->recording) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "flush without begin");
    if (cmd->part + 1 == OSCAR_CMD_PARTS) { /* the last part takes the rest, ordered as if split */
        ovk_cmd_barrier(ctx, cmd);
        return OSCAR_OK;
    }
    cmd->recording = 0;
    OSCAR_VK(ctx->vk.vkEndCommandBuffer(cmd->cb));
    VkSubmitInfo si = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd->cb };
    OSCAR_VK(ctx->vk.vkQueueSubmit(ctx->queue, 1, &si, cmd->fences[cmd->part]));
    cmd->cb = cmd->parts[++cmd->part];
    VkCommandBufferBeginInfo bi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                    .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT };
    OSCAR_VK(ctx->vk.vkBeginCommandBuffer(cmd->cb, &bi));
    cmd->recording = 1;
    /* with a profile, the part's start: the time the GPU waited for this submission is charged
     * to no dispatch (else the part's first one would carry the host's recording of it) */
    if (cmd->prof_names) ovk_cmd_timestamp(ctx, cmd);
    ovk_cmd_barrier(ctx, cmd);
fail:
    return st;
}

void ovk_cmd_abort(oscar_context *ctx, ovk_cmd *cmd)
{
    if (cmd->recording) {
        cmd->recording = 0;
        ctx->vk.vkEndCommandBuffer(cmd->cb);
    }
    /* parts[0 .. part) were flushed (submitted) since begin, also when the final submit failed;
     * waiting on fences already waited on returns at once */
    if (cmd->part) ctx->vk.vkWaitForFences(ctx->device, cmd->part, cmd->fences, VK_TRUE, UINT64_MAX);
}

oscar_status ovk_cmd_submit(oscar_context *ctx, ovk_cmd *cmd)
{
    oscar_status st = OSCAR_OK;
    if (!cmd->recording) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "submit without begin");
    cmd->recording = 0;
    OSCAR_VK(ctx->vk.vkEndCommandBuffer(cmd->cb));
    VkSubmitInfo si = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd->cb };
    OSCAR_VK(ctx->vk.vkQueueSubmit(ctx->queue, 1, &si, cmd->fences[cmd->part]));
    cmd->pending = 1;
fail:
    return st;
}

void ovk_cmd_adopt(ovk_cmd *cmd, VkCommandBuffer cb)
{
    cmd->cb = cb;
    cmd->recording = 1;
}

oscar_status ovk_cmd_reset_sets(oscar_context *ctx, ovk_cmd *cmd)
{
    oscar_status st = OSCAR_OK;
    for (uint32_t i = 0; i < cmd->n_desc_pools; i++) OSCAR_VK(ctx->vk.vkResetDescriptorPool(ctx->device, cmd->desc_pools[i], 0));
    cmd->cur_desc_pool = 0;
fail:
    return st;
}

oscar_status ovk_cmd_elapsed_ns(oscar_context *ctx, ovk_cmd *cmd, int from, int to, double *ns)
{
    oscar_status st = OSCAR_OK;
    if (from < 0 || to < 0 || (uint32_t)to >= cmd->n_queries || (uint32_t)from >= cmd->n_queries)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_UNSUPPORTED, "timestamps are not available on this device");
    uint64_t t[2];
    OSCAR_VK(ctx->vk.vkGetQueryPoolResults(ctx->device, cmd->queries, (uint32_t)from, 1, sizeof t[0], &t[0], sizeof t[0],
                                           VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    OSCAR_VK(ctx->vk.vkGetQueryPoolResults(ctx->device, cmd->queries, (uint32_t)to, 1, sizeof t[1], &t[1], sizeof t[1],
                                           VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    *ns = (double)(t[1] - t[0]) * ctx->info.timestamp_period_ns;
fail:
    return st;
}
