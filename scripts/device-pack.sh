#!/usr/bin/env bash
# Packs what a run on the borrowed NVIDIA machine needs into DIR (default .device/, git-ignored):
# the Vulkan loader and an env script (scripts/device-env.sh), the Khronos validation layer
# (so tests run there with validation on too), the apps and the GPU test binaries, stripped.
# Usage (from the project root, after building into build/):  scripts/device-pack.sh [DIR]
# Then copy the tree with DIR to the GPU machine and run there, from the project root:
#   source DIR/env.sh && scripts/device-run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.device}
case $dir in /*|*..*|'') echo "device-pack: DIR must be a folder inside the project, got '$dir'" >&2; exit 2 ;; esac
rm -rf "$dir" && mkdir -p "$dir/lib" "$dir/bin" "$dir/layers" "$dir/tests"
# the whole of ldconfig's list is read (no early exit), so pipefail never sees a SIGPIPE
loader=$(ldconfig -p | awk '/libvulkan\.so\.1 .*x86-64/ && !found { print $NF; found = 1 }')
[ -n "$loader" ] || { echo "device-pack: no libvulkan.so.1 here: apt-get install libvulkan1" >&2; exit 1; }
cp -L "$loader" "$dir/lib/libvulkan.so.1"
cp scripts/device-env.sh "$dir/env.sh"
cp /usr/lib/x86_64-linux-gnu/libVkLayer_khronos_validation.so "$dir/lib/"
sed 's|"library_path": "[^"]*"|"library_path": "../lib/libVkLayer_khronos_validation.so"|' \
    /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json > "$dir/layers/VkLayer_khronos_validation.json"
for a in build/apps/oscar-*; do [ -x "$a" ] && strip -o "$dir/bin/$(basename "$a")" "$a"; done
for t in build/tests/test_*; do
    case $t in *calib*|*tokenizer*|*sampler*|*chat*|*ggml*|*gguf*|*model_ref*|*no_device*) continue ;; esac
    [ -x "$t" ] && strip -o "$dir/tests/$(basename "$t")" "$t"
done
cp -r tests/data "$dir/tests/" 2>/dev/null || true
du -sh "$dir" | awk -v d="$dir" '{print "device-pack: " d " holds " $1}'
