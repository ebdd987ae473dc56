/* Cross-rank analyses at finish time: match collectives across ranks,
 * refine (offline) or check (live) the clocks against them, judge
 * stragglers, stitch NVTX / annotation ranges, and break steps down. Runs
 * on the writer's open database after every batch is stored and before
 * mrg_writer_finish builds the indexes and views; fills
 * collective_instances, collective_instance_ranks, clock_checks,
 * straggler_verdicts, nvtx_stitched(_ranks) and step_breakdown. */
#ifndef HM_MERGER_CROSS_RANK_H
#define HM_MERGER_CROSS_RANK_H

#include "common/err.h"
#include "store/writer.h"

struct mrg_cross_rank_opts {
    int live;          /* 1: clocks come from MPI ping-pong: check them, do not refit */
    int no_refine;     /* 1: never re-time data from collectives (offline) */
};

/* Runs every cross-rank analysis on w (borrowed; w stays open). opts may
 * be NULL (offline defaults). Returns 0 or a negative HM_E* code with err
 * filled; on failure the writer should be aborted. */
int mrg_cross_rank_finish(struct mrg_writer *w, const struct mrg_cross_rank_opts *opts,
                          struct hm_err *err);

/* Empties the tables mrg_cross_rank_finish fills, so that it can run
 * again on a reopened database (mrg_writer_reopen). 0 or HM_ESQL. */
int mrg_cross_rank_clear(struct mrg_writer *w, struct hm_err *err);

#endif
