/* The small generated model the app tests run (2 layers, n_embd 128, 2 heads / 1 KV head of 64,
 * Q4_0, n_ctx_train 1024). */
#ifndef TEST_TINY_MODEL_H
#define TEST_TINY_MODEL_H

#include "oscar/oscar.h"

/* Writes the model to `path` and loads it on a new context, filling *info (its fingerprint names
 * it in rotation files). With ctx_out and model_out the caller gets both (and destroys them);
 * NULL: they are destroyed here. Returns 1, or 0 after a failed check (the test recorded it). */
int test_tiny_model(const char *path, oscar_model_info *info, oscar_context **ctx_out, oscar_model **model_out);

#endif
