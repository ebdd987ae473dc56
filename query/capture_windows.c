/* The capture windows of a view (capture_windows.h): api_windows.sql
 * finds them; this file merges those closer than a pixel column, so that a
 * view holds at most about px windows per rank and kind, and stops at
 * QRY_WINDOWS_MAX. The drawing is the viewer's (timeline_paint.js). */
#include "capture_windows.h"

#include <stdbool.h>
#include <string.h>

#include "buf.h"
#include "hm_sql.h"
#include "store/columns.h"

#define WINDOW_COLUMNS(X) X(CW_RANK, "rank") X(CW_KIND, "kind") X(CW_START, "start_ns") X(CW_END, "end_ns")
enum { WINDOW_COLUMNS(HM_COLUMN_ENUM) CW__COUNT };
static const char *const window_names[] = {WINDOW_COLUMNS(HM_COLUMN_NAME)};

/* The window being merged, absolute ns. */
struct pending {
    bool open;
    int rank;
    bool paused;
    int64_t start, end;
};

static int add_window(cJSON *arr, const struct pending *w, int64_t origin)
{
    cJSON *o = cJSON_CreateObject();

    if (!o || !cJSON_AddItemToArray(arr, o)) {
        cJSON_Delete(o);
        return HM_ENOMEM;
    }
    if (!cJSON_AddNumberToObject(o, "rank", w->rank) ||
        !cJSON_AddStringToObject(o, "kind", w->paused ? "paused" : "capture") ||
        !cJSON_AddNumberToObject(o, "start", (double)(w->start - origin)) ||
        !cJSON_AddNumberToObject(o, "end", (double)(w->end - origin)))
        return HM_ENOMEM;
    return 0;
}

/* Reads the rows into arr, merging a window into the one before it (same
 * rank and kind) when it begins less than gap ns after that one ends. */
static int read_windows(sqlite3_stmt *st, int64_t origin, int64_t gap, cJSON *arr, bool *truncated)
{
    struct pending w = {0};
    int n = 0, rc = SQLITE_DONE, err = 0;

    while (err == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct pending r = {true, sqlite3_column_int(st, CW_RANK),
                            !strcmp((const char *)sqlite3_column_text(st, CW_KIND), "paused"),
                            sqlite3_column_int64(st, CW_START), sqlite3_column_int64(st, CW_END)};
        if (w.open && r.rank == w.rank && r.paused == w.paused && r.start - w.end < gap) {
            if (r.end > w.end)
                w.end = r.end;
            continue;
        }
        if (w.open && n == QRY_WINDOWS_MAX - 1) {   /* the pending one is the last that fits */
            *truncated = true;
            break;
        }
        if (w.open && (err = add_window(arr, &w, origin)) == 0)
            n++;
        w = r;
    }
    if (err)
        return err;
    if (!*truncated && rc != SQLITE_DONE)
        return HM_ESQL;
    return w.open ? add_window(arr, &w, origin) : 0;
}

/* ranks as a JSON array, the statement's rank filter; NULL stays NULL. */
static int bind_ranks(sqlite3_stmt *st, int idx, const int *ranks, int nranks, struct qry_buf *b)
{
    if (!ranks)
        return sqlite3_bind_null(st, idx) == SQLITE_OK ? 0 : HM_ESQL;
    qry_buf_puts(b, "[");
    for (int i = 0; i < nranks; i++)
        qry_buf_printf(b, "%s%d", i ? "," : "", ranks[i]);
    qry_buf_puts(b, "]");
    if (b->oom)
        return HM_ENOMEM;
    return sqlite3_bind_text(st, idx, b->p, -1, SQLITE_STATIC) == SQLITE_OK ? 0 : HM_ESQL;
}

cJSON *qry_windows(sqlite3 *db, const struct qry_windows_req *q, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    struct qry_buf ranks = {0};
    bool truncated = false;
    int64_t gap = (q->t1 - q->t0) / (q->px > 0 ? q->px : 1);
    cJSON *doc = cJSON_CreateObject(), *arr = doc ? cJSON_AddArrayToObject(doc, "windows") : NULL;
    int rc = arr ? 0 : HM_ENOMEM;

    if (rc == 0 && sqlite3_prepare_v2(db, hm_sql_api_windows, -1, &st, NULL) != SQLITE_OK)
        rc = HM_ESQL;
    if (rc == 0) {
        HM_COLUMNS_CHECK(st, window_names);
        sqlite3_bind_int64(st, 1, q->origin + q->t0);
        sqlite3_bind_int64(st, 2, q->origin + q->t1);
        sqlite3_bind_int64(st, 4, q->end);
        rc = bind_ranks(st, 3, q->ranks, q->nranks, &ranks);
    }
    if (rc == 0)
        rc = read_windows(st, q->origin, gap > 0 ? gap : 1, arr, &truncated);
    if (rc == HM_ESQL)
        hm_err_set(err, HM_ESQL, sqlite3_db_filename(db, "main"), -1, "windows: %s", sqlite3_errmsg(db));
    else if (rc)
        hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    sqlite3_finalize(st);
    qry_buf_free(&ranks);
    if (rc) {
        cJSON_Delete(doc);
        return NULL;
    }
    cJSON_AddNumberToObject(doc, "t0", (double)q->t0);
    cJSON_AddNumberToObject(doc, "t1", (double)q->t1);
    cJSON_AddNumberToObject(doc, "px", q->px);
    cJSON_AddBoolToObject(doc, "truncated", truncated);
    return doc;
}
