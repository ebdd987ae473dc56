/* The writer's lifecycle and state machine (API in writer.h; the other
 * concepts live in rank_state.c, rows.c, slice_nesting.c, analysis_rows.c,
 * in_place.c, retime.c and readback.c, sharing writer_int.h).
 *
 * Load plan: one connection and one transaction over the whole load, with
 * fast-load pragmas (no journal, no fsync: a crash loses only the temporary
 * file, never FINAL_PATH) and prepared statements reused row after row.
 * Fact tables (slices, collectives, counters, steps, a_*) stream in as calls
 * arrive. Dimension tables (strings, tracks, ranks, files, skipped) live in
 * memory, where batches update them cheaply, and are written by _finish.
 *
 * States (w->state, enum wr_state). One enum, so that "written in place"
 * and "failed" cannot disagree; where the file lives is tmp_path (NULL:
 * in place), fixed at open.
 *
 *     mrg_writer_open        mrg_writer_open_live     mrg_writer_reopen
 *     (FINAL.tmp-<pid>)      (FINAL itself, WAL)      (an existing FINAL)
 *            |                       |                        |
 *            v                       v                        v
 *      +-----------+           +-----------+           +-------------+
 *      |   FRESH   |           |   LIVE    |           |  REOPENED   |
 *      | add, set  |           | add, set, |           | analyses    |
 *      |           |           | commit    |           | only        |
 *      +-----------+           +-----------+           +-------------+
 *         |     |                 |     |                 |     |
 *         |     '-----------------)-----+-----------------)-----'
 *         |                       |     | a call fails while storing
 *         |                       |     | (SQLite, out of memory)
 *         |                       |     v
 *         |                       |  +-------------------------------+
 *         |                       |  | FAILED: first_err keeps the   |
 *         |                       |  | first cause; guarded calls    |
 *         |                       |  | return it. LIVE: mark_failed  |
 *         |                       |  | writes it to meta.run_status  |
 *         |                       |  +-------------------------------+
 *         |  _finish              |  _finish       |  _finish, _close_live, _abort
 *         v                       v                v
 *      +---------------------------------+      (freed)
 *      | CLOSED: dimension rows, indexes,|
 *      | views, ANALYZE, COMMIT, closed  |      (REOPENED's _finish as LIVE's)
 *      +---------------------------------+
 *         | FRESH: fsync, rename over FINAL; in place: nothing to move
 *         v
 *      (freed)
 *
 * _abort from any state frees w: FRESH's temporary file is deleted, an
 * in-place file keeps what was committed (REOPENED: its transaction rolls
 * back). A call refused for its arguments (HM_EINVAL, HM_EFORMAT) changes
 * no state. The guarded calls are those that refused a failed writer
 * before states were one enum: _set_clock, _set_time_shift,
 * _set_rank_complete, _add_batch, _add_analysis, _set_meta, _commit,
 * _flush, _finish; the others behave as they always did.
 *
 * Not here: clock fitting (the caller passes parameters), collective
 * matching and NVTX stitching (they fill their tables through SQL later). */
#include "store/writer_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hm_sql.h"
#include "store/columns.h"

/* Every INSERT lives in sql/queries/writer_*.sql; the one-line DELETEs
 * and the page count stay here. The slice inserts are built by rows.c. */
static const char *const stmt_sql[ST__COUNT] = {
    [ST_COLL] = hm_sql_writer_insert_collective,
    [ST_COUNTER] = hm_sql_writer_insert_counter,
    [ST_STEP] = hm_sql_writer_insert_step,
    [ST_STRING] = hm_sql_writer_insert_string,
    [ST_CATEGORY] = hm_sql_writer_insert_category,
    [ST_TRACK] = hm_sql_writer_insert_track,
    [ST_RANK] = hm_sql_writer_insert_rank,
    [ST_FILE] = hm_sql_writer_insert_file,
    [ST_RANK_SLICES] = hm_sql_writer_insert_rank_slices,
    [ST_SLICE_ID] = hm_sql_writer_insert_slice_id,
    [ST_SKIPPED] = hm_sql_writer_insert_skipped,
    [ST_META] = hm_sql_writer_insert_meta,
    [ST_A_TEMPORAL] = hm_sql_writer_a_temporal,
    [ST_A_OVERLAP] = hm_sql_writer_a_overlap,
    [ST_A_IDLE] = hm_sql_writer_a_idle,
    [ST_A_KCLASS] = hm_sql_writer_a_kernel_class,
    [ST_A_KLABEL] = hm_sql_writer_a_kernel_labels,
    [ST_A_KERNEL] = hm_sql_writer_a_kernels,
    [ST_A_STEP] = hm_sql_writer_step_analysis,
    [ST_DEL_TEMPORAL] = "DELETE FROM a_temporal WHERE mode = ?1 AND rank = ?2",
    [ST_DEL_OVERLAP] = "DELETE FROM a_overlap WHERE mode = ?1 AND rank = ?2",
    [ST_DEL_IDLE] = "DELETE FROM a_idle WHERE mode = ?1 AND rank = ?2",
    [ST_DEL_KCLASS] = "DELETE FROM a_kernel_class WHERE mode = ?1 AND rank = ?2",
    [ST_DEL_KLABEL] = "DELETE FROM a_kernel_labels WHERE mode = ?1 AND rank = ?2",
    [ST_DEL_KERNEL] = "DELETE FROM a_kernels WHERE mode = ?1 AND rank = ?2",
    [ST_PAGES] = "PRAGMA page_count",
};

/* Fast-load settings, applied before the schema (page_size must come
 * first). No journal: a failed load is deleted, never rolled back. Page
 * size: 4, 16 and 64 KiB load within 1% of each other (instruction counts);
 * 64 KiB makes the full scans readers do (reports, SQL) touch fewer pages.
 * Cache: WR_CACHE_PRAGMA (writer_int.h). */
static const char *const load_pragmas[] = {
    "PRAGMA page_size = 65536",
    "PRAGMA journal_mode = OFF",
    "PRAGMA synchronous = OFF",
    "PRAGMA locking_mode = EXCLUSIVE",
    WR_CACHE_PRAGMA,
};

#define PAGES_COLUMNS(X) X(PG_COUNT, "page_count")
enum { PAGES_COLUMNS(HM_COLUMN_ENUM) PG__COUNT };
static const char *const pages_names[] = {PAGES_COLUMNS(HM_COLUMN_NAME)};

/* Settings and statements run by _finish after the indexes and views. */
static const char *const finish_sql[] = {
    "PRAGMA analysis_limit = 1000",
    "ANALYZE",
    wr_load_index_stat_sql,
    "COMMIT",
    "PRAGMA journal_mode = DELETE",
};

/* --- Failures -------------------------------------------------------------- */

/* Enters FAILED, keeping the first cause: what later calls report, and
 * what a live file's run_status says. */
static void record_failure(struct mrg_writer *w, int code, int rank, const char *msg)
{
    if (w->state == WR_FAILED)
        return;
    w->state = WR_FAILED;
    hm_err_set(&w->first_err, code, w->final_path, -1, "%s", msg);
    w->first_err.rank = rank;
}

int wr_usable(struct mrg_writer *w, struct hm_err *err)
{
    if (w->state != WR_FAILED)
        return 0;
    if (err)
        *err = w->first_err;
    return w->first_err.code;
}

int wr_refuse(struct mrg_writer *w, struct hm_err *err, int code, int rank, const char *msg)
{
    hm_err_set(err, code, w->final_path, -1, "%s", msg);
    if (err)
        err->rank = rank;
    return code;
}

int wr_fail(struct mrg_writer *w, struct hm_err *err, int code, int rank, const char *msg)
{
    record_failure(w, code, rank, msg);
    return wr_refuse(w, err, code, rank, msg);
}

/* Leaves err->rank to the caller, which knows the rank. */
int wr_fail_sql(struct mrg_writer *w, struct hm_err *err, const char *what)
{
    int rc = sqlite3_errcode(w->db) & 0xff, code = HM_ESQL;
    char msg[sizeof w->first_err.msg];

    if (rc == SQLITE_NOMEM)
        code = HM_ENOMEM;
    else if (rc == SQLITE_IOERR || rc == SQLITE_FULL || rc == SQLITE_CANTOPEN ||
             rc == SQLITE_READONLY || rc == SQLITE_PERM)
        code = HM_EIO;
    snprintf(msg, sizeof msg, "%s: %s", what, sqlite3_errmsg(w->db));
    record_failure(w, code, -1, msg);
    return hm_err_set(err, code, w->final_path, -1, "%s", msg);
}

/* --- Statements and binders ------------------------------------------------ */

/* Runs a statement that returns no rows we need, then resets it. */
int wr_step(struct mrg_writer *w, sqlite3_stmt *st, struct hm_err *err, const char *what)
{
    int rc = sqlite3_step(st);

    sqlite3_reset(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        return wr_fail_sql(w, err, what);
    return 0;
}

int wr_exec(struct mrg_writer *w, const char *sql, struct hm_err *err, const char *what)
{
    if (sqlite3_exec(w->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return wr_fail_sql(w, err, what);
    return 0;
}

void wr_bind_opt(sqlite3_stmt *st, int i, int64_t v)
{
    if (v == HM_NONE)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_int64(st, i, v);
}

void wr_bind_sid(sqlite3_stmt *st, int i, hm_strid id)
{
    if (id == 0)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_int64(st, i, id);
}

void wr_bind_real(sqlite3_stmt *st, int i, double v)
{
    if (isfinite(v))
        sqlite3_bind_double(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

/* Binds string id of table t as text (static: t outlives the statement's
 * use), or NULL for id 0. */
void wr_bind_str(sqlite3_stmt *st, int i, const struct hm_strtab *t, hm_strid id)
{
    size_t len;
    const char *s = hm_strtab_get(t, id, &len);

    if (id == 0 || len == 0)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_text64(st, i, s, len, SQLITE_STATIC, SQLITE_UTF8);
}

void wr_bind_cstr(sqlite3_stmt *st, int i, const char *s)
{
    if (s && *s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

/* Out of memory here fails the writer, but the call goes on storing its
 * rows (with a NULL string) and reports the failure at its end. */
hm_strid wr_intern(struct mrg_writer *w, const char *s, size_t len)
{
    hm_strid id = hm_strtab_intern(w->strings, s, len);

    if (id == UINT32_MAX) {
        record_failure(w, HM_ENOMEM, -1, "out of memory interning strings");
        return 0;
    }
    return id;
}

/* Interning on first use keeps strings a batch never references as a name
 * (args JSON) out of the table. */
hm_strid wr_gstr(struct mrg_writer *w, const struct hm_batch *b, hm_strid id)
{
    size_t len;
    const char *s;

    if (id == 0 || id >= hm_strtab_count(b->strings))
        return 0;
    if (w->sc.smap[id] == UNMAPPED) {
        s = hm_strtab_get(b->strings, id, &len);
        w->sc.smap[id] = wr_intern(w, s, len);
    }
    return w->sc.smap[id];
}

/* --- Lifecycle ------------------------------------------------------------ */

struct mrg_writer *wr_alloc(const char *final_path, const char *tmp_path)
{
    struct mrg_writer *w = calloc(1, sizeof *w);

    if (!w)
        return NULL;
    w->state = WR_FRESH;
    w->wb_fd = -1;
    w->next_slice = w->next_track = 1;
    w->page_size = PAGE_SIZE_BYTES;
    w->final_path = strdup(final_path);
    w->tmp_path = tmp_path ? strdup(tmp_path) : NULL;
    w->strings = hm_strtab_new();
    if (!w->final_path || (tmp_path && !w->tmp_path) || !w->strings) {
        wr_free(w);
        return NULL;
    }
    return w;
}

void wr_close_db(struct mrg_writer *w)
{
    for (int i = 0; i < ST__COUNT; i++) {
        sqlite3_finalize(w->st[i]);
        w->st[i] = NULL;
    }
    sqlite3_close(w->db);
    w->db = NULL;
}

void wr_free(struct mrg_writer *w)
{
    wr_take_reserve(w);
    wr_writeback_close(w);
    free(w->loaded_ids);
    for (int i = 0; i < w->nranks; i++) {
        HM_VEC_FREE(w->ranks[i].tracks);
        HM_VEC_FREE(w->ranks[i].files);
        HM_VEC_FREE(w->ranks[i].slice_spans);
    }
    free(w->ranks);
    hm_strtab_free(w->strings);
    free(w->sc.smap);
    free(w->sc.tmap);
    free(w->keep);
    free(w->first_slice);
    hm_nesting_free(&w->sc.nest);
    free(w->final_path);
    free(w->tmp_path);
    free(w);
}

void mrg_writer_abort(struct mrg_writer *w)
{
    char journal[PATH_MAX + 16];

    if (!w)
        return;
    wr_close_db(w);
    if (wr_in_place(w)) {
        /* The file is the output: whatever was committed stays. */
        wr_free(w);
        return;
    }
    unlink(w->tmp_path);
    snprintf(journal, sizeof journal, "%s-journal", w->tmp_path);
    unlink(journal);
    wr_free(w);
}

/* Helper threads for the sorts of CREATE INDEX. Measured on 2 busy cores:
 * threads made the (track, ts) index slower (17 s vs 9 s for 16M slices),
 * so only machines with cores to spare get them. */
const char *wr_sort_threads_pragma(char *buf, size_t len)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    long n = ncpu >= 8 ? 4 : ncpu >= 4 ? ncpu / 2 : 0;

    snprintf(buf, len, "PRAGMA threads = %ld", n);
    return buf;
}

/* Opens the connection on the temporary path with the load settings. */
static int open_db(struct mrg_writer *w, struct hm_err *err)
{
    char threads[64];
    int rc;

    unlink(w->tmp_path);
    rc = sqlite3_open_v2(w->tmp_path, &w->db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        int e = w->db ? sqlite3_system_errno(w->db) : 0;
        return hm_err_set(err, HM_EIO, w->final_path, -1, "cannot create %s: %s%s%s", w->tmp_path,
                          w->db ? sqlite3_errmsg(w->db) : sqlite3_errstr(rc), e ? ": " : "",
                          e ? strerror(e) : "");
    }
    for (size_t i = 0; i < sizeof load_pragmas / sizeof *load_pragmas; i++)
        if ((rc = wr_exec(w, load_pragmas[i], err, "setting up the database")))
            return rc;
    return wr_exec(w, wr_sort_threads_pragma(threads, sizeof threads), err, "setting up the database");
}

/* The statements of stmt_sql and the slice inserts. */
int wr_prepare_statements(struct mrg_writer *w, struct hm_err *err)
{
    int rc = 0;

    if (wr_prepare_slice_insert(w, 1, &w->st[ST_SLICE]) != SQLITE_OK ||
        wr_prepare_slice_insert(w, SLICE_ROWS, &w->st[ST_SLICES]) != SQLITE_OK)
        rc = wr_fail_sql(w, err, "preparing statements");
    for (int i = 0; i < ST__COUNT && rc == 0; i++)
        if (stmt_sql[i] && sqlite3_prepare_v3(w->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                                              &w->st[i], NULL) != SQLITE_OK)
            rc = wr_fail_sql(w, err, "preparing statements");
    if (rc == 0)
        HM_COLUMNS_CHECK(w->st[ST_PAGES], pages_names);
    return rc;
}

/* Schema, prepared statements, categories, and the load's transaction. */
int wr_open_schema(struct mrg_writer *w, struct hm_err *err)
{
    int rc = wr_exec(w, "BEGIN", err, "starting the load");

    if (rc == 0)
        rc = wr_exec(w, hm_sql_schema, err, "creating the schema");
    if (rc == 0)
        rc = wr_exec(w, hm_sql_writer_tables_added, err, "creating the schema");
    if (rc == 0)
        rc = wr_prepare_statements(w, err);
    for (int c = 0; c < HM_CAT__COUNT && rc == 0; c++) {
        sqlite3_bind_int(w->st[ST_CATEGORY], 1, c);
        sqlite3_bind_text(w->st[ST_CATEGORY], 2, hm_cat_name((enum hm_cat)c), -1, SQLITE_STATIC);
        rc = wr_step(w, w->st[ST_CATEGORY], err, "storing categories");
    }
    return rc;
}

struct mrg_writer *mrg_writer_open(const char *final_path, struct hm_err *err)
{
    char tmp[PATH_MAX + 32];
    size_t len = final_path ? strlen(final_path) : 0;
    struct mrg_writer *w;

    if (!len || len > PATH_MAX) {
        hm_err_set(err, HM_EINVAL, final_path, -1, "invalid output path");
        return NULL;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", final_path, (long)getpid());
    if (!(w = wr_alloc(final_path, tmp))) {
        hm_err_set(err, HM_ENOMEM, final_path, -1, "out of memory");
        return NULL;
    }
    if (open_db(w, err) || wr_open_schema(w, err) || wr_create_load_index(w, err)) {
        mrg_writer_abort(w);
        return NULL;
    }
    return w;
}

/* Makes the closed temporary file durable and moves it into place; the
 * directory fsync is best effort (the data itself is already synced). */
static int publish(struct mrg_writer *w, struct hm_err *err)
{
    char dir[PATH_MAX + 1], *slash;
    int fd = open(w->tmp_path, O_RDONLY | O_CLOEXEC);

    if (fd < 0 || fsync(fd) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return hm_err_set(err, HM_EIO, w->final_path, -1, "syncing %s: %s", w->tmp_path,
                          strerror(e));
    }
    close(fd);
    if (rename(w->tmp_path, w->final_path) != 0)
        return hm_err_set(err, HM_EIO, w->final_path, -1, "renaming %s: %s", w->tmp_path,
                          strerror(errno));
    snprintf(dir, sizeof dir, "%s", w->final_path);
    slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    fd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    return 0;
}

/* Dimension rows, indexes and views, then finish_sql and close: FRESH or
 * in place to CLOSED. A live file may have readers (htamerge serve): it
 * stays WAL. */
/* name_first_slices, from what the inserts noted; nothing when they noted
 * nothing (a reopened file keeps its own) or ran out of memory. */
static int write_first_slices(struct mrg_writer *w, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = 0;

    if (!w->first_slice || w->first_lost)
        return 0;
    if (sqlite3_prepare_v2(w->db, "INSERT OR REPLACE INTO name_first_slices (name, slice) VALUES (?1, ?2)", -1, &st,
                           NULL) != SQLITE_OK)
        return wr_fail_sql(w, err, "storing the first slice of each name");
    for (size_t i = 1; i < w->first_cap && rc == 0; i++) {
        if (!w->first_slice[i])
            continue;
        sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
        sqlite3_bind_int64(st, 2, w->first_slice[i]);
        rc = wr_step(w, st, err, "storing the first slice of each name");
    }
    sqlite3_finalize(st);
    return rc ? rc : mrg_writer_set_meta(w, "name_first_slices", "complete", err);
}

static int finish_db(struct mrg_writer *w, struct hm_err *err)
{
    int rc = wr_write_dimensions(w, 1, err);

    if (rc == 0)
        rc = write_first_slices(w, err);
    if (rc == 0)
        rc = wr_exec(w, hm_sql_indexes, err, "building indexes");
    if (rc == 0)
        rc = wr_exec(w, hm_sql_views, err, "creating views");
    if (rc == 0)
        rc = wr_create_report_views(w, err);
    for (size_t i = 0; i < sizeof finish_sql / sizeof *finish_sql && rc == 0; i++) {
        if (wr_in_place(w) && strstr(finish_sql[i], "journal_mode"))
            sqlite3_exec(w->db, finish_sql[i], NULL, NULL, NULL);
        else
            rc = wr_exec(w, finish_sql[i], err, "finishing the database");
    }
    if (rc)
        return rc;
    for (int i = 0; i < ST__COUNT; i++) {
        sqlite3_finalize(w->st[i]);
        w->st[i] = NULL;
    }
    if (sqlite3_close(w->db) != SQLITE_OK)
        return wr_fail_sql(w, err, "closing the database");
    w->db = NULL;
    w->state = WR_CLOSED;
    return 0;
}

int mrg_writer_finish(struct mrg_writer *w, struct hm_err *err)
{
    int rc = wr_usable(w, err);

    if (rc == 0)
        rc = finish_db(w, err);
    if (rc == 0 && !wr_in_place(w))
        rc = publish(w, err);
    if (rc != 0) {
        mrg_writer_abort(w);
        return rc;
    }
    wr_free(w);
    return 0;
}

/* --- Small calls ----------------------------------------------------------- */

int mrg_writer_set_meta(struct mrg_writer *w, const char *key, const char *value,
                        struct hm_err *err)
{
    sqlite3_stmt *st = w->st[ST_META];
    int rc = wr_usable(w, err);

    if (rc)
        return rc;
    if (!key || !*key)
        return wr_refuse(w, err, HM_EINVAL, -1, "meta key must not be empty");
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    wr_bind_cstr(st, 2, value);
    return wr_step(w, st, err, "storing meta");
}

void mrg_writer_stats(struct mrg_writer *w, struct mrg_writer_stats *out)
{
    sqlite3_stmt *st = w->st[ST_PAGES];

    w->stats.strings = hm_strtab_count(w->strings) - 1;
    w->stats.bytes = 0;
    if (sqlite3_step(st) == SQLITE_ROW)
        w->stats.bytes = (uint64_t)sqlite3_column_int64(st, PG_COUNT) * (uint64_t)w->page_size;
    sqlite3_reset(st);
    *out = w->stats;
}

int mrg_writer_flush(struct mrg_writer *w, struct hm_err *err)
{
    int rc = wr_usable(w, err);

    return rc ? rc : wr_write_dimensions(w, 0, err);
}

sqlite3 *mrg_writer_db(struct mrg_writer *w)
{
    return w->db;
}
