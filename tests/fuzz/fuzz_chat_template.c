/* libFuzzer target: chat formatting (ovk_chat_apply) and the template inspection behind it
 * (ovk_chat_detect, ovk_chat_template_default_system) on arbitrary templates, roles, contents
 * and system prompts.
 *
 * Input: one flags byte, then NUL-separated fields: the template, the system prompt, then
 * role, content, role, content ... Flag bits: 0 no template (NULL), 1 no system prompt (NULL:
 * the template's default), 2 add_generation_prompt, 3 add_bos_text.
 *
 * Contract checked: no crash, overflow, undefined behaviour or leak; the measured length equals
 * the written one, the text is NUL-terminated when it fits, and a buffer one byte short is
 * refused without writing past it; the default system text is NUL-terminated at every capacity.
 * Seeds: tests/fuzz/seeds/chat_template (fuzz_make_seeds). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chat_template.h"

#define MAX_MESSAGES 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    unsigned flags = data[0];
    char *copy = malloc(size); /* the fields, NUL-terminated in place */
    if (!copy) return 0;
    memcpy(copy, data + 1, size - 1);
    copy[size - 1] = 0;
    const char *fields[2 + 2 * MAX_MESSAGES];
    size_t n_fields = 0;
    for (char *p = copy; n_fields < sizeof fields / sizeof fields[0];) {
        fields[n_fields++] = p;
        char *z = memchr(p, 0, (size_t)(copy + size - 1 - p));
        if (!z) break;
        p = z + 1;
    }
    ovk_chat_params cp = ovk_chat_params_default();
    cp.template_src = (flags & 1) ? NULL : fields[0];
    cp.system_prompt = (flags & 2) || n_fields < 2 ? NULL : fields[1];
    cp.add_generation_prompt = (flags >> 2) & 1;
    cp.add_bos_text = (flags >> 3) & 1;
    oscar_chat_message msgs[MAX_MESSAGES];
    size_t n = 0;
    for (size_t f = 2; f + 1 < n_fields && n < MAX_MESSAGES; f += 2) msgs[n].role = fields[f], msgs[n].content = fields[f + 1], n++;

    int recognized = 0;
    ovk_chat_detect(cp.template_src, &recognized);
    char sys[64];
    for (size_t cap = 0; cap <= sizeof sys; cap += 7) {
        memset(sys, 'x', sizeof sys);
        size_t k = ovk_chat_template_default_system(cp.template_src, cap ? sys : NULL, cap);
        if (cap && (memchr(sys, 0, cap) == NULL || strlen(sys) > k)) abort();
    }

    size_t len = 0, len2 = 0;
    if (ovk_chat_apply(&cp, msgs, n, NULL, 0, &len) != OSCAR_OK) abort();
    char *buf = malloc(len + 1);
    if (!buf) abort();
    if (ovk_chat_apply(&cp, msgs, n, buf, len + 1, &len2) != OSCAR_OK || len2 != len || buf[len] != 0) abort();
    if (len) {
        char *shorter = malloc(len); /* one byte short: refused, and ASan sees any write past it */
        if (!shorter) abort();
        if (ovk_chat_apply(&cp, msgs, n, shorter, len, &len2) == OSCAR_OK || len2 != len) abort();
        free(shorter);
    }
    free(buf);
    free(copy);
    return 0;
}
