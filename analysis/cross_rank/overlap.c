/* The cross-rank analyses beside the slice index (issue 21).
 *
 * At 64 ranks the end of an ingest was serial with one core idle: the
 * analyses (1.3 s), then CREATE INDEX slices_correlation (1.3 s, a scan of
 * the whole slices table). The analyses work on the in-memory view; what
 * they read of the database is small (ranks, steps, strings, collectives
 * and their slices). So a thread builds the index on the load's connection
 * while the analyses run on a private scratch database (a temporary file
 * SQLite deletes itself) holding copies of those tables; their rows are
 * copied into the load, rowids and all, once the index is built. A SQLite
 * connection is never used by two threads at once: whatever needs the
 * load's connection (re-timing the slices, the CUDA graph queries) waits
 * for the index first (xr_overlap_join, xr_overlap_end).
 * Not here: which analyses run (cross_rank.c), the index (store/load_index.c). */
#include "overlap.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/monotime.h"
#include "common/proc_status.h"
#include "hm_sql.h"
#include "store/writer.h"

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

/* Copies table's rows (those where where holds) from one connection to
 * the other, rowids and all (step_breakdown's INSERT OR REPLACE leaves
 * gaps the copy must keep). */
static int copy_rows(sqlite3 *from, sqlite3 *to, const char *table, const char *where, struct hm_err *err)
{
    char sql[2048];
    sqlite3_stmt *sel = NULL, *ins = NULL;
    int rc = 0, s = SQLITE_DONE, n;

    snprintf(sql, sizeof sql, "SELECT rowid, * FROM \"%s\" WHERE %s ORDER BY rowid", table, where);
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

/* What the analyses read of the load, each with the rows they need
 * (match.c's query joins each collective to its slice). */
static const struct {
    const char *table, *where;
} inputs[] = {
    {"strings", "1"},       {"ranks", "1"},       {"steps", "1"}, {"tracks", "1"},
    {"collectives", "1"},   {"slices", "id IN (SELECT slice FROM collectives)"},
};

static int is_input(const char *table)
{
    for (size_t i = 0; i < sizeof inputs / sizeof *inputs; i++)
        if (!strcmp(inputs[i].table, table))
            return 1;
    return 0;
}

/* Calls fn on every table of the scratch database but the inputs. */
static int each_output(sqlite3 *scratch, sqlite3 *load, struct hm_err *err,
                       int (*fn)(sqlite3 *scratch, sqlite3 *load, const char *table, struct hm_err *err))
{
    sqlite3_stmt *st = NULL;
    int rc = 0, s = SQLITE_DONE;

    if (sqlite3_prepare_v2(scratch, "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name", -1,
                           &st, NULL) != SQLITE_OK)
        return db_fail(scratch, err, "listing", "the scratch tables");
    while (rc == 0 && (s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        if (!is_input(t))
            rc = fn(scratch, load, t, err);
    }
    if (rc == 0 && s != SQLITE_DONE)
        rc = db_fail(scratch, err, "listing", "the scratch tables");
    sqlite3_finalize(st);
    return rc;
}

/* The schema's own rows (meta, categories) are the load's already: the
 * output tables start empty, so whatever they hold at the end is new. */
static int empty_table(sqlite3 *scratch, sqlite3 *load, const char *table, struct hm_err *err)
{
    char sql[256];

    (void)load;
    snprintf(sql, sizeof sql, "DELETE FROM \"%s\"", table);
    return sqlite3_exec(scratch, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : db_fail(scratch, err, "emptying", table);
}

static int copy_back(sqlite3 *scratch, sqlite3 *load, const char *table, struct hm_err *err)
{
    return copy_rows(scratch, load, table, "1", err);
}

/* A scratch database with the load's tables, the inputs copied. One
 * transaction, never committed: closing discards it. */
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
    rc = each_output(*out, load, err, empty_table);
    for (size_t i = 0; i < sizeof inputs / sizeof *inputs && rc == 0; i++)
        rc = copy_rows(load, *out, inputs[i].table, inputs[i].where, err);
    return rc;
}

struct xr_overlap {
    struct mrg_writer *w;   /* borrowed: its connection is the thread's until joined */
    sqlite3 *load;          /* borrowed: the writer's connection */
    sqlite3 *scratch;       /* owned */
    pthread_t th;
    int running;            /* th started and not yet joined */
    int rc;                 /* the index's result */
    struct hm_err err;      /* the index's error */
    double t0, t_built;
};

static void *index_main(void *arg)
{
    struct xr_overlap *o = arg;

    hm_err_clear(&o->err);
    o->rc = mrg_writer_build_slice_index(o->w, &o->err);
    o->t_built = hm_mono_s();
    return NULL;
}

/* Points x at db; the string look-up is prepared on whichever it uses. */
static void use_db(struct xr_ctx *x, sqlite3 *db)
{
    sqlite3_finalize(x->str_st);
    x->str_st = NULL;
    x->db = db;
}

void xr_overlap_begin(struct xr_ctx *x, struct mrg_writer *w)
{
    struct xr_overlap *o = calloc(1, sizeof *o);
    struct hm_err err;

    if (!o)
        return;
    *o = (struct xr_overlap){.w = w, .load = x->db, .t0 = hm_mono_s()};
    if (scratch_open(o->load, &o->scratch, &err)) {
        sqlite3_close(o->scratch);
        free(o);
        return;
    }
    if (getenv("HTAMERGE_STATS"))
        fprintf(stderr, "htamerge-stats: cross-rank copies for the analyses %.3f s\n", hm_mono_s() - o->t0);
    x->ovl = o;
    use_db(x, o->scratch);
    o->running = pthread_create(&o->th, NULL, index_main, o) == 0;
    if (!o->running)
        index_main(o);   /* no thread to be had: one after the other, the same rows */
}

int xr_overlap_join(struct xr_ctx *x, struct hm_err *err)
{
    struct xr_overlap *o = x->ovl;

    if (!o)
        return 0;
    if (o->running) {
        double t = hm_mono_s();
        pthread_join(o->th, NULL);
        o->running = 0;
        if (getenv("HTAMERGE_STATS"))
            fprintf(stderr,
                    "htamerge-stats: cross-rank slice index beside them %.3f s (waited %.3f s), peak RSS %ld MB\n",
                    o->t_built - o->t0, hm_mono_s() - t, hm_proc_status_kb("VmHWM") / 1024);
    }
    if (o->rc && err)
        *err = o->err;
    return o->rc;
}

int xr_overlap_end(struct xr_ctx *x, int rc, struct hm_err *err)
{
    struct xr_overlap *o = x->ovl;
    int irc;

    if (!o)
        return rc;
    irc = xr_overlap_join(x, rc ? NULL : err);
    use_db(x, o->load);
    if (rc == 0)
        rc = irc;
    if (rc == 0)
        rc = each_output(o->scratch, o->load, err, copy_back);
    sqlite3_close(o->scratch);
    free(o);
    x->ovl = NULL;
    return rc;
}
