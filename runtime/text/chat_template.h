/* Chat templates: turns {role, content} messages into the prompt text a chat model expects.
 *
 * This is not a Jinja engine. The GGUF key tokenizer.chat_template is inspected for marker
 * substrings and one of the formats below is written in C (llama.cpp's non-Jinja path does
 * the same):
 *   ChatML (SmolLM2, Qwen2/2.5/3):  <|im_start|>{role}\n{content}<|im_end|>\n ...
 *                                   generation prompt: <|im_start|>assistant\n
 *   Llama 3 (and 3.x):              <|begin_of_text|><|start_header_id|>{role}<|end_header_id|>
 *                                   \n\n{content, trimmed}<|eot_id|> ...
 *                                   generation prompt: <|start_header_id|>assistant
 *                                   <|end_header_id|>\n\n
 * A template with neither marker (or none at all) is formatted as ChatML, and
 * ovk_chat_detect reports it as unrecognised so the caller can say so.
 *
 * System prompt: when the first message is not "system", a system message is put first when
 * one is known: params.system_prompt if set, else the default the template itself embeds as a
 * literal (SmolLM2: "You are a helpful AI assistant named SmolLM, trained by Hugging Face",
 * Qwen2.5: "You are Qwen, created by Alibaba Cloud. ..."), which is what rendering the
 * template with Jinja produces. system_prompt = "" turns this off. (llama.cpp's non-Jinja
 * path adds no default; its -sys option is our system_prompt.) The Llama 3.1 template's
 * date header is not reproduced.
 *
 * The output contains the special tokens as text: encode it with parse_special = 1, and, for
 * Llama 3 with add_bos_text = 1, with add_bos = 0 so BOS is not doubled.
 */
#ifndef OSCAR_CHAT_TEMPLATE_H
#define OSCAR_CHAT_TEMPLATE_H

#include <stddef.h>

#include "oscar/oscar.h"

typedef enum ovk_chat_format {
    OSCAR_CHAT_CHATML = 0,
    OSCAR_CHAT_LLAMA3 = 1,
} ovk_chat_format;

/* oscar_chat_message {role, content} is public: include/oscar/model.h (via oscar/oscar.h). */

typedef struct ovk_chat_params {
    const char *template_src;   /* tokenizer.chat_template, or NULL (ChatML) */
    const char *system_prompt;  /* used when messages[0] is not a system message; NULL: the
                                 * template's embedded default, if any; "": none */
    int add_generation_prompt;  /* 1: end with the assistant header, ready to generate */
    int add_bos_text;           /* Llama 3: begin with "<|begin_of_text|>" */
} ovk_chat_params;

/* template_src NULL, system_prompt NULL, add_generation_prompt 1, add_bos_text 1. */
ovk_chat_params ovk_chat_params_default(void);

/* The format a template is written in. *recognized (may be NULL) is 1 when a marker was
 * found, 0 when ChatML is a guess (NULL or unknown template). */
ovk_chat_format ovk_chat_detect(const char *template_src, int *recognized);

/* Copies the default system prompt embedded in a ChatML template (the literal text between
 * "<|im_start|>system\n" and "<|im_end|>", with "\n" escapes resolved) to buf (NUL-terminated,
 * truncated to capacity) and returns its length, or 0 when the template has none (the system
 * text there is an expression such as message['content']). */
size_t ovk_chat_template_default_system(const char *template_src, char *buf, size_t capacity);

/* Writes the prompt for n messages (n may be 0) to buf, up to capacity bytes plus a NUL when
 * there is room, and sets *len to the full length (without the NUL). buf may be NULL to
 * measure. Returns OK when it fit (len < capacity), INVALID_ARGUMENT for a NULL role or
 * content or too small a buffer. */
oscar_status ovk_chat_apply(const ovk_chat_params *params, const oscar_chat_message *messages,
                              size_t n, char *buf, size_t capacity, size_t *len);

#endif
