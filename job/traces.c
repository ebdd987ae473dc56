/* The job's trace folders: rank 0's plan (which names the run folder),
 * the per-rank folders under it, --keep-traces' KEEP marker, the sweep of
 * folders that killed runs left, and removal at the end. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collector/trace_sweep.h"
#include "job_int.h"


/* Where run folders go: $TMPDIR, else /tmp. */
static const char *trace_parent(void)
{
    const char *tmp = getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
}

/* Removes the run folders that ranks of ended runs left behind (killed
 * before they could clean up): see collector/trace_sweep.h for what counts
 * as ended. Rank 0 does it, before it makes its own. */
void job_sweep_leftovers(void)
{
    int n = col_trace_sweep(trace_parent(), COL_TRACE_SWEEP_MIN_AGE_S);
    if (n > 0)
        fprintf(stderr, "htamerge: removed %d leftover trace folder%s of ended runs from %s\n", n,
                n == 1 ? "" : "s", trace_parent());
}

/* A TCP port free on this host now, for torch.distributed's store: a
 * fixed default (torchrun's 29500) makes two jobs on one node collide.
 * 29500 if none can be had. */
static int free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = 29500;

    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

void job_make_plan(struct job_plan *p, const struct hm_clockhook *hook)
{
    const char *port = getenv("MASTER_PORT");

    memset(p, 0, sizeof *p);
    /* Far enough ahead that every rank has started its child by then. */
    p->run_start_ns = hm_clock_now(hook) + 500000000;
    p->master_port = port && *port ? atoi(port) : free_port();
    gethostname(p->master_addr, sizeof p->master_addr - 1);
    snprintf(p->trace_root, sizeof p->trace_root, "%s/htamerge-%ld-%lld", trace_parent(),
             (long)getpid(), (long long)(p->run_start_ns / 1000000));
}

/* This rank's trace folder, then the run's folder if it is now empty: on
 * each host, whichever of its ranks ends last removes it. */
void job_remove_traces(const char *trace_dir, const char *trace_root)
{
    if (col_trace_remove_tree(trace_dir) != 0 && errno != ENOENT)
        hm_say("could not remove %s: %s", trace_dir, strerror(errno));
    rmdir(trace_root);
}

/* --keep-traces: the KEEP file keeps other runs' sweeps off the folder,
 * also when this run is killed before it can say where its traces are. */
void job_mark_kept(const char *trace_root)
{
    char path[PATH_MAX + 16];
    int fd;

    snprintf(path, sizeof path, "%s/%s", trace_root, COL_TRACE_KEEP_MARKER);
    fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        hm_say("could not create %s: %s", path, strerror(errno));
    else
        close(fd);
}
