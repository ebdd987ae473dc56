/* The main job (`[mpirun -n N] htamerge [run options] PROGRAM [ARGS...]`)
 * as a library call: every rank runs PROGRAM as its child and collects;
 * rank 0 also merges and, with serve set, serves the file. The CLI parses
 * the command line into struct job_run_opts and calls job_run; everything
 * that happens after parsing lives in job/. Prefix: job_. */
#ifndef HM_JOB_RUN_H
#define HM_JOB_RUN_H

/* Sources to capture (--capture). */
enum {
    JOB_CAP_KINETO = 1, JOB_CAP_CUPTI = 2, JOB_CAP_NVTX = 4, JOB_CAP_NCCL = 8, JOB_CAP_CUPTI_SYNC = 16,
    JOB_CAP_CUPTI_RANGE = 32, JOB_CAP_CUPTI_LAUNCHES = 64,
    JOB_CAP_LIVE = JOB_CAP_CUPTI | JOB_CAP_NVTX | JOB_CAP_NCCL,
    JOB_CAP_ALL = JOB_CAP_KINETO | JOB_CAP_LIVE,
};

/* Exit statuses of the job itself; the same values as cli/cli.h's
 * CLI_EXIT_* (the job's status is the program's). */
enum { JOB_EXIT_OK = 0, JOB_EXIT_FAIL = 1, JOB_EXIT_USAGE = 2, JOB_EXIT_PARTIAL = 3 };

/* --serve-linger's default: five minutes for a person who watched the run
 * live to see it complete and look through it in the page already open,
 * while a batch job, which nobody interrupts, still ends on its own soon
 * after (to browse longer: `htamerge serve FILE`). */
#define JOB_SERVE_LINGER_DEFAULT_S 300
/* --serve-linger forever: until Ctrl-C (or mpirun goes). */
#define JOB_SERVE_LINGER_FOREVER (-1)

struct job_run_opts {
    const char *output;        /* the file to write */
    const char *command_line;  /* for meta.command_line */
    double sync_interval_s;    /* between clock-sync rounds; 0: start and end */
    int keep_traces;
    const char *window;        /* --cupti-window ON/PERIOD (checked), or NULL: then no budget */
    double overhead_budget_pct; /* --overhead-budget PCT (default 2) */
    int capture_all;           /* --capture-all: CUPTI attached throughout, no budget */
    const char *serve;         /* --serve ADDR:PORT, NULL = none */
    int serve_linger_s;        /* seconds to serve the finished file; JOB_SERVE_LINGER_FOREVER */
    unsigned capture;          /* JOB_CAP_* bits */
    int capture_set;           /* 1: --capture was given: it overrides HTAMERGE_CAPTURE */
    int python_hooks;          /* --python-hooks (default on; HTAMERGE_PYTHON_HOOKS=0: off) */
    char **argv;               /* PROGRAM ARGS... (borrowed) */
};

/* Runs the job on this rank. argc/argv are handed to MPI_Init_thread.
 * Returns this rank's exit status (the child's; JOB_EXIT_PARTIAL on rank 0
 * when trace files were refused; JOB_EXIT_USAGE for a malformed clock
 * hook environment); ends the process itself (_exit, MPI_Abort) when the
 * job is torn down by a signal or cannot go on. */
int job_run(const struct job_run_opts *o, int argc, char **argv);

#endif
