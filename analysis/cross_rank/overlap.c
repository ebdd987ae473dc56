/* The cross-rank stage's last analyses on a thread of their own, while the
 * writer's connection builds the slice index (issue 21).
 *
 * At 64 ranks the end of an ingest was serial with one core idle: these
 * analyses (0.7 s), then CREATE INDEX slices_correlation (1.3 s, a scan of
 * the whole slices table). The analyses read only the in-memory view and
 * string texts, so they can run beside the index; a SQLite connection is
 * not for two threads at once, so their rows go to a private scratch
 * database (a temporary file SQLite deletes itself), copied into the load,
 * rowids and all, once both are done.
 * Not here: which analyses run (cross_rank.c), the index (store/load_index.c). */
#include "overlap.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/monotime.h"
#include "hm_sql.h"
#include "store/writer.h"

struct tail_job {
    struct xr_ctx *x;
    int (*tail)(struct xr_ctx *x, struct hm_err *err);
    struct hm_err err;
    int rc;
};

static void *tail_main(void *arg)
{
    struct tail_job *j = arg;

    hm_err_clear(&j->err);
    j->rc = j->tail(j->x, &j->err);
    return NULL;
}

static int db_fail(sqlite3 *db, struct hm_err *err, const char *what, const char *table)
{
    return hm_err_set(err, HM_ESQL, NULL, -1, "%s %s: %s", what, table, sqlite3_errmsg(db));
}

/* "INSERT INTO table (rowid, <sel's columns after its first>) VALUES (...)". */
static int insert_sql(sqlite3_stmt *sel, const char *table, char *sql, size_t cap)
{
    int n = sqlite3_column_count(sel);
    size_t len = (size_t)snprintf(sql, cap, "INSERT INTO \"%s\" (rowid", table);

    for (int i = 1; i < n && len < cap; i++)
        len += (size_t)snprintf(sql + len, cap - len, ", \"%s\"", sqlite3_column_name(sel, i));
    for (int i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(sql + len, cap - len, "%s", i ? ", ?" : ") VALUES (?");
    if (len < cap)
        len += (size_t)snprintf(sql + len, cap - len, ")");
    return len < cap ? 0 : -1;
}

/* Copies table's rows from one connection to the other, rowids and all
 * (step_breakdown's INSERT OR REPLACE leaves gaps the copy must keep). */
static int copy_table(sqlite3 *from, sqlite3 *to, const char *table, struct hm_err *err)
{
    char sql[2048];
    sqlite3_stmt *sel = NULL, *ins = NULL;
    int rc = 0, s = SQLITE_DONE, n;

    snprintf(sql, sizeof sql, "SELECT rowid, * FROM \"%s\" ORDER BY rowid", table);
    if (sqlite3_prepare_v2(from, sql, -1, &sel, NULL) != SQLITE_OK)
        return db_fail(from, err, "reading", table);
    n = sqlite3_column_count(sel);
    if (insert_sql(sel, table, sql, sizeof sql))
        rc = hm_err_set(err, HM_EINVAL, NULL, -1, "copying %s: too many columns", table);
    else if (sqlite3_prepare_v2(to, sql, -1, &ins, NULL) != SQLITE_OK)
        rc = db_fail(to, err, "copying", table);
    while (rc == 0 && (s = sqlite3_step(sel)) == SQLITE_ROW) {
        for (int i = 0; i < n; i++)
            sqlite3_bind_value(ins, i + 1, sqlite3_column_value(sel, i));
        if (sqlite3_step(ins) != SQLITE_DONE)
            rc = db_fail(to, err, "copying", table);
        sqlite3_reset(ins);
    }
    if (rc == 0 && s != SQLITE_DONE)
        rc = db_fail(from, err, "reading", table);
    sqlite3_finalize(sel);
    sqlite3_finalize(ins);
    return rc;
}

/* Calls fn on every table of the scratch database but strings. */
static int each_table(sqlite3 *scratch, sqlite3 *load, struct hm_err *err,
                      int (*fn)(sqlite3 *scratch, sqlite3 *load, const char *table, struct hm_err *err))
{
    sqlite3_stmt *st = NULL;
    int rc = 0, s = SQLITE_DONE;

    if (sqlite3_prepare_v2(scratch,
                           "SELECT name FROM sqlite_schema WHERE type = 'table' AND name <> 'strings'"
                           " ORDER BY name",
                           -1, &st, NULL) != SQLITE_OK)
        return db_fail(scratch, err, "listing", "the scratch tables");
    while (rc == 0 && (s = sqlite3_step(st)) == SQLITE_ROW)
        rc = fn(scratch, load, (const char *)sqlite3_column_text(st, 0), err);
    if (rc == 0 && s != SQLITE_DONE)
        rc = db_fail(scratch, err, "listing", "the scratch tables");
    sqlite3_finalize(st);
    return rc;
}

/* The schema's own rows (meta, categories) are the load's already: the
 * scratch tables start empty, so whatever they hold at the end is the tail's. */
static int empty_table(sqlite3 *scratch, sqlite3 *load, const char *table, struct hm_err *err)
{
    char sql[256];

    (void)load;
    snprintf(sql, sizeof sql, "DELETE FROM \"%s\"", table);
    return sqlite3_exec(scratch, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : db_fail(scratch, err, "emptying", table);
}

static int copy_back(sqlite3 *scratch, sqlite3 *load, const char *table, struct hm_err *err)
{
    return copy_table(scratch, load, table, err);
}

/* A scratch database with the load's tables and its strings (the texts
 * xr_str looks up). One transaction, never committed: closing discards it. */
static int scratch_open(sqlite3 *load, sqlite3 **out, struct hm_err *err)
{
    static const char setup[] = "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; BEGIN";
    int rc = sqlite3_open_v2("", out, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             NULL);

    if (rc != SQLITE_OK)
        return hm_err_set(err, HM_ESQL, NULL, -1, "opening a scratch database: %s",
                          *out ? sqlite3_errmsg(*out) : sqlite3_errstr(rc));
    if (sqlite3_exec(*out, setup, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(*out, hm_sql_schema, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(*out, hm_sql_writer_tables_added, NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(*out, err, "setting up", "the scratch database");
    rc = each_table(*out, load, err, empty_table);
    return rc ? rc : copy_table(load, *out, "strings", err);
}

int xr_overlap_tail(struct xr_ctx *x, struct mrg_writer *w, int (*tail)(struct xr_ctx *x, struct hm_err *err),
                    struct hm_err *err)
{
    struct tail_job j = {.x = x, .tail = tail};
    sqlite3 *load = x->db, *scratch = NULL;
    pthread_t th;
    double t0 = hm_mono_s(), t_index;
    int rc = scratch_open(load, &scratch, err), started, irc;

    if (rc) {
        sqlite3_close(scratch);
        return rc;
    }
    sqlite3_finalize(x->str_st);   /* prepared on the load's connection */
    x->str_st = NULL;
    x->db = scratch;
    started = pthread_create(&th, NULL, tail_main, &j) == 0;
    if (!started)
        tail_main(&j);   /* no thread to be had: one after the other, the same rows */
    irc = mrg_writer_build_slice_index(w, err);
    t_index = hm_mono_s();
    if (started)
        pthread_join(th, NULL);
    sqlite3_finalize(x->str_st);
    x->str_st = NULL;
    x->db = load;
    if (getenv("HTAMERGE_STATS"))
        fprintf(stderr, "htamerge-stats: cross-rank slice index beside them %.3f s, then waited %.3f s\n",
                t_index - t0, hm_mono_s() - t_index);
    rc = irc;
    if (rc == 0 && j.rc) {
        *err = j.err;
        rc = j.rc;
    }
    if (rc == 0)
        rc = each_table(scratch, load, err, copy_back);
    sqlite3_close(scratch);
    return rc;
}
