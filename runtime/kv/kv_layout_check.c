/* C-side size checks of the layout shared with the shaders (shaders/common/kv_layout.h). */
#include <assert.h>

#include "common/kv_layout.h"

static_assert(sizeof(struct kv_token_slot) == 16, "kv_token_slot must match the std430 layout");
static_assert(sizeof(struct kv_attn_row) == 16, "kv_attn_row must match the std430 layout");
static_assert(sizeof(struct kv_attn_item) == 32, "kv_attn_item must match the std430 layout");
static_assert(KV_INT2_PAGE_WORDS(8, 64, 128, 128) == 2 * 8 * 64 * 9, "INT2 page words");
static_assert(KV_F16_PAGE_WORDS(8, 64, 128) == 8 * 64 * 128, "fp16 page words");
