/* Starting this rank's side of the job: PROGRAM as the child, with the
 * collector watching its trace folder and, for live capture, the injection
 * library and its shared-memory ring. */
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/python_hooks.h"
#include "collector/rank.h"
#include "common/shm_ring.h"
#include "job_int.h"

/* The injection library beside this executable (build tree) or in
 * <prefix>/lib/htamerge (installed); 0 with its path, -1 when absent (then
 * the child runs without live GPU capture). */
static int find_inject_lib(char *buf, size_t len)
{
    static const char *const rel[] = {"libhtamerge-inject.so", "../lib/htamerge/libhtamerge-inject.so"};
    char exe[PATH_MAX], cand[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash;

    if (n <= 0)
        return -1;
    exe[n] = 0;
    slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = 0;
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        snprintf(cand, sizeof cand, "%s/%s", exe, rel[i]);
        if (access(cand, R_OK) == 0 && realpath(cand, buf) && strlen(buf) < len)
            return 0;
    }
    return -1;
}

int job_start_rank(struct job_loop *L, const struct job_run_opts *o, const struct job_plan *plan, int size,
                   MPI_Comm node, const struct hm_clockhook *hook, char *trace_dir, size_t len)
{
    char host[256] = "", ring[256], inject[PATH_MAX], pydir[PATH_MAX], pylib[PATH_MAX];
    const char *jobid = strrchr(plan->trace_root, '/');
    struct col_rank_opts co = {.argv = o->argv, .rank = L->rank, .size = size,
                               .master_addr = plan->master_addr, .master_port = plan->master_port,
                               .run_start_ns = plan->run_start_ns, .hook = hook, .hostname = host};

    gethostname(host, sizeof host - 1);
    if (o->capture & JOB_CAP_LIVE) {   /* rings that killed ranks could not remove: memory */
        uint64_t bytes;
        int n = hm_ring_sweep_stale("/dev/shm", &bytes);
        if (n > 0)
            fprintf(stderr, "htamerge: rank %d: removed %d shared-memory rings of ended runs (%.0f MB)\n",
                    L->rank, n, (double)bytes / 1e6);
    }
    if (hm_ring_format_name(ring, sizeof ring, jobid ? jobid + 1 : "job", L->rank) == 0)
        co.ring_name = ring;
    if ((o->capture & JOB_CAP_LIVE) && find_inject_lib(inject, sizeof inject) == 0)
        co.inject_lib = inject;
    co.skip_traces = !(o->capture & JOB_CAP_KINETO);
    if (o->python_hooks && col_py_locate(pydir, sizeof pydir, pylib, sizeof pylib) == 0) {
        co.py_bootstrap = pydir;
        co.py_lib = pylib;
    }
    struct hm_err err;
    char line[1400];

    MPI_Comm_rank(node, &co.local_rank);
    MPI_Comm_size(node, &co.local_size);
    mkdir(plan->trace_root, 0700);
    if (o->keep_traces)
        job_mark_kept(plan->trace_root);
    snprintf(trace_dir, len, "%s/rank-%d", plan->trace_root, L->rank);
    co.trace_dir = trace_dir;
    hm_err_clear(&err);
    L->col = col_rank_start(&co, &err);
    if (!L->col) {
        hm_say("rank %d: %s", L->rank, hm_err_line(&err, line, sizeof line));
        L->exit_code = 127;
        return -1;
    }
    return 0;
}

/* mpirun binds each rank to one core by default when it has few ranks: the
 * training program, its CUDA/NCCL threads and this collector then share
 * that core, which slowed a 2-GPU DDP step about 2x on the H200 (one rank
 * is enough to say it: they are all launched alike). */
void job_warn_if_bound_to_one_cpu(void)
{
    cpu_set_t set;
    long online = sysconf(_SC_NPROCESSORS_ONLN);

    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) == 1 && online > 1)
        fprintf(stderr, "htamerge: warning: this rank is bound to one CPU (mpirun's --bind-to core); "
                        "the program, its CUDA/NCCL threads and htamerge share it and run slower. "
                        "Use mpirun --bind-to none, or --map-by slot:PE=N\n");
}
