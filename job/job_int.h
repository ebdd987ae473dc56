/* What the parts of job/ share: the plan rank 0 broadcasts, the per-rank
 * loop state, and one entry point per concept (trace folders, starting the
 * rank, the loop, the --serve child). Private to job/. */
#ifndef HM_JOB_INT_H
#define HM_JOB_INT_H

#include <limits.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "common/clockhook.h"
#include "common/err.h"
#include "run.h"

/* What rank 0 tells everyone before the children start. */
struct job_plan {
    int64_t run_start_ns;
    int32_t master_port;
    char master_addr[64];
    char trace_root[PATH_MAX];
};

struct col_rank;
struct col_link;
struct mrg_live;
struct job_control;

/* One rank's state in the job loop. */
struct job_loop {
    struct col_rank *col;   /* NULL when PROGRAM could not start */
    struct col_link *link;  /* ranks > 0 */
    struct mrg_live *mrg;   /* rank 0 */
    struct job_control *ctl; /* rank 0: capture plans and `htamerge capture`; may be NULL */
    int rank, child_done, exit_code, signal;
    const char *trace_root; /* borrowed from the plan */
    time_t touched;         /* when trace_root's mtime was last set */
};


/* --- Trace folders (traces.c) ------------------------------------------ */

/* Removes the run folders that ranks of ended runs left behind. */
void job_sweep_leftovers(void);
/* Rank 0's plan: start time, torchrun's master address, the run folder. */
void job_make_plan(struct job_plan *p, const struct hm_clockhook *hook);
/* --keep-traces: marks the run folder kept. */
void job_mark_kept(const char *trace_root);
/* This rank's trace folder, then the run's folder if it is now empty. */
void job_remove_traces(const char *trace_dir, const char *trace_root);

/* --- This rank's collector (rank.c) -------------------------------------- */

/* Starts PROGRAM as this rank's child with its collector; trace_dir gets
 * this rank's trace folder. 0, or -1 (printed; L->exit_code 127). */
int job_start_rank(struct job_loop *L, const struct job_run_opts *o, const struct job_plan *plan, int size,
                   MPI_Comm node, const struct hm_clockhook *hook, char *trace_dir, size_t len);
/* Warns when mpirun bound this rank to one CPU. */
void job_warn_if_bound_to_one_cpu(void);

/* --- The loop (loop.c) --------------------------------------------------- */

/* Collects and merges until this rank may leave (or rank 0 got a stop
 * signal). 0, or < 0 with err filled. */
int job_loop_run(struct job_loop *L, struct hm_err *err);

/* --- Capture control (control.c) ----------------------------------------- */

/* Rank 0: the capture budget's planner and the control socket of
 * `htamerge capture`; NULL when out of memory (the job runs on). */
struct job_control *job_control_start(const struct job_run_opts *o, int size, const char *output);
/* Rank 0, every loop turn (acts every 100 ms): a new plan when the budget
 * asks for one or a request came, sent to every rank. writer_rows_s: what
 * rank 0's merger stores per second (mrg_live_write_rate; 0 not known yet). */
void job_control_tick(struct job_control *jc, struct col_rank *col, double writer_rows_s);
/* Tells waiting `htamerge capture` commands the job ended; closes the socket. */
void job_control_free(struct job_control *jc);

/* --- The --serve child (serve.c) ----------------------------------------- */

/* Starts `htamerge serve FILE --listen ADDR` as a child of rank 0; its pid
 * or -1. */
pid_t job_start_server(const char *db, const char *addr);
/* After the job: serves the finished file for linger_s seconds (or
 * JOB_SERVE_LINGER_FOREVER), then stops the server. */
void job_wait_server(pid_t pid, const char *addr, int linger_s);

#endif
