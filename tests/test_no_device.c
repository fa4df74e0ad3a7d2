/* Without a Vulkan loader, or with a loader but no driver, the library returns a status and
 * a message; it never crashes. Each case needs a fresh process (the loader is loaded once),
 * so the test re-executes itself. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oscar/oscar.h"
#include "test_util.h"

static int child(const char *mode)
{
    if (strcmp(mode, "no-loader") == 0) setenv("OSCAR_VULKAN_LIBRARY", "/nonexistent/libvulkan.so.1", 1);
    else setenv("VK_DRIVER_FILES", "/nonexistent/icd.json", 1), setenv("VK_ICD_FILENAMES", "/nonexistent/icd.json", 1);
    oscar_context *ctx = NULL;
    oscar_status st = oscar_context_create(NULL, &ctx);
    uint32_t n = 0;
    oscar_status st2 = oscar_list_devices(NULL, &n);
    printf("%s: %s: %s\n", mode, oscar_status_string(st), oscar_last_error());
    oscar_status want = strcmp(mode, "no-loader") == 0 ? OSCAR_ERROR_NO_LOADER : OSCAR_ERROR_NO_DEVICE;
    return (st == want && st2 == want && ctx == NULL && oscar_last_error()[0]) ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 2) return child(argv[1]);
    const char *modes[] = { "no-loader", "no-driver" };
    for (int i = 0; i < 2; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            execl("/proc/self/exe", argv[0], modes[i], (char *)NULL);
            _exit(2);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: child status %d", modes[i], status);
    }
    return test_finish();
}
