/* The SQL console's guard (query/sql_guard.c): fuzzed statements run
 * through qry_sql_run against a small real database (the full schema,
 * views and indexes, a few rows), on two connections: the read-only one
 * the server uses (qry_open), and a writable one on which the guard
 * (authorizer, one-statement and read-only checks) stands alone. After
 * every statement nothing may have changed: no rows written, no
 * transaction left open, no temp objects, the file's bytes the same. An
 * accepted statement's result must be well formed: every row as wide as
 * the columns, no more rows than the limit. And the time limit must hold:
 * a statement given 50 ms may not run for seconds (one SQL function call
 * building a huge value did, before sql_guard.c capped value sizes). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "fuzz_db.h"
#include "fuzz_util.h"
#include "query/report.h"
#include "query/sql_guard.h"
#include "store/columns.h"

#define TEMPS_COLUMNS(X) X(TEMPS_VALUE, "n")
enum { TEMPS_COLUMNS(HM_COLUMN_ENUM) TEMPS__COUNT };
static const char *const temps_names[] = {TEMPS_COLUMNS(HM_COLUMN_NAME)};

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ROWS 50
#define MAX_MS 50
#define OVERRUN_MS 2000   /* far beyond MAX_MS, even for a loaded machine and ASan */

struct fuzz_state {
    char path[128];
    sqlite3 *ro, *rw;     /* owned for the process's life */
    off_t size;
    struct timespec mtime;
    uLong crc;
    unsigned long runs;
};

static struct fuzz_state g;   /* libFuzzer's entry points carry no context */

static uLong file_crc(const char *path)
{
    unsigned char buf[65536];
    uLong crc = crc32(0, NULL, 0);
    size_t n;
    FILE *f = fopen(path, "rb");

    FUZZ_ASSERT(f != NULL);
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        crc = crc32(crc, buf, (uInt)n);
    fclose(f);
    return crc;
}

static void stamp(struct stat *st)
{
    FUZZ_ASSERT(stat(g.path, st) == 0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    struct hm_err err;
    struct stat st;

    (void)argc, (void)argv;
    fuzz_db_make(g.path, sizeof g.path);
    g.ro = qry_open(g.path, &err);
    FUZZ_ASSERT(g.ro != NULL);
    FUZZ_ASSERT(sqlite3_open_v2(g.path, &g.rw, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
    stamp(&st);
    g.size = st.st_size;
    g.mtime = st.st_mtim;
    g.crc = file_crc(g.path);
    /* The file stays until exit: unlinking it now would hide a write from
     * the checks. */
    return 0;
}

static void check_result(const cJSON *res)
{
    const cJSON *cols = cJSON_GetObjectItemCaseSensitive(res, "columns");
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(res, "rows"), *row;
    const cJSON *trunc = cJSON_GetObjectItemCaseSensitive(res, "truncated");
    int ncol = cJSON_GetArraySize(cols);
    cJSON *objs;

    FUZZ_ASSERT(cJSON_IsArray(cols) && cJSON_IsArray(rows) && cJSON_IsBool(trunc));
    FUZZ_ASSERT(cJSON_GetArraySize(rows) <= MAX_ROWS);
    cJSON_ArrayForEach(row, rows)
        FUZZ_ASSERT(cJSON_IsArray(row) && cJSON_GetArraySize(row) == ncol);
    objs = qry_sql_as_objects(res);
    FUZZ_ASSERT(objs != NULL);
    cJSON_Delete(objs);
}

static void run_on(sqlite3 *db, const char *sql)
{
    struct qry_sql_limits lim = {.max_rows = MAX_ROWS, .max_ms = MAX_MS};
    struct timespec t0, t1;
    struct hm_err err;
    cJSON *out = NULL;
    int rc;

    hm_err_clear(&err);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = qry_sql_run(db, sql, &lim, &out, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    FUZZ_ASSERT((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < OVERRUN_MS);
    FUZZ_ASSERT((rc == 0) == (out != NULL));
    FUZZ_ASSERT(rc == 0 || ((rc == HM_EINVAL || rc == HM_ESQL) && err.msg[0]));
    if (out)
        check_result(out);
    cJSON_Delete(out);
    FUZZ_ASSERT(sqlite3_get_autocommit(db));
}

/* Nothing the statement did may show: rows, transactions, temp objects, file. */
static void check_unchanged(void)
{
    struct stat st;
    sqlite3_stmt *q = NULL;

    FUZZ_ASSERT(sqlite3_total_changes(g.rw) == 0 && sqlite3_total_changes(g.ro) == 0);
    stamp(&st);
    FUZZ_ASSERT(st.st_size == g.size && st.st_mtim.tv_sec == g.mtime.tv_sec &&
                st.st_mtim.tv_nsec == g.mtime.tv_nsec);
    if (++g.runs % 256 != 0)
        return;
    FUZZ_ASSERT(file_crc(g.path) == g.crc);
    FUZZ_ASSERT(sqlite3_prepare_v2(g.rw, "SELECT count(*) AS n FROM temp.sqlite_master", -1, &q,
                                   NULL) == SQLITE_OK);
    HM_COLUMNS_CHECK(q, temps_names);
    FUZZ_ASSERT(sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, TEMPS_VALUE) == 0);
    sqlite3_finalize(q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *sql;

    if (size > 4096)
        return 0;
    sql = malloc(size + 1);
    if (!sql)
        return 0;
    memcpy(sql, data, size);
    sql[size] = '\0';
    run_on(g.ro, sql);
    run_on(g.rw, sql);
    check_unchanged();
    free(sql);
    return 0;
}
