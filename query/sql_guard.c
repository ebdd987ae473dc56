/* Read-only SQL: authorizer, time limit, row limit, JSON rows. */
#include "sql_guard.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int authorize(void *ctx, int action, const char *a, const char *b, const char *c,
                     const char *d)
{
    (void)ctx, (void)a, (void)c, (void)d;
    switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_RECURSIVE:
        return SQLITE_OK;
    case SQLITE_FUNCTION:
        /* load_extension is also off at the connection; refuse it by name too. */
        return b && !strcmp(b, "load_extension") ? SQLITE_DENY : SQLITE_OK;
    default:
        return SQLITE_DENY;
    }
}

struct deadline {
    struct timespec end;
};

static int over_time(void *ctx)
{
    struct deadline *d = ctx;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > d->end.tv_sec || (now.tv_sec == d->end.tv_sec && now.tv_nsec > d->end.tv_nsec);
}

void qry_json_add_column(sqlite3_stmt *st, int i, cJSON *parent, const char *name)
{
    cJSON *v;
    char buf[32];

    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER: {
        sqlite3_int64 x = sqlite3_column_int64(st, i);
        if (x > (1LL << 53) || x < -(1LL << 53)) {
            snprintf(buf, sizeof buf, "%" PRId64, (int64_t)x);
            v = cJSON_CreateRaw(buf);
        } else {
            v = cJSON_CreateNumber((double)x);
        }
        break;
    }
    case SQLITE_FLOAT: v = cJSON_CreateNumber(sqlite3_column_double(st, i)); break;
    case SQLITE_NULL: v = cJSON_CreateNull(); break;
    case SQLITE_BLOB: v = cJSON_CreateString("(blob)"); break;
    default: v = cJSON_CreateString((const char *)sqlite3_column_text(st, i)); break;
    }
    if (name)
        cJSON_AddItemToObject(parent, name, v);
    else
        cJSON_AddItemToArray(parent, v);
}

static int fetch(sqlite3_stmt *st, const struct qry_sql_limits *lim, cJSON *res)
{
    cJSON *cols = cJSON_AddArrayToObject(res, "columns"), *rows = cJSON_AddArrayToObject(res, "rows");
    int n = sqlite3_column_count(st), rc;
    long count = 0;

    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(cols, cJSON_CreateString(sqlite3_column_name(st, i)));
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (count++ >= lim->max_rows) {
            cJSON_AddBoolToObject(res, "truncated", 1);
            return SQLITE_DONE;
        }
        cJSON *row = cJSON_CreateArray();
        for (int i = 0; i < n; i++)
            qry_json_add_column(st, i, row, NULL);
        cJSON_AddItemToArray(rows, row);
    }
    cJSON_AddBoolToObject(res, "truncated", 0);
    return rc;
}

int qry_sql_run(sqlite3 *db, const char *sql, const struct qry_sql_limits *lim, cJSON **out,
                struct hm_err *err)
{
    struct deadline dl;
    sqlite3_stmt *st = NULL;
    const char *tail = NULL;
    cJSON *res;
    int rc;

    *out = NULL;
    clock_gettime(CLOCK_MONOTONIC, &dl.end);
    dl.end.tv_sec += lim->max_ms / 1000;
    dl.end.tv_nsec += (lim->max_ms % 1000) * 1000000L;
    if (dl.end.tv_nsec >= 1000000000L) {
        dl.end.tv_sec++;
        dl.end.tv_nsec -= 1000000000L;
    }
    sqlite3_set_authorizer(db, authorize, NULL);
    sqlite3_progress_handler(db, 1000, over_time, &dl);
    rc = sqlite3_prepare_v2(db, sql, -1, &st, &tail);
    if (rc != SQLITE_OK || !st) {
        /* The authorizer's refusal of a function comes back as SQLITE_ERROR. */
        bool denied = rc == SQLITE_AUTH || strstr(sqlite3_errmsg(db), "not authorized") != NULL;
        int code = denied || rc == SQLITE_OK ? HM_EINVAL : HM_ESQL;
        /* rc becomes the HM_E* code, as documented (not SQLite's). */
        rc = hm_err_set(err, code, NULL, -1, "%s", rc == SQLITE_OK ? "empty statement" :
                        rc == SQLITE_AUTH ? "refused: only read statements are allowed" : sqlite3_errmsg(db));
        goto out;
    }
    while (tail && (*tail == ' ' || *tail == '\n' || *tail == '\t' || *tail == '\r' || *tail == ';'))
        tail++;
    if (tail && *tail) {
        rc = hm_err_set(err, HM_EINVAL, NULL, -1, "refused: one statement at a time");
        goto out;
    }
    if (!sqlite3_stmt_readonly(st)) {
        rc = hm_err_set(err, HM_EINVAL, NULL, -1, "refused: only read statements are allowed");
        goto out;
    }
    res = cJSON_CreateObject();
    rc = fetch(st, lim, res);
    if (rc != SQLITE_DONE) {
        cJSON_Delete(res);
        rc = hm_err_set(err, HM_ESQL, NULL, -1, "%s",
                        rc == SQLITE_INTERRUPT ? "statement ran past its time limit" : sqlite3_errmsg(db));
        goto out;
    }
    *out = res;
    rc = 0;
out:
    sqlite3_finalize(st);
    sqlite3_progress_handler(db, 0, NULL, NULL);
    sqlite3_set_authorizer(db, NULL, NULL);
    return rc;
}

cJSON *qry_sql_as_objects(const cJSON *res)
{
    const cJSON *cols = cJSON_GetObjectItemCaseSensitive(res, "columns");
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(res, "rows"), *row, *col;
    cJSON *doc = cJSON_CreateObject(), *out = cJSON_AddArrayToObject(doc, "rows");

    cJSON_ArrayForEach(row, rows) {
        cJSON *o = cJSON_CreateObject();
        const cJSON *v = row->child;
        cJSON_ArrayForEach(col, cols) {
            cJSON_AddItemToObject(o, col->valuestring, cJSON_Duplicate(v, 1));
            v = v ? v->next : NULL;
        }
        cJSON_AddItemToArray(out, o);
    }
    cJSON_AddItemToObject(doc, "truncated",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(res, "truncated"), 1));
    return doc;
}
