/* What the per-rank figures cover (issue 17): the steps of each rank and
 * where they came from, added to report documents after they are built.
 *
 *   steps topic: each step row gets "source" (profiler, hooks, nvtx,
 *   inferred; files older than the column hold ProfilerSteps only).
 *   temporal, overlap, idle, kernels (QRY_TOPIC_WINDOW, topics.c): when
 *   some rank's figures are not over ProfilerSteps, i.e. over steps of
 *   another source or, without steps, over the whole run, every row with a rank gets "window": "steps N..M
 *   (source)" (the steps the HTA rule keeps; --all-steps: all of them) or
 *   "whole run, no steps", and the document a "window" member: that label
 *   when all ranks share it, else "differs by rank (see each row)". Runs
 *   whose every rank has ProfilerSteps are reported as before (HTA's). */
#include "window.h"

#include <stdio.h>
#include <string.h>

#include "common/vec.h"
#include "hm_sql.h"
#include "report_int.h"
#include "store/columns.h"

#define STEP_SOURCE_COLUMNS(X) X(SS_SOURCE, "source")
#define WINDOW_COLUMNS(X) \
    X(WIN_RANK, "rank") X(WIN_FIRST, "first") X(WIN_LAST, "last") X(WIN_STEPS, "steps") X(WIN_SOURCE, "source")
enum { STEP_SOURCE_COLUMNS(HM_COLUMN_ENUM) };
enum { WINDOW_COLUMNS(HM_COLUMN_ENUM) };
static const char *const step_source_names[] = {STEP_SOURCE_COLUMNS(HM_COLUMN_NAME)};
static const char *const window_names[] = {WINDOW_COLUMNS(HM_COLUMN_NAME)};

struct rank_window {
    int64_t rank;
    char label[96];
    int profiler;
};

typedef HM_VEC(struct rank_window) window_vec;

/* The source of one step (rank, number); "profiler" in files from before
 * steps.source (st NULL) or when the row is missing. */
static const char *step_source(sqlite3_stmt *st, const cJSON *row)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(row, "rank");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(row, "step");
    const char *src = NULL;

    if (st && cJSON_IsNumber(r) && cJSON_IsNumber(n)) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, (int64_t)r->valuedouble);
        sqlite3_bind_int64(st, 2, (int64_t)n->valuedouble);
        if (sqlite3_step(st) == SQLITE_ROW)
            src = (const char *)sqlite3_column_text(st, SS_SOURCE);
    }
    return src ? src : "profiler";
}

int qry_report_step_sources(sqlite3 *db, cJSON *doc, struct hm_err *err)
{
    cJSON *row;
    sqlite3_stmt *st = NULL;
    int rc = 0;

    if (qry_has_column(db, "steps", "source")) {
        if (sqlite3_prepare_v2(db, hm_sql_report_step_source, -1, &st, NULL) != SQLITE_OK)
            return qry_report_sql_error(db, "steps", err);
        HM_COLUMNS_CHECK(st, step_source_names);
    }
    cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(doc, "steps")) {
        if (!cJSON_AddStringToObject(row, "source", step_source(st, row))) {
            rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
            break;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/* The label of the window of report_window.sql's current row. */
static void read_window(sqlite3_stmt *st, struct rank_window *w)
{
    const char *src = (const char *)sqlite3_column_text(st, WIN_SOURCE);

    w->rank = sqlite3_column_int64(st, WIN_RANK);
    w->profiler = 0;
    if (sqlite3_column_int64(st, WIN_STEPS) == 0) {
        snprintf(w->label, sizeof w->label, "whole run, no steps");
        return;
    }
    snprintf(w->label, sizeof w->label, "steps %lld..%lld (%s)", (long long)sqlite3_column_int64(st, WIN_FIRST),
             (long long)sqlite3_column_int64(st, WIN_LAST), src ? src : "profiler");
    w->profiler = !src || !strcmp(src, "profiler");
}

/* Each rank's window label. */
static int load_windows(sqlite3 *db, const struct qry_report_opts *o, window_vec *v, struct hm_err *err)
{
    const char *sql = qry_has_column(db, "steps", "source") ? hm_sql_report_window : hm_sql_report_window_profiler;
    sqlite3_stmt *st = NULL;
    int rc;

    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return qry_report_sql_error(db, "window", err);
    HM_COLUMNS_CHECK(st, window_names);
    sqlite3_bind_text(st, 1, o->all_steps ? "all_steps" : "hta", -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct rank_window *w = HM_VEC_PUSH(*v);
        if (!w) {
            sqlite3_finalize(st);
            return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        }
        read_window(st, w);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : qry_report_sql_error(db, "window", err);
}

static const char *label_of(const window_vec *v, const cJSON *row)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(row, "rank");
    for (size_t i = 0; cJSON_IsNumber(r) && i < v->n; i++)
        if ((double)v->v[i].rank == r->valuedouble)
            return v->v[i].label;
    return NULL;
}

static int label_rows(cJSON *doc, const char *key, const window_vec *v)
{
    cJSON *row;
    cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(doc, key)) {
        const char *l = label_of(v, row);
        if (l && !cJSON_AddStringToObject(row, "window", l))
            return HM_ENOMEM;
    }
    return 0;
}

/* Labels the rows and the document; 0 or HM_ENOMEM. */
static int add_labels(cJSON *doc, const window_vec *v)
{
    static const char *const keys[] = {"ranks", "streams", "kernels"};
    int same = 1, rc = 0;

    for (size_t i = 0; i < v->n; i++)
        same &= !strcmp(v->v[i].label, v->v[0].label);
    for (size_t k = 0; k < sizeof keys / sizeof *keys && rc == 0; k++)
        rc = label_rows(doc, keys[k], v);
    if (rc == 0 && !cJSON_AddStringToObject(doc, "window", same ? v->v[0].label : "differs by rank (see each row)"))
        rc = HM_ENOMEM;
    return rc;
}

int qry_report_window(sqlite3 *db, const struct qry_report_opts *o, cJSON *doc, struct hm_err *err)
{
    window_vec v = {0};
    int all_profiler = 1, rc;

    if ((rc = load_windows(db, o, &v, err)) == 0) {
        for (size_t i = 0; i < v.n; i++)
            all_profiler &= v.v[i].profiler;
        if (v.n && !all_profiler && add_labels(doc, &v))
            rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    }
    HM_VEC_FREE(v);
    return rc;
}
