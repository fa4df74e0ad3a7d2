#!/usr/bin/env bash
# Installs everything OSCAR-VK needs on Debian 12 (run as root), then configures and builds.
# Usage: scripts/setup.sh            (from the project root)
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
    build-essential cmake pkg-config python3 python3-pip python3-matplotlib \
    libvulkan-dev libvulkan1 libvulkan-volk-dev glslc glslang-tools spirv-tools \
    mesa-vulkan-drivers vulkan-validationlayers vulkan-tools \
    liblapacke-dev libopenblas-dev libedit-dev debian-handbook gnu-standards >/dev/null
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)"
