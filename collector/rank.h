/* One rank's collection: runs PROGRAM as a child, watches its trace folder,
 * parses each completed trace file on a worker thread, and hands out the
 * resulting batches. No MPI here: the caller moves batches to the merger
 * (directly on rank 0, over MPI elsewhere). */
#ifndef HM_COLLECTOR_RANK_H
#define HM_COLLECTOR_RANK_H

#include <stdint.h>

#include "common/batch.h"
#include "common/clockhook.h"
#include "common/err.h"

struct col_rank;

struct col_rank_opts {
    char *const *argv;         /* PROGRAM and its arguments (borrowed) */
    const char *trace_dir;     /* this rank's HTAMERGE_TRACE_DIR (created if missing) */
    int rank, size, local_rank, local_size;
    const char *master_addr;
    int master_port;
    int64_t run_start_ns;      /* HTAMERGE_RUN_START_NS for the child */
    const struct hm_clockhook *hook; /* this rank's clock (test hook); copied */
    const char *hostname;      /* stored with the rank's batches */
    const char *ring_name;     /* shared-memory ring for live capture; NULL: none */
    const char *inject_lib;    /* libhtamerge-inject.so for CUDA/NVTX/NCCL injection, used
                                  with the ring; NULL: none */
    int skip_traces;           /* --capture without kineto: trace files found are not read */
    const char *py_bootstrap;  /* Python hooks' bootstrap folder, prepended to PYTHONPATH when
                                  PROGRAM runs under Python (python_hooks.h); NULL: off */
    const char *py_lib;        /* libhtamerge-py.so, for the bootstrap (HTAMERGE_PY_LIB) */
};

/* Starts the child and the watcher. Fails (with a message naming PROGRAM)
 * when the program cannot be started. */
struct col_rank *col_rank_start(const struct col_rank_opts *o, struct hm_err *err);

/* Waits up to timeout_ms for the child, new files or a signal, and acts on
 * them: completed files go to the parser; SIGINT/SIGTERM/SIGHUP are passed
 * to the child (SIGKILL if it lingers). Returns the signal received, or 0. */
int col_rank_poll(struct col_rank *c, int timeout_ms);

/* The next parsed batch, or NULL. The caller owns it. */
struct hm_batch *col_rank_take(struct col_rank *c);

/* 1 once the child has exited, its last files were found and all batches
 * were taken; *exit_code is the child's (shell convention). */
int col_rank_finished(struct col_rank *c, int *exit_code);

struct col_rank_stats {
    int64_t files, files_failed, batches;
    int watch_polling;  /* the trace folder is scanned: inotify could not be had (trace_watch.h) */
};
void col_rank_stats(const struct col_rank *c, struct col_rank_stats *s);

struct hm_capture_plan;
struct hm_capture_progress;
/* Hands the capture plan to this rank's live sources (through the ring);
 * does nothing without live capture. */
void col_rank_set_plan(struct col_rank *c, const struct hm_capture_plan *p);
/* The live sources' progress; 0, or -1 (zeroed, step_now -1) without a
 * ring. */
int col_rank_progress(struct col_rank *c, struct hm_capture_progress *pr);

/* Stops the worker, kills a still-running child. _free(NULL) is a no-op. */
void col_rank_free(struct col_rank *c);

#endif
