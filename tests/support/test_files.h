/* Files the app tests build: RotationZoo files for a model, and damaged copies of a model
 * (a tensor overwritten, a vocabulary cut short), written with the development GGUF writer.
 */
#ifndef OSCAR_TEST_FILES_H
#define OSCAR_TEST_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "oscar/oscar.h"

/* A RotationZoo file of identity rotations for a model (docs/rotationzoo.md) with every clip
 * ratio `clip` (the loader accepts (0, 1]) and the given 16-hex-digit fingerprint. */
oscar_status test_write_identity_zoo(const char *path, const oscar_model_info *in, const char *fingerprint, float clip);

/* Overwrites the data of tensor `name` in the GGUF at `path`, in place, with `pattern`
 * (pattern_len bytes) repeated over the tensor's bytes. Returns 1 when done. */
int test_fill_tensor(const char *path, const char *name, const void *pattern, size_t pattern_len);

/* Copies the GGUF `src` to `dst` with the tokenizer's arrays (tokens, types, scores) cut to
 * their first n_tokens entries, the rest as it was. Returns 1 when done. */
int test_cut_vocabulary(const char *src, const char *dst, uint32_t n_tokens);

/* A text for the perplexity programs: 40 numbered lines of English sentences, long enough for a
 * few chunks of a tiny model's context. Returns 1 when written. */
int test_write_ppl_text(const char *path);

#endif
