/* volk (Debian's libvulkan-volk-dev ships it as source): Vulkan entry points loaded at run
 * time, so the library has no link-time dependency on libvulkan. */
#include <volk.c>
