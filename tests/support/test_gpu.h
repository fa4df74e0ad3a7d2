/* GPU test helpers: a context with the validation layer on, skipping (exit 77) when this
 * machine has no Vulkan loader or device, and failing the test on any validation message. */
#ifndef OSCAR_TEST_GPU_H
#define OSCAR_TEST_GPU_H

#include "oscar/oscar.h"
#include "test_util.h"
#include "vk_context.h"

/* Creates the test context (validation forced on). Skips the test when no loader/device. */
oscar_context *test_gpu_context(void);

/* Checks no validation warning or error was reported, destroys ctx, returns test_finish(). */
int test_gpu_finish(oscar_context *ctx);

/* Checks no validation warning or error was reported and destroys ctx: for a second context
 * inside a test, which still ends with test_gpu_finish. */
void test_gpu_release(oscar_context *ctx);

/* Runs one dispatch of `p` on the context's stream and waits for it. */
oscar_status test_gpu_run(oscar_context *ctx, const ovk_pipeline *p, const ovk_binding *bindings,
                          const void *push, uint32_t gx, uint32_t gy, uint32_t gz);

/* Creates a device buffer holding a copy of `bytes` bytes of host data. */
oscar_status test_gpu_buffer_from(oscar_context *ctx, const void *data, size_t bytes, ovk_buffer *out);

#endif
