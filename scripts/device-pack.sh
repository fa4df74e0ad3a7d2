#!/usr/bin/env bash
# Packs what a run on the borrowed NVIDIA machine needs into .device/ (git-ignored):
# the Vulkan loader and env script (../shared/device/pack.sh), the Khronos validation layer
# (so tests run there with validation on too), the apps and the GPU test binaries.
# Usage (from the project root, after building into build/):  scripts/device-pack.sh
# Then, with the device tool: command "source .device/env.sh && scripts/device-run.sh", carry [".device"].
set -euo pipefail
cd "$(dirname "$0")/.."
apps=$(ls build/apps/oscar-* 2>/dev/null || true)
# What ../shared/device/pack.sh does (the loader, its env script, the apps), done here because that
# script appends to .git/info/exclude, which a git worktree does not have (.gitignore already
# ignores .device/).
loader=$(ldconfig -p | awk '/libvulkan.so.1 .*x86-64/ {print $NF}' | head -n 1)
[ -n "$loader" ] || { echo "device-pack: no libvulkan.so.1 here: apt-get install libvulkan1" >&2; exit 1; }
rm -rf .device && mkdir -p .device/lib .device/bin
cp -L "$loader" .device/lib/libvulkan.so.1
cp ../shared/device/env.sh .device/env.sh
for f in $apps; do cp -L "$f" .device/bin/; done
mkdir -p .device/layers .device/tests
cp /usr/lib/x86_64-linux-gnu/libVkLayer_khronos_validation.so .device/lib/
sed 's|"library_path": "[^"]*"|"library_path": "../lib/libVkLayer_khronos_validation.so"|' \
    /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json > .device/layers/VkLayer_khronos_validation.json
cat >> .device/env.sh <<'ENV'
export VK_LAYER_PATH="$here/layers"
ENV
for t in build/tests/test_*; do
    case $t in *calib*|*tokenizer*|*sampler*|*chat*|*ggml*|*gguf*|*model_ref*|*no_device*) continue ;; esac
    [ -x "$t" ] && cp "$t" .device/tests/
done
cp -r tests/data .device/tests/ 2>/dev/null || true
du -sh .device | awk '{print "device-pack: .device holds " $1}'
