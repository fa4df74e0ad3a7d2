# Source this on a headless NVIDIA machine after scripts/device-pack.sh:  source .device/env.sh
# Puts the packed Vulkan loader, validation layer and binaries on the paths. A headless NVIDIA
# driver must be reached through libEGL_nvidia.so.0: the GLX entry of the default driver file
# returns no vkCreateInstance without a display, so a driver file for the EGL entry is written.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export LD_LIBRARY_PATH="$here/lib:${LD_LIBRARY_PATH:-/usr/local/nvidia/lib64}"
icd=${TMPDIR:-/tmp}/oscar_nvidia_egl_icd.json
printf '{"file_format_version":"1.0.0","ICD":{"library_path":"libEGL_nvidia.so.0","api_version":"1.4.312"}}\n' > "$icd"
export VK_DRIVER_FILES="$icd" VK_ICD_FILENAMES="$icd"
export VK_LAYER_PATH="$here/layers"
export OSCAR_DEVICE_DIR="$here"
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
export PATH="$here/bin:$PATH"
