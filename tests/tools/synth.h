/* htamerge-synth: what its files share. The flow is synth.c (command line,
 * run loop) -> synth_sched.c (one timing schedule for every rank) ->
 * synth_emit.c (one step's Kineto events as JSON text, built with
 * synth_buf.c) -> synth_out.c (one trace file per profiler cycle, written
 * under a temporary name and renamed).
 * A test tool: no GPU, no MPI, no library beyond libc. */
#ifndef HTAMERGE_SYNTH_H
#define HTAMERGE_SYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SYN_NCOLL 2                 /* allreduces per step (gradient buckets) */
#define SYN_STREAM_COMPUTE 7
#define SYN_STREAM_COMM 20
#define SYN_NS_PER_US 1000LL
#define SYN_NS_PER_MS 1000000LL
#define SYN_NS_PER_S 1000000000LL

/* The run as the command line and the environment describe it. */
struct syn_cfg {
    int rank, world, local_rank;
    int steps, cycle;
    int64_t period_ns;      /* nominal step period */
    int64_t t0_ns;          /* step 0 starts here (CLOCK_REALTIME, Unix ns) */
    int64_t base_ns;        /* baseTimeNanoseconds: t0 rounded down to a second */
    int64_t *delay_ns;      /* owned: straggler delay per rank, world entries */
    bool gzip;
    int fail_at, crash_at;  /* step after which to exit(3) / crash; -1: never */
    const char *dir;        /* borrowed from the environment or a literal */
    const char *nccl_kernel; /* the allreduce kernel's name (borrowed) */
    int tp;                 /* --tp: tensor-parallel group size; 0 = one world group */
};

/* What one rank does in one step, in absolute CLOCK_REALTIME ns. */
struct syn_plan {
    int64_t start, end;         /* ProfilerStep#k covers [start, end) */
    int64_t fwd, fwd_dur;       /* forward; data loading fills [start, fwd) */
    int64_t bwd1, bwd1_dur;     /* backward before bucket 0's allreduce */
    int64_t bwd2, bwd2_dur;     /* backward between the two allreduces */
    int64_t opt, opt_dur;       /* optimizer step */
    int64_t issue[SYN_NCOLL];   /* nccl:all_reduce starts on the CPU */
    int64_t enter[SYN_NCOLL];   /* the allreduce kernel starts on stream 20 */
    int64_t exit[SYN_NCOLL];    /* the kernel ends: the same on every rank */
};

/* Offsets inside one allreduce as this rank issues it (see synth_sched.c). */
#define SYN_ISSUE_TO_KERNEL_NS (25 * SYN_NS_PER_US)
#define SYN_SYNC_RETURN_NS (8 * SYN_NS_PER_US)

/* Deterministic randomness: a value from (rank, step, phase, index). */
uint64_t syn_rand(int rank, int step, int phase, int index);

/* ---- process groups (synth_mesh.c) ---- */
/* The process group of rank's allreduce of bucket b: the world (pg "0")
 * without --tp; with --tp T, bucket 0 on the rank's tensor-parallel group
 * (T consecutive ranks) and bucket 1 on its data-parallel group (the ranks
 * equal to it mod T), named as torch's DeviceMesh names them. Members are
 * start, start + stride, ... (size of them). */
struct syn_group {
    int pg;                 /* "Process Group Name" as a number */
    const char *desc;       /* "Process Group Description" */
    int start, stride, size;
};
void syn_group_of(const struct syn_cfg *c, int rank, int bucket, struct syn_group *g);

/* ---- schedule (synth_sched.c) ---- */
struct syn_sched;
/* Borrows cfg until syn_sched_free. NULL when out of memory. */
struct syn_sched *syn_sched_new(const struct syn_cfg *cfg);
void syn_sched_free(struct syn_sched *s);
/* Plans step k for every rank (call with k = 0, 1, 2, ... in order) and
 * gives this rank's plan. */
void syn_sched_step(struct syn_sched *s, int k, struct syn_plan *mine);

/* ---- growing text buffer (synth_buf.c) ---- */
struct syn_buf {
    char *p;        /* owned */
    size_t n, cap;
    bool oom;       /* an append failed; the text is incomplete */
};
void syn_buf_printf(struct syn_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void syn_buf_json_str(struct syn_buf *b, const char *s);
void syn_buf_us(struct syn_buf *b, int64_t ns);
void syn_buf_free(struct syn_buf *b);

/* ---- events (synth_emit.c) ---- */
struct syn_emit {
    const struct syn_cfg *cfg;  /* borrowed */
    struct syn_buf ev;          /* this cycle's traceEvents, comma separated */
    size_t nev;                 /* events in ev */
    int64_t next_corr, next_ext;
    char *pg_ranks;             /* owned: "[0, 1, ...]" */
};
int syn_emit_init(struct syn_emit *e, const struct syn_cfg *cfg);
void syn_emit_fini(struct syn_emit *e);
/* Appends the process and thread name events of a file starting at t_ns. */
void syn_emit_meta(struct syn_emit *e, int64_t t_ns);
/* Appends every event of step k as plan p describes it. */
void syn_emit_step(struct syn_emit *e, int k, const struct syn_plan *p);
/* CPU pid and tid written in the traces (fixed, so traces are reproducible). */
int syn_cpu_pid(const struct syn_cfg *cfg);

/* ---- files (synth_out.c) ---- */
/* Writes one trace file holding events (nev of them) into cfg->dir, named
 * <host>_<pid>.<epoch_ms>.pt.trace.json[.gz]; cycle numbers traceName.
 * Returns 0, or -1 after printing why. */
int syn_out_write(const struct syn_cfg *cfg, const struct syn_emit *e, int cycle,
                  int64_t epoch_ms);

#endif
