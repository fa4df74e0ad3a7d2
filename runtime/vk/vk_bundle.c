/* Bundles: commands recorded once into a secondary command buffer and replayed into streams
 * until they are recorded again (vk_context.h). */
#include <string.h>

#include "vk_context.h"

oscar_status ovk_bundle_begin(oscar_context *ctx, ovk_bundle *b)
{
    oscar_status st = OSCAR_OK;
    b->ready = 0;
    if (b->rec.recording) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "bundle is already recording");
    if (!b->pool) {
        VkCommandPoolCreateInfo pci = { .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                        .queueFamilyIndex = ctx->queue_family };
        OSCAR_VK(ctx->vk.vkCreateCommandPool(ctx->device, &pci, NULL, &b->pool));
        VkCommandBufferAllocateInfo cai = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = b->pool,
                                            .level = VK_COMMAND_BUFFER_LEVEL_SECONDARY, .commandBufferCount = 1 };
        OSCAR_VK(ctx->vk.vkAllocateCommandBuffers(ctx->device, &cai, &b->cb));
    }
    OSCAR_TRY(ovk_cmd_reset_sets(ctx, &b->rec)); /* the last recording's sets: nothing runs it now */
    VkCommandBufferInheritanceInfo inh = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO };
    VkCommandBufferBeginInfo bi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, .pInheritanceInfo = &inh };
    OSCAR_VK(ctx->vk.vkBeginCommandBuffer(b->cb, &bi)); /* resets what it held */
    ovk_cmd_adopt(&b->rec, b->cb);
fail:
    return st;
}

oscar_status ovk_bundle_end(oscar_context *ctx, ovk_bundle *b)
{
    oscar_status st = OSCAR_OK;
    if (!b->rec.recording) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "bundle end without begin");
    b->rec.recording = 0;
    OSCAR_VK(ctx->vk.vkEndCommandBuffer(b->cb));
    b->ready = 1;
fail:
    return st;
}

void ovk_bundle_abort(oscar_context *ctx, ovk_bundle *b)
{
    if (b->rec.recording) ctx->vk.vkEndCommandBuffer(b->cb);
    b->rec.recording = 0;
    b->ready = 0;
}

oscar_status ovk_cmd_execute(oscar_context *ctx, ovk_cmd *cmd, const ovk_bundle *b)
{
    if (!cmd->recording) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "bundle replayed outside begin/submit");
    if (!b->ready) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_STATE, "bundle replayed before it was recorded");
    ctx->vk.vkCmdExecuteCommands(cmd->cb, 1, &b->cb);
    return OSCAR_OK;
}

void ovk_bundle_release(oscar_context *ctx, ovk_bundle *b)
{
    if (!b || !ctx->device) return;
    ovk_bundle_abort(ctx, b);
    ovk_cmd_release(ctx, &b->rec); /* its descriptor pools (it owns no command pool of its own) */
    if (b->pool) ctx->vk.vkDestroyCommandPool(ctx->device, b->pool, NULL);
    memset(b, 0, sizeof *b);
}
