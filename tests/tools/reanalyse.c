/* htamerge-reanalyse: runs the cross-rank analyses again on an existing
 * merged database, in place (a test tool: after a fix in merger/, the
 * derived tables of a fixture can be rebuilt without re-capturing it).
 *
 *   htamerge-reanalyse [--live | --offline] DB
 *
 * Empties collective_instances, collective_instance_ranks, clock_checks,
 * straggler_verdicts, nvtx_stitched(_ranks) and step_breakdown, runs
 * xr_finish and commits. A live run (meta created_by
 * 'htamerge run', or any rank clocked by 'mpi') is analysed as the live
 * merger does (.live = 1: clocks are checked, not refit); any other file
 * with .no_refine = 1, because its data already carries the clocks fitted
 * when it was written and fitting again would compound them. Exit 0 on
 * success, 1 on failure (the file is left as it was), 2 on a bad command
 * line. */
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "common/err.h"
#include "analysis/cross_rank.h"
#include "store/columns.h"
#include "store/writer.h"

#define LIVE_COLUMNS(X) X(LIVE_VALUE, "live")
enum { LIVE_COLUMNS(HM_COLUMN_ENUM) LIVE__COUNT };
static const char *const live_names[] = {LIVE_COLUMNS(HM_COLUMN_NAME)};

static const char usage[] =
    "usage: htamerge-reanalyse [--live | --offline] DB\n"
    "Re-runs the cross-rank analyses (collective matching, stragglers, clock checks,\n"
    "NVTX stitching, step breakdown) on the htamerge database DB, in place.\n"
    "  --live     analyse as a live run (check the MPI clocks, never refit)\n"
    "  --offline  analyse as an ingest (no re-timing: the data keeps its clocks)\n"
    "Without either, DB's meta and ranks decide.\n";

/* 1 if the file was written by the live merger: meta.created_by is
 * 'htamerge run' or a rank's clock came from the MPI ping-pong. */
static int was_live(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int live = 0;

    if (sqlite3_prepare_v2(db,
                           "SELECT (SELECT value FROM meta WHERE key = 'created_by') = 'htamerge run' "
                           "OR EXISTS (SELECT 1 FROM ranks WHERE clock_method = 'mpi') AS live",
                           -1, &st, NULL) == SQLITE_OK)
        HM_COLUMNS_CHECK(st, live_names);
    if (st && sqlite3_step(st) == SQLITE_ROW)
        live = sqlite3_column_int(st, LIVE_VALUE);
    sqlite3_finalize(st);
    return live;
}

int main(int argc, char **argv)
{
    struct hm_err err;
    struct mrg_writer *w;
    const char *path = NULL;
    int mode = -1, rc; /* -1: from the file, 0: offline, 1: live */
    char line[1200];

    hm_err_clear(&err);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--live"))
            mode = 1;
        else if (!strcmp(argv[i], "--offline"))
            mode = 0;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (argv[i][0] == '-' || path) {
            fprintf(stderr, "htamerge-reanalyse: unexpected argument '%s'\n%s", argv[i], usage);
            return 2;
        } else
            path = argv[i];
    }
    if (!path) {
        fputs(usage, stderr);
        return 2;
    }
    w = mrg_writer_reopen(path, &err);
    if (!w) {
        fprintf(stderr, "htamerge-reanalyse: %s\n", hm_err_line(&err, line, sizeof line));
        return 1;
    }
    if (mode < 0)
        mode = was_live(mrg_writer_db(w));
    rc = xr_clear(w, &err);
    if (rc == 0)
        rc = xr_finish(w, &(struct xr_opts){.live = mode, .no_refine = !mode},
                                   &err);
    if (rc) {
        mrg_writer_abort(w);
        fprintf(stderr, "htamerge-reanalyse: %s\n", hm_err_line(&err, line, sizeof line));
        return 1;
    }
    if ((rc = mrg_writer_finish(w, &err))) {
        fprintf(stderr, "htamerge-reanalyse: %s\n", hm_err_line(&err, line, sizeof line));
        return 1;
    }
    fprintf(stderr, "htamerge-reanalyse: re-analysed %s (%s)\n", path, mode ? "live" : "offline");
    return 0;
}
