/* Trace folder watch on inotify (see trace_watch.h for what counts as a
 * completed file). One inotify watch per folder, a table from watch
 * descriptor to the folder's path relative to the root, a queue of paths
 * to report, and the set of paths reported so far (an hm_strtab: a path is
 * new when interning it adds an id) with what each file looked like when it
 * was last reported (its signature), so that a later round of writing is
 * reported again and a close that changed nothing is not. */
#include "trace_watch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/strtab.h"
#include "common/vec.h"

#define MAX_DEPTH 8
#define WATCH_MASK (IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_ONLYDIR)

struct wdir {
    int wd;
    int depth;        /* 0 for the root */
    char *rel;        /* owned; "" for the root, else "a/b" */
};

struct col_watch {
    int fd;                       /* inotify, owned */
    char *root;                   /* owned */
    HM_VEC(struct wdir) dirs;
    HM_VEC(char *) queue;         /* owned paths not yet handed out */
    size_t qhead;                 /* next to hand out */
    struct hm_strtab *seen;       /* owned: every path queued or skipped */
    HM_VEC(struct col_file_sig) sigs; /* by seen id (0, the empty string, unused): the file when
                                     last queued or skipped */
    int overflowed;
    /* No inotify (its per-user instances or watches were used up): the
     * tree is scanned every POLL_NS, and a file is reported once two scans
     * in a row found it unchanged (a file caught mid-write is refused by
     * the reader and read again when it changes: trace_watch.h). */
    int polling;
    char poll_why[128];
    int64_t next_poll_ns;
    struct hm_strtab *pending;            /* owned: files seen changing at the last scan */
    HM_VEC(struct col_file_sig) pending_sigs; /* by pending id: as that scan found them */
};

#define POLL_NS 1000000000LL

/* What a scan does with the trace files it finds. */
enum scan_mode { SCAN_DIRS_ONLY, SCAN_QUEUE, SCAN_MARK, SCAN_STABLE };

static int is_trace_name(const char *name)
{
    size_t n = strlen(name);

    if (name[0] == '.' || strstr(name, ".tmp"))
        return 0;
    return (n > 5 && !strcmp(name + n - 5, ".json")) ||
           (n > 8 && !strcmp(name + n - 8, ".json.gz"));
}

/* "root/rel/name" with empty parts left out; malloc'd, NULL if out of memory. */
static char *join(const char *root, const char *rel, const char *name)
{
    size_t len = strlen(root) + strlen(rel) + strlen(name) + 3;
    char *s = malloc(len);

    if (s)
        snprintf(s, len, "%s%s%s%s%s", root, *rel ? "/" : "", rel, *name ? "/" : "", name);
    return s;
}

struct col_file_sig col_file_sig_of(const char *path)
{
    struct stat st;
    struct col_file_sig g = {0};

    if (stat(path, &st) == 0)
        g = (struct col_file_sig){st.st_dev, st.st_ino, st.st_size,
                                  (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec};
    return g;
}

int col_file_sig_equal(const struct col_file_sig *a, const struct col_file_sig *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mtime_ns == b->mtime_ns;
}

/* Queues path (taking ownership) if it is new, or seen before but changed
 * since (a later round of writing); returns 1 if queued, 0 if not, or
 * HM_ENOMEM. With mark_only it is recorded as seen, as it is now, and not
 * queued (returns 1 for a path new to the watch). */
static int offer(struct col_watch *w, char *path, int mark_only)
{
    uint32_t before = hm_strtab_count(w->seen);
    hm_strid id = hm_strtab_intern_cstr(w->seen, path);
    struct col_file_sig now = col_file_sig_of(path);
    char **slot;

    if (id == UINT32_MAX) {
        free(path);
        return HM_ENOMEM;
    }
    if (id >= before) {
        struct col_file_sig *g = HM_VEC_PUSH(w->sigs);
        if (!g) {
            free(path);
            return HM_ENOMEM;
        }
        *g = now;
    } else if (col_file_sig_equal(&w->sigs.v[id], &now) || mark_only) {
        w->sigs.v[id] = now;
        free(path);
        return 0;
    } else {
        w->sigs.v[id] = now;
    }
    if (mark_only) {
        free(path);
        return 1;
    }
    if (!(slot = HM_VEC_PUSH(w->queue))) {
        free(path);
        return HM_ENOMEM;
    }
    *slot = path;
    return 1;
}

static struct wdir *find_wd(struct col_watch *w, int wd)
{
    for (size_t i = 0; i < w->dirs.n; i++)
        if (w->dirs.v[i].wd == wd)
            return &w->dirs.v[i];
    return NULL;
}

/* Watches root/rel. A folder that vanished meanwhile is not an error. */
static int add_watch(struct col_watch *w, const char *rel, int depth)
{
    char *full = join(w->root, rel, "");
    struct wdir *d;
    int wd;

    if (!full)
        return HM_ENOMEM;
    if (w->polling) {   /* scans find every folder anyway */
        free(full);
        return 0;
    }
    wd = inotify_add_watch(w->fd, full, WATCH_MASK);
    free(full);
    if (wd < 0)
        return errno == ENOENT || errno == ENOTDIR ? 0 : HM_EIO;
    if ((d = find_wd(w, wd))) {   /* known folder, moved: follow its new name */
        char *r = strdup(rel);
        if (!r)
            return HM_ENOMEM;
        free(d->rel);
        d->rel = r;
        d->depth = depth;
        return 0;
    }
    if (!(d = HM_VEC_PUSH(w->dirs)) || !(d->rel = strdup(rel))) {
        if (d)
            w->dirs.n--;
        return HM_ENOMEM;
    }
    d->wd = wd;
    d->depth = depth;
    return 0;
}

static int entry_kind(int dfd, const struct dirent *e)
{
    struct stat st;

    if (e->d_type != DT_UNKNOWN && e->d_type != DT_LNK)
        return e->d_type;
    if (fstatat(dfd, e->d_name, &st, e->d_type == DT_LNK ? 0 : AT_SYMLINK_NOFOLLOW) != 0)
        return DT_UNKNOWN;
    /* a link to a folder is not followed (no loops); a link to a file is a file */
    if (S_ISDIR(st.st_mode))
        return e->d_type == DT_LNK ? DT_LNK : DT_DIR;
    return S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
}

/* Polling: 1 when path is as the last scan found it (written, then left
 * alone for a scan interval), 0 when it is new or changed since (noted for
 * the next scan), or HM_ENOMEM. */
static int settled(struct col_watch *w, const char *path)
{
    uint32_t before = hm_strtab_count(w->pending);
    hm_strid id = hm_strtab_intern_cstr(w->pending, path);
    struct col_file_sig now = col_file_sig_of(path);

    if (id == UINT32_MAX)
        return HM_ENOMEM;
    if (id >= before) {
        struct col_file_sig *g = HM_VEC_PUSH(w->pending_sigs);
        if (!g)
            return HM_ENOMEM;
        *g = now;
        return 0;
    }
    if (col_file_sig_equal(&w->pending_sigs.v[id], &now) && now.ino)
        return 1;
    w->pending_sigs.v[id] = now;
    return 0;
}

/* Watches every folder under root/rel (depth = rel's depth) and handles
 * trace files per mode. Returns files queued or marked, or a negative code. */
static int scan(struct col_watch *w, const char *rel, int depth, enum scan_mode mode)
{
    char *full = join(w->root, rel, "");
    DIR *dir = full ? opendir(full) : NULL;
    struct dirent *e;
    int found = 0, rc = 0;

    free(full);
    if (!dir)
        return depth == 0 ? HM_EIO : 0;   /* a subfolder may vanish */
    while (rc >= 0 && (e = readdir(dir))) {
        int kind = entry_kind(dirfd(dir), e);
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (kind == DT_DIR && depth < MAX_DEPTH) {
            char *sub = *rel ? join(rel, "", e->d_name) : strdup(e->d_name);
            rc = sub ? add_watch(w, sub, depth + 1) : HM_ENOMEM;
            if (rc >= 0 && (rc = scan(w, sub, depth + 1, mode)) > 0)
                found += rc;
            free(sub);
        } else if (kind == DT_REG && mode != SCAN_DIRS_ONLY && is_trace_name(e->d_name)) {
            char *path = join(w->root, rel, e->d_name);
            if (path && mode == SCAN_STABLE && !(rc = settled(w, path)))
                free(path);
            else
                rc = path ? offer(w, path, mode == SCAN_MARK) : HM_ENOMEM;
            found += rc > 0;
        }
    }
    closedir(dir);
    return rc < 0 ? rc : found;
}

struct col_watch *col_watch_new(const char *dir, struct hm_err *err)
{
    struct col_watch *w = calloc(1, sizeof *w);
    struct stat st;

    if (w)
        w->fd = -1;
    if (!w || !(w->root = strdup(dir)) || !(w->seen = hm_strtab_new()) || !HM_VEC_PUSH(w->sigs)) {
        hm_err_set(err, HM_ENOMEM, dir, -1, "out of memory");
        goto fail;
    }
    if (stat(dir, &st) != 0) {
        hm_err_set(err, HM_EIO, dir, -1, "cannot watch: %s", strerror(errno));
        goto fail;
    }
    if (!S_ISDIR(st.st_mode)) {
        hm_err_set(err, HM_EIO, dir, -1, "cannot watch: not a directory");
        goto fail;
    }
    w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->fd >= 0 && add_watch(w, "", 0) == 0 && scan(w, "", 0, SCAN_DIRS_ONLY) >= 0)
        return w;
    /* Out of inotify instances or watches (fs.inotify.max_user_instances
     * is 128 by default: 128 ranks on one host): scan instead. */
    if (errno != EMFILE && errno != ENFILE && errno != ENOSPC && errno != ENOMEM) {
        hm_err_set(err, HM_EIO, dir, -1, "cannot watch: %s", strerror(errno));
        goto fail;
    }
    snprintf(w->poll_why, sizeof w->poll_why, "%s", strerror(errno));
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    for (size_t i = 0; i < w->dirs.n; i++)
        free(w->dirs.v[i].rel);
    w->dirs.n = 0;
    w->polling = 1;
    if (!(w->pending = hm_strtab_new()) || !HM_VEC_PUSH(w->pending_sigs)) {
        hm_err_set(err, HM_ENOMEM, dir, -1, "out of memory");
        goto fail;
    }
    return w;
fail:
    col_watch_free(w);
    return NULL;
}

void col_watch_free(struct col_watch *w)
{
    if (!w)
        return;
    if (w->fd >= 0)
        close(w->fd);
    for (size_t i = 0; i < w->dirs.n; i++)
        free(w->dirs.v[i].rel);
    HM_VEC_FREE(w->dirs);
    for (size_t i = w->qhead; i < w->queue.n; i++)
        free(w->queue.v[i]);
    HM_VEC_FREE(w->queue);
    hm_strtab_free(w->seen);
    HM_VEC_FREE(w->sigs);
    hm_strtab_free(w->pending);
    HM_VEC_FREE(w->pending_sigs);
    free(w->root);
    free(w);
}

int col_watch_fd(const struct col_watch *w)
{
    return w->fd;
}

int col_watch_overflowed(const struct col_watch *w)
{
    return w->overflowed;
}

const char *col_watch_polling(const struct col_watch *w)
{
    return w->polling ? w->poll_why : NULL;
}

/* Polling: a scan of the tree when one is due. */
static int poll_tree(struct col_watch *w)
{
    struct timespec ts;
    int64_t now;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    if (now < w->next_poll_ns)
        return 0;
    w->next_poll_ns = now + POLL_NS;
    return scan(w, "", 0, SCAN_STABLE);
}

/* A folder appeared under d: watch it; a folder renamed into place was
 * finished elsewhere, so its files are queued too. */
static int on_new_dir(struct col_watch *w, const struct wdir *d, const char *name, int moved)
{
    char *sub;
    int rc, depth = d->depth + 1;

    if (depth > MAX_DEPTH)
        return 0;
    sub = *d->rel ? join(d->rel, "", name) : strdup(name);
    if (!sub)
        return HM_ENOMEM;
    rc = add_watch(w, sub, depth);
    if (rc >= 0)
        rc = scan(w, sub, depth, moved ? SCAN_QUEUE : SCAN_DIRS_ONLY);
    free(sub);
    return rc < 0 ? rc : 0;
}

static int on_event(struct col_watch *w, const struct inotify_event *ev)
{
    struct wdir *d;

    if (ev->mask & IN_Q_OVERFLOW) {
        w->overflowed = 1;
        return scan(w, "", 0, SCAN_DIRS_ONLY) < 0 ? HM_EIO : 0;
    }
    if (!(d = find_wd(w, ev->wd)))
        return 0;
    if (ev->mask & IN_IGNORED) {   /* folder removed: forget it */
        free(d->rel);
        *d = w->dirs.v[--w->dirs.n];
        return 0;
    }
    if (!ev->len)
        return 0;
    if (ev->mask & IN_ISDIR)
        return (ev->mask & (IN_CREATE | IN_MOVED_TO))
                   ? on_new_dir(w, d, ev->name, !!(ev->mask & IN_MOVED_TO)) : 0;
    if ((ev->mask & (IN_CLOSE_WRITE | IN_MOVED_TO)) && is_trace_name(ev->name)) {
        char *path = join(w->root, d->rel, ev->name);
        int rc = path ? offer(w, path, 0) : HM_ENOMEM;
        return rc < 0 ? rc : 0;
    }
    return 0;
}

/* Reads one buffer of events. Returns 1 if it read some, 0 if none were
 * pending, or a negative code. */
static int read_events(struct col_watch *w)
{
    char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;

    do
        n = read(w->fd, buf, sizeof buf);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return errno == EAGAIN ? 0 : HM_EIO;
    for (char *p = buf; p < buf + n;) {
        const struct inotify_event *ev = (const struct inotify_event *)p;
        int rc = on_event(w, ev);
        if (rc == HM_ENOMEM)
            return rc;
        p += sizeof *ev + ev->len;
    }
    return 1;
}

int col_watch_next(struct col_watch *w, char **path)
{
    int rc;

    *path = NULL;
    if (w->polling && w->qhead == w->queue.n) {
        w->qhead = w->queue.n = 0;
        if ((rc = poll_tree(w)) < 0)
            return rc;
        if (w->qhead == w->queue.n)
            return 0;
    }
    while (w->qhead == w->queue.n) {
        w->qhead = w->queue.n = 0;
        if ((rc = read_events(w)) <= 0)
            return rc;
    }
    *path = w->queue.v[w->qhead++];
    return 1;
}

int col_watch_scan(struct col_watch *w)
{
    return scan(w, "", 0, SCAN_QUEUE);
}

int col_watch_skip_existing(struct col_watch *w)
{
    return scan(w, "", 0, SCAN_MARK);
}

int col_watch_add(struct col_watch *w, const char *path)
{
    char *copy = strdup(path);

    return copy ? offer(w, copy, 0) : HM_ENOMEM;
}
