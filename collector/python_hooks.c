/* Python detection and the bootstrap's location (python_hooks.h). */
#include "python_hooks.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launcher_env.h"

extern char **environ;

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* 1 if the file's first line is a #! line naming python. */
static int shebang_python(const char *path)
{
    char buf[256];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 2 || buf[0] != '#' || buf[1] != '!')
        return 0;
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return strstr(buf, "python") != NULL;
}

/* The file execvp would run for name, into buf; 0 or -1. */
static int resolve(const char *name, const char *path, char *buf, size_t len)
{
    struct stat st;

    if (strchr(name, '/')) {
        snprintf(buf, len, "%s", name);
        return stat(buf, &st) == 0 && S_ISREG(st.st_mode) ? 0 : -1;
    }
    for (const char *p = path; p && *p;) {
        size_t dlen = strcspn(p, ":");
        snprintf(buf, len, "%.*s%s%s", (int)dlen, dlen ? p : ".", "/", name);
        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
            return 0;
        p += dlen + (p[dlen] == ':');
    }
    return -1;
}

int col_py_is_python(char *const argv[], char *const envp[])
{
    const char *name, *base, *path;
    char file[PATH_MAX];

    if (!argv || !argv[0])
        return 0;
    name = argv[0];
    if (ends_with(name, ".py"))
        return 1;
    base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (!strncmp(base, "python", 6))
        return 1;
    path = col_env_get(envp ? envp : environ, "PATH");
    if (!path)
        path = "/bin:/usr/bin";
    return resolve(name, path, file, sizeof file) == 0 && shebang_python(file);
}

int col_py_locate(char *dir, size_t dir_len, char *lib, size_t lib_len)
{
    static const char *const rel[][2] = {{"python", "libhtamerge-py.so"},
                                         {"../lib/htamerge/python", "../lib/htamerge/libhtamerge-py.so"}};
    char exe[PATH_MAX], cand[PATH_MAX + 64], *slash;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

    if (n <= 0)
        return -1;
    exe[n] = '\0';
    if (!(slash = strrchr(exe, '/')))
        return -1;
    *slash = '\0';
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char d[PATH_MAX], l[PATH_MAX];
        snprintf(cand, sizeof cand, "%s/%s/sitecustomize.py", exe, rel[i][0]);
        if (access(cand, R_OK) != 0)
            continue;
        snprintf(cand, sizeof cand, "%s/%s", exe, rel[i][0]);
        if (!realpath(cand, d))
            continue;
        snprintf(cand, sizeof cand, "%s/%s", exe, rel[i][1]);
        if (access(cand, R_OK) != 0 || !realpath(cand, l))
            continue;
        if (strlen(d) >= dir_len || strlen(l) >= lib_len)
            return -1;
        memcpy(dir, d, strlen(d) + 1);
        memcpy(lib, l, strlen(l) + 1);
        return 0;
    }
    return -1;
}
