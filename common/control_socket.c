/* Names of a job's control socket (control_socket.h). */
#include "control_socket.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/un.h>
#include <unistd.h>

int hm_control_dir(char *buf, size_t len)
{
    const char *d = getenv("HTAMERGE_CONTROL_DIR");
    int n;

    if (d && *d) {
        n = snprintf(buf, len, "%s", d);
    } else {
        const char *base = getenv("XDG_RUNTIME_DIR");
        if (!base || !*base)
            base = getenv("TMPDIR");
        if (!base || !*base)
            base = "/tmp";
        n = snprintf(buf, len, "%s/htamerge-%u", base, (unsigned)getuid());
    }
    return n > 0 && (size_t)n < len ? 0 : -1;
}

static int in_dir(char *buf, size_t len, pid_t pid, const char *ext)
{
    char dir[256];
    int n;

    if (hm_control_dir(dir, sizeof dir) != 0)
        return -1;
    n = snprintf(buf, len, "%s/%d.%s", dir, (int)pid, ext);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

int hm_control_sock_path(char *buf, size_t len, pid_t pid)
{
    struct sockaddr_un un;
    if (len > sizeof un.sun_path)
        len = sizeof un.sun_path;
    return in_dir(buf, len, pid, "sock");
}

int hm_control_note_path(char *buf, size_t len, pid_t pid)
{
    return in_dir(buf, len, pid, "db");
}
