/* The live merger on rank 0: receives batches from every collector over
 * MPI while the job runs, writes them (WAL, committed as it goes so a
 * server sees data during the run), drives the clock-sync rounds, and
 * finalizes the database when every rank is done. Batches of rank 0 itself
 * come in through mrg_live_local. The caller's loop calls mrg_live_step
 * often; nothing here blocks for long except sync rounds (a few ms). */
#ifndef HM_MERGER_LIVE_H
#define HM_MERGER_LIVE_H

#include <stdint.h>

#include "common/batch.h"
#include "common/clockhook.h"
#include "common/err.h"

struct mrg_live;

struct mrg_live_opts {
    const char *output;          /* final database path */
    const char *command_line;    /* for meta */
    const char *created_by;      /* "htamerge run" or "htamerge ingest" */
    int64_t sync_interval_ms;    /* ping-pong rounds; 0 = only start and end */
    int sync_samples;            /* ping-pongs per round (default 32) */
    int analyse;                 /* run the HTA analyses per rank at finish */
    const struct hm_clockhook *hook; /* rank 0's clock (test hook); copied */
};

/* Collective over MPI_COMM_WORLD: every rank calls it. Rank 0 creates the
 * database; on other ranks it only answers the first sync round. Returns
 * NULL on rank != 0 (nothing to keep) or on failure (err filled). */
struct mrg_live *mrg_live_start(const struct mrg_live_opts *opts, struct hm_err *err);

/* Takes ownership of b, a batch of rank 0's own. */
int mrg_live_local(struct mrg_live *m, struct hm_batch *b, struct hm_err *err);

/* Receives and writes what has arrived, returns credits, runs a sync round
 * when one is due. *all_done is set once every other rank sent DONE. */
int mrg_live_step(struct mrg_live *m, int *all_done, struct hm_err *err);

/* The rows per second this merger stores while busy (decoding and
 * writing), once it stored enough to tell; 0 before. The capture planner
 * keeps every rank's windows within it (collector/capture_budget.h). */
double mrg_live_write_rate(const struct mrg_live *m);

/* Rank 0's own collector finished with this exit code; watch_polling: it
 * scanned its trace folder (no inotify), as DONE says for the others. */
void mrg_live_local_done(struct mrg_live *m, int exit_code, int watch_polling);

/* What the run ended with, as rank 0 saw it. */
struct mrg_live_result {
    int job_exit;            /* the first rank's non-zero program exit code, 0 if none */
    int64_t files_refused;   /* trace files a collector could not read (each a
                                skipped row, reason 'unreadable_file') */
};

/* Final sync round, tells every collector to finish, realigns clocks,
 * analyses, indexes and closes the file. complete = 0 marks the run cut
 * short (a signal): only commits what it has. Consumes m. Fills *res
 * (also when it fails). */
int mrg_live_finish(struct mrg_live *m, int complete, struct mrg_live_result *res,
                    struct hm_err *err);

#endif
