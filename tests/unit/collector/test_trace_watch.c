/* Tests for collector/trace_watch: files reported when complete (close
 * after write, rename into place) and again per later round of writing,
 * names that are not traces, subfolders, slow writers, rescans without
 * duplicates, the kernel queue overflowing, and scanning when inotify
 * cannot be had. */
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/trace_watch.h"

static char root[1024];

static const char *at(const char *rel)
{
    static char buf[4][4096];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof buf[i], "%s/%s", root, rel);
    return buf[i];
}

static void write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK_EQ_INT(write(fd, text, strlen(text)), (long long)strlen(text));
        close(fd);
    }
}

/* The next reported path relative to root, in a static buffer; "" if none. */
static const char *next_rel(struct col_watch *w)
{
    static char buf[4096];
    char *path = NULL;
    int rc = col_watch_next(w, &path);

    buf[0] = '\0';
    CHECK(rc >= 0);
    if (rc == 1) {
        size_t n = strlen(root);
        CHECK(!strncmp(path, root, n) && path[n] == '/');
        snprintf(buf, sizeof buf, "%s", path + n + 1);
        free(path);
    }
    return buf;
}

static void fresh_root(const char *name)
{
    char cmd[8192];
    snprintf(root, sizeof root, "%s", hm_tmpfile(name));
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", root, root);
    CHECK_EQ_INT(system(cmd), 0);
}

static void test_complete_files(void)
{
    struct hm_err err;
    struct col_watch *w;

    fresh_root("watch_basic");
    w = col_watch_new(root, &err);
    CHECK(w != NULL);
    if (!w)
        return;
    CHECK(col_watch_fd(w) >= 0);
    CHECK_STR(next_rel(w), "");

    write_file(at("rank-0.pt.trace.json"), "{}");
    CHECK_STR(next_rel(w), "rank-0.pt.trace.json");
    CHECK_STR(next_rel(w), "");

    /* written under a temporary name, renamed into place */
    write_file(at("cycle1.json.gz.tmp"), "x");
    write_file(at("cycle1.tmp.json"), "x");
    CHECK_EQ_INT(rename(at("cycle1.json.gz.tmp"), at("cycle1.json.gz")), 0);
    CHECK_STR(next_rel(w), "cycle1.json.gz");
    CHECK_STR(next_rel(w), "");

    /* not traces: dot-files, other suffixes, bare ".json" */
    write_file(at(".hidden.json"), "x");
    write_file(at("notes.txt"), "x");
    write_file(at("trace.json.bak"), "x");
    write_file(at("x.jsonl"), "x");
    CHECK_STR(next_rel(w), "");

    /* rewritten later (a second profiler cycle under the same name):
     * reported again; opened and closed without a change: not */
    write_file(at("rank-0.pt.trace.json"), "{\"again\":1}");
    CHECK_STR(next_rel(w), "rank-0.pt.trace.json");
    CHECK_STR(next_rel(w), "");
    {
        int fd = open(at("rank-0.pt.trace.json"), O_WRONLY | O_APPEND);
        CHECK(fd >= 0);
        close(fd);
    }
    CHECK_STR(next_rel(w), "");
    /* appended and closed again: a new round */
    {
        int fd = open(at("rank-0.pt.trace.json"), O_WRONLY | O_APPEND);
        CHECK(fd >= 0 && write(fd, " ", 1) == 1);
        close(fd);
    }
    CHECK_STR(next_rel(w), "rank-0.pt.trace.json");
    CHECK_STR(next_rel(w), "");
    /* the rescan finds no round it has not reported */
    CHECK_EQ_INT(col_watch_scan(w), 0);
    col_watch_free(w);
}

static void test_slow_writer(void)
{
    struct hm_err err;
    struct col_watch *w;
    int fd;

    fresh_root("watch_slow");
    w = col_watch_new(root, &err);
    CHECK(w != NULL);
    if (!w)
        return;
    fd = open(at("slow.json"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    CHECK_EQ_INT(write(fd, "{\"traceEvents\":[", 16), 16);
    CHECK_STR(next_rel(w), "");
    usleep(20000);
    CHECK_EQ_INT(write(fd, "]}", 2), 2);
    CHECK_STR(next_rel(w), "");
    close(fd);
    CHECK_STR(next_rel(w), "slow.json");
    CHECK_STR(next_rel(w), "");
    col_watch_free(w);
}

static void test_subfolders(void)
{
    struct hm_err err;
    struct col_watch *w;
    char cmd[8192];

    fresh_root("watch_sub");
    mkdir(at("existing"), 0755);   /* there before the watch */
    w = col_watch_new(root, &err);
    CHECK(w != NULL);
    if (!w)
        return;
    write_file(at("existing/a.json"), "x");
    CHECK_STR(next_rel(w), "existing/a.json");

    CHECK_EQ_INT(mkdir(at("later"), 0755), 0);
    CHECK_EQ_INT(mkdir(at("later/deeper"), 0755), 0);   /* before we saw "later" */
    CHECK_STR(next_rel(w), "");
    write_file(at("later/b.json"), "x");
    write_file(at("later/deeper/c.json.gz"), "x");
    CHECK_STR(next_rel(w), "later/b.json");
    CHECK_STR(next_rel(w), "later/deeper/c.json.gz");

    /* a folder finished elsewhere and renamed in: its files count */
    snprintf(cmd, sizeof cmd, "rm -rf '%s.out' && mkdir -p '%s.out/prof' && "
             "echo {} > '%s.out/prof/d.json' && mv '%s.out/prof' '%s/moved'",
             root, root, root, root, root);
    CHECK_EQ_INT(system(cmd), 0);
    CHECK_STR(next_rel(w), "moved/d.json");
    CHECK_STR(next_rel(w), "");

    /* the rescan finds nothing new: no duplicates */
    CHECK_EQ_INT(col_watch_scan(w), 0);
    CHECK_STR(next_rel(w), "");
    CHECK(!col_watch_overflowed(w));
    col_watch_free(w);
}

static void test_scan(void)
{
    struct hm_err err;
    struct col_watch *w;

    fresh_root("watch_scan");
    mkdir(at("sub"), 0755);
    write_file(at("before.json"), "x");
    write_file(at("sub/before2.json"), "x");
    write_file(at("sub/.x.json"), "x");
    w = col_watch_new(root, &err);
    CHECK(w != NULL);
    if (!w)
        return;
    CHECK_STR(next_rel(w), "");       /* no event for files already there */
    write_file(at("after.json"), "x");
    CHECK_STR(next_rel(w), "after.json");
    CHECK_EQ_INT(col_watch_scan(w), 2);
    {
        char a[256], b[256];
        snprintf(a, sizeof a, "%s", next_rel(w));
        snprintf(b, sizeof b, "%s", next_rel(w));
        CHECK(!strcmp(a, "before.json") || !strcmp(a, "sub/before2.json"));
        CHECK(!strcmp(b, "before.json") || !strcmp(b, "sub/before2.json"));
        CHECK(strcmp(a, b) != 0);
    }
    CHECK_STR(next_rel(w), "");
    CHECK_EQ_INT(col_watch_scan(w), 0);
    col_watch_free(w);

    /* skip_existing: an earlier run's files are not reported, unless
     * this run writes them again */
    w = col_watch_new(root, &err);
    CHECK(w != NULL);
    if (!w)
        return;
    CHECK_EQ_INT(col_watch_skip_existing(w), 3);
    write_file(at("new.json"), "x");
    CHECK_STR(next_rel(w), "new.json");
    CHECK_STR(next_rel(w), "");
    CHECK_EQ_INT(col_watch_scan(w), 0);
    write_file(at("before.json"), "rewritten");
    CHECK_STR(next_rel(w), "before.json");
    CHECK_STR(next_rel(w), "");
    col_watch_free(w);

    /* a file changed while no event could be read (written before the
     * last scan of a run): the scan reports the new round */
    w = col_watch_new(root, &err);
    CHECK(w != NULL);
    if (!w)
        return;
    CHECK_EQ_INT(col_watch_scan(w), 4);
    for (int i = 0; i < 4; i++)
        CHECK(next_rel(w)[0] != '\0');
    CHECK_STR(next_rel(w), "");
    write_file(at("sub/before2.json"), "a longer second round");
    CHECK_EQ_INT(col_watch_scan(w), 1);
    CHECK_STR(next_rel(w), "sub/before2.json");
    CHECK_STR(next_rel(w), "");   /* its close event: this round is already reported */
    col_watch_free(w);
}

/* Opens and closes path for writing: one IN_CLOSE_WRITE, nothing on disk. */
static void touch_event(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    CHECK(fd >= 0);
    close(fd);
}

/* More events than the kernel queues without a read: the overflow is
 * noticed, the trace files whose events were lost are found by the rescan,
 * and every file is reported exactly once. */
static void test_overflow(void)
{
    struct hm_err err;
    struct col_watch *w;
    long max = 16384;
    FILE *f = fopen("/proc/sys/fs/inotify/max_queued_events", "r");
    enum { N = 50 };
    int reported = 0, dups = 0, bad = 0;
    unsigned char hit[N] = { 0 };
    char *path;

    if (f) {
        if (fscanf(f, "%ld", &max) != 1)
            max = 16384;
        fclose(f);
    }
    if (max > 1000000) {
        fprintf(stderr, "overflow test skipped: max_queued_events = %ld\n", max);
        return;
    }
    fresh_root("watch_overflow");
    w = col_watch_new(root, &err);
    CHECK(w != NULL);
    if (!w)
        return;
    /* fill the queue with events for two files that are not traces
     * (alternating, so the kernel cannot merge them) ... */
    for (long i = 0; i <= max; i++)
        touch_event(at(i % 2 ? "fill-a.txt" : "fill-b.txt"));
    /* ... so that these traces' events are lost */
    for (int i = 0; i < N; i++) {
        char name[64];
        snprintf(name, sizeof name, "f%03d.json", i);
        write_file(at(name), "x");
    }
    for (int pass = 0; pass < 2; pass++) {
        while (col_watch_next(w, &path) == 1) {
            const char *base = strrchr(path, '/');
            int i = base && base[1] == 'f' ? atoi(base + 2) : -1;
            if (i < 0 || i >= N)
                bad++;
            else if (hit[i]++)
                dups++;
            reported++;
            free(path);
        }
        if (pass == 0) {
            CHECK(col_watch_overflowed(w));
            CHECK(reported < N);
            CHECK_EQ_INT(col_watch_scan(w), N - reported);
        }
    }
    CHECK_EQ_INT(reported, N);
    CHECK_EQ_INT(dups, 0);
    CHECK_EQ_INT(bad, 0);
    /* events work again after the overflow */
    write_file(at("after.json"), "x");
    CHECK_STR(next_rel(w), "after.json");
    col_watch_free(w);
}

static void test_errors(void)
{
    struct hm_err err;
    const char *missing = hm_tmpfile("watch_no_such_dir");

    hm_err_clear(&err);
    CHECK(col_watch_new(missing, &err) == NULL);
    CHECK_EQ_INT(err.code, HM_EIO);
    CHECK_STR(err.file, missing);
    CHECK_CONTAINS(err.msg, "No such file");
    fresh_root("watch_file");
    write_file(at("plain.json"), "x");
    CHECK(col_watch_new(at("plain.json"), &err) == NULL);
    CHECK_CONTAINS(err.msg, "not a directory");
    col_watch_free(NULL);
}

/* When inotify cannot be had (its per-user instances run out at 128 by
 * default: 128 ranks on one host; here this process may open no more
 * files, which fails inotify_init1 the same way, EMFILE, without taking
 * the instances other tests' processes need), a watch scans instead: a
 * file is reported once two scans a second apart found it unchanged, a
 * file still growing is not, folders made later are scanned too, and
 * nothing is reported twice. */
static void test_polling_without_inotify(void)
{
    struct hm_err err;
    struct col_watch *w;
    struct rlimit was, none;
    int fd = dup(0);

    fresh_root("watch_polling");
    write_file(at("early.json"), "{}");
    CHECK_EQ_INT(getrlimit(RLIMIT_NOFILE, &was), 0);
    CHECK(fd >= 0);
    close(fd);
    none = was;
    none.rlim_cur = (rlim_t)fd;   /* the lowest free descriptor: none can be opened */
    CHECK_EQ_INT(setrlimit(RLIMIT_NOFILE, &none), 0);
    w = col_watch_new(root, &err);
    CHECK_EQ_INT(setrlimit(RLIMIT_NOFILE, &was), 0);
    CHECK(w != NULL);
    if (!w)
        return;
    CHECK(col_watch_polling(w) != NULL);
    CHECK_CONTAINS(col_watch_polling(w), "Too many open files");
    CHECK_EQ_INT(col_watch_fd(w), -1);
    CHECK_STR(next_rel(w), "");            /* first scan: early.json noted, not settled */
    mkdir(at("later"), 0755);
    write_file(at("later/rank-1.json"), "{}");
    fd = open(at("growing.json"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && write(fd, "{", 1) == 1);
    usleep(1100000);
    CHECK_STR(next_rel(w), "early.json");  /* unchanged over a scan interval */
    CHECK_STR(next_rel(w), "");
    CHECK(fd >= 0 && write(fd, "}", 1) == 1);
    usleep(1100000);
    CHECK_STR(next_rel(w), "later/rank-1.json");
    CHECK_STR(next_rel(w), "");            /* growing.json changed since the last scan */
    close(fd);
    usleep(1100000);
    CHECK_STR(next_rel(w), "growing.json");
    CHECK_STR(next_rel(w), "");
    usleep(1100000);
    CHECK_STR(next_rel(w), "");            /* nothing twice */
    CHECK_EQ_INT(col_watch_scan(w), 0);
    col_watch_free(w);
}

int main(void)
{
    test_complete_files();
    test_slow_writer();
    test_subfolders();
    test_scan();
    test_overflow();
    test_errors();
    test_polling_without_inotify();
    return hm_test_done();
}
