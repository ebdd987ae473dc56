/* The SQLite writer (store/): stores batches, clock parameters, analysis results and
 * run metadata in one database file with the schema of sql/schema.sql.
 * The file is built under a temporary name (FINAL_PATH.tmp-<pid>) in one
 * transaction and renamed into place by mrg_writer_finish, so a crash never
 * leaves a partial FINAL_PATH. It applies the clock parameters it is given;
 * it does not fit clocks, match collectives or run analyses. Fed by ingest
 * and the live merger; read by the query server and `htamerge report`. */
#ifndef HM_STORE_WRITER_H
#define HM_STORE_WRITER_H

#include <stdint.h>

#include <sqlite3.h>

#include "analysis/hta.h"
#include "common/batch.h"
#include "common/err.h"

struct mrg_writer;

/* --- Lifecycle --------------------------------------------------------- */

/* Creates FINAL_PATH's temporary sibling FINAL_PATH.tmp-<pid> (replacing a
 * stale one) and applies the schema. Returns NULL and fills err (HM_EIO with
 * err->file = final_path when the file cannot be created). */
struct mrg_writer *mrg_writer_open(const char *final_path, struct hm_err *err);

/* Consumes w, whether it succeeds or not. Builds the indexes and views,
 * analyses, commits, switches the file to a plain rollback-journal database
 * (journal_mode=DELETE, readable by the sqlite3 CLI), fsyncs it and renames
 * it over FINAL_PATH. On failure the temporary file is deleted and err is
 * filled. */
int mrg_writer_finish(struct mrg_writer *w, struct hm_err *err);

/* Consumes w: closes and deletes the temporary file. _abort(NULL) does
 * nothing.
 * Failures: a call refused for its arguments (HM_EINVAL, HM_EFORMAT: bad
 * rank, clock method, mode, or a batch whose indexes point nowhere) changes
 * nothing and the writer stays usable. A call that fails while storing
 * (HM_ESQL, HM_EIO, HM_ENOMEM) leaves the writer failed: later calls
 * return that first failure again (its code, and its message in err), and
 * the caller should _abort (or _finish, which cleans up). */
void mrg_writer_abort(struct mrg_writer *w);

/* Opens the existing htamerge database PATH in place, read-write, to run
 * the cross-rank analyses again (e.g. after a fix in analysis/cross_rank/match.c): one
 * transaction, so _abort (or a crash) leaves the file as it was, and
 * _finish commits and rebuilds the indexes and views (the old views are
 * dropped here). Analyses only: _set_clock, _set_rank_complete, _add_batch
 * and _add_analysis are refused (HM_EINVAL), _update_clock leaves the
 * stored clocks as they are, and _realign_all is refused, so the caller
 * runs the analyses with live = 1 or no_refine = 1. Empty the derived
 * tables first (mrg_cross_rank_clear). NULL with err filled (HM_EIO: cannot
 * open; HM_ESQL: SQLite refused it, e.g. not a database; HM_EFORMAT: a
 * database without htamerge's meta). */
struct mrg_writer *mrg_writer_reopen(const char *path, struct hm_err *err);

/* --- Ranks ------------------------------------------------------------- */

/* Sets how rank's raw trace-clock ns map to the aligned clock:
 *   aligned = raw + base + offset_ns + (int64)(drift_ppm * 1e-6 * (raw - ref_ns))
 * base is base_ns, or each batch's info.base_time_ns (0 if absent) when
 * base_ns is HM_NONE. method: "base_time", "none", "mpi" or "collectives".
 * uncertainty_ns may be HM_NONE (unknown). Must come before the rank's first
 * batch (HM_EINVAL after). Without it a rank gets base from its batches,
 * offset 0, drift 0, method "base_time" if its batch has base_time_ns, else
 * "none". */
int mrg_writer_set_clock(struct mrg_writer *w, int rank, int64_t base_ns, int64_t offset_ns,
                         double drift_ppm, int64_t ref_ns, const char *method,
                         int64_t uncertainty_ns, struct hm_err *err);

/* Adds shift_ns to every time of rank's rows (slices, collectives,
 * counters, steps), on top of its clock; the ranks row does not show it.
 * Offline ingest sets its guess of the collective-based correction here,
 * so that a right guess leaves nothing to re-time (mrg_writer_realign_all
 * then takes it as applied_offset_ns). Before the rank's first batch
 * (HM_EINVAL after). _time_shift: the rank's shift, 0 when none. */
int mrg_writer_set_time_shift(struct mrg_writer *w, int rank, int64_t shift_ns, struct hm_err *err);
int64_t mrg_writer_time_shift(const struct mrg_writer *w, int rank);

/* One slice as it is written, with what the cross-rank view reads of it
 * (analysis/cross_rank/cross_rank.c): NULL correlation / iteration are HM_NONE, no name
 * is 0. */
struct mrg_slice_row {
    int rank;
    int gpu;             /* its track is a GPU stream */
    int cat;             /* enum hm_cat */
    int64_t id, track, ts, dur, correlation, name, iteration;
};

/* Calls tap(ctx, row) for every slice of the batches added from now on,
 * in id order, once the batch's slices are stored; later changes to the
 * rows (re-timing, iterations) are not told. Offline ingest uses it to
 * hand the cross-rank analyses their view without reading it back.
 * tap NULL stops it. */
void mrg_writer_set_slice_tap(struct mrg_writer *w, void (*tap)(void *ctx, const struct mrg_slice_row *row),
                              void *ctx);

/* Index mode (a sharded ingest's index, merger/ingest_shards.c): every
 * slice still gets its id, is counted and goes through the tap, but only
 * the slices that collectives and steps point to are stored, and every
 * slice of a batch with CUDA graph events (whose analyses and reports
 * read them back); the rest live in the host writers' shards. Before the
 * first batch. */
void mrg_writer_set_index_only(struct mrg_writer *w, int on);

/* Marks rank complete (1) or cut short (0) in ranks.complete. Without it a
 * rank is complete once it has a batch. May come at any time before _finish. */
int mrg_writer_set_rank_complete(struct mrg_writer *w, int rank, int complete,
                                 struct hm_err *err);

/* --- Data -------------------------------------------------------------- */

/* Appends one batch of rank b->info.rank (>= 0). b is only read, during the
 * call (borrowed). Strings become rows of `strings` (deduplicated over the
 * whole file), tracks are keyed (rank, kind, pid, tid), times are aligned
 * with the rank's clock. Slice nesting (depth, parent) is computed per track
 * within this batch. A rank may send many batches: they append, and its
 * skipped counts add up. */
int mrg_writer_add_batch(struct mrg_writer *w, const struct hm_batch *b, struct hm_err *err);

/* Stores one rank's analysis results (r is borrowed) under mode "hta" (HTA's
 * definitions, also filling the step columns of `steps`) or "all_steps";
 * NULL means "hta". Replaces earlier results for the same (mode, rank). */
int mrg_writer_add_analysis(struct mrg_writer *w, const struct an_rank_result *r,
                            const char *mode, struct hm_err *err);

/* Sets meta key to value (replacing it): created_by, htamerge_version,
 * command_line, created_at, run_status, ... */
int mrg_writer_set_meta(struct mrg_writer *w, const char *key, const char *value,
                        struct hm_err *err);

/* --- Live mode (the merger during a run) ------------------------------ */

/* Creates PATH itself (replacing an old one) in WAL mode, so readers see
 * each commit while the run goes on. _finish then adds indexes and views
 * in place (no rename); _abort keeps what was committed. */
struct mrg_writer *mrg_writer_open_live(const char *path, struct hm_err *err);

/* Writes pending strings, ranks and tracks and commits. */
int mrg_writer_commit(struct mrg_writer *w, struct hm_err *err);

/* Commits what there is (with views, without indexes) and closes, for a
 * run cut short. Consumes w. err may be NULL. */
int mrg_writer_close_live(struct mrg_writer *w, struct hm_err *err);

/* After a failed call (e.g. the disk filled): drops what the failed
 * transaction held, gives back the space held in reserve since the open
 * (PATH-reserve, 1 MiB) and commits meta.run_status = "STATUS: <the first
 * failure>", so the file says why it ends where it does. Returns 0, or -1
 * when even that could not be written. Live writers only. */
int mrg_writer_mark_failed(struct mrg_writer *w, const char *status);

/* A rank's final clock model: its rows were written as peer time +
 * applied_offset_ns and become peer time + offset_at(ctx, peer time).
 * offset_at NULL leaves the rank as it is. row_offset_at, if set, is used
 * instead where the row is known (a model with a repaired clock step
 * tells apart rows that read the same moment twice): the offset of raw t
 * read by row (a slice id; -1: none); with end 1, t ends an interval that
 * started at raw start (which may put it on a later clock). */
struct mrg_lin_model;
struct mrg_realign_rank {
    int64_t applied_offset_ns;
    int64_t (*offset_at)(void *ctx, int64_t peer_ns);
    void *ctx;
    int64_t (*row_offset_at)(void *ctx, int64_t row, int64_t start, int64_t t, int end);
    const struct mrg_lin_model *lin; /* what offset_at computes, when it is linear (else NULL):
                                        kept for mrg_writer_final_model */
};

/* A linear clock correction of time t: llround(offset + slope * (t - ref)). */
struct mrg_lin_model {
    double offset, slope;
    int64_t ref;
};

/* The correction that takes rank's rows as written without a time shift
 * to where they are now: its time shift, or the linear model of its last
 * re-timing. A sharded ingest's host writers store their ranks unshifted
 * and apply it once the index writer has fitted the clocks. 0, or
 * HM_EINVAL when the rank was re-timed by a model that is not linear. */
int mrg_writer_final_model(const struct mrg_writer *w, int rank, struct mrg_lin_model *out);

/* Re-times every rank in one pass over the data (ranks[r] for rank r). */
int mrg_writer_realign_all(struct mrg_writer *w, const struct mrg_realign_rank *ranks, int nranks,
                           struct hm_err *err);

/* Builds the indexes now (e.g. before reading the data back for the
 * analyses); _finish then finds them in place. */
int mrg_writer_build_indexes(struct mrg_writer *w, struct hm_err *err);

/* Builds slices_correlation now, as _finish would (which then finds it in
 * place): for a caller with other work for another core, once no slice is
 * added or loses its correlation id (re-timing may follow). Uses the
 * writer's connection: nothing else may use it meanwhile. */
int mrg_writer_build_slice_index(struct mrg_writer *w, struct hm_err *err);

/* Records a repaired clock step of rank (ranks.clock_step_ns: the change
 * of its reading, ranks.clock_step_at_ns: when, on the aligned clock);
 * any time before _finish. */
int mrg_writer_set_clock_step(struct mrg_writer *w, int rank, int64_t step_ns, int64_t step_at_ns,
                              struct hm_err *err);

/* Replaces the clock summary stored for rank (any time before _finish). */
int mrg_writer_update_clock(struct mrg_writer *w, int rank, int64_t offset_ns, double drift_ppm,
                            int64_t ref_ns, const char *method, int64_t uncertainty_ns,
                            struct hm_err *err);

/* Reads back everything stored for rank as one batch (aligned times, no
 * base), for the analyses. HM_EEMPTY if the rank has nothing. */
int mrg_writer_load_rank(struct mrg_writer *w, int rank, struct hm_batch **out, struct hm_err *err);

/* Writes each slice's iteration (ProfilerStep number) of b, the batch the
 * last mrg_writer_load_rank returned, once the analyses have assigned them:
 * live runs store slices before their steps are known. */
int mrg_writer_store_iterations(struct mrg_writer *w, const struct hm_batch *b, struct hm_err *err);

/* Deletes the steps stored for rank, all of them or (keep_profiler) all
 * but its ProfilerSteps, before steps are found again over the rank read
 * back (a rank of several files: merger/rank_files.h). */
int mrg_writer_drop_steps(struct mrg_writer *w, int rank, int keep_profiler, struct hm_err *err);

/* Stores b's steps (times as mrg_writer_load_rank returned them: aligned),
 * replacing rows of the same numbers. */
int mrg_writer_store_steps(struct mrg_writer *w, const struct hm_batch *b, struct hm_err *err);

/* --- Cross-rank analyses (analysis/cross_rank/cross_rank.c) ------------------------ */

/* Writes the pending strings, ranks and tracks rows (no commit), so SQL on
 * mrg_writer_db sees everything added so far. */
int mrg_writer_flush(struct mrg_writer *w, struct hm_err *err);

/* The connection inside the load's transaction: borrowed, valid until
 * _finish or _abort. For the analyses that fill their own tables. */
sqlite3 *mrg_writer_db(struct mrg_writer *w);

/* --- Progress ---------------------------------------------------------- */

struct mrg_writer_stats {
    uint64_t rows;     /* rows stored so far: slices, collectives, counters, steps */
    uint64_t slices;   /* of which slices */
    uint64_t strings;  /* distinct strings so far */
    uint64_t bytes;    /* database size so far (pages in use x page size) */
};

/* Fills *out; cheap enough for a progress line per batch. */
void mrg_writer_stats(struct mrg_writer *w, struct mrg_writer_stats *out);

#endif
