/* Links against the installed library and prints its version. */
#include <stdio.h>

#include <oscar/oscar.h>

int main(void)
{
    printf("oscar %s: %s\n", oscar_version_string(), oscar_status_string(OSCAR_ERROR_OUT_OF_PAGES));
    return oscar_version_number() == OSCAR_VERSION_NUMBER ? 0 : 1;
}
