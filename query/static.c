/* The web viewer's files. A folder on disk wins when there is one, so that
 * an installed tree can be customised: $HTAMERGE_WEB_DIR, else
 * <exe dir>/HTAMERGE_WEB_REL (../share/htamerge/web_static). A file that
 * folder lacks, or every file when there is no folder, comes from the copy
 * embedded at build time (hm_web.h from web_static/ by embed_web.cmake).
 * On disk, a file is served only when its real path (symlinks resolved,
 * checked again on the opened descriptor against a swap in between) lies
 * inside the folder, it is a regular file, and no part of its name starts
 * with a dot. Nothing is cached: the folder may change while serving. */
#include "query_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hm_web.h"

#ifndef HTAMERGE_WEB_REL
#define HTAMERGE_WEB_REL "../share/htamerge/web_static"
#endif
#define WEB_MAX_FILE (16 << 20)   /* bytes; a web asset is kilobytes */

enum disk_result { DISK_ABSENT, DISK_FOUND, DISK_REFUSED };

static const char *mime_of(const char *path)
{
    static const char *const map[][2] = {
        {".html", "text/html; charset=utf-8"},     {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},       {".svg", "image/svg+xml"},
        {".json", "application/json"},             {".png", "image/png"},
        {".ico", "image/x-icon"},                  {".txt", "text/plain; charset=utf-8"},
    };
    const char *dot = strrchr(path, '.');

    for (size_t i = 0; dot && i < sizeof map / sizeof *map; i++)
        if (!strcmp(dot, map[i][0]))
            return map[i][1];
    return "application/octet-stream";
}

bool qry_asset_dir(char *root, size_t len)
{
    const char *env = getenv("HTAMERGE_WEB_DIR");
    char exe[PATH_MAX], cand[PATH_MAX + sizeof HTAMERGE_WEB_REL + 1], real[PATH_MAX];
    struct stat st;
    char *slash;
    ssize_t n;

    if (env && *env) {
        snprintf(cand, sizeof cand, "%s", env);
    } else {
        n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0)
            return false;
        exe[n] = '\0';
        if (!(slash = strrchr(exe, '/')))
            return false;
        *slash = '\0';
        snprintf(cand, sizeof cand, "%s/%s", exe, HTAMERGE_WEB_REL);
    }
    if (!realpath(cand, real) || stat(real, &st) != 0 || !S_ISDIR(st.st_mode) || strlen(real) >= len)
        return false;
    memcpy(root, real, strlen(real) + 1);
    return true;
}

/* Whether canonical path p names something strictly inside canonical root. */
static bool is_inside(const char *p, const char *root)
{
    size_t n = strlen(root);

    if (n == 1)   /* root is "/" */
        return p[0] == '/' && p[1] != '\0';
    return !strncmp(p, root, n) && p[n] == '/';
}

/* Whether the opened fd is inside root, by its name as the kernel knows it
 * now: a folder renamed or swapped for a symlink after realpath() looked is
 * caught here. Without /proc nothing can be confirmed: refused. */
static bool fd_inside(int fd, const char *root)
{
    char link[64], real[PATH_MAX];
    ssize_t n;

    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    n = readlink(link, real, sizeof real - 1);
    if (n <= 0)
        return false;
    real[n] = '\0';
    return is_inside(real, root);
}

/* Whether a component of path starts with '.' (".git", ".htpasswd"). */
static bool has_dot_part(const char *path)
{
    for (const char *p = path; (p = strchr(p, '/')) != NULL; p++)
        if (p[1] == '.')
            return true;
    return false;
}

/* Reads all of fd (a regular file of size bytes) into a new buffer. */
static unsigned char *read_all(int fd, size_t size, size_t *got)
{
    unsigned char *buf = malloc(size ? size : 1);
    ssize_t r = 1;

    *got = 0;
    while (buf && *got < size && r > 0) {
        r = read(fd, buf + *got, size - *got);
        if (r < 0 && errno == EINTR)
            r = 1;
        else if (r > 0)
            *got += (size_t)r;
    }
    if (buf && r < 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* Looks path ("/js/app.js") up under root. */
static enum disk_result read_disk(const char *root, const char *path, struct qry_asset *out)
{
    char joined[PATH_MAX * 2], real[PATH_MAX];
    unsigned char *data;
    struct stat st;
    size_t got;
    int fd;

    if (has_dot_part(path))
        return DISK_REFUSED;
    snprintf(joined, sizeof joined, "%s%s", root, path);
    if (!realpath(joined, real))
        return errno == ENOENT || errno == ENOTDIR ? DISK_ABSENT : DISK_REFUSED;
    if (!is_inside(real, root) || has_dot_part(real + strlen(root)))
        return DISK_REFUSED;
    /* O_NONBLOCK: a FIFO planted in the folder must not stall the server. */
    fd = open(real, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return DISK_REFUSED;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > WEB_MAX_FILE || !fd_inside(fd, root)) {
        close(fd);
        return DISK_REFUSED;
    }
    data = read_all(fd, (size_t)st.st_size, &got);
    close(fd);
    if (!data)
        return DISK_REFUSED;
    *out = (struct qry_asset){path, mime_of(path), data, got, data};
    return DISK_FOUND;
}

bool qry_asset_find(const char *path, struct qry_asset *out)
{
    char root[PATH_MAX];

    if (!strcmp(path, "/"))
        path = "/index.html";
    /* server.c checked already; the file system is not reached without it. */
    if (!qry_path_is_safe(path, strlen(path)))
        return false;
    if (qry_asset_dir(root, sizeof root)) {
        switch (read_disk(root, path, out)) {
        case DISK_FOUND: return true;
        case DISK_REFUSED: return false;
        case DISK_ABSENT: break;
        }
    }
    for (const struct hm_web_file *f = hm_web_files; f->path; f++) {
        if (strcmp(f->path, path) != 0)
            continue;
        *out = (struct qry_asset){f->path, mime_of(f->path), f->data, f->len, NULL};
        return true;
    }
    return false;
}

void qry_asset_release(struct qry_asset *a)
{
    free(a->owned);
    a->owned = NULL;
    a->data = NULL;
}
