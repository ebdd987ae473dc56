/* INSERTs of many rows from a one-row query (batch_insert.h). */
#include "batch_insert.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *xr_batch_sql(const char *one_row_sql, int rows, int *cols)
{
    const char *values = strstr(one_row_sql, "VALUES"), *open, *close, *p;
    size_t cap, n;
    char *out;
    int depth = 0, max = 0;

    if (!values || rows < 1 || !(open = strchr(values, '(')))
        return NULL;
    for (close = open; *close; close++) {   /* the tuple's own closing parenthesis */
        depth += *close == '(';
        depth -= *close == ')';
        if (depth == 0)
            break;
    }
    if (!*close)
        return NULL;
    for (p = open; p < close; p++) {   /* its highest parameter; a bare ? cannot be renumbered */
        if (*p != '?')
            continue;
        if (!isdigit((unsigned char)p[1]))
            return NULL;
        int k = atoi(p + 1);
        max = k > max ? k : max;
    }
    if (max < 1 || max > XR_BATCH_MAX_COLS)
        return NULL;
    /* A row's tuple and ", ", each parameter grown to a long's digits. */
    cap = strlen(one_row_sql) + (size_t)rows * ((size_t)(close - open) + 2 + 20 * (size_t)max) + 1;
    if (!(out = malloc(cap)))
        return NULL;
    n = (size_t)(open - one_row_sql);
    memcpy(out, one_row_sql, n);
    for (int r = 0; r < rows; r++) {
        if (r)
            n += (size_t)snprintf(out + n, cap - n, ", ");
        for (p = open; p <= close;) {
            if (*p == '?') {
                char *end;
                long k = strtol(p + 1, &end, 10);
                n += (size_t)snprintf(out + n, cap - n, "?%ld", k + (long)r * max);
                p = end;
            } else {
                out[n++] = *p++;
            }
        }
    }
    snprintf(out + n, cap - n, "%s", close + 1);
    *cols = max;
    return out;
}

int xr_batch_open(struct xr_ctx *x, struct xr_batch *b, const char *one_row_sql, unsigned nullable,
                  unsigned names, struct hm_err *err)
{
    int cols = 0, rc;
    char *sql = xr_batch_sql(one_row_sql, XR_BATCH_ROWS, &cols);

    *b = (struct xr_batch){.cols = cols, .nullable = nullable, .names = names};
    if (!sql)
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "cannot batch an insert");
    b->v = malloc((size_t)XR_BATCH_ROWS * (size_t)b->cols * sizeof *b->v);
    rc = b->v ? xr_prepare(x, one_row_sql, &b->one, err)
              : hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    if (rc == 0)
        rc = xr_prepare(x, sql, &b->many, err);
    free(sql);
    return rc;
}

static void bind_row(const struct xr_ctx *x, const struct xr_batch *b, sqlite3_stmt *st, int first,
                     const int64_t *row)
{
    for (int c = 0; c < b->cols; c++) {
        if (b->names >> c & 1)
            sqlite3_bind_text(st, first + c + 1, xr_name(x, row[c]), -1, SQLITE_STATIC);
        else if (b->nullable >> c & 1)
            xr_bind_opt(st, first + c + 1, row[c]);
        else
            sqlite3_bind_int64(st, first + c + 1, row[c]);
    }
}

static int step(struct xr_ctx *x, sqlite3_stmt *st, struct hm_err *err, const char *what)
{
    int rc = sqlite3_step(st);

    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : xr_sql_fail(x, err, what);
}

int xr_batch_add(struct xr_ctx *x, struct xr_batch *b, const int64_t *row, struct hm_err *err,
                 const char *what)
{
    memcpy(b->v + (size_t)b->held * (size_t)b->cols, row, (size_t)b->cols * sizeof *row);
    if (++b->held < XR_BATCH_ROWS)
        return 0;
    for (int r = 0; r < XR_BATCH_ROWS; r++)
        bind_row(x, b, b->many, r * b->cols, b->v + (size_t)r * (size_t)b->cols);
    b->held = 0;
    return step(x, b->many, err, what);
}

int xr_batch_flush(struct xr_ctx *x, struct xr_batch *b, struct hm_err *err, const char *what)
{
    int rc = 0;

    for (int r = 0; r < b->held && rc == 0; r++) {
        bind_row(x, b, b->one, 0, b->v + (size_t)r * (size_t)b->cols);
        rc = step(x, b->one, err, what);
    }
    b->held = 0;
    return rc;
}

void xr_batch_close(struct xr_batch *b)
{
    sqlite3_finalize(b->one);
    sqlite3_finalize(b->many);
    free(b->v);
    *b = (struct xr_batch){0};
}
