/* Rows of a query as JSON: the server's endpoints that answer a table
 * as it is (ranks, tracks, a slice, a collective's members) read it
 * through qry_rows. */
#include "query_int.h"

#include "sql_guard.h"

cJSON *qry_rows(sqlite3 *db, const char *sql, const int64_t *args, int nargs, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    cJSON *arr;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

    if (rc != SQLITE_OK) {
        hm_err_set(err, HM_ESQL, NULL, -1, "%s", sqlite3_errmsg(db));
        return NULL;
    }
    arr = cJSON_CreateArray();
    for (int i = 0; i < nargs; i++)
        sqlite3_bind_int64(st, i + 1, args[i]);
    while (arr && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        cJSON *row = cJSON_CreateObject();
        for (int i = 0; i < sqlite3_column_count(st); i++)
            qry_json_add_column(st, i, row, sqlite3_column_name(st, i));
        cJSON_AddItemToArray(arr, row);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        hm_err_set(err, HM_ESQL, NULL, -1, "%s", sqlite3_errmsg(db));
        cJSON_Delete(arr);
        return NULL;
    }
    return arr;
}
