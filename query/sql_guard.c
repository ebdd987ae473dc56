/* Read-only SQL: authorizer, time limit, row limit, JSON rows. */
#include "sql_guard.h"

#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/columns.h"

/* The printf() stand-in's own query: SELECT printf(?, ...) AS formatted. */
#define FORMATTED_COLUMNS(X) X(FORMATTED_VALUE, "formatted")
enum { FORMATTED_COLUMNS(HM_COLUMN_ENUM) FORMATTED__COUNT };
static const char *const formatted_names[] = {FORMATTED_COLUMNS(HM_COLUMN_NAME)};

static int authorize(void *ctx, int action, const char *a, const char *b, const char *c,
                     const char *d)
{
    (void)ctx, (void)a, (void)c, (void)d;
    switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_RECURSIVE:
        return SQLITE_OK;
    case SQLITE_FUNCTION:
        /* load_extension is also off at the connection; refuse it by name too.
         * fts3_tokenizer hands out (and with two arguments takes) a C pointer. */
        return b && (!strcmp(b, "load_extension") || !strcmp(b, "fts3_tokenizer")) ? SQLITE_DENY
                                                                                   : SQLITE_OK;
    default:
        return SQLITE_DENY;
    }
}

/* The largest string or blob a statement may build. The time limit cannot
 * stop one function call: printf('%.*c', 900000000, 'x') took 22 s and
 * 1 GB in the single-threaded server before this limit (issue 9). */
#define SQL_MAX_VALUE_BYTES (16 << 20)

struct deadline {
    struct timespec end;
};

/* printf() and format() repeat %c's character once per unit of precision,
 * one append at a time and without checking the time limit (SQLite 3.40):
 * printf('%.*c', 900000000, 'x') held the server for 10-20 s even with
 * the value size capped (found by fuzz_sql_guard's time check). So the
 * console's printf and format refuse a larger %c precision than this, and
 * hand every other call to the built-in function on a private in-memory
 * connection (the built-in cannot be reached on db once overridden). The
 * override stays on db after qry_sql_run: deleting it would not bring the
 * built-in back (SQLite then finds the deleted function and fails), and
 * its results are the built-in's. */
#define SQL_MAX_CHAR_REPEAT 100000

/* The user data of one overriding function, owned by SQLite (freed by
 * printf_guard_free when the override goes). */
struct printf_guard {
    sqlite3 *mem;   /* owned; opened at the first call, NULL before */
};

static void printf_guard_free(void *p)
{
    struct printf_guard *g = p;

    sqlite3_close(g->mem);
    sqlite3_free(g);
}

/* Reads a precision: digits, or '*' taking the next argument. */
static long long read_precision(const unsigned char **f, sqlite3_value **argv, int argc, int *next)
{
    long long v = 0;

    if (**f == '*') {
        (*f)++;
        v = *next < argc ? sqlite3_value_int64(argv[*next]) : 0;
        (*next)++;
        return v == LLONG_MIN ? LLONG_MAX : llabs(v);   /* SQLite takes |negative| */
    }
    while (isdigit(**f)) {
        v = v < LLONG_MAX / 10 - 10 ? v * 10 + (**f - '0') : LLONG_MAX;
        (*f)++;
    }
    return v;
}

/* Whether the format argv[0] asks for no %c repeated too often. */
static bool printf_args_ok(sqlite3_value **argv, int argc)
{
    const unsigned char *f = argc > 0 ? sqlite3_value_text(argv[0]) : NULL;
    int next = 1;

    for (; f && *f; f++) {
        long long prec = 0;
        if (*f != '%')
            continue;
        for (f++; *f && strchr("-+ #!0,", *f); f++)
            ;
        if (*f == '*')
            f++, next++;
        while (isdigit(*f))
            f++;
        if (*f == '.')
            f++, prec = read_precision(&f, argv, argc, &next);
        while (*f == 'l')
            f++;
        if (!*f)
            break;
        if (*f == 'c' && prec > SQL_MAX_CHAR_REPEAT)
            return false;
        next += *f != '%' && *f != 'n';   /* as SQLite: %% and %n take no argument */
    }
    return true;
}

/* The overriding printf/format: checks, then runs the built-in on g->mem. */
static void guarded_printf(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    struct printf_guard *g = sqlite3_user_data(cx);
    sqlite3_stmt *st = NULL;
    sqlite3_str *q;
    char *sql;

    if (!printf_args_ok(argv, argc)) {
        sqlite3_result_error(cx, "printf/format: a %c precision above 100000 is refused", -1);
        return;
    }
    if (!g->mem && sqlite3_open_v2(":memory:", &g->mem, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                                   NULL) == SQLITE_OK)
        sqlite3_limit(g->mem, SQLITE_LIMIT_LENGTH, sqlite3_limit(sqlite3_context_db_handle(cx),
                                                                  SQLITE_LIMIT_LENGTH, -1));
    q = sqlite3_str_new(NULL);
    sqlite3_str_appendall(q, "SELECT printf(");
    for (int i = 0; i < argc; i++)
        sqlite3_str_appendall(q, i ? ",?" : "?");
    sqlite3_str_appendall(q, ") AS formatted");
    sql = sqlite3_str_finish(q);
    if (sql && sqlite3_prepare_v2(g->mem, sql, -1, &st, NULL) == SQLITE_OK) {
        HM_COLUMNS_CHECK(st, formatted_names);
        for (int i = 0; i < argc; i++)
            sqlite3_bind_value(st, i + 1, argv[i]);
        if (sqlite3_step(st) == SQLITE_ROW)
            sqlite3_result_value(cx, sqlite3_column_value(st, FORMATTED_VALUE));
        else
            sqlite3_result_error(cx, sqlite3_errmsg(g->mem), -1);
    } else {
        sqlite3_result_error(cx, g->mem ? sqlite3_errmsg(g->mem) : "out of memory", -1);
    }
    sqlite3_finalize(st);
    sqlite3_free(sql);
}

/* Puts guarded_printf over printf and format on db, replacing the
 * override of an earlier call (which then frees its guard). Replacing
 * fails while another statement of db is running (SQLITE_BUSY): the
 * earlier override then stays, which is as good. */
static void printf_guard_set(sqlite3 *db)
{
    static const char *const names[] = {"printf", "format"};

    for (int i = 0; i < 2; i++) {
        struct printf_guard *g = sqlite3_malloc(sizeof *g);
        if (!g)
            continue;
        g->mem = NULL;
        /* On failure SQLite itself calls printf_guard_free(g). */
        sqlite3_create_function_v2(db, names[i], -1, SQLITE_UTF8, g, guarded_printf, NULL, NULL,
                                   printf_guard_free);
    }
}

static int over_time(void *ctx)
{
    struct deadline *d = ctx;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > d->end.tv_sec || (now.tv_sec == d->end.tv_sec && now.tv_nsec > d->end.tv_nsec);
}

void qry_json_add_column(sqlite3_stmt *st, int i, cJSON *parent, const char *name)
{
    cJSON *v;
    char buf[32];

    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER: {
        sqlite3_int64 x = sqlite3_column_int64(st, i);
        if (x > (1LL << 53) || x < -(1LL << 53)) {
            snprintf(buf, sizeof buf, "%" PRId64, (int64_t)x);
            v = cJSON_CreateRaw(buf);
        } else {
            v = cJSON_CreateNumber((double)x);
        }
        break;
    }
    case SQLITE_FLOAT: v = cJSON_CreateNumber(sqlite3_column_double(st, i)); break;
    case SQLITE_NULL: v = cJSON_CreateNull(); break;
    case SQLITE_BLOB: v = cJSON_CreateString("(blob)"); break;
    default: v = cJSON_CreateString((const char *)sqlite3_column_text(st, i)); break;
    }
    if (name)
        cJSON_AddItemToObject(parent, name, v);
    else
        cJSON_AddItemToArray(parent, v);
}

static int fetch(sqlite3_stmt *st, const struct qry_sql_limits *lim, cJSON *res)
{
    cJSON *cols = cJSON_AddArrayToObject(res, "columns"), *rows = cJSON_AddArrayToObject(res, "rows");
    int n = sqlite3_column_count(st), rc;
    long count = 0, bytes = 0;

    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(cols, cJSON_CreateString(sqlite3_column_name(st, i)));
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        /* Bytes too: 10 000 rows of 16 MiB values would otherwise be
         * built in memory before anything could refuse them. */
        if (count++ >= lim->max_rows || (lim->max_bytes > 0 && bytes > lim->max_bytes)) {
            cJSON_AddBoolToObject(res, "truncated", 1);
            return SQLITE_DONE;
        }
        cJSON *row = cJSON_CreateArray();
        for (int i = 0; i < n; i++) {
            qry_json_add_column(st, i, row, NULL);
            bytes += sqlite3_column_bytes(st, i) + 8;
        }
        cJSON_AddItemToArray(rows, row);
    }
    cJSON_AddBoolToObject(res, "truncated", 0);
    return rc;
}

int qry_sql_run(sqlite3 *db, const char *sql, const struct qry_sql_limits *lim, cJSON **out,
                struct hm_err *err)
{
    struct deadline dl;
    sqlite3_stmt *st = NULL;
    const char *tail = NULL;
    cJSON *res;
    int rc, old_length;

    *out = NULL;
    clock_gettime(CLOCK_MONOTONIC, &dl.end);
    dl.end.tv_sec += lim->max_ms / 1000;
    dl.end.tv_nsec += (lim->max_ms % 1000) * 1000000L;
    if (dl.end.tv_nsec >= 1000000000L) {
        dl.end.tv_sec++;
        dl.end.tv_nsec -= 1000000000L;
    }
    sqlite3_set_authorizer(db, authorize, NULL);
    sqlite3_progress_handler(db, 1000, over_time, &dl);
    old_length = sqlite3_limit(db, SQLITE_LIMIT_LENGTH, SQL_MAX_VALUE_BYTES);
    printf_guard_set(db);
    rc = sqlite3_prepare_v2(db, sql, -1, &st, &tail);
    if (rc != SQLITE_OK || !st) {
        /* The authorizer's refusal of a function comes back as SQLITE_ERROR. */
        bool denied = rc == SQLITE_AUTH || strstr(sqlite3_errmsg(db), "not authorized") != NULL;
        int code = denied || rc == SQLITE_OK ? HM_EINVAL : HM_ESQL;
        /* rc becomes the HM_E* code, as documented (not SQLite's). */
        rc = hm_err_set(err, code, NULL, -1, "%s", rc == SQLITE_OK ? "empty statement" :
                        rc == SQLITE_AUTH ? "refused: only read statements are allowed" : sqlite3_errmsg(db));
        goto out;
    }
    while (tail && (*tail == ' ' || *tail == '\n' || *tail == '\t' || *tail == '\r' || *tail == ';'))
        tail++;
    if (tail && *tail) {
        rc = hm_err_set(err, HM_EINVAL, NULL, -1, "refused: one statement at a time");
        goto out;
    }
    if (!sqlite3_stmt_readonly(st)) {
        rc = hm_err_set(err, HM_EINVAL, NULL, -1, "refused: only read statements are allowed");
        goto out;
    }
    res = cJSON_CreateObject();
    rc = fetch(st, lim, res);
    if (rc != SQLITE_DONE) {
        cJSON_Delete(res);
        rc = hm_err_set(err, HM_ESQL, NULL, -1, "%s",
                        rc == SQLITE_INTERRUPT ? "statement ran past its time limit" : sqlite3_errmsg(db));
        goto out;
    }
    *out = res;
    rc = 0;
out:
    sqlite3_finalize(st);
    sqlite3_limit(db, SQLITE_LIMIT_LENGTH, old_length);
    sqlite3_progress_handler(db, 0, NULL, NULL);
    sqlite3_set_authorizer(db, NULL, NULL);
    return rc;
}

cJSON *qry_sql_as_objects(const cJSON *res)
{
    const cJSON *cols = cJSON_GetObjectItemCaseSensitive(res, "columns");
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(res, "rows"), *row, *col;
    cJSON *doc = cJSON_CreateObject(), *out = cJSON_AddArrayToObject(doc, "rows");

    cJSON_ArrayForEach(row, rows) {
        cJSON *o = cJSON_CreateObject();
        const cJSON *v = row->child;
        cJSON_ArrayForEach(col, cols) {
            cJSON_AddItemToObject(o, col->valuestring, cJSON_Duplicate(v, 1));
            v = v ? v->next : NULL;
        }
        cJSON_AddItemToArray(out, o);
    }
    cJSON_AddItemToObject(doc, "truncated",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(res, "truncated"), 1));
    return doc;
}
