/* Names of a job's control socket (control_socket.h). */
#include "control_socket.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
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
        n = snprintf(buf, len, "%s/htamerge.%u", base, (unsigned)getuid());
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

int hm_control_send(const char *path, const char *request)
{
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    size_t n = strlen(request);
    int fd, e;

    if (strlen(path) >= sizeof un.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(un.sun_path, path, strlen(path) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&un, sizeof un) != 0 || write(fd, request, n) != (ssize_t)n) {
        e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int hm_control_read_line(int fd, struct hm_control_reader *r, char *line, size_t len, int timeout_ms)
{
    for (;;) {
        char *nl = memchr(r->buf, '\n', r->have);
        if (nl) {
            size_t n = (size_t)(nl - r->buf);
            snprintf(line, len, "%.*s", (int)n, r->buf);
            r->have -= n + 1;
            memmove(r->buf, nl + 1, r->have);
            return 1;
        }
        if (r->have == sizeof r->buf) {   /* a line longer than any the job writes */
            errno = EMSGSIZE;
            return -1;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int k = poll(&p, 1, timeout_ms);
        if (k == 0)
            errno = ETIMEDOUT;
        if (k <= 0) {
            if (k < 0 && errno == EINTR)
                continue;
            return -1;
        }
        ssize_t got = read(fd, r->buf + r->have, sizeof r->buf - r->have);
        if (got == 0)
            return 0;
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        r->have += (size_t)got;
    }
}
