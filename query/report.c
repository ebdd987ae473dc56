/* Report topics: each builds a JSON document from the analysis tables.
 * The shapes are the contract of ARCHITECTURE.md ("report --format json"):
 * times in microseconds as HTA prints them, one array per topic. */
#include "report.h"
#include "straggler_hta.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hm_sql.h"
#include "sql_guard.h"

const char *const qry_report_topics[] = {"summary", "temporal", "overlap", "idle", "kernels",
                                         "steps", "clocks", "stragglers", "collectives", "nvtx",
                                         NULL};

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
            SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        version = strtol((const char *)sqlite3_column_text(st, 0), NULL, 10);
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

static int rank_wanted(const struct qry_report_opts *o, const cJSON *row)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(row, "rank");
    if (!o->ranks || !cJSON_IsNumber(r))
        return 1;
    for (int i = 0; i < o->nranks; i++)
        if (o->ranks[i] == r->valueint)
            return 1;
    return 0;
}

static int step_wanted(const struct qry_report_opts *o, const cJSON *row)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(row, "step");
    if (!o->steps || !cJSON_IsNumber(s))
        return 1;
    for (int i = 0; i < o->nsteps; i++)
        if ((double)o->steps[i] == s->valuedouble)
            return 1;
    return 0;
}

/* Runs sql (binding ?1 = mode, ?2 = top) and adds its rows, as objects, to
 * doc[key]. */
static int add_rows(sqlite3 *db, const struct qry_report_opts *o, const char *sql, cJSON *doc,
                    const char *key, struct hm_err *err)
{
    cJSON *arr = cJSON_AddArrayToObject(doc, key);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

    if (rc != SQLITE_OK)
        return hm_err_set(err, HM_ESQL, sqlite3_db_filename(db, "main"), -1, "report %s: %s", key,
                          sqlite3_errmsg(db));
    if (sqlite3_bind_parameter_count(st) >= 1)
        sqlite3_bind_text(st, 1, o->all_steps ? "all_steps" : "hta", -1, SQLITE_STATIC);
    if (sqlite3_bind_parameter_count(st) >= 2)
        sqlite3_bind_int(st, 2, o->top_kernels > 0 ? o->top_kernels : 10);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        cJSON *row = cJSON_CreateObject();
        for (int i = 0; i < sqlite3_column_count(st); i++)
            qry_json_add_column(st, i, row, sqlite3_column_name(st, i));
        if (rank_wanted(o, row) && step_wanted(o, row))
            cJSON_AddItemToArray(arr, row);
        else
            cJSON_Delete(row);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return hm_err_set(err, HM_ESQL, sqlite3_db_filename(db, "main"), -1, "report %s: %s", key,
                          sqlite3_errmsg(db));
    return 0;
}

/* Adds each rank's clock step (report_clocks_steps.sql) to the clocks
 * rows; null in files older than the step columns. */
static int add_clock_steps(sqlite3 *db, cJSON *doc, struct hm_err *err)
{
    cJSON *ranks = cJSON_GetObjectItemCaseSensitive(doc, "ranks"), *row;
    sqlite3_stmt *st = NULL;
    int have = 0, rc = SQLITE_DONE;

    const char *has = "SELECT 1 FROM pragma_table_info('ranks') WHERE name = 'clock_step_ns'";

    if (sqlite3_prepare_v2(db, has, -1, &st, NULL) == SQLITE_OK)
        have = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    st = NULL;
    if (have && sqlite3_prepare_v2(db, hm_sql_report_clocks_steps, -1, &st, NULL) != SQLITE_OK)
        return hm_err_set(err, HM_ESQL, sqlite3_db_filename(db, "main"), -1, "report clocks: %s",
                          sqlite3_errmsg(db));
    while (have && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        cJSON_ArrayForEach(row, ranks) {
            const cJSON *r = cJSON_GetObjectItemCaseSensitive(row, "rank");
            if (cJSON_IsNumber(r) && r->valuedouble == (double)sqlite3_column_int64(st, 0)) {
                qry_json_add_column(st, 1, row, "step_ns");
                qry_json_add_column(st, 2, row, "step_at_ns");
            }
        }
    }
    if (have && rc != SQLITE_DONE) {
        sqlite3_finalize(st);
        return hm_err_set(err, HM_ESQL, sqlite3_db_filename(db, "main"), -1, "report clocks: %s",
                          sqlite3_errmsg(db));
    }
    sqlite3_finalize(st);
    cJSON_ArrayForEach(row, ranks) {
        if (!cJSON_GetObjectItemCaseSensitive(row, "step_ns")) {
            cJSON_AddNullToObject(row, "step_ns");
            cJSON_AddNullToObject(row, "step_at_ns");
        }
    }
    return 0;
}

/* Adds key/value rows of sql as scalar members of doc. */
static int add_facts(sqlite3 *db, const char *sql, cJSON *doc, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

    if (rc != SQLITE_OK)
        return hm_err_set(err, HM_ESQL, NULL, -1, "report summary: %s", sqlite3_errmsg(db));
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        qry_json_add_column(st, 1, doc, (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : hm_err_set(err, HM_ESQL, NULL, -1, "report summary: %s", sqlite3_errmsg(db));
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
    if (sqlite3_step(q) == SQLITE_ROW) {
        const char *h = (const char *)sqlite3_column_text(q, 0);
        pid = sqlite3_column_int64(q, 1);
        gethostname(host, sizeof host - 1);
        same_host = h && !strcmp(h, host);
    }
    sqlite3_finalize(q);
    if (same_host && pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        cJSON_ReplaceItemInObjectCaseSensitive(
            doc, "run_status", cJSON_CreateString("incomplete (the merger stopped before finishing)"));
}

/* Live capture that paused CUPTI (cupti-range, --cupti-window) left GPU
 * activity for part of the run only: the kernel-based topics then say so
 * as doc.gpu_recording, since their totals are of the recorded time (the
 * analyses leave the pauses out of idle time rather than count them). */
static int add_recording_note(sqlite3 *db, cJSON *doc, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int64_t pauses = 0, paused = 0, span = 0;
    char note[320];
    int rc = sqlite3_prepare_v2(db, hm_sql_report_cupti_paused, -1, &st, NULL);

    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW)
        pauses = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    st = NULL;
    if (rc == SQLITE_ROW && pauses > 0 &&
        (rc = sqlite3_prepare_v2(db, hm_sql_report_cupti_pauses, -1, &st, NULL)) == SQLITE_OK &&
        (rc = sqlite3_step(st)) == SQLITE_ROW) {
        pauses = sqlite3_column_int64(st, 0);
        paused = sqlite3_column_int64(st, 1);
        span = sqlite3_column_int64(st, 2);
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

static int counts_gpu_time(const char *topic)
{
    static const char *const kernel_topics[] = {"temporal", "overlap", "idle", "kernels", "nvtx"};

    for (size_t i = 0; i < sizeof kernel_topics / sizeof kernel_topics[0]; i++)
        if (!strcmp(topic, kernel_topics[i]))
            return 1;
    return 0;
}

/* The whole run's straggler verdict as doc.straggler (rank or null) and
 * doc.evidence. */
static int add_verdict(sqlite3 *db, cJSON *doc, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, hm_sql_report_stragglers_verdict, -1, &st, NULL);
    const unsigned char *ev = NULL;

    if (rc != SQLITE_OK)
        return hm_err_set(err, HM_ESQL, sqlite3_db_filename(db, "main"), -1, "report stragglers: %s",
                          sqlite3_errmsg(db));
    if (sqlite3_step(st) == SQLITE_ROW) {
        if (sqlite3_column_type(st, 0) == SQLITE_INTEGER)
            cJSON_AddNumberToObject(doc, "straggler", (double)sqlite3_column_int64(st, 0));
        else
            cJSON_AddNullToObject(doc, "straggler");
        ev = sqlite3_column_text(st, 1);
        cJSON_AddStringToObject(doc, "evidence", ev ? (const char *)ev : "");
    } else {
        cJSON_AddNullToObject(doc, "straggler");
        cJSON_AddStringToObject(doc, "evidence", "no collectives were matched across ranks");
    }
    sqlite3_finalize(st);
    return 0;
}

int qry_report_build(sqlite3 *db, const struct qry_report_opts *o, cJSON **out, struct hm_err *err)
{
    cJSON *doc = cJSON_CreateObject();
    const char *t = o->topic;
    int rc;

    if (!doc)
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    if (o->steps && strcmp(t, "steps") != 0 && strcmp(t, "stragglers") != 0 &&
        strcmp(t, "collectives") != 0 && strcmp(t, "nvtx") != 0) {
        cJSON_Delete(doc);
        return hm_err_set(err, HM_EINVAL, NULL, -1,
                          "--steps applies to the steps, stragglers, collectives and nvtx topics; the "
                          "others cover the whole run");
    }
    /* Topics built on kernel times say when CUPTI paused (summary says it
     * after its facts, below). */
    if (counts_gpu_time(t) && (rc = add_recording_note(db, doc, err)) != 0) {
        cJSON_Delete(doc);
        return rc;
    }
    if (!strcmp(t, "summary")) {
        rc = add_facts(db, hm_sql_report_summary_run, doc, err);
        if (rc == 0)
            judge_run_status(db, doc);
        if (rc == 0)
            rc = add_verdict(db, doc, err);
        if (rc == 0)
            cJSON_AddStringToObject(doc, "definitions", o->all_steps ? "all steps" : "HTA (last step dropped)");
        if (rc == 0)
            rc = add_recording_note(db, doc, err);
        if (rc == 0)
            rc = add_rows(db, o, hm_sql_report_summary_ranks, doc, "ranks", err);
        if (rc == 0)
            rc = add_rows(db, o, hm_sql_report_summary_skipped, doc, "skipped", err);
    } else if (!strcmp(t, "temporal")) {
        rc = add_rows(db, o, hm_sql_report_temporal, doc, "ranks", err);
    } else if (!strcmp(t, "overlap")) {
        rc = add_rows(db, o, hm_sql_report_overlap, doc, "ranks", err);
    } else if (!strcmp(t, "idle")) {
        rc = add_rows(db, o, hm_sql_report_idle, doc, "streams", err);
    } else if (!strcmp(t, "kernels")) {
        rc = add_rows(db, o, hm_sql_report_kernel_types, doc, "kernel_types", err);
        if (rc == 0)
            rc = add_rows(db, o, hm_sql_report_kernels, doc, "kernels", err);
    } else if (!strcmp(t, "steps")) {
        rc = add_rows(db, o, hm_sql_report_steps, doc, "steps", err);
        if (rc == 0)
            rc = add_rows(db, o, hm_sql_report_step_breakdown, doc, "breakdown", err);
    } else if (!strcmp(t, "clocks")) {
        rc = add_rows(db, o, hm_sql_report_clocks, doc, "ranks", err);
        if (rc == 0)
            rc = add_clock_steps(db, doc, err);
    } else if (!strcmp(t, "stragglers") && o->method && !strcmp(o->method, "hta")) {
        rc = qry_stragglers_hta(db, o, doc, err);
    } else if (!strcmp(t, "stragglers")) {
        rc = add_verdict(db, doc, err);
        if (rc == 0)
            rc = add_rows(db, o, hm_sql_report_stragglers_ranks, doc, "ranks", err);
        if (rc == 0)
            rc = add_rows(db, o, hm_sql_report_stragglers_steps, doc, "steps", err);
    } else if (!strcmp(t, "collectives")) {
        rc = add_rows(db, o, hm_sql_report_collectives, doc, "instances", err);
    } else if (!strcmp(t, "nvtx")) {
        rc = add_rows(db, o, hm_sql_report_nvtx, doc, "ranges", err);
    } else {
        rc = hm_err_set(err, HM_EINVAL, NULL, -1, "unknown report topic '%s'", t);
    }
    if (rc != 0) {
        cJSON_Delete(doc);
        return rc;
    }
    *out = doc;
    return 0;
}
