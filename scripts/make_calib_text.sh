#!/usr/bin/env bash
# Writes the calibration and evaluation texts (plain paragraphs) into OUTDIR (default build/text, ignored by git):
#   calib.txt  The Debian Administrator's Handbook, English HTML (package debian-handbook)
#   eval.txt   The GNU Coding Standards, plain text (package gnu-standards)
# Two different documents, so evaluation never sees calibration text. scripts/setup.sh installs
# both packages. See docs/calibration.md.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-build/text}"
hb=/usr/share/doc/debian-handbook/html/en-US
gs=/usr/share/doc/gnu-standards/standards.text.gz
[ -d "$hb" ] || { echo "make_calib_text.sh: $hb missing (apt-get install debian-handbook)" >&2; exit 1; }
[ -f "$gs" ] || { echo "make_calib_text.sh: $gs missing (apt-get install gnu-standards)" >&2; exit 1; }
mkdir -p "$out"
# LC_ALL=C: the same file order everywhere
LC_ALL=C python3 "$here/extract_text.py" $(LC_ALL=C ls "$hb"/*.html) > "$out/calib.txt"
python3 "$here/extract_text.py" "$gs" > "$out/eval.txt"
wc -w "$out/calib.txt" "$out/eval.txt" >&2
