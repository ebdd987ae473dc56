/* Cross-rank analyses: the one public header of analysis/cross_rank/.
 *
 * At finish time they match collectives across ranks, refine (offline) or
 * check (live) the clocks against them, judge stragglers, stitch NVTX /
 * annotation ranges and break steps down. They run on the writer's open
 * database after every batch is stored and before mrg_writer_finish builds
 * the indexes and views, and fill collective_instances,
 * collective_instance_ranks, clock_checks, straggler_verdicts,
 * nvtx_stitched(_ranks) and step_breakdown. The merger calls xr_finish*;
 * the query layer calls xr_stragglers_hta (HTA's straggler method, read
 * from a finished file). Everything else of analysis/cross_rank/ is
 * internal (cross_rank_int.h and one header per stage, for its unit tests).
 * Prefix: xr_ ("cross-rank"). */
#ifndef HM_ANALYSIS_CROSS_RANK_H
#define HM_ANALYSIS_CROSS_RANK_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "common/err.h"

struct mrg_writer;
struct mrg_slice_row;
struct xr_rank;
struct hm_spill;

struct xr_opts {
    int live;          /* 1: clocks come from MPI ping-pong: check them, do not refit */
    int no_refine;     /* 1: never re-time data from collectives (offline) */
};

/* Runs every cross-rank analysis on w (borrowed; w stays open), reading
 * the rank view from the database. opts may be NULL (offline defaults).
 * Returns 0 or a negative HM_E* code with err filled; on failure the
 * writer should be aborted. */
int xr_finish(struct mrg_writer *w, const struct xr_opts *opts, struct hm_err *err);

/* Empties the tables xr_finish fills, so that it can run again on a
 * reopened database (mrg_writer_reopen). 0 or HM_ESQL. */
int xr_clear(struct mrg_writer *w, struct hm_err *err);

/* The rank view gathered through the writer's slice tap while offline
 * ingest writes (xr_view_tap), so that the analyses need not read the
 * slices back; the same rows in the same order as the view query gives. */
struct xr_view {
    struct xr_rank *ranks;             /* owned, indexed by rank: gpu, launches, annots */
    int nranks;
    int broken;                        /* out of memory, or an end past int64: read back */
    struct hm_spill *spill;            /* owned, or NULL: the arrays' arena (common/spill.h),
                                          so that the view's memory is not resident all
                                          along; set it before the first row */
};

/* view->spill for a database written at db_path: an arena whose file sits
 * beside the database (the same disk, not a tmpfs), or NULL when none can
 * be made (the view then stays in ordinary memory). */
struct hm_spill *xr_view_spill_for(const char *db_path);

/* mrg_writer_set_slice_tap's tap; ctx is a struct xr_view. */
void xr_view_tap(void *ctx, const struct mrg_slice_row *row);
void xr_view_free(struct xr_view *v);

/* xr_finish with the view tapped while writing (NULL: read it from the
 * database). The view is emptied. */
int xr_finish_view(struct mrg_writer *w, const struct xr_opts *opts, struct xr_view *view,
                   struct hm_err *err);

/* --- Helpers offline ingest uses to guess clock shifts before writing ---- */

/* Normalises a collective name into out: lower case, '_' and a "c10d::"
 * prefix dropped ("all_reduce" and "allreduce" both give "allreduce"). */
void xr_op_normalise(const char *in, char *out, size_t cap);

/* Is the (normalised) op an NxN collective, where every rank waits for
 * every other? Only those time a clock fit. */
int xr_op_is_nxn(const char *op);

/* The constant correction clock refinement would apply to a rank whose
 * samples are (xs[i], ys[i]) (exit - first exit, reference exit - exit),
 * or 0 when it would apply none or one with drift. 0 or HM_ENOMEM. */
int xr_clock_guess(const double *xs, const double *ys, size_t n, int64_t *shift);

/* --- HTA's straggler method (`report stragglers --method hta`) ----------- */

struct xr_hta_opts {
    int candidates;           /* ranks to name; <= 0: 2, as HTA's num_candidates */
    const int64_t *steps;     /* HTA's profiler_steps; NULL = all */
    int nsteps;
};

/* HTA's get_potential_stragglers on a finished file, for comparison with
 * HTA (the default straggler analysis is xr_finish's). Adds method,
 * candidates, kernel, stream, iterations, ranks (late_start_count per
 * rank) and evidence to doc. 0 or a negative HM_E* code. */
int xr_stragglers_hta(sqlite3 *db, const struct xr_hta_opts *o, cJSON *doc, struct hm_err *err);

/* The files HTA's method reads, one open at a time (a sharded ingest's
 * shards, query/shard_hta.c): open gives the i-th of n (NULL with err
 * filled), done (may be NULL) closes it. Each is read twice: the extent
 * over all of them first, then their kernels. */
struct xr_hta_files {
    int n;
    sqlite3 *(*open)(void *ctx, int i, struct hm_err *err);
    void (*done)(void *ctx, sqlite3 *db);
    void *ctx;
};

/* xr_stragglers_hta over several files that hold disjoint ranks of one
 * run: the same answer as over one file holding them all. */
int xr_stragglers_hta_files(const struct xr_hta_files *f, const struct xr_hta_opts *o, cJSON *doc,
                            struct hm_err *err);

#endif
