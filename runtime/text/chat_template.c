/* Chat templates: ChatML and Llama 3, chosen by substrings of tokenizer.chat_template
 * (see chat_template.h). */
#include <string.h>

#include "chat_template.h"
#include "error.h"

ovk_chat_params ovk_chat_params_default(void)
{
    ovk_chat_params p;
    p.template_src = NULL;
    p.system_prompt = NULL;
    p.add_generation_prompt = 1;
    p.add_bos_text = 1;
    return p;
}

ovk_chat_format ovk_chat_detect(const char *template_src, int *recognized)
{
    int known = 0;
    ovk_chat_format f = OSCAR_CHAT_CHATML;
    if (template_src) {
        if (strstr(template_src, "<|start_header_id|>") && strstr(template_src, "<|end_header_id|>")) {
            f = OSCAR_CHAT_LLAMA3;
            known = 1;
        } else if (strstr(template_src, "<|im_start|>")) {
            known = 1;
        }
    }
    if (recognized) *recognized = known;
    return f;
}

/* Output of apply: bytes go to buf while they fit; len counts all of them. */
typedef struct out_buf {
    char *buf;          /* [cap] or NULL to measure */
    size_t cap, len;    /* bytes */
} out_buf;

static void emit_n(out_buf *o, const char *s, size_t n)
{
    if (o->buf && o->len < o->cap) {
        size_t k = o->cap - o->len < n ? o->cap - o->len : n;
        memcpy(o->buf + o->len, s, k);
    }
    o->len += n;
}

static void emit(out_buf *o, const char *s) { emit_n(o, s, strlen(s)); }

/* Finds the literal default system text of a ChatML template: *s_out and *span_out locate it
 * in the template (escapes unresolved). Returns 0 when there is none. */
static int find_default_system(const char *tpl, const char **s_out, size_t *span_out)
{
    static const char head[] = "<|im_start|>system";
    static const char tail[] = "<|im_end|>";
    if (!tpl) return 0;
    for (const char *p = strstr(tpl, head); p; p = strstr(p + 1, head)) {
        const char *s = p + sizeof head - 1;
        /* the newline after the role: a real one, or the two characters \n of a Jinja string */
        if (s[0] == '\n') s += 1;
        else if (s[0] == '\\' && s[1] == 'n') s += 2;
        else continue;
        const char *e = strstr(s, tail);
        if (!e || e == s) continue;
        /* a literal has no quote or Jinja delimiter inside; else it is an expression */
        size_t span = (size_t)(e - s);
        int literal = 1;
        for (size_t i = 0; i < span && literal; i++)
            if (s[i] == '\'' || s[i] == '"' || s[i] == '{' || s[i] == '}' || s[i] == '+') literal = 0;
        if (!literal) continue;
        *s_out = s;
        *span_out = span;
        return 1;
    }
    return 0;
}

/* Emits the template's default system text with "\n" escapes resolved. */
static void emit_unescaped(out_buf *o, const char *s, size_t span)
{
    for (size_t i = 0; i < span; i++) {
        if (s[i] == '\\' && i + 1 < span && s[i + 1] == 'n') {
            emit_n(o, "\n", 1);
            i++;
        } else {
            emit_n(o, s + i, 1);
        }
    }
}

size_t ovk_chat_template_default_system(const char *template_src, char *buf, size_t capacity)
{
    const char *s;
    size_t span;
    if (buf && capacity) buf[0] = '\0';
    if (!find_default_system(template_src, &s, &span)) return 0;
    out_buf o = {buf, capacity ? capacity - 1 : 0, 0};
    emit_unescaped(&o, s, span);
    if (buf && capacity) buf[o.len < capacity - 1 ? o.len : capacity - 1] = '\0';
    return o.len;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/* Emits s without leading and trailing whitespace (Jinja's `| trim`, which Llama 3 uses). */
static void emit_trimmed(out_buf *o, const char *s)
{
    size_t a = 0, b = strlen(s);
    while (a < b && is_space(s[a])) a++;
    while (b > a && is_space(s[b - 1])) b--;
    emit_n(o, s + a, b - a);
}

static void emit_message(out_buf *o, ovk_chat_format f, const char *role, const char *content)
{
    if (f == OSCAR_CHAT_LLAMA3) {
        emit(o, "<|start_header_id|>");
        emit(o, role);
        emit(o, "<|end_header_id|>\n\n");
        emit_trimmed(o, content);
        emit(o, "<|eot_id|>");
    } else {
        emit(o, "<|im_start|>");
        emit(o, role);
        emit(o, "\n");
        emit(o, content);
        emit(o, "<|im_end|>\n");
    }
}

oscar_status ovk_chat_apply(const ovk_chat_params *params, const oscar_chat_message *messages,
                              size_t n, char *buf, size_t capacity, size_t *len)
{
    if (!len || (n > 0 && !messages)) OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "chat_apply: NULL argument");
    *len = 0;
    ovk_chat_params p = params ? *params : ovk_chat_params_default();
    for (size_t i = 0; i < n; i++)
        if (!messages[i].role || !messages[i].content)
            OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "chat_apply: message %zu has a NULL role or content", i);
    ovk_chat_format f = ovk_chat_detect(p.template_src, NULL);
    out_buf o = {buf, capacity, 0};

    if (f == OSCAR_CHAT_LLAMA3 && p.add_bos_text) emit(&o, "<|begin_of_text|>");
    int has_system = n > 0 && strcmp(messages[0].role, "system") == 0;
    if (!has_system) {
        if (p.system_prompt) {
            if (p.system_prompt[0]) emit_message(&o, f, "system", p.system_prompt);
        } else if (f == OSCAR_CHAT_CHATML) {
            const char *ds;
            size_t span;
            if (find_default_system(p.template_src, &ds, &span)) {
                emit(&o, "<|im_start|>system\n");
                emit_unescaped(&o, ds, span);
                emit(&o, "<|im_end|>\n");
            }
        }
    }
    for (size_t i = 0; i < n; i++) emit_message(&o, f, messages[i].role, messages[i].content);
    if (p.add_generation_prompt) {
        if (f == OSCAR_CHAT_LLAMA3) emit(&o, "<|start_header_id|>assistant<|end_header_id|>\n\n");
        else emit(&o, "<|im_start|>assistant\n");
    }
    *len = o.len;
    if (buf && capacity > o.len) buf[o.len] = '\0';
    if (buf && o.len >= capacity)
        OSCAR_RETURN_ERROR(OSCAR_ERROR_INVALID_ARGUMENT, "chat_apply: %zu bytes (+ NUL) do not fit in %zu", o.len, capacity);
    return OSCAR_OK;
}
