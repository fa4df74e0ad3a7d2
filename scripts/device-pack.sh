#!/usr/bin/env bash
# Packs what a run on the borrowed NVIDIA machine needs into .device/ (git-ignored):
# the Vulkan loader and env script (../shared/device/pack.sh), the Khronos validation layer
# (so tests run there with validation on too), the apps and the GPU test binaries.
# Usage (from the project root, after building into build/):  scripts/device-pack.sh
# Then, with the device tool: command "source .device/env.sh && scripts/device-run.sh", carry [".device"].
set -euo pipefail
cd "$(dirname "$0")/.."
apps=$(ls build/apps/oscar-* 2>/dev/null || true)
# ../shared/device/pack.sh pipes `ldconfig -p` into an awk that exits at the first match: under
# pipefail ldconfig's SIGPIPE fails it now and then (exit 141, .device left empty). Retry.
for try in 1 2 3; do bash ../shared/device/pack.sh $apps && break; [ $try = 3 ] && exit 1; done
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
