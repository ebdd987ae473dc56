/* /proc/self/status figures (proc_status.h). */
#include "proc_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long hm_proc_status_kb(const char *key)
{
    char line[256];
    size_t n = strlen(key);
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");

    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':')
            kb = strtol(line + n + 1, NULL, 10);
    if (f)
        fclose(f);
    return kb;
}
