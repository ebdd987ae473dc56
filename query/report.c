/* Reports: opening a merged file, and what the topic builders of topics.c
 * are made of (report_int.h): a query's rows or facts added to a document,
 * the straggler verdict, the clock steps, the CUPTI recording note. Times
 * are in microseconds as HTA prints them. */
#include "report.h"
#include "report_int.h"
#include "topics.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hm_sql.h"
#include "sql_guard.h"
#include "store/columns.h"
#include "window.h"

/* The columns each query's reader takes by position (store/columns.h). */
#define META_COLUMNS(X) X(META_VALUE, "value")
#define CLOCK_STEP_COLUMNS(X) X(CS_RANK, "rank") X(CS_STEP, "step_ns") X(CS_STEP_AT, "step_at_ns")
#define FACT_COLUMNS(X) X(FACT_KEY, "key") X(FACT_VALUE, "value")
#define MERGER_COLUMNS(X) X(MERGER_HOST, "merger_host") X(MERGER_PID, "merger_pid")
#define PAUSED_COLUMNS(X) X(PAUSED_COUNT, "pauses")
#define PAUSES_COLUMNS(X) X(PAUSES_COUNT, "pauses") X(PAUSES_NS, "paused_ns") X(PAUSES_SPAN, "span_ns")
#define VERDICT_COLUMNS(X) X(VERDICT_RANK, "straggler") X(VERDICT_EVIDENCE, "evidence")
enum { META_COLUMNS(HM_COLUMN_ENUM) };
enum { CLOCK_STEP_COLUMNS(HM_COLUMN_ENUM) };
enum { FACT_COLUMNS(HM_COLUMN_ENUM) };
enum { MERGER_COLUMNS(HM_COLUMN_ENUM) };
enum { PAUSED_COLUMNS(HM_COLUMN_ENUM) };
enum { PAUSES_COLUMNS(HM_COLUMN_ENUM) };
enum { VERDICT_COLUMNS(HM_COLUMN_ENUM) };
static const char *const meta_names[] = {META_COLUMNS(HM_COLUMN_NAME)};
static const char *const clock_step_names[] = {CLOCK_STEP_COLUMNS(HM_COLUMN_NAME)};
static const char *const fact_names[] = {FACT_COLUMNS(HM_COLUMN_NAME)};
static const char *const merger_names[] = {MERGER_COLUMNS(HM_COLUMN_NAME)};
static const char *const paused_names[] = {PAUSED_COLUMNS(HM_COLUMN_NAME)};
static const char *const pauses_names[] = {PAUSES_COLUMNS(HM_COLUMN_NAME)};
static const char *const verdict_names[] = {VERDICT_COLUMNS(HM_COLUMN_NAME)};

sqlite3 *qry_open(const char *path, struct hm_err *err)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    long version = -1;

    if (rc != SQLITE_OK) {
        hm_err_set(err, HM_EIO, path, -1, "cannot open: %s", db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, 5000);
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &st, NULL) ==
        SQLITE_OK) {
        HM_COLUMNS_CHECK(st, meta_names);
        if (sqlite3_step(st) == SQLITE_ROW)
            version = strtol((const char *)sqlite3_column_text(st, META_VALUE), NULL, 10);
    }
    sqlite3_finalize(st);
    if (version < 1) {
        hm_err_set(err, HM_EFORMAT, path, -1, "not an htamerge database (no meta.schema_version)");
        sqlite3_close(db);
        return NULL;
    }
    if (version > 1) {
        hm_err_set(err, HM_EVERSION, path, -1,
                   "schema version %ld is newer than this htamerge reads (1); upgrade htamerge", version);
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

/* The index of the statement's column called name, or -1. */
static int column_index(sqlite3_stmt *st, const char *name)
{
    for (int i = 0; i < sqlite3_column_count(st); i++)
        if (!strcmp(sqlite3_column_name(st, i), name))
            return i;
    return -1;
}

/* Whether the current row is one of o's ranks and steps, read before the
 * row is built: at 1,024 ranks most rows of a --ranks report are not. */
static int row_wanted(const struct qry_report_opts *o, sqlite3_stmt *st, int rank_col, int step_col)
{
    int ok = 1;

    if (o->ranks && rank_col >= 0 && sqlite3_column_type(st, rank_col) != SQLITE_NULL &&
        sqlite3_column_type(st, rank_col) != SQLITE_TEXT) {
        int64_t r = sqlite3_column_int64(st, rank_col);
        ok = 0;
        for (int i = 0; i < o->nranks && !ok; i++)
            ok = o->ranks[i] == r;
    }
    if (ok && o->steps && step_col >= 0 && sqlite3_column_type(st, step_col) != SQLITE_NULL &&
        sqlite3_column_type(st, step_col) != SQLITE_TEXT) {
        double s = sqlite3_column_double(st, step_col);
        ok = 0;
        for (int i = 0; i < o->nsteps && !ok; i++)
            ok = (double)o->steps[i] == s;
    }
    return ok;
}

int qry_report_sql_error(sqlite3 *db, const char *what, struct hm_err *err)
{
    return hm_err_set(err, HM_ESQL, sqlite3_db_filename(db, "main"), -1, "report %s: %s", what, sqlite3_errmsg(db));
}

int qry_report_rows(sqlite3 *db, const struct qry_report_opts *o, const char *sql, cJSON *doc,
                    const char *key, struct hm_err *err)
{
    cJSON *arr = cJSON_AddArrayToObject(doc, key);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

    if (rc != SQLITE_OK)
        return qry_report_sql_error(db, key, err);
    if (sqlite3_bind_parameter_count(st) >= 1)
        sqlite3_bind_text(st, 1, o->all_steps ? "all_steps" : "hta", -1, SQLITE_STATIC);
    if (sqlite3_bind_parameter_count(st) >= 2)
        sqlite3_bind_int(st, 2, o->top_kernels > 0 ? o->top_kernels : 10);
    int rank_col = column_index(st, "rank"), step_col = column_index(st, "step");
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        cJSON *row;
        if (!row_wanted(o, st, rank_col, step_col))
            continue;
        row = cJSON_CreateObject();
        for (int i = 0; i < sqlite3_column_count(st); i++)
            qry_json_add_column(st, i, row, sqlite3_column_name(st, i));
        cJSON_AddItemToArray(arr, row);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : qry_report_sql_error(db, key, err);
}

int qry_has_column(sqlite3 *db, const char *table, const char *column)
{
    sqlite3_stmt *st = NULL;
    int have = 0;

    if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC);
        have = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return have;
}

/* Copies one report_clocks_steps.sql row into the matching rank's row. */
static void put_clock_step(sqlite3_stmt *st, cJSON *ranks)
{
    cJSON *row;

    cJSON_ArrayForEach(row, ranks) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(row, "rank");
        if (cJSON_IsNumber(r) && r->valuedouble == (double)sqlite3_column_int64(st, CS_RANK)) {
            qry_json_add_column(st, CS_STEP, row, "step_ns");
            qry_json_add_column(st, CS_STEP_AT, row, "step_at_ns");
        }
    }
}

int qry_report_clock_steps(sqlite3 *db, cJSON *doc, struct hm_err *err)
{
    cJSON *ranks = cJSON_GetObjectItemCaseSensitive(doc, "ranks"), *row;
    sqlite3_stmt *st = NULL;
    int rc = SQLITE_DONE;

    if (qry_has_column(db, "ranks", "clock_step_ns")) { /* files written before it have not */
        if (sqlite3_prepare_v2(db, hm_sql_report_clocks_steps, -1, &st, NULL) != SQLITE_OK)
            return qry_report_sql_error(db, "clocks", err);
        HM_COLUMNS_CHECK(st, clock_step_names);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
            put_clock_step(st, ranks);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return qry_report_sql_error(db, "clocks", err);
    }
    cJSON_ArrayForEach(row, ranks) {
        if (!cJSON_GetObjectItemCaseSensitive(row, "step_ns")) {
            cJSON_AddNullToObject(row, "step_ns");
            cJSON_AddNullToObject(row, "step_at_ns");
        }
    }
    return 0;
}

/* A run whose status still says "running" while its merger process is gone
 * was cut short (the merger was killed): say so instead of "running". */
static void judge_run_status(sqlite3 *db, cJSON *doc)
{
    cJSON *st = cJSON_GetObjectItemCaseSensitive(doc, "run_status");
    sqlite3_stmt *q = NULL;
    char host[256] = "";
    long pid = 0;
    int same_host = 0;

    if (!cJSON_IsString(st) || strcmp(st->valuestring, "running") != 0)
        return;
    if (sqlite3_prepare_v2(db, hm_sql_report_merger, -1, &q, NULL) != SQLITE_OK)
        return;
    HM_COLUMNS_CHECK(q, merger_names);
    if (sqlite3_step(q) == SQLITE_ROW) {
        const char *h = (const char *)sqlite3_column_text(q, MERGER_HOST);
        pid = sqlite3_column_int64(q, MERGER_PID);
        gethostname(host, sizeof host - 1);
        same_host = h && !strcmp(h, host);
    }
    sqlite3_finalize(q);
    if (same_host && pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        cJSON_ReplaceItemInObjectCaseSensitive(
            doc, "run_status", cJSON_CreateString("incomplete (the merger stopped before finishing)"));
}

int qry_report_facts(sqlite3 *db, cJSON *doc, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, hm_sql_report_summary_run, -1, &st, NULL);

    if (rc != SQLITE_OK)
        return hm_err_set(err, HM_ESQL, NULL, -1, "report summary: %s", sqlite3_errmsg(db));
    HM_COLUMNS_CHECK(st, fact_names);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        qry_json_add_column(st, FACT_VALUE, doc, (const char *)sqlite3_column_text(st, FACT_KEY));
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return hm_err_set(err, HM_ESQL, NULL, -1, "report summary: %s", sqlite3_errmsg(db));
    judge_run_status(db, doc);
    return 0;
}

/* The number of CUPTI pauses (report_cupti_paused.sql: cheap); *rc is
 * SQLITE_ROW, or the failing SQLite code (0 pauses then). */
static int64_t cupti_pauses(sqlite3 *db, int *rc)
{
    sqlite3_stmt *st = NULL;
    int64_t pauses = 0;

    if ((*rc = sqlite3_prepare_v2(db, hm_sql_report_cupti_paused, -1, &st, NULL)) == SQLITE_OK) {
        HM_COLUMNS_CHECK(st, paused_names);
        if ((*rc = sqlite3_step(st)) == SQLITE_ROW)
            pauses = sqlite3_column_int64(st, PAUSED_COUNT);
    }
    sqlite3_finalize(st);
    return pauses;
}

/* Live capture that paused CUPTI (cupti-range, --cupti-window) left GPU
 * activity for part of the run only: the kernel-based topics then say so
 * as doc.gpu_recording, since their totals are of the recorded time (the
 * analyses leave the pauses out of idle time rather than count them). */
int qry_report_recording_note(sqlite3 *db, cJSON *doc, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int64_t paused = 0, span = 0;
    char note[320];
    int rc;
    int64_t pauses = cupti_pauses(db, &rc);

    if (rc == SQLITE_ROW && pauses > 0 &&
        (rc = sqlite3_prepare_v2(db, hm_sql_report_cupti_pauses, -1, &st, NULL)) == SQLITE_OK) {
        HM_COLUMNS_CHECK(st, pauses_names);
        if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            pauses = sqlite3_column_int64(st, PAUSES_COUNT);
            paused = sqlite3_column_int64(st, PAUSES_NS);
            span = sqlite3_column_int64(st, PAUSES_SPAN);
        }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return hm_err_set(err, HM_ESQL, sqlite3_db_filename(db, "main"), -1, "report: %s", sqlite3_errmsg(db));
    if (pauses <= 0)
        return 0;
    snprintf(note, sizeof note,
             "CUPTI recorded part of the run only (cupti-range or --cupti-window): %lld pauses, "
             "%.0f%% of the pausing ranks' time unrecorded; kernel-based numbers cover the recorded "
             "time only and leave the pauses out of idle time",
             (long long)pauses, span > 0 ? 100.0 * (double)paused / (double)span : 0.0);
    return cJSON_AddStringToObject(doc, "gpu_recording", note) ? 0
                                                                : hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
}

int qry_report_verdict(sqlite3 *db, cJSON *doc, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, hm_sql_report_stragglers_verdict, -1, &st, NULL);
    const unsigned char *ev = NULL;

    if (rc != SQLITE_OK)
        return qry_report_sql_error(db, "stragglers", err);
    HM_COLUMNS_CHECK(st, verdict_names);
    if (sqlite3_step(st) == SQLITE_ROW) {
        if (sqlite3_column_type(st, VERDICT_RANK) == SQLITE_INTEGER)
            cJSON_AddNumberToObject(doc, "straggler", (double)sqlite3_column_int64(st, VERDICT_RANK));
        else
            cJSON_AddNullToObject(doc, "straggler");
        ev = sqlite3_column_text(st, VERDICT_EVIDENCE);
        cJSON_AddStringToObject(doc, "evidence", ev ? (const char *)ev : "");
    } else {
        cJSON_AddNullToObject(doc, "straggler");
        cJSON_AddStringToObject(doc, "evidence", "no collectives were matched across ranks");
    }
    sqlite3_finalize(st);
    return 0;
}

/* "--steps applies to the steps, stragglers, collectives and nvtx topics;
 * the others cover the whole run", the topics named from the table. */
static int steps_refused(struct hm_err *err)
{
    char list[512] = "";
    size_t at = 0, n = 0, i = 0;

    for (const struct qry_topic *t = qry_topics; t->name; t++)
        n += (t->flags & QRY_TOPIC_STEPS) != 0;
    for (const struct qry_topic *t = qry_topics; t->name && at < sizeof list; t++)
        if (t->flags & QRY_TOPIC_STEPS)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", i++ == 0 ? "" : i == n ? " and " : ", ",
                                   t->name);
    return hm_err_set(err, HM_EINVAL, NULL, -1,
                      "--steps applies to the %s topics; the others cover the whole run", list);
}

int qry_report_build(sqlite3 *db, const struct qry_report_opts *o, cJSON **out, struct hm_err *err)
{
    const struct qry_topic *t = qry_topic_find(o->topic);
    cJSON *doc;
    int rc;

    if (!t)
        return hm_err_set(err, HM_EINVAL, NULL, -1, "unknown report topic '%s'", o->topic);
    if (o->steps && !(t->flags & QRY_TOPIC_STEPS))
        return steps_refused(err);
    if (o->by && (strcmp(t->name, "kernels") != 0 || strcmp(o->by, "graph") != 0))
        return hm_err_set(err, HM_EINVAL, NULL, -1, "by '%s' is not known for topic %s (kernels: graph)", o->by,
                          t->name);
    if (!(doc = cJSON_CreateObject()))
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    rc = t->flags & QRY_TOPIC_GPU_TIME ? qry_report_recording_note(db, doc, err) : 0;
    if (rc == 0)
        rc = t->build(db, o, doc, err);
    if (rc == 0 && (t->flags & QRY_TOPIC_WINDOW))
        rc = qry_report_window(db, o, doc, err); /* what the figures cover */
    if (rc != 0) {
        cJSON_Delete(doc);
        return rc;
    }
    *out = doc;
    return 0;
}
