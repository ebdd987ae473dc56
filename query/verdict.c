/* The report topics about ranks waiting for each other, for the server:
 * "stragglers" (who is late, with a verdict in words) and "collectives"
 * (each matched instance with its skew and late rank), in the shapes of
 * ARCHITECTURE.md. They read the base tables, so they work on a live file
 * too; the server uses report.c's builders instead once it has them. */
#include "query_int.h"

#include <stdio.h>
#include <string.h>

#include "hm_sql.h"
#include "sql_guard.h"

const char *const qry_verdict_topics[] = {"stragglers", "collectives", NULL};

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

static double num(const cJSON *row, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* The rank most often last, and the runner-up's count. */
static const cJSON *most_late(const cJSON *ranks, double *second)
{
    const cJSON *row, *top = NULL;

    *second = 0;
    cJSON_ArrayForEach(row, ranks) {
        double lc = num(row, "late_count");
        if (!top || lc > num(top, "late_count") ||
            (lc == num(top, "late_count") && num(row, "blame_us") > num(top, "blame_us"))) {
            if (top)
                *second = num(top, "late_count");
            top = row;
        } else if (lc > *second) {
            *second = lc;
        }
    }
    return top;
}

/* A straggler is the rank last in at least half of the instances it took
 * part in, and at least twice as often as any other rank: a rank that is
 * merely last by chance now and then is not one. */
static void add_verdict(cJSON *doc, const cJSON *ranks)
{
    double second, lc, inst;
    const cJSON *top = most_late(ranks, &second);
    char text[400];
    bool is = false;

    if (!top || num(top, "instances") < 1) {
        snprintf(text, sizeof text, "no collective with a sequence number was seen on two or more ranks");
    } else {
        lc = num(top, "late_count");
        inst = num(top, "instances");
        is = lc >= 2 && lc >= 0.5 * inst && lc >= 2 * second;
        snprintf(text, sizeof text,
                 "%srank %d entered last in %.0f of %.0f collectives (%.0f%%), holding the others "
                 "back %.1f ms in all; no other rank was last more than %.0f times",
                 is ? "" : "no clear straggler: the most often last, ", (int)num(top, "rank"), lc,
                 inst, 100 * lc / inst, num(top, "blame_us") / 1000, second);
    }
    if (is)
        cJSON_AddNumberToObject(doc, "straggler", num(top, "rank"));
    else
        cJSON_AddNullToObject(doc, "straggler");
    cJSON_AddStringToObject(doc, "evidence", text);
}

static void keep_ranks(cJSON *arr, const int *ranks, int nranks)
{
    cJSON *row = arr ? arr->child : NULL, *next;

    for (; ranks && row; row = next) {
        bool keep = false;
        next = row->next;
        for (int i = 0; i < nranks; i++)
            keep |= ranks[i] == (int)num(row, "rank");
        if (!keep)
            cJSON_Delete(cJSON_DetachItemViaPointer(arr, row));
    }
}

int qry_verdict_build(sqlite3 *db, const char *topic, const int *ranks, int nranks, cJSON **out,
                      struct hm_err *err)
{
    cJSON *doc, *rows;
    bool views = false;

    if (!strcmp(topic, "stragglers")) {
        cJSON *hv = qry_rows(db, hm_sql_serve_has_views, NULL, 0, err);
        views = hv && num(hv->child, "count(*)") > 0;
        cJSON_Delete(hv);
        rows = qry_rows(db, views ? hm_sql_serve_stragglers_view : hm_sql_serve_stragglers_base, NULL, 0, err);
    } else if (!strcmp(topic, "collectives")) {
        rows = qry_rows(db, hm_sql_serve_collectives, NULL, 0, err);
    } else {
        return hm_err_set(err, HM_EINVAL, NULL, -1, "unknown report topic '%s'", topic);
    }
    if (!rows)
        return err->code ? err->code : HM_ENOMEM;
    doc = cJSON_CreateObject();
    if (!strcmp(topic, "stragglers")) {
        add_verdict(doc, rows);   /* judged on every rank, then filtered */
        keep_ranks(rows, ranks, nranks);
        cJSON_AddItemToObject(doc, "ranks", rows);
    } else {
        cJSON_AddItemToObject(doc, "instances", rows);
    }
    *out = doc;
    return 0;
}
