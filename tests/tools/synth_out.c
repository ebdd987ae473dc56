/* One trace file per profiler cycle, as torch.profiler's
 * tensorboard_trace_handler names them: <host>_<pid>.<epoch_ms>.pt.trace.json
 * (.json.gz with --gzip, compressed by a `gzip -n` child so that no library
 * is needed). The file is written as .tmp-<name> in the same folder and
 * renamed when complete, so a folder watcher never sees a partial trace.
 * The events come ready-made from synth_emit.c; this file adds the top-level
 * fields around them. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include "synth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Where the text goes: a file, or a pipe into a gzip child writing the file. */
struct sink {
    FILE *f;        /* owned */
    pid_t gzip;     /* the gzip child, or 0 */
};

static void header(FILE *f, const struct syn_cfg *c, const struct syn_emit *e)
{
    fprintf(f, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n"
            "    {\"id\": %d, \"name\": \"NVIDIA H200\", \"totalGlobalMem\": 150754820096, "
            "\"computeMajor\": 9, \"computeMinor\": 0, \"maxThreadsPerBlock\": 1024, "
            "\"maxThreadsPerMultiprocessor\": 2048, \"regsPerBlock\": 65536, \"warpSize\": 32, "
            "\"sharedMemPerBlock\": 49152, \"numSms\": 132, \"regsPerMultiprocessor\": 65536, "
            "\"sharedMemPerBlockOptin\": 232448, \"sharedMemPerMultiprocessor\": 233472}\n  ],\n",
            c->local_rank);
    fprintf(f, "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, \"world_size\": %d, "
            "\"pg_count\": %d, \"pg_config\": [{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", "
            "\"backend_config\": \"cuda:nccl\", \"pg_size\": %d, \"ranks\": %s}",
            c->rank, c->world, c->tp >= 2 ? 1 + SYN_NCOLL : 1, c->world, e->pg_ranks);
    for (int b = 0; c->tp >= 2 && b < SYN_NCOLL; b++) {   /* the rank's mesh groups */
        struct syn_group g;
        syn_group_of(c, c->rank, b, &g);
        fprintf(f, ", {\"pg_name\": \"%d\", \"pg_desc\": \"%s\", \"backend_config\": \"cuda:nccl\", "
                "\"pg_size\": %d, \"ranks\": [", g.pg, g.desc, g.size);
        for (int k = 0; k < g.size; k++)
            fprintf(f, "%s%d", k ? ", " : "", g.start + k * g.stride);
        fprintf(f, "]}");
    }
    fprintf(f, "], \"nccl_version\": \"2.28.9\"},\n");
    fprintf(f, "  \"cuda_runtime_version\": 13000,\n  \"traceEvents\": [\n");
}

/* Kineto writes traceName, displayTimeUnit and baseTimeNanoseconds after the
 * events; so do we, so readers meet the real order. */
static void footer(FILE *f, const struct syn_cfg *c, int cycle)
{
    fprintf(f, "\n  ],\n  \"traceName\": \"rank%d.cycle%d.pt.trace.json\",\n"
            "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": %lld\n}\n",
            c->rank, cycle, (long long)c->base_ns);
}

static int sink_open(struct sink *s, const char *path, bool gz)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), p[2];

    s->gzip = 0;
    if (fd < 0)
        return -1;
    if (!gz) {
        s->f = fdopen(fd, "w");
        if (!s->f)
            close(fd);
        return s->f ? 0 : -1;
    }
    if (pipe2(p, O_CLOEXEC) != 0) {
        close(fd);
        return -1;
    }
    s->gzip = fork();
    if (s->gzip == 0) {
        if (dup2(p[0], 0) < 0 || dup2(fd, 1) < 0)
            _exit(127);
        execlp("gzip", "gzip", "-6", "-n", "-c", (char *)NULL);
        _exit(127);
    }
    close(p[0]);
    close(fd);
    s->f = s->gzip > 0 ? fdopen(p[1], "w") : NULL;
    if (!s->f)
        close(p[1]);
    return s->f ? 0 : -1;
}

/* Closes the sink; -1 when a write failed or gzip did not exit 0. */
static int sink_close(struct sink *s)
{
    int rc = 0, st;

    if (s->f && (ferror(s->f) | fclose(s->f)))
        rc = -1;
    if (s->gzip > 0) {
        while (waitpid(s->gzip, &st, 0) < 0)
            if (errno != EINTR)
                return -1;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            rc = -1;
    }
    return rc;
}

/* gethostname with anything but [A-Za-z0-9._-] replaced, for a file name. */
static void host_name(char *h, size_t n)
{
    if (gethostname(h, n) != 0 || !h[0])
        snprintf(h, n, "localhost");
    h[n - 1] = '\0';
    for (char *p = h; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '-' || *p == '_'))
            *p = '_';
}

int syn_out_write(const struct syn_cfg *cfg, const struct syn_emit *e, int cycle, int64_t epoch_ms)
{
    char host[256], name[512], tmp[4096], final[4096];
    struct sink s = {0};
    int rc;

    host_name(host, sizeof host);
    snprintf(name, sizeof name, "%s_%d.%lld.pt.trace.json%s", host, (int)getpid(), (long long)epoch_ms,
             cfg->gzip ? ".gz" : "");
    if ((size_t)snprintf(tmp, sizeof tmp, "%s/.tmp-%s", cfg->dir, name) >= sizeof tmp ||
        (size_t)snprintf(final, sizeof final, "%s/%s", cfg->dir, name) >= sizeof final) {
        fprintf(stderr, "htamerge-synth: trace folder path too long: %s\n", cfg->dir);
        return -1;
    }
    if (sink_open(&s, tmp, cfg->gzip) != 0) {
        fprintf(stderr, "htamerge-synth: cannot write %s: %s\n", tmp, strerror(errno));
        unlink(tmp);
        return -1;
    }
    header(s.f, cfg, e);
    fwrite(e->ev.p, 1, e->ev.n, s.f);
    footer(s.f, cfg, cycle);
    rc = sink_close(&s);
    if (rc != 0 || rename(tmp, final) != 0) {
        fprintf(stderr, "htamerge-synth: cannot write %s%s\n", final, cfg->gzip ? " (gzip failed?)" : "");
        unlink(tmp);
        return -1;
    }
    return 0;
}
