/* A test's database: finishing it as a run does (the cross-rank analyses,
 * then the writer's finish), and reading the first column of a query's
 * first row. Include after test.h. */
#ifndef HM_TEST_SQL_H
#define HM_TEST_SQL_H

#include <stdint.h>
#include <stdio.h>

#include <sqlite3.h>

#include "analysis/cross_rank.h"
#include "store/writer.h"

/* Runs the cross-rank analyses (offline, no clock refinement) and
 * finishes w; 0, or the error code, said on stderr. */
static inline int tw_finish(struct mrg_writer *w)
{
    struct hm_err err;
    int rc;

    hm_err_clear(&err);
    CHECK_EQ_INT(xr_finish(w, &(struct xr_opts){.no_refine = 1}, &err), 0);
    rc = mrg_writer_finish(w, &err);
    CHECK_EQ_INT(rc, 0);
    if (rc) {
        char line[1200];
        fprintf(stderr, "finish: %s\n", hm_err_line(&err, line, sizeof line));
    }
    return rc;
}

/* The integer, INT64_MIN when the row is missing or NULL, INT64_MIN + 1
 * when the query does not prepare (said on stderr). */
static inline int64_t q_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    int64_t v = INT64_MIN;

    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "prepare failed: %s: %s\n", sql, sqlite3_errmsg(db));
        return INT64_MIN + 1;
    }
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

#endif
