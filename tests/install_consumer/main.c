/* Links against the installed library and prints its version; where Vulkan's headers are
 * installed, also compiles the optional oscar/vulkan.h and links its entry points. */
#include <stdio.h>

#include <oscar/oscar.h>
#if defined(__has_include)
#if __has_include(<vulkan/vulkan_core.h>)
#include <oscar/vulkan.h>
#define CONSUMER_VULKAN 1
#endif
#endif

int main(void)
{
    printf("oscar %s: %s\n", oscar_version_string(), oscar_status_string(OSCAR_ERROR_OUT_OF_PAGES));
#ifdef CONSUMER_VULKAN
    oscar_status (*create)(const oscar_vk_device *, const oscar_context_params *, oscar_context **) = oscar_vk_context_create;
    oscar_status st = oscar_vk_check_device(NULL, NULL, 0); /* no device described: a usage error */
    printf("oscar/vulkan.h: %s\n", oscar_status_string(st));
    if (!create || st != OSCAR_ERROR_INVALID_ARGUMENT) return 1;
#endif
    return oscar_version_number() == OSCAR_VERSION_NUMBER ? 0 : 1;
}
