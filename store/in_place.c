/* Writing in place: the live file of `htamerge run` (a new file in WAL
 * mode, committed as the run goes so readers see it grow, with space held
 * in reserve to record a failure) and a finished file reopened for
 * re-analysis (one transaction, so a failure leaves it as it was). Neither
 * has a temporary file: _finish does not rename, _abort keeps the file. */
#include "store/writer_int.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hm_sql.h"
#include "store/columns.h"

/* A live file that fills its disk could not even say so: run_status would
 * stay "running". So the live writer holds RESERVE_BYTES in a side file
 * (PATH-reserve) from the start and gives them back to write the failure
 * (mrg_writer_mark_failed). No reserve when the disk is already full: the
 * run then fails at its first commit anyway. */
enum { RESERVE_BYTES = 1 << 20 };

static void hold_reserve(struct mrg_writer *w)
{
    char path[PATH_MAX + 16];
    int fd, ok;

    snprintf(path, sizeof path, "%s-reserve", w->final_path);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    ok = posix_fallocate(fd, 0, RESERVE_BYTES) == 0;
    close(fd);
    if (!ok || !(w->reserve_path = strdup(path)))
        unlink(path);
}

void wr_take_reserve(struct mrg_writer *w)
{
    if (w->reserve_path)
        unlink(w->reserve_path);
    free(w->reserve_path);
    w->reserve_path = NULL;
}

static const char *const live_pragmas[] = {
    "PRAGMA page_size = 65536",
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = NORMAL",
    WR_CACHE_PRAGMA,
};

int mrg_writer_mark_failed(struct mrg_writer *w, const char *status)
{
    sqlite3_stmt *st = NULL;
    char text[320];
    int rc;

    const char *why = w->state == WR_FAILED ? w->first_err.msg : "";

    if (!wr_in_place(w) || !w->db)
        return -1;
    wr_take_reserve(w);
    /* %.255s: the first failure as the 256-byte buffer of old kept it. */
    snprintf(text, sizeof text, "%s%s%.255s", status, *why ? ": " : "", why);
    sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);   /* what failed is not kept */
    rc = sqlite3_prepare_v2(w->db, hm_sql_writer_insert_meta, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, "run_status", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, text, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_finalize(st);
    /* Out of the transaction the statement committed itself; start the one
     * the writer's close expects to find. */
    if (rc == SQLITE_OK)
        sqlite3_exec(w->db, "BEGIN", NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : -1;
}

struct mrg_writer *mrg_writer_open_live(const char *path, struct hm_err *err)
{
    struct mrg_writer *w;
    char threads[64], side[PATH_MAX + 16];
    int rc;

    if (!path || !*path || strlen(path) > PATH_MAX) {
        hm_err_set(err, HM_EINVAL, path, -1, "invalid output path");
        return NULL;
    }
    if (!(w = wr_alloc(path, NULL))) {
        hm_err_set(err, HM_ENOMEM, path, -1, "out of memory");
        return NULL;
    }
    w->state = WR_LIVE;
    /* A previous file of that name is replaced, as ingest does. */
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    rc = sqlite3_open_v2(path, &w->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                         NULL);
    if (rc != SQLITE_OK) {
        hm_err_set(err, HM_EIO, path, -1, "cannot create: %s",
                   w->db ? sqlite3_errmsg(w->db) : sqlite3_errstr(rc));
        goto fail;
    }
    for (size_t i = 0; i < sizeof live_pragmas / sizeof *live_pragmas; i++)
        if (wr_exec(w, live_pragmas[i], err, "setting up the database"))
            goto fail;
    if (wr_exec(w, wr_sort_threads_pragma(threads, sizeof threads), err, "setting up the database") ||
        wr_open_schema(w, err))
        goto fail;
    hold_reserve(w);
    return w;
fail:
    wr_close_db(w);
    wr_free(w);
    return NULL;
}

int mrg_writer_commit(struct mrg_writer *w, struct hm_err *err)
{
    int rc = wr_usable(w, err);

    if (rc == 0)
        rc = wr_write_dimensions(w, 0, err);
    if (rc == 0)
        rc = wr_exec(w, "COMMIT", err, "committing");
    if (rc == 0)
        rc = wr_exec(w, "BEGIN", err, "committing");
    return rc;
}

int mrg_writer_close_live(struct mrg_writer *w, struct hm_err *err)
{
    int rc = 0;

    if (w->state != WR_FAILED) {
        rc = wr_write_dimensions(w, 1, err);
        if (rc == 0)
            rc = wr_exec(w, hm_sql_views, err, "creating views");
        if (rc == 0)
            rc = wr_create_report_views(w, err);
        if (rc == 0)
            rc = wr_exec(w, "COMMIT", err, "committing");
    }
    mrg_writer_abort(w);
    return rc;
}

#define DROP_VIEWS_COLUMNS(X) X(DV_DROPS, "drops")
enum { DROP_VIEWS_COLUMNS(HM_COLUMN_ENUM) DV__COUNT };
static const char *const drop_views_names[] = {DROP_VIEWS_COLUMNS(HM_COLUMN_NAME)};

/* Checks that the file is an htamerge database; its views are dropped so
 * that _finish recreates them (views.sql has no IF NOT EXISTS, and a newer
 * htamerge brings newer views). The first read is where SQLite notices a
 * file that is not a database at all. */
static int reopen_check(struct mrg_writer *w, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    char *drops = NULL;
    int rc, found = 0;

    if (sqlite3_prepare_v2(w->db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &st,
                           NULL) != SQLITE_OK) {
        return hm_err_set(err, HM_EFORMAT, w->final_path, -1, "not an htamerge database: %s",
                          sqlite3_errmsg(w->db));
    }
    found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    if (!found)
        return hm_err_set(err, HM_EFORMAT, w->final_path, -1,
                          "not an htamerge database: meta has no schema_version");
    if (sqlite3_prepare_v2(w->db, hm_sql_writer_drop_views, -1, &st, NULL) != SQLITE_OK)
        return wr_fail_sql(w, err, "listing views");
    HM_COLUMNS_CHECK(st, drop_views_names);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, DV_DROPS))
        drops = strdup((const char *)sqlite3_column_text(st, DV_DROPS));
    sqlite3_finalize(st);
    rc = drops ? wr_exec(w, drops, err, "dropping views") : 0;
    free(drops);
    return rc;
}

#define HAS_COLUMN_COLUMNS(X) X(HC_HAVE, "have")
enum { HAS_COLUMN_COLUMNS(HM_COLUMN_ENUM) };
static const char *const has_column_names[] = {HAS_COLUMN_COLUMNS(HM_COLUMN_NAME)};

/* Adds a column a file from an older htamerge lacks: has_sql counts it
 * (column "have"), add_sql adds it; what adds it says so in an error. */
static int add_missing(struct mrg_writer *w, const char *has_sql, const char *add_sql, const char *what,
                       struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int have = 0;

    if (sqlite3_prepare_v2(w->db, has_sql, -1, &st, NULL) != SQLITE_OK)
        return wr_fail_sql(w, err, "reading the schema");
    HM_COLUMNS_CHECK(st, has_column_names);
    if (sqlite3_step(st) == SQLITE_ROW)
        have = sqlite3_column_int(st, HC_HAVE) > 0;
    sqlite3_finalize(st);
    return have ? 0 : wr_exec(w, add_sql, err, what);
}

/* What the re-analysis stores that older files have no column or table
 * for: steps.source, the phases' GPU time in step_breakdown, and the
 * communication by process group. */
static int add_new_columns(struct mrg_writer *w, struct hm_err *err)
{
    return add_missing(w, hm_sql_writer_has_steps_source, hm_sql_writer_add_steps_source,
                       "adding steps.source", err) ||
           add_missing(w, hm_sql_writer_has_phase_gpu, hm_sql_writer_add_phase_gpu,
                       "adding the phases' GPU time to step_breakdown", err) ||
           wr_exec(w, hm_sql_writer_tables_added, err, "adding the communication by process group");
}

struct mrg_writer *mrg_writer_reopen(const char *path, struct hm_err *err)
{
    struct mrg_writer *w;
    int rc;

    if (!path || !*path || strlen(path) > PATH_MAX) {
        hm_err_set(err, HM_EINVAL, path, -1, "invalid database path");
        return NULL;
    }
    /* In place like a live file: _finish neither renames nor publishes,
     * and _abort keeps the file (its transaction rolls back on close). */
    if (!(w = wr_alloc(path, NULL))) {
        hm_err_set(err, HM_ENOMEM, path, -1, "out of memory");
        return NULL;
    }
    w->state = WR_REOPENED;
    rc = sqlite3_open_v2(path, &w->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        int e = w->db ? sqlite3_system_errno(w->db) : 0;
        hm_err_set(err, HM_EIO, path, -1, "cannot open: %s%s%s",
                   w->db ? sqlite3_errmsg(w->db) : sqlite3_errstr(rc), e ? ": " : "",
                   e ? strerror(e) : "");
        goto fail;
    }
    /* Not the load's journal_mode OFF: a failed re-analysis must roll back
     * to the file as it was, which only a journal can do. */
    if (wr_exec(w, WR_CACHE_PRAGMA, err, "setting up the database") ||
        wr_exec(w, "BEGIN IMMEDIATE", err, "starting the re-analysis") || reopen_check(w, err) ||
        add_new_columns(w, err) || wr_prepare_statements(w, err))
        goto fail;
    return w;
fail:
    wr_close_db(w);
    wr_free(w);
    return NULL;
}
