#!/usr/bin/env python3
"""Turns documentation files into plain English paragraphs for calibration and evaluation.

usage: scripts/extract_text.py [--min-words N] FILE... > out.txt

FILE may be HTML (.html/.htm), plain text (anything else), either optionally gzip-compressed
(.gz). Output: one paragraph per line block, paragraphs separated by a blank line, in the order
of the files given; whitespace collapsed, exact duplicate paragraphs (navigation, headers)
dropped, paragraphs with fewer than --min-words words (default 4) dropped.

HTML: the text of <p>, <li>, <dd>, <dt>, <blockquote>, <h1>..<h4> and <td> elements;
<script>, <style>, <pre> and <code>-only blocks are skipped (code is not ordinary text).
Plain text: lines are joined into paragraphs at blank lines; lines of ASCII art, menus
("* Menu:") and rules are dropped.

Standard library only. See docs/calibration.md for the files used.
"""
import argparse
import gzip
import html.parser
import re
import sys

BLOCK = {"p", "li", "dd", "dt", "blockquote", "h1", "h2", "h3", "h4", "td", "th", "div", "br"}
SKIP = {"script", "style", "pre", "head", "title"}


class _Paragraphs(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out = []
        self.cur = []
        self.skip = 0

    def _flush(self):
        text = " ".join("".join(self.cur).split())
        if text:
            self.out.append(text)
        self.cur = []

    def handle_starttag(self, tag, attrs):
        if tag in SKIP:
            self.skip += 1
        elif tag in BLOCK:
            self._flush()

    def handle_endtag(self, tag):
        if tag in SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in BLOCK:
            self._flush()

    def handle_data(self, data):
        if not self.skip:
            self.cur.append(data)

    def close(self):
        super().close()
        self._flush()


def html_paragraphs(text):
    p = _Paragraphs()
    p.feed(text)
    p.close()
    return p.out


_JUNK = re.compile(r"^\s*(\* Menu:|[-=*_+|.]{3,}\s*$)")


def text_paragraphs(text):
    out, cur = [], []
    for line in text.splitlines():
        if not line.strip():
            if cur:
                out.append(" ".join(" ".join(cur).split()))
                cur = []
            continue
        if _JUNK.match(line) or line.lstrip().startswith("* ") and "::" in line:
            continue
        cur.append(line.strip())
    if cur:
        out.append(" ".join(" ".join(cur).split()))
    return out


def read(path):
    raw = gzip.open(path, "rb").read() if path.endswith(".gz") else open(path, "rb").read()
    return raw.decode("utf-8", errors="replace")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-words", type=int, default=4)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    seen = set()
    n = 0
    for f in a.files:
        text = read(f)
        base = f[:-3] if f.endswith(".gz") else f
        paras = html_paragraphs(text) if base.endswith((".html", ".htm")) else text_paragraphs(text)
        for para in paras:
            if len(para.split()) < a.min_words or para in seen:
                continue
            seen.add(para)
            sys.stdout.write(para + "\n\n")
            n += 1
    if n == 0:
        sys.exit("extract_text.py: no paragraphs found in " + " ".join(a.files))


if __name__ == "__main__":
    main()
