#!/usr/bin/env bash
# Writes the calibration, development and evaluation texts (plain paragraphs) into OUTDIR
# (default build/text, ignored by git). Five genres, each with three different documents,
# one per role, so that no choice and no calibration ever sees an evaluation text:
#
#   genre        calibration (calib/)           development (dev/)             evaluation (eval/)
#   technical    debian-handbook                developers-reference           gnu-standards
#   literary     fortunes: literature,          fortunes: men-women, work,     devils-dictionary
#                humorists, people, wisdom      love                           (dict-devil)
#   reference    jargon-file (dict-jargon)      perlglossary + fortunes        foldoc (dict-foldoc)
#                                               definitions
#   dialogue     git-howto: mails (git-doc)     debian-faq                     perlfaq (perl-doc)
#   code         Python 3.11 stdlib a..m:       Python 3.11 stdlib n..z:       glibc-headers: comments of
#                comments and docstrings        comments and docstrings        libc6-dev's /usr/include/*.h
#
#   calib.txt      the five calibration texts mixed in turn, 300 words at a time (technical,
#                  literary, reference, dialogue, code), so that every prefix, and so the
#                  --tokens that oscar-calib reads, holds all five about equally
#   calib/NAME.txt dev/NAME.txt eval/NAME.txt   one text per genre and role (names as above)
#
# Files in LC_ALL=C order, each text cut at a fixed word count: the output depends only on the
# Debian 12 packages, which scripts/setup.sh installs. See docs/calibration.md ("Text").
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-build/text}"
ex() { LC_ALL=C python3 "$here/extract_text.py" "$@"; }
fail() { echo "make_calib_text.sh: $*" >&2; exit 1; }
need() { # need PATH PACKAGE
    [ -e "$1" ] || fail "$1 missing (apt-get install $2; scripts/setup.sh installs it)"
}
# files PATTERN...: the existing files matching the patterns, in LC_ALL=C order
files() { LC_ALL=C ls -d "$@" 2>/dev/null | LC_ALL=C sort; }
# pkg_files PACKAGE REGEX: the files of an installed package matching REGEX, in LC_ALL=C order
pkg_files() {
    dpkg-query -L "$1" > /dev/null 2>&1 || fail "package $1 is not installed (scripts/setup.sh installs it)"
    dpkg-query -L "$1" | grep -E "$2" | LC_ALL=C sort
}

hb=/usr/share/doc/debian-handbook/html/en-US
dr=/usr/share/doc/developers-reference/docs
gs=/usr/share/doc/gnu-standards/standards.text.gz
fo=/usr/share/games/fortunes
dict=/usr/share/dictd
pod=/usr/share/perl/5.36.0/pod
faq=/usr/share/doc/debian/FAQ
howto=/usr/share/doc/git-doc/howto
need "$hb" debian-handbook; need "$dr" developers-reference; need "$gs" gnu-standards
need "$fo/literature" fortunes-min; need "$fo/people" fortunes
need "$dict/jargon.dict.dz" dict-jargon; need "$dict/foldoc.dict.dz" dict-foldoc; need "$dict/devil.dict.dz" dict-devil
need "$pod/perlfaq1.pod" perl-doc; need "$faq" debian-faq; need "$howto" git-doc
mapfile -t py < <(pkg_files libpython3.11-stdlib '^/usr/lib/python3\.11/[^/]*\.py$')
mapfile -t inc < <(pkg_files libc6-dev '^/usr/include/[^/]*\.h$')
py_am=() py_nz=()
for f in "${py[@]}"; do
    case "$(basename "$f")" in [a-m]*) py_am+=("$f") ;; [n-z]*) py_nz+=("$f") ;; esac
done

mkdir -p "$out/calib" "$out/dev" "$out/eval"
# calibration: at most 40,000 words each
ex --max-words 40000 $(files "$hb"/*.html) > "$out/calib/debian-handbook.txt"
ex --max-words 40000 "$fo/literature" "$fo/humorists" "$fo/people" "$fo/wisdom" > "$out/calib/fortunes.txt"
ex --max-words 40000 "$dict/jargon.dict.dz" > "$out/calib/jargon-file.txt"
ex --max-words 40000 $(files "$howto"/*.txt) > "$out/calib/git-howto.txt"
ex --max-words 40000 "${py_am[@]}" > "$out/calib/python-stdlib-a-m.txt"
# development: at most 30,000 words each
ex --max-words 30000 $(files "$dr"/*.html) > "$out/dev/developers-reference.txt"
ex --max-words 30000 "$fo/men-women" "$fo/work" "$fo/love" > "$out/dev/fortunes.txt"
ex --max-words 30000 "$pod/perlglossary.pod" "$fo/definitions" > "$out/dev/glossaries.txt"
ex --max-words 30000 $(files "$faq"/*.en.html) > "$out/dev/debian-faq.txt"
ex --max-words 30000 "${py_nz[@]}" > "$out/dev/python-stdlib-n-z.txt"
# evaluation: at most 60,000 words each (>= 4 chunks of 8K tokens)
ex --max-words 60000 "$gs" > "$out/eval/gnu-standards.txt"
ex --max-words 60000 "$dict/devil.dict.dz" > "$out/eval/devils-dictionary.txt"
ex --max-words 60000 "$dict/foldoc.dict.dz" > "$out/eval/foldoc.txt"
ex --max-words 60000 $(files "$pod"/perlfaq[1-9].pod) > "$out/eval/perlfaq.txt"
ex --max-words 60000 "${inc[@]}" > "$out/eval/glibc-headers.txt"
# the mix, in the order of the table above
ex --interleave 300 "$out/calib/debian-handbook.txt" "$out/calib/fortunes.txt" "$out/calib/jargon-file.txt" \
    "$out/calib/git-howto.txt" "$out/calib/python-stdlib-a-m.txt" > "$out/calib.txt"
(cd "$out" && wc -w calib.txt calib/*.txt dev/*.txt eval/*.txt) >&2
