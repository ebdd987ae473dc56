/* /api/heatmap (heatmap.h).
 *
 * A cell is [a + c * col_ns, a + (c + 1) * col_ns) of a row; a row is one
 * rank, or consecutive ranks of the list averaged when there are more
 * ranks than rows. Each rank's shares come from its rank_activity buckets
 * when a column spans at least one bucket: the covered ns are the buckets'
 * integral, taken as even within a bucket. Closer zoom, and files without
 * the table, read the window's slices of the rank (heatmap_window.sql)
 * and cover the columns exactly. Either way a request reads O(ranks x
 * (buckets + cols)) or the window's rows, whatever the run's length. */
#include "heatmap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/activity_buckets.h"
#include "analysis/hta.h"
#include "base64.h"
#include "hm_sql.h"
#include "store/columns.h"

#define COUNT_COLUMNS(X) X(CT_N, "n")
#define RANK_COLUMNS(X) X(RK_RANK, "rank")
#define ACT_COLUMNS(X)                                                                             \
    X(AC_ORIGIN, "origin_ns") X(AC_BUCKET, "bucket_ns") X(AC_BUCKETS, "buckets") X(AC_BUSY, "busy") \
    X(AC_COMM, "comm") X(AC_LONGEST, "longest_ns")
#define WIN_COLUMNS(X) X(WN_KIND, "kind") X(WN_TS, "ts") X(WN_END, "end_ns") X(WN_NAME, "name")
#define STR_COLUMNS(X) X(ST_STR, "str")
enum { COUNT_COLUMNS(HM_COLUMN_ENUM) CT__COUNT };
enum { RANK_COLUMNS(HM_COLUMN_ENUM) RK__COUNT };
enum { ACT_COLUMNS(HM_COLUMN_ENUM) AC__COUNT };
enum { WIN_COLUMNS(HM_COLUMN_ENUM) WN__COUNT };
enum { STR_COLUMNS(HM_COLUMN_ENUM) ST__COUNT };
static const char *const count_names[] = {COUNT_COLUMNS(HM_COLUMN_NAME)};
static const char *const rank_names[] = {RANK_COLUMNS(HM_COLUMN_NAME)};
static const char *const act_names[] = {ACT_COLUMNS(HM_COLUMN_NAME)};
static const char *const win_names[] = {WIN_COLUMNS(HM_COLUMN_NAME)};
static const char *const str_names[] = {STR_COLUMNS(HM_COLUMN_NAME)};

enum { WIN_WORK = 0, WIN_GPU = 1, WIN_COLL = 2 };

struct heat {
    sqlite3 *db;                     /* borrowed */
    const struct qry_heat_req *q;
    int64_t a, col_ns;               /* first column's start (absolute), column width */
    sqlite3_stmt *act, *win, *str;   /* owned */
    bool has_table;
    int64_t longest_file;            /* without the table: the file's longest interval; -1 unread */
    double *busy, *comm;             /* owned, cols: one rank's covered ns per column */
    struct an_intervals ivb, ivc;    /* owned: the window path's intervals */
    int64_t bucket_ns;               /* widest bucket used, 0 none */
    int used_buckets, used_slices;   /* ranks answered each way */
    signed char *kcls;               /* owned: strings.id -> 1 communication kernel, 0 not, -1 unknown */
    size_t nkcls;
};

static int64_t one_i64(sqlite3 *db, const char *sql, int64_t dflt)
{
    sqlite3_stmt *st = NULL;
    int64_t v = dflt;

    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        HM_COLUMNS_CHECK(st, count_names);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, CT_N) != SQLITE_NULL)
            v = sqlite3_column_int64(st, CT_N);
    }
    sqlite3_finalize(st);
    return v;
}

/* The ranks to draw: the request's, or every rank of the file. */
static int load_ranks(struct heat *h, int **out, int *n, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc;

    *out = NULL, *n = 0;
    if (h->q->ranks) {
        *out = malloc((size_t)(h->q->nranks ? h->q->nranks : 1) * sizeof **out);
        if (!*out)
            return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        memcpy(*out, h->q->ranks, (size_t)h->q->nranks * sizeof **out);
        *n = h->q->nranks;
        return 0;
    }
    if (sqlite3_prepare_v2(h->db, hm_sql_heatmap_ranks, -1, &st, NULL) != SQLITE_OK)
        return hm_err_set(err, HM_ESQL, NULL, -1, "heatmap ranks: %s", sqlite3_errmsg(h->db));
    HM_COLUMNS_CHECK(st, rank_names);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (hm_vec_reserve((void **)out, &cap, (size_t)*n + 1, sizeof **out)) {
            sqlite3_finalize(st);
            return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        }
        (*out)[(*n)++] = sqlite3_column_int(st, RK_RANK);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : hm_err_set(err, HM_ESQL, NULL, -1, "heatmap ranks: %s", sqlite3_errmsg(h->db));
}

/* ns of [x0, x1) that a bucket series covers: its integral, even within a bucket. */
static double integral(const uint8_t *v, const double *prefix, int n, int64_t origin, int64_t w, int64_t x)
{
    double k;

    if (x <= origin)
        return 0;
    if (x >= origin + (int64_t)n * w)
        return prefix[n] * (double)w / 255.0;
    k = (double)((x - origin) / w);
    return (prefix[(int)k] + v[(int)k] * (double)(x - origin - (int64_t)k * w) / (double)w) * (double)w / 255.0;
}

static void from_buckets(struct heat *h, const uint8_t *v, int n, int64_t origin, int64_t w, double *cov,
                         double *prefix)
{
    prefix[0] = 0;
    for (int k = 0; k < n; k++)
        prefix[k + 1] = prefix[k] + v[k];
    for (int c = 0; c < h->q->cols; c++) {
        int64_t x0 = h->a + (int64_t)c * h->col_ns;
        cov[c] = integral(v, prefix, n, origin, w, x0 + h->col_ns) - integral(v, prefix, n, origin, w, x0);
    }
}

/* The rank's shares from its buckets; 1 when done, 0 when the window path
 * must answer (no row, or columns narrower than a bucket), -1 on error.
 * *longest: the rank's longest interval, for that path. */
static int rank_buckets(struct heat *h, int rank, int64_t *longest, struct hm_err *err)
{
    int rc = 0;

    *longest = -1;
    if (!h->has_table)
        return 0;
    sqlite3_reset(h->act);
    sqlite3_bind_int(h->act, 1, rank);
    if (sqlite3_step(h->act) == SQLITE_ROW) {
        int64_t origin = sqlite3_column_int64(h->act, AC_ORIGIN), w = sqlite3_column_int64(h->act, AC_BUCKET);
        int n = sqlite3_column_int(h->act, AC_BUCKETS);
        const uint8_t *busy = sqlite3_column_blob(h->act, AC_BUSY);
        int nb = sqlite3_column_bytes(h->act, AC_BUSY);
        const uint8_t *comm = sqlite3_column_blob(h->act, AC_COMM);
        int nc = sqlite3_column_bytes(h->act, AC_COMM);
        *longest = sqlite3_column_int64(h->act, AC_LONGEST);
        if (w > 0 && n > 0 && nb == n && nc == n && h->col_ns >= w) {
            double *prefix = malloc(((size_t)n + 1) * sizeof *prefix);
            if (!prefix) {
                rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
            } else {
                from_buckets(h, busy, n, origin, w, h->busy, prefix);
                from_buckets(h, comm, n, origin, w, h->comm, prefix);
                h->bucket_ns = w > h->bucket_ns ? w : h->bucket_ns;
                rc = 1;
            }
            free(prefix);
        }
    }
    sqlite3_reset(h->act);
    return rc;
}

/* Whether strings.id name is a communication kernel (an_kclass_of). */
static int is_comm_kernel(struct heat *h, int64_t name)
{
    if (name <= 0)
        return 0;
    if ((size_t)name >= h->nkcls) {
        size_t n = (size_t)name * 2 + 64;
        signed char *k = realloc(h->kcls, n);
        if (!k)
            return 0;
        memset(k + h->nkcls, -1, n - h->nkcls);
        h->kcls = k, h->nkcls = n;
    }
    if (h->kcls[name] < 0) {
        const unsigned char *s = NULL;
        sqlite3_reset(h->str);
        sqlite3_bind_int64(h->str, 1, name);
        if (sqlite3_step(h->str) == SQLITE_ROW)
            s = sqlite3_column_text(h->str, ST_STR);
        h->kcls[name] = (signed char)(s && an_kclass_of((const char *)s) == AN_KCLASS_COMM);
        sqlite3_reset(h->str);
    }
    return h->kcls[name];
}

/* Covered ns per column of the rank, from the window's slices. */
static int rank_window(struct heat *h, int rank, int64_t longest, struct hm_err *err)
{
    int64_t b = h->a + (int64_t)h->q->cols * h->col_ns;
    uint8_t *scratch = NULL;
    int rc;

    if (longest < 0) {
        if (h->longest_file < 0)
            h->longest_file = one_i64(h->db, hm_sql_heatmap_longest, 0);
        longest = h->longest_file;
    }
    h->ivb.n = h->ivc.n = 0;
    sqlite3_reset(h->win);
    sqlite3_bind_int(h->win, 1, rank);
    sqlite3_bind_int64(h->win, 2, h->a);
    sqlite3_bind_int64(h->win, 3, b);
    sqlite3_bind_int64(h->win, 4, longest);
    while ((rc = sqlite3_step(h->win)) == SQLITE_ROW) {
        int kind = sqlite3_column_int(h->win, WN_KIND);
        int64_t s = sqlite3_column_int64(h->win, WN_TS), e = sqlite3_column_int64(h->win, WN_END);
        int comm = kind == WIN_COLL || (kind == WIN_GPU && is_comm_kernel(h, sqlite3_column_int64(h->win, WN_NAME)));
        if (an_intervals_push(&h->ivb, s, e) || (comm && an_intervals_push(&h->ivc, s, e))) {
            sqlite3_reset(h->win);
            return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        }
    }
    sqlite3_reset(h->win);
    if (rc != SQLITE_DONE)
        return hm_err_set(err, HM_ESQL, NULL, -1, "heatmap: %s", sqlite3_errmsg(h->db));
    /* Whole columns are at most 2,048 bytes a series: cover them at the
     * columns' own width, in bytes, then back to ns. */
    scratch = malloc((size_t)h->q->cols);
    if (!scratch)
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    an_activity_cover(scratch, h->q->cols, h->a, h->col_ns, h->ivb.v, h->ivb.n);
    for (int c = 0; c < h->q->cols; c++)
        h->busy[c] = scratch[c] * (double)h->col_ns / 255.0;
    an_activity_cover(scratch, h->q->cols, h->a, h->col_ns, h->ivc.v, h->ivc.n);
    for (int c = 0; c < h->q->cols; c++)
        h->comm[c] = scratch[c] * (double)h->col_ns / 255.0;
    free(scratch);
    return 0;
}

static int prepare(struct heat *h, struct hm_err *err)
{
    h->has_table = one_i64(h->db, hm_sql_heatmap_has_activity, 0) > 0;
    if ((h->has_table && sqlite3_prepare_v2(h->db, hm_sql_heatmap_activity, -1, &h->act, NULL) != SQLITE_OK) ||
        sqlite3_prepare_v2(h->db, hm_sql_heatmap_window, -1, &h->win, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(h->db, hm_sql_heatmap_string, -1, &h->str, NULL) != SQLITE_OK)
        return hm_err_set(err, HM_ESQL, NULL, -1, "heatmap: %s", sqlite3_errmsg(h->db));
    if (h->act)
        HM_COLUMNS_CHECK(h->act, act_names);
    HM_COLUMNS_CHECK(h->win, win_names);
    HM_COLUMNS_CHECK(h->str, str_names);
    h->busy = calloc((size_t)h->q->cols, sizeof *h->busy);
    h->comm = calloc((size_t)h->q->cols, sizeof *h->comm);
    return h->busy && h->comm ? 0 : hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
}

/* Fills the cells of rows [0, nrows) from ranks[0, n). */
static int fill(struct heat *h, const int *ranks, int n, int nrows, uint8_t *cells, struct hm_err *err)
{
    int cols = h->q->cols, rc = 0;
    double *sb = malloc((size_t)cols * sizeof *sb), *sc = malloc((size_t)cols * sizeof *sc);

    if (!sb || !sc)
        rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    for (int row = 0; row < nrows && rc == 0; row++) {
        int first = (int)((int64_t)row * n / nrows), last = (int)((int64_t)(row + 1) * n / nrows);
        memset(sb, 0, (size_t)cols * sizeof *sb);
        memset(sc, 0, (size_t)cols * sizeof *sc);
        for (int i = first; i < last && rc == 0; i++) {
            int64_t longest;
            rc = rank_buckets(h, ranks[i], &longest, err);
            if (rc == 1)
                h->used_buckets++, rc = 0;
            else if (rc == 0 && (rc = rank_window(h, ranks[i], longest, err)) == 0)
                h->used_slices++;
            for (int c = 0; c < cols && rc == 0; c++)
                sb[c] += h->busy[c], sc[c] += h->comm[c];
        }
        for (int c = 0; c < cols && rc == 0; c++) {
            double d = (double)h->col_ns * (last - first);
            long busy = lround(QRY_HEAT_LEVELS * fmin(1.0, sb[c] / d));
            long comm = lround(QRY_HEAT_LEVELS * fmin(1.0, sc[c] / d));
            cells[(size_t)row * (size_t)cols + (size_t)c] = (uint8_t)(busy << 4 | (comm < busy ? comm : busy));
        }
    }
    free(sb);
    free(sc);
    return rc;
}

static void render(struct heat *h, const int *ranks, int n, int nrows, const uint8_t *cells, struct qry_buf *out)
{
    const struct qry_heat_req *q = h->q;
    const char *source = h->used_slices == 0 ? "buckets" : h->used_buckets == 0 ? "slices" : "mixed";

    qry_buf_printf(out, "{\"t0\":%lld,\"t1\":%lld,\"cols\":%d,\"col_ns\":%lld,\"resolution_ns\":%lld,"
                        "\"source\":\"%s\",\"levels\":%d,\"rows\":[",
                   (long long)q->t0, (long long)(q->t0 + (int64_t)q->cols * h->col_ns), q->cols,
                   (long long)h->col_ns, (long long)(h->used_slices || !h->bucket_ns ? h->col_ns : h->bucket_ns),
                   source, QRY_HEAT_LEVELS);
    for (int row = 0; row < nrows; row++) {
        int first = (int)((int64_t)row * n / nrows), last = (int)((int64_t)(row + 1) * n / nrows) - 1;
        qry_buf_printf(out, "%s[%d,%d]", row ? "," : "", ranks[first], ranks[last]);
    }
    qry_buf_puts(out, "],\"cells\":\"");
    qry_base64(out, cells, (size_t)nrows * (size_t)q->cols);
    qry_buf_puts(out, "\"}");
}

int qry_heatmap(sqlite3 *db, const struct qry_heat_req *q, struct qry_buf *out, struct hm_err *err)
{
    struct heat h = {.db = db, .q = q, .longest_file = -1};
    int *ranks = NULL, n = 0, nrows, rc;
    uint8_t *cells = NULL;

    h.col_ns = (q->t1 - q->t0 + q->cols - 1) / q->cols;
    h.col_ns = h.col_ns > 0 ? h.col_ns : 1;
    h.a = q->origin + q->t0;
    rc = load_ranks(&h, &ranks, &n, err);
    nrows = q->rows > 0 && q->rows < n ? q->rows : n;
    if (rc == 0)
        rc = prepare(&h, err);
    if (rc == 0 && !(cells = malloc((size_t)(nrows ? nrows : 1) * (size_t)q->cols)))
        rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    if (rc == 0)
        rc = fill(&h, ranks, n, nrows, cells, err);
    if (rc == 0) {
        render(&h, ranks, n, nrows, cells, out);
        if (out->oom)
            rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    }
    sqlite3_finalize(h.act);
    sqlite3_finalize(h.win);
    sqlite3_finalize(h.str);
    free(h.busy);
    free(h.comm);
    free(h.kcls);
    free(h.ivb.v);
    free(h.ivc.v);
    free(cells);
    free(ranks);
    return rc;
}
