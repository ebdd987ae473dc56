/* The sweep of run folders left behind by ended runs (trace_sweep.h).
 * Every check errs on the side of keeping: a folder is removed only when
 * its name, owner, age, KEEP marker and pid all say it belongs to a run of
 * this user that has ended. */
#include "trace_sweep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Parses 1-maxdig decimal digits at *s; advances *s. */
static int parse_digits(const char **s, int maxdig, long long *out)
{
    long long v = 0;
    int n = 0;

    while (**s >= '0' && **s <= '9') {
        if (++n > maxdig)
            return -1;
        v = v * 10 + (**s - '0');
        (*s)++;
    }
    *out = v;
    return n > 0 ? 0 : -1;
}

int col_trace_root_name(const char *name, long *pid)
{
    const char *s = name;
    long long p, ms;

    if (strncmp(s, "htamerge-", 9) != 0)
        return 0;
    s += 9;
    if (parse_digits(&s, 10, &p) != 0 || *s++ != '-' || parse_digits(&s, 18, &ms) != 0 || *s)
        return 0;
    if (p <= 0 || p > INT_MAX)
        return 0;
    *pid = (long)p;
    return 1;
}

/* nftw passes no context: the first failure of the current removal. One
 * removal at a time per thread. */
static _Thread_local int remove_errno;

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if ((type == FTW_DP || type == FTW_DNR ? rmdir(path) : unlink(path)) != 0 && !remove_errno)
        remove_errno = errno;
    return 0;   /* go on: remove what can be removed */
}

int col_trace_remove_tree(const char *path)
{
    remove_errno = 0;
    if (nftw(path, remove_one, 16, FTW_PHYS | FTW_DEPTH | FTW_MOUNT) != 0 && !remove_errno)
        remove_errno = errno ? errno : EIO;
    if (!remove_errno)
        return 0;
    errno = remove_errno;
    return -1;
}

/* True when dir/name is the leftover of an ended run (see trace_sweep.h). */
static int is_leftover(int dfd, const char *name, int min_age_s, time_t now)
{
    struct stat st, keep;
    char marker[NAME_MAX + sizeof COL_TRACE_KEEP_MARKER + 2];
    long pid;

    if (!col_trace_root_name(name, &pid))
        return 0;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != geteuid())
        return 0;
    if (now - st.st_mtime < (time_t)min_age_s)
        return 0;
    snprintf(marker, sizeof marker, "%s/%s", name, COL_TRACE_KEEP_MARKER);
    if (fstatat(dfd, marker, &keep, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
        return 0;   /* kept, or cannot tell */
    /* EPERM: a process of another user holds the pid: alive. */
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

int col_trace_sweep(const char *dir, int min_age_s)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[PATH_MAX];
    time_t now = time(NULL);
    int removed = 0;

    if (!d)
        return -1;
    while ((e = readdir(d))) {
        if (!is_leftover(dirfd(d), e->d_name, min_age_s, now))
            continue;
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path)
            continue;
        if (col_trace_remove_tree(path) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}
