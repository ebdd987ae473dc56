/* Inserts of many rows (analysis/cross_rank/batch_insert.h): the statement
 * built from a one-row query, and rows written through it land as one-row
 * inserts would put them: same values, NULLs, order and rowids, with a
 * last part shorter than a batch. */
#include "test.h"

#include <sqlite3.h>
#include <stdlib.h>

#include "common/record.h"
#include "common/strtab.h"
#include "analysis/cross_rank/batch_insert.h"

static void test_sql(void)
{
    int cols = 0;
    char *s = xr_batch_sql("-- a comment\nINSERT INTO t (a, b)\nVALUES (?1, f(?2, 3));\n", 3, &cols);

    CHECK_STR(s, "-- a comment\nINSERT INTO t (a, b)\nVALUES (?1, f(?2, 3)), (?3, f(?4, 3)), "
                 "(?5, f(?6, 3));\n");
    CHECK_EQ_INT(cols, 2);
    free(s);
    /* Parameters it cannot renumber, and no VALUES tuple. */
    CHECK(xr_batch_sql("INSERT INTO t VALUES (?, ?)", 2, &cols) == NULL);
    CHECK(xr_batch_sql("INSERT INTO t SELECT 1", 2, &cols) == NULL);
    CHECK(xr_batch_sql("INSERT INTO t VALUES (?1, ?2", 2, &cols) == NULL);
}

static void test_rows(void)
{
    struct xr_ctx x = {0};
    struct xr_batch b;
    struct hm_err err = {0};
    sqlite3_stmt *st;
    int n = 0, bad = 0;
    const int rows = 2 * XR_BATCH_ROWS + 5;

    CHECK_EQ_INT(sqlite3_open(":memory:", &x.db), SQLITE_OK);
    CHECK_EQ_INT(sqlite3_exec(x.db, "CREATE TABLE t (a INTEGER, b INTEGER, c INTEGER)", NULL, NULL, NULL),
                 SQLITE_OK);
    /* ?2 may be NULL, ?3 is never: HM_NONE there is a value. */
    CHECK_EQ_INT(xr_batch_open(&x, &b, "INSERT INTO t (a, b, c) VALUES (?1, ?2, ?3)", 1u << 1, 0, &err), 0);
    for (int i = 0; i < rows; i++) {
        int64_t row[3] = {i, i % 3 ? i * 10 : HM_NONE, HM_NONE};
        CHECK_EQ_INT(xr_batch_add(&x, &b, row, &err, "test"), 0);
    }
    CHECK_EQ_INT(xr_batch_flush(&x, &b, &err, "test"), 0);
    xr_batch_close(&b);
    CHECK_EQ_INT(sqlite3_prepare_v2(x.db, "SELECT rowid, a, b, c FROM t ORDER BY rowid", -1, &st, NULL),
                 SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t rowid = sqlite3_column_int64(st, 0), a = sqlite3_column_int64(st, 1);
        int null_b = sqlite3_column_type(st, 2) == SQLITE_NULL;
        bad += rowid != n + 1 || a != n || null_b != (n % 3 == 0) ||
               (!null_b && sqlite3_column_int64(st, 2) != n * 10) || sqlite3_column_int64(st, 3) != HM_NONE;
        n++;
    }
    sqlite3_finalize(st);
    CHECK_EQ_INT(n, rows);
    CHECK_EQ_INT(bad, 0);
    sqlite3_close(x.db);
}

/* A column holding an id of x->names is written as that name's text. */
static void test_names(void)
{
    struct xr_ctx x = {.names = hm_strtab_new()};
    struct xr_batch b;
    struct hm_err err = {0};
    sqlite3_stmt *st;
    int64_t id = (int64_t)hm_strtab_intern_cstr(x.names, "train/forward");
    int n = 0;

    CHECK_EQ_INT(sqlite3_open(":memory:", &x.db), SQLITE_OK);
    CHECK_EQ_INT(sqlite3_exec(x.db, "CREATE TABLE t (a INTEGER, p TEXT)", NULL, NULL, NULL), SQLITE_OK);
    CHECK_EQ_INT(xr_batch_open(&x, &b, "INSERT INTO t (a, p) VALUES (?1, ?2)", 0, 1u << 1, &err), 0);
    for (int i = 0; i < XR_BATCH_ROWS + 1; i++)
        CHECK_EQ_INT(xr_batch_add(&x, &b, (int64_t[]){i, id}, &err, "test"), 0);
    CHECK_EQ_INT(b.held, 1);
    CHECK_EQ_INT(xr_batch_flush(&x, &b, &err, "test"), 0);
    xr_batch_close(&b);
    CHECK_EQ_INT(sqlite3_prepare_v2(x.db, "SELECT p FROM t WHERE p = 'train/forward'", -1, &st, NULL),
                 SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW)
        n++;
    sqlite3_finalize(st);
    CHECK_EQ_INT(n, XR_BATCH_ROWS + 1);
    sqlite3_close(x.db);
    hm_strtab_free(x.names);
}

int main(void)
{
    test_sql();
    test_rows();
    test_names();
    return hm_test_done();
}
