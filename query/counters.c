/* The memory counters of a window (counters.h). */
#include "counters.h"

#include <stdio.h>
#include <string.h>

#include "hm_sql.h"
#include "store/columns.h"

#define POINT_COLUMNS(X) X(CP_DEVICE, "device") X(CP_NAME, "name") X(CP_COL, "col") X(CP_VALUE, "value")
enum { POINT_COLUMNS(HM_COLUMN_ENUM) CP__COUNT };
static const char *const point_names[] = {POINT_COLUMNS(HM_COLUMN_NAME)};
#define BEFORE_COLUMNS(X) X(CB_DEVICE, "device") X(CB_NAME, "name") X(CB_VALUE, "value") X(CB_TS, "ts")
enum { BEFORE_COLUMNS(HM_COLUMN_ENUM) CB__COUNT };
static const char *const before_names[] = {BEFORE_COLUMNS(HM_COLUMN_NAME)};

/* The series of (rank, device, name) in arr, made when first seen. */
static cJSON *series_of(cJSON *arr, int rank, int64_t device, const char *name)
{
    cJSON *s;

    cJSON_ArrayForEach(s, arr) {
        if (cJSON_GetObjectItemCaseSensitive(s, "rank")->valuedouble == rank &&
            cJSON_GetObjectItemCaseSensitive(s, "device")->valuedouble == (double)device &&
            !strcmp(cJSON_GetObjectItemCaseSensitive(s, "name")->valuestring, name))
            return s;
    }
    if (!(s = cJSON_CreateObject()) || !cJSON_AddItemToArray(arr, s)) {
        cJSON_Delete(s);
        return NULL;
    }
    if (!cJSON_AddNumberToObject(s, "rank", rank) || !cJSON_AddNumberToObject(s, "device", (double)device) ||
        !cJSON_AddStringToObject(s, "name", name) || !cJSON_AddNullToObject(s, "before") ||
        !cJSON_AddArrayToObject(s, "points"))
        return NULL;
    return s;
}

static int rank_series(sqlite3_stmt *pts, sqlite3_stmt *bef, int rank, int64_t a, int64_t b, int px, cJSON *arr)
{
    cJSON *cur = NULL;   /* the points come grouped by (device, name): look a series up once a group */
    int64_t cur_device = 0;
    char cur_name[64] = "";
    int rc;

    sqlite3_bind_int64(bef, 1, a);
    sqlite3_bind_int64(bef, 2, rank);
    while ((rc = sqlite3_step(bef)) == SQLITE_ROW) {
        cJSON *s = series_of(arr, rank, sqlite3_column_int64(bef, CB_DEVICE),
                             (const char *)sqlite3_column_text(bef, CB_NAME));
        if (!s)
            return HM_ENOMEM;
        cJSON_ReplaceItemInObjectCaseSensitive(s, "before", cJSON_CreateNumber(sqlite3_column_double(bef, CB_VALUE)));
    }
    sqlite3_reset(bef);
    if (rc != SQLITE_DONE)
        return HM_ESQL;
    sqlite3_bind_int64(pts, 1, a);
    sqlite3_bind_int64(pts, 2, b);
    sqlite3_bind_int64(pts, 3, px);
    sqlite3_bind_int64(pts, 4, rank);
    while ((rc = sqlite3_step(pts)) == SQLITE_ROW) {
        int64_t device = sqlite3_column_int64(pts, CP_DEVICE);
        const char *name = (const char *)sqlite3_column_text(pts, CP_NAME);
        cJSON *p = cJSON_CreateArray();
        if (!cur || device != cur_device || strcmp(name, cur_name)) {
            cur = series_of(arr, rank, device, name);
            cur_device = device;
            snprintf(cur_name, sizeof cur_name, "%s", name);
        }
        if (!cur || !p || !cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(cur, "points"), p)) {
            cJSON_Delete(p);
            return HM_ENOMEM;
        }
        cJSON_AddItemToArray(p, cJSON_CreateNumber((double)sqlite3_column_int64(pts, CP_COL)));
        cJSON_AddItemToArray(p, cJSON_CreateNumber(sqlite3_column_double(pts, CP_VALUE)));
    }
    sqlite3_reset(pts);
    return rc == SQLITE_DONE ? 0 : HM_ESQL;
}

cJSON *qry_counters(sqlite3 *db, int64_t origin, int64_t t0, int64_t t1, int px, const int *ranks, int nranks,
                    struct hm_err *err)
{
    sqlite3_stmt *pts = NULL, *bef = NULL;
    cJSON *doc = cJSON_CreateObject(), *arr = doc ? cJSON_AddArrayToObject(doc, "series") : NULL;
    int rc = arr ? 0 : HM_ENOMEM;

    if (rc == 0 && (sqlite3_prepare_v2(db, hm_sql_api_counters, -1, &pts, NULL) != SQLITE_OK ||
                    sqlite3_prepare_v2(db, hm_sql_api_counters_before, -1, &bef, NULL) != SQLITE_OK))
        rc = HM_ESQL;
    if (rc == 0) {
        HM_COLUMNS_CHECK(pts, point_names);
        HM_COLUMNS_CHECK(bef, before_names);
    }
    for (int i = 0; i < nranks && rc == 0; i++)
        rc = rank_series(pts, bef, ranks[i], origin + t0, origin + t1, px, arr);
    if (rc == HM_ESQL)
        hm_err_set(err, HM_ESQL, sqlite3_db_filename(db, "main"), -1, "counters: %s", sqlite3_errmsg(db));
    else if (rc)
        hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    sqlite3_finalize(pts);
    sqlite3_finalize(bef);
    if (rc) {
        cJSON_Delete(doc);
        return NULL;
    }
    cJSON_AddNumberToObject(doc, "t0", (double)t0);
    cJSON_AddNumberToObject(doc, "t1", (double)t1);
    cJSON_AddNumberToObject(doc, "px", px);
    return doc;
}
