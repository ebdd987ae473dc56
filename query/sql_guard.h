/* Read-only SQL for users: `htamerge sql` and POST /api/sql.
 * Defence in depth: the connection is opened read-only by qry_open, an
 * authorizer admits reads alone (no ATTACH, PRAGMA, writes or
 * load_extension), and a progress handler bounds each statement's time;
 * rows beyond the limit are cut and flagged. */
#ifndef HM_QUERY_SQL_GUARD_H
#define HM_QUERY_SQL_GUARD_H

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "common/err.h"

struct qry_sql_limits {
    long max_rows;   /* rows returned before truncating */
    long max_ms;     /* wall time per statement */
    long max_bytes;  /* values' bytes returned before truncating; 0: no limit */
};

/* Runs exactly one statement. *out = {"columns":[...],"rows":[[...]],
 * "truncated":bool}. A refused statement gives HM_EINVAL, a failing one
 * HM_ESQL, with the reason in err->msg. */
int qry_sql_run(sqlite3 *db, const char *sql, const struct qry_sql_limits *lim, cJSON **out,
                struct hm_err *err);

/* Converts a qry_sql_run result into {"rows":[{col: value}], "truncated":..}
 * for the report renderer. Returns a new document or NULL. */
cJSON *qry_sql_as_objects(const cJSON *res);

/* Adds the value of column i of the current row to arr or obj (name may be
 * NULL for arrays). Integers beyond 2^53 stay exact (raw JSON numbers). */
void qry_json_add_column(sqlite3_stmt *st, int i, cJSON *parent, const char *name);

#endif
