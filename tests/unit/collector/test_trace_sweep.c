/* The sweep of run folders left by ended runs (collector/trace_sweep.c):
 * of a dead run's old folder, a live run's, a kept one, a young one, a
 * link to a folder, a plain file and names that only look alike, only the
 * first goes; links inside it are removed, never followed. */
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/trace_sweep.h"

static char base[4096];

static const char *at(const char *fmt, long pid)
{
    static char buf[2][4400];
    static int i;
    char name[256];

    i ^= 1;
    snprintf(name, sizeof name, fmt, pid);
    snprintf(buf[i], sizeof buf[i], "%s/%s", base, name);
    return buf[i];
}

static void touch_file(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK_EQ_INT(write(fd, "x", 1), 1);
        close(fd);
    }
}

/* mtime (and atime) an hour ago; lutimes so a link itself is aged. */
static void age(const char *path)
{
    struct timeval tv[2];
    gettimeofday(&tv[0], NULL);
    tv[0].tv_sec -= 3600;
    tv[1] = tv[0];
    CHECK_EQ_INT(lutimes(path, tv), 0);
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* A pid that was a process of ours and is no more. */
static long dead_pid(void)
{
    pid_t pid = fork();
    int status;

    if (pid == 0)
        _exit(0);
    CHECK(pid > 0);
    waitpid(pid, &status, 0);
    CHECK(kill(pid, 0) != 0 && errno == ESRCH);
    return (long)pid;
}

static void test_names(void)
{
    long pid = 0;

    CHECK_EQ_INT(col_trace_root_name("htamerge-123-1764400000000", &pid), 1);
    CHECK_EQ_INT(pid, 123);
    CHECK_EQ_INT(col_trace_root_name("htamerge-1-0", &pid), 1);
    CHECK_EQ_INT(col_trace_root_name("htamerge-0-1000", &pid), 0);
    CHECK_EQ_INT(col_trace_root_name("htamerge-12-", &pid), 0);
    CHECK_EQ_INT(col_trace_root_name("htamerge--12", &pid), 0);
    CHECK_EQ_INT(col_trace_root_name("htamerge-12-34.bak", &pid), 0);
    CHECK_EQ_INT(col_trace_root_name("htamerge-12-34-5", &pid), 0);
    CHECK_EQ_INT(col_trace_root_name("htamerge-x12-34", &pid), 0);
    CHECK_EQ_INT(col_trace_root_name("htamerge-99999999999-34", &pid), 0);
    CHECK_EQ_INT(col_trace_root_name("xhtamerge-12-34", &pid), 0);
    CHECK_EQ_INT(col_trace_root_name("htamerge-20261129-101010.db", &pid), 0);
}

static void test_sweep(void)
{
    long dead = dead_pid(), live = (long)getpid();
    char gone[4400], precious[4400], target[4400], link_in[4400];

    snprintf(base, sizeof base, "%s", hm_tmpfile("trace_sweep.XXXXXX"));
    CHECK(mkdtemp(base) != NULL);
    snprintf(gone, sizeof gone, "%s", at("htamerge-%ld-1000", dead));

    /* Outside the swept folders: what links point to. */
    snprintf(precious, sizeof precious, "%s", at("precious", 0));
    CHECK_EQ_INT(mkdir(precious, 0700), 0);
    touch_file(at("precious/data.json", 0));
    snprintf(target, sizeof target, "%s", at("target", 0));
    CHECK_EQ_INT(mkdir(target, 0700), 0);
    touch_file(at("target/data.json", 0));

    /* The dead run's folder, with rank folders, a file and a link out. */
    CHECK_EQ_INT(mkdir(gone, 0700), 0);
    CHECK_EQ_INT(mkdir(at("htamerge-%ld-1000/rank-0", dead), 0700), 0);
    CHECK_EQ_INT(mkdir(at("htamerge-%ld-1000/rank-1", dead), 0700), 0);
    touch_file(at("htamerge-%ld-1000/rank-0/a.pt.trace.json", dead));
    snprintf(link_in, sizeof link_in, "%s", at("htamerge-%ld-1000/rank-1/link", dead));
    CHECK_EQ_INT(symlink(precious, link_in), 0);
    age(gone);

    CHECK_EQ_INT(mkdir(at("htamerge-%ld-1000", live), 0700), 0);     /* live pid */
    age(at("htamerge-%ld-1000", live));
    CHECK_EQ_INT(mkdir(at("htamerge-%ld-2000", dead), 0700), 0);     /* kept */
    touch_file(at("htamerge-%ld-2000/" COL_TRACE_KEEP_MARKER, dead));
    age(at("htamerge-%ld-2000", dead));
    CHECK_EQ_INT(mkdir(at("htamerge-%ld-3000", dead), 0700), 0);     /* young */
    CHECK_EQ_INT(symlink(target, at("htamerge-%ld-4000", dead)), 0); /* a link */
    age(at("htamerge-%ld-4000", dead));
    CHECK_EQ_INT(mkdir(at("htamerge-%ld-5000.bak", dead), 0700), 0); /* not the pattern */
    age(at("htamerge-%ld-5000.bak", dead));
    CHECK_EQ_INT(mkdir(at("htamerge-x%ld-5000", dead), 0700), 0);
    age(at("htamerge-x%ld-5000", dead));
    touch_file(at("htamerge-%ld-6000", dead));                       /* a file */
    age(at("htamerge-%ld-6000", dead));

    CHECK_EQ_INT(col_trace_sweep(base, COL_TRACE_SWEEP_MIN_AGE_S), 1);
    CHECK(!exists(gone));
    CHECK(exists(at("precious/data.json", 0)));
    CHECK(exists(at("target/data.json", 0)));
    CHECK(exists(at("htamerge-%ld-1000", live)));
    CHECK(exists(at("htamerge-%ld-2000/" COL_TRACE_KEEP_MARKER, dead)));
    CHECK(exists(at("htamerge-%ld-3000", dead)));
    CHECK(exists(at("htamerge-%ld-4000", dead)));
    CHECK(exists(at("htamerge-%ld-5000.bak", dead)));
    CHECK(exists(at("htamerge-x%ld-5000", dead)));
    CHECK(exists(at("htamerge-%ld-6000", dead)));

    /* Nothing more to do; with no minimum age the young one goes too. */
    CHECK_EQ_INT(col_trace_sweep(base, COL_TRACE_SWEEP_MIN_AGE_S), 0);
    CHECK_EQ_INT(col_trace_sweep(base, 0), 1);
    CHECK(!exists(at("htamerge-%ld-3000", dead)));
    CHECK(exists(at("htamerge-%ld-2000", dead)));
    CHECK(exists(at("htamerge-%ld-1000", live)));

    CHECK_EQ_INT(col_trace_sweep(at("no-such-folder", 0), 0), -1);
    CHECK_EQ_INT(col_trace_remove_tree(base), 0);
    CHECK(!exists(base));
}

int main(void)
{
    test_names();
    test_sweep();
    return hm_test_done();
}
