/* The validation plumbing itself: a deliberately invalid call must be counted, otherwise
 * "no validation message" in every other test would prove nothing. */
#include "test_gpu.h"

int main(void)
{
    oscar_context_params p = oscar_context_params_default();
    p.validation = 1;
    p.print_validation_messages = 0;
    oscar_context *ctx = NULL;
    oscar_status st = oscar_context_create(&p, &ctx);
    if (st == OSCAR_ERROR_NO_LOADER || st == OSCAR_ERROR_NO_DEVICE) test_skip(oscar_last_error());
    CHECK_OK(st);
    if (!ctx) return test_finish();
    CHECK(oscar_context_validation_messages(ctx) == 0);
    ovk_buffer buf;
    CHECK_OK(ovk_buffer_create(ctx, 64, OSCAR_BUFFER_DEVICE, &buf));
    CHECK_OK(ovk_cmd_begin(ctx, &ctx->cmd));
    /* invalid: the fill offset must be a multiple of 4 and inside the buffer */
    ctx->vk.vkCmdFillBuffer(ctx->cmd.cb, buf.buffer, 2, 4, 0);
    ctx->vk.vkEndCommandBuffer(ctx->cmd.cb);
    ctx->cmd.recording = 0;
    CHECK_MSG(oscar_context_validation_messages(ctx) > 0, "the invalid vkCmdFillBuffer was not reported");
    ovk_buffer_destroy(ctx, &buf);
    oscar_context_destroy(ctx);
    return test_finish();
}
