#!/usr/bin/env python3
"""Turns Debian's documentation, dictionaries and source files into plain English paragraphs
for calibration and evaluation, and mixes several such texts into one.

usage: scripts/extract_text.py [--min-words N] [--max-words N] FILE... > out.txt
       scripts/extract_text.py --interleave WORDS [--max-words N] TEXT... > mixed.txt

FILE may be, each optionally gzip- or dictzip-compressed (.gz, .dz):
  HTML (.html/.htm)  the text of <p>, <li>, <dd>, <dt>, <blockquote>, <h1>..<h4> and <td>
                     elements; <script>, <style> and <pre> skipped (code is not ordinary text).
  POD (.pod)         Perl's documentation: headings and text paragraphs, formatting codes
                     (C<..>, L<..>, E<gt>, ...) replaced by their text; verbatim (indented)
                     blocks and =begin/=for sections skipped.
  Python (.py)       the comments and docstrings only (standard tokenize module).
  C (.h/.c)          the comments only (/* */ and //), a leading " * " column removed.
  plain text         anything else (dictd .dict files and fortune files included): lines
                     joined into paragraphs at blank lines and at fortune's "%" lines; lines of
                     ASCII art, menus ("* Menu:") and rules dropped.
Output: one paragraph per line block, paragraphs separated by a blank line, in the order of the
files given; whitespace collapsed, exact duplicate paragraphs (navigation, headers, licence
notices) dropped, paragraphs with fewer than --min-words words (default 4) dropped; with
--max-words, nothing after the paragraph that reaches N words.

--interleave WORDS reads TEXTs that this script wrote and mixes them in turn: from each, whole
paragraphs until at least WORDS words, then the next text; a text that runs out drops out of the
turn. So any prefix of the output holds the texts in about equal shares, as long as they last.

Standard library only. See docs/calibration.md for the files used.
"""
import argparse
import gzip
import html.parser
import io
import re
import sys
import tokenize

BLOCK = {"p", "li", "dd", "dt", "blockquote", "h1", "h2", "h3", "h4", "td", "th", "div", "br"}
SKIP = {"script", "style", "pre", "head", "title"}


def _collapse(lines):
    return " ".join(" ".join(lines).split())


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
        if not line.strip() or line.strip() == "%":
            if cur:
                out.append(_collapse(cur))
                cur = []
            continue
        if _JUNK.match(line) or line.lstrip().startswith("* ") and "::" in line:
            continue
        cur.append(line.strip())
    if cur:
        out.append(_collapse(cur))
    return out


# POD formatting codes, innermost first: X<text>, X<< text >>; E<name> entities; L<text|target>
_POD_ENT = {"lt": "<", "gt": ">", "verbar": "|", "sol": "/", "quot": '"', "amp": "&"}
_POD_CODE = re.compile(r"([A-Z])(<<+)\s(.*?)\s>>+|([A-Z])<([^<>]*)>")


def _pod_code(m):
    letter, body = (m.group(1), m.group(3)) if m.group(1) else (m.group(4), m.group(5))
    if letter == "E":
        return _POD_ENT.get(body, "")
    if letter in "XZ":
        return ""
    if letter == "L":
        if "|" in body:
            body = body.split("|", 1)[0]
        elif "://" not in body and "/" in body:
            body = body.split("/", 1)[1].strip('"') or body
    return body


def pod_paragraphs(text):
    out, skip = [], None
    for block in re.split(r"\n\s*\n", text):
        if not block.strip():
            continue
        if block.startswith("="):
            cmd, _, rest = block.partition(" ")
            cmd = cmd.split("\n", 1)[0]
            if skip:
                if cmd == "=end" and rest.split()[:1] == [skip]:
                    skip = None
                continue
            if cmd == "=begin":
                skip = (rest.split() or [""])[0]
            elif cmd in ("=head1", "=head2", "=head3", "=head4", "=item"):
                out.append(rest)
            continue
        if skip or block[0] in " \t":
            continue  # verbatim: code
        out.append(block)
    res = []
    for para in out:
        prev = None
        while prev != para:
            prev, para = para, _POD_CODE.sub(_pod_code, para)
        res.append(_collapse([para]))
    return res


def _comment_block(text):
    """Paragraphs of one comment's text (lines already without comment markers)."""
    return text_paragraphs("\n".join(text))


def python_paragraphs(text):
    out, cur, prev = [], [], None
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return out
    for i, t in enumerate(toks):
        if t.type == tokenize.COMMENT:
            body = t.string.lstrip("#").strip()
            if body.startswith("!") or "-*-" in body:
                continue
            cur.append(body)
            continue
        if t.type in (tokenize.NL, tokenize.NEWLINE) and cur and (prev is None or prev.type != tokenize.COMMENT):
            out += _comment_block(cur)
            cur = []
        if t.type == tokenize.STRING and t.string.lstrip("rRbBuU").startswith(('"""', "'''")):
            nxt = toks[i + 1].type if i + 1 < len(toks) else tokenize.ENDMARKER
            before = prev.type if prev is not None else tokenize.NEWLINE
            if nxt in (tokenize.NEWLINE, tokenize.ENDMARKER) and before in (tokenize.NEWLINE, tokenize.INDENT,
                                                                           tokenize.DEDENT, tokenize.NL):
                if cur:
                    out += _comment_block(cur)
                    cur = []
                body = t.string.lstrip("rRbBuU")[3:-3]
                out += [p for p in text_paragraphs(body) if not p.startswith(">>>")]  # doctests: code
        if t.type not in (tokenize.NL, tokenize.COMMENT):
            prev = t
        elif t.type == tokenize.COMMENT:
            prev = t
    if cur:
        out += _comment_block(cur)
    return out


_C_COMMENT = re.compile(r"/\*(.*?)\*/|//([^\n]*)|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)


def c_paragraphs(text):
    out, line_run, last_end = [], [], -1
    for m in _C_COMMENT.finditer(text):
        if m.group(1) is not None:
            if line_run:
                out += _comment_block(line_run)
                line_run = []
            lines = [re.sub(r"^\s*\*+ ?", "", ln) for ln in m.group(1).splitlines()]
            out += _comment_block(lines)
        elif m.group(2) is not None:
            # a run of // lines with nothing but white space between them is one comment
            if line_run and text[last_end:m.start()].strip():
                out += _comment_block(line_run)
                line_run = []
            line_run.append(m.group(2).lstrip("/").strip())
            last_end = m.end()
    if line_run:
        out += _comment_block(line_run)
    return out


def read(path):
    try:
        raw = gzip.open(path, "rb").read() if path.endswith((".gz", ".dz")) else open(path, "rb").read()
    except (OSError, EOFError) as e:
        sys.exit("extract_text.py: cannot read %s: %s" % (path, e.strerror or e))
    return raw.decode("utf-8", errors="replace")


def paragraphs(path):
    text = read(path)
    base = path[:-3] if path.endswith((".gz", ".dz")) else path
    if base.endswith((".html", ".htm")):
        return html_paragraphs(text)
    if base.endswith(".pod"):
        return pod_paragraphs(text)
    if base.endswith(".py"):
        return python_paragraphs(text)
    if base.endswith((".h", ".c")):
        return c_paragraphs(text)
    return text_paragraphs(text)


def interleave(files, words, max_words):
    queues = []
    for f in files:
        paras = [p for p in read(f).split("\n\n") if p.strip()]
        if not paras:
            sys.exit("extract_text.py: no paragraphs in " + f)
        queues.append(paras)
    pos = [0] * len(queues)
    total = 0
    while any(pos[i] < len(q) for i, q in enumerate(queues)):
        for i, q in enumerate(queues):
            got = 0
            while pos[i] < len(q) and got < words:
                para = q[pos[i]].strip()
                pos[i] += 1
                sys.stdout.write(para + "\n\n")
                got += len(para.split())
            total += got
            if max_words and total >= max_words:
                return


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-words", type=int, default=4)
    ap.add_argument("--max-words", type=int, default=0)
    ap.add_argument("--interleave", type=int, default=0, metavar="WORDS")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    if a.min_words < 1 or a.max_words < 0 or a.interleave < 0:
        sys.exit("extract_text.py: --min-words must be at least 1, --max-words and --interleave at least 0")
    if a.interleave:
        interleave(a.files, a.interleave, a.max_words)
        return
    seen = set()
    n = total = 0
    for f in a.files:
        for para in paragraphs(f):
            if len(para.split()) < a.min_words or para in seen:
                continue
            seen.add(para)
            sys.stdout.write(para + "\n\n")
            n += 1
            total += len(para.split())
            if a.max_words and total >= a.max_words:
                return
    if n == 0:
        sys.exit("extract_text.py: no paragraphs found in " + " ".join(a.files))


if __name__ == "__main__":
    main()
