/* The ranks a per-rank report lists past QRY_RANKS_LISTED_AT ranks
 * (rank_view.h): the straggler, the --top highest and lowest by the topic's
 * figure, and, for the others, how far they are from the median
 * (doc.rank_summary) and each column's spread over every row (doc.spread).
 * What the figure is comes from the topic's row in topics.c; the steps
 * topic is summarised by step (step_summary.c). */
#include "rank_view.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

#define KEYS 3

enum pick { PICK_NONE = 0, PICK_STRAGGLER, PICK_WORST, PICK_BEST };

struct item {
    int rank;
    double key[KEYS];   /* signed so that higher is worse */
    int has[KEYS];
    enum pick pick;
    int pos;            /* the order of listing within its pick */
};

int qry_rank_rows_asked(const struct qry_report_opts *o)
{
    return o->all_ranks || o->ranks;
}

int qry_rank_straggler(sqlite3 *db, const cJSON *doc)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(doc, "straggler");
    cJSON *tmp;
    struct hm_err err;
    int r = -1;

    if (s)
        return cJSON_IsNumber(s) ? s->valueint : -1;
    if (!(tmp = cJSON_CreateObject()))
        return -1;
    hm_err_clear(&err);
    if (qry_report_verdict(db, tmp, &err) == 0 && cJSON_IsNumber(s = cJSON_GetObjectItemCaseSensitive(tmp, "straggler")))
        r = s->valueint;
    cJSON_Delete(tmp);
    return r;
}

const char *qry_fmt_count(long n, char *buf, size_t len)
{
    char digits[32];
    int nd = snprintf(digits, sizeof digits, "%ld", n < 0 ? -n : n);
    size_t at = 0;

    if (n < 0 && at + 1 < len)
        buf[at++] = '-';
    for (int i = 0; i < nd && at + 2 < len; i++) {
        buf[at++] = digits[i];
        if ((nd - i - 1) % 3 == 0 && i < nd - 1)
            buf[at++] = ',';
    }
    buf[at] = '\0';
    return buf;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double qry_median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return v[(n - 1) / 2];
}

int qry_near_median(double x, double median)
{
    return fabs(x - median) <= QRY_NEAR_MEDIAN * fabs(median);
}

/* A key of the order ("idle_pct", "-overlap_pct", "a+b+c") on one row:
 * the sum of its columns that are numbers; 0 when none is. */
static int key_value(const char *spec, const cJSON *row, double *out)
{
    char col[64];
    const char *p = spec + (*spec == '-');
    int found = 0;

    *out = 0;
    while (*p) {
        size_t n = strcspn(p, "+");
        const cJSON *v;
        snprintf(col, sizeof col, "%.*s", (int)(n < sizeof col ? n : sizeof col - 1), p);
        if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(row, col))) {
            *out += v->valuedouble;
            found = 1;
        }
        p += n + (p[n] == '+');
    }
    if (*spec == '-')
        *out = -*out;
    return found;
}

static const char *figure_name(const struct qry_rank_view *v)
{
    return v->label ? v->label : v->order[0] + (v->order[0][0] == '-');
}

static int cmp_rank(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Ranks with a value on the first key first, then by each key (worse:
 * +1 puts the worst first, -1 the best), ties by rank either way. */
static int cmp_keys(const struct item *x, const struct item *y, int worse)
{
    if (x->has[0] != y->has[0])
        return y->has[0] - x->has[0];
    for (int k = 0; k < KEYS; k++)
        if (x->has[k] && y->has[k] && x->key[k] != y->key[k])
            return (x->key[k] < y->key[k] ? 1 : -1) * worse;
    return cmp_rank(x, y);
}

static int cmp_worst(const void *a, const void *b)
{
    return cmp_keys(a, b, 1);
}

static int cmp_best(const void *a, const void *b)
{
    return cmp_keys(a, b, -1);
}

static struct item *find(struct item *it, size_t n, int rank)
{
    struct item key = {.rank = rank};
    return bsearch(&key, it, n, sizeof *it, cmp_rank);
}

static int row_rank(const cJSON *row, int *rank)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(row, "rank");
    if (!cJSON_IsNumber(r))
        return 0;
    *rank = r->valueint;
    return 1;
}

/* The distinct ranks of rows, sorted by rank, their keys summed over each
 * rank's rows; NULL when out of memory. */
static struct item *rank_items(const struct qry_rank_view *v, const cJSON *rows, size_t *n)
{
    size_t cap = (size_t)cJSON_GetArraySize(rows) + 1, m = 0;
    struct item *it = calloc(cap, sizeof *it), *x;
    const cJSON *row;
    int rank;

    if (!it)
        return NULL;
    cJSON_ArrayForEach(row, rows)
        if (row_rank(row, &rank))
            it[m++].rank = rank;
    qsort(it, m, sizeof *it, cmp_rank);
    *n = 0;
    for (size_t i = 0; i < m; i++)
        if (*n == 0 || it[*n - 1].rank != it[i].rank)
            it[(*n)++] = it[i];
    cJSON_ArrayForEach(row, rows) {
        if (!row_rank(row, &rank) || !(x = find(it, *n, rank)))
            continue;
        for (int k = 0; k < KEYS && v->order[k]; k++) {
            double val;
            if (key_value(v->order[k], row, &val)) {
                x->key[k] += val;
                x->has[k] = 1;
            }
        }
    }
    return it;
}

/* Marks the straggler and the top worst (and best) ranks, each with its
 * place in the listing; it ends sorted best first. Returns how many are
 * marked. */
static size_t pick_ranks(const struct qry_rank_view *v, struct item *it, size_t n, int top, int straggler)
{
    size_t listed = 0, k = 0;

    qsort(it, n, sizeof *it, cmp_worst);
    for (size_t i = 0; i < n && it[i].has[0] && k < (size_t)top; i++, listed++)
        it[i].pick = PICK_WORST, it[i].pos = (int)k++;
    qsort(it, n, sizeof *it, cmp_best);
    k = 0;
    for (size_t i = 0; (v->flags & QRY_RV_LOWEST) && i < n && it[i].has[0] && k < (size_t)top; i++)
        if (it[i].pick == PICK_NONE)
            it[i].pick = PICK_BEST, it[i].pos = (int)k++, listed++;
    for (size_t i = 0; i < n && straggler >= 0; i++)
        if (it[i].rank == straggler) {
            listed += it[i].pick == PICK_NONE;
            it[i].pick = PICK_STRAGGLER;
        }
    return listed;
}

/* Moves rows of rank into out, in their order. */
static void move_rows(cJSON *rows, int rank, cJSON *out)
{
    cJSON *row = rows->child, *next;
    int r;

    for (; row; row = next) {
        next = row->next;
        if (row_rank(row, &r) && r == rank)
            cJSON_AddItemToArray(out, cJSON_DetachItemViaPointer(rows, row));
    }
}

static int add_standing(cJSON *out, int from, const char *label)
{
    int i = 0;
    cJSON *row;

    cJSON_ArrayForEach(row, out)
        if (i++ >= from && !cJSON_AddStringToObject(row, "standing", label))
            return HM_ENOMEM;
    return 0;
}

/* The listed rows in order: the straggler, the worst from the worst, the
 * best from the best, each with "standing". */
static cJSON *listed_rows(const struct qry_rank_view *v, cJSON *rows, struct item *it, size_t n, int top)
{
    static const enum pick order[] = {PICK_STRAGGLER, PICK_WORST, PICK_BEST};
    const char *fig = figure_name(v);
    int low_worse = v->order[0][0] == '-', rc = 0;
    char label[3][96];
    cJSON *out = cJSON_CreateArray();

    snprintf(label[0], sizeof label[0], "straggler");
    snprintf(label[1], sizeof label[1], "%s %s", low_worse ? "lowest" : "highest", fig);
    snprintf(label[2], sizeof label[2], "%s %s", low_worse ? "highest" : "lowest", fig);
    for (int g = 0; out && rc == 0 && g < 3; g++)
        for (int pos = 0; rc == 0 && pos < (g == 0 ? 1 : top); pos++)
            for (size_t i = 0; rc == 0 && i < n; i++)
                if (it[i].pick == order[g] && (g == 0 || it[i].pos == pos)) {
                    int from = cJSON_GetArraySize(out);
                    move_rows(rows, it[i].rank, out);
                    rc = add_standing(out, from, label[g]);
                }
    if (rc || !out) {
        cJSON_Delete(out);
        return NULL;
    }
    return out;
}

/* One doc.spread row: column's median, lowest and highest over rows. */
static cJSON *spread_row(const cJSON *rows, const char *col, double *vals)
{
    double lo = 0, hi = 0;
    int lo_rank = -1, hi_rank = -1, rank;
    size_t n = 0;
    const cJSON *row, *c;
    cJSON *out;

    cJSON_ArrayForEach(row, rows) {
        if (!cJSON_IsNumber(c = cJSON_GetObjectItemCaseSensitive(row, col)) || !row_rank(row, &rank))
            continue;
        if (n == 0 || c->valuedouble < lo)
            lo = c->valuedouble, lo_rank = rank;
        if (n == 0 || c->valuedouble > hi)
            hi = c->valuedouble, hi_rank = rank;
        vals[n++] = c->valuedouble;
    }
    if (n == 0 || !(out = cJSON_CreateObject()))
        return NULL;
    cJSON_AddStringToObject(out, "column", col);
    cJSON_AddNumberToObject(out, "median", qry_median(vals, n));
    cJSON_AddNumberToObject(out, "min", lo);
    cJSON_AddNumberToObject(out, "min_rank", lo_rank);
    cJSON_AddNumberToObject(out, "max", hi);
    cJSON_AddNumberToObject(out, "max_rank", hi_rank);
    return out;
}

/* doc.spread: every numeric column of the rows but rank and stream. */
static int add_spread(cJSON *doc, const cJSON *rows)
{
    cJSON *arr = cJSON_AddArrayToObject(doc, "spread"), *r;
    double *vals = calloc((size_t)cJSON_GetArraySize(rows) + 1, sizeof *vals);
    const cJSON *col;

    if (!arr || !vals) {
        free(vals);
        return HM_ENOMEM;
    }
    for (col = rows->child ? rows->child->child : NULL; col; col = col->next)
        if (strcmp(col->string, "rank") != 0 && strcmp(col->string, "stream") != 0 &&
            (r = spread_row(rows, col->string, vals)))
            cJSON_AddItemToArray(arr, r);
    free(vals);
    return 0;
}

/* The note and the figures of the ranks not listed. */
static int add_rank_summary(cJSON *doc, const struct qry_rank_view *v, const struct item *it, size_t n, size_t listed,
                            int top, int straggler)
{
    const char *fig = figure_name(v);
    double sign = v->order[0][0] == '-' ? -1 : 1, *vals = calloc(n + 1, sizeof *vals), lo = 0, hi = 0, med;
    size_t nv = 0, rest = 0, near = 0, rest_with = 0;
    char a[32], b[32], c[32], who[48] = "", note[640];
    cJSON *s = cJSON_AddObjectToObject(doc, "rank_summary");

    if (!vals || !s) {
        free(vals);
        return HM_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        if (it[i].has[0])
            vals[nv++] = sign * it[i].key[0];
    med = qry_median(vals, nv);
    for (size_t i = 0; i < n; i++) {
        double x = sign * it[i].key[0];
        if (it[i].pick != PICK_NONE)
            continue;
        rest++;
        if (!it[i].has[0])
            continue;
        near += qry_near_median(x, med);
        lo = rest_with == 0 || x < lo ? x : lo;
        hi = rest_with++ == 0 || x > hi ? x : hi;
    }
    free(vals);
    cJSON_AddNumberToObject(s, "ranks", (double)n);
    cJSON_AddNumberToObject(s, "listed", (double)listed);
    cJSON_AddStringToObject(s, "by", fig);
    cJSON_AddStringToObject(s, "worst", sign < 0 ? "lowest" : "highest");
    cJSON_AddNumberToObject(s, "top", top);
    cJSON_AddNumberToObject(s, "median", med);
    cJSON_AddNumberToObject(s, "rest", (double)rest);
    cJSON_AddNumberToObject(s, "rest_near_median", (double)near);
    rest_with ? cJSON_AddNumberToObject(s, "rest_min", lo) : cJSON_AddNullToObject(s, "rest_min");
    rest_with ? cJSON_AddNumberToObject(s, "rest_max", hi) : cJSON_AddNullToObject(s, "rest_max");
    for (size_t i = 0; i < n; i++)
        if (it[i].rank == straggler)
            snprintf(who, sizeof who, "rank %d (the straggler), ", straggler);
    snprintf(note, sizeof note,
             "%zu of %s ranks listed: %sthe %d %s%s %s; the other %s: %s within %.0f %% of the median (%.6g), "
             "from %.6g to %.6g. --ranks LIST or --all-ranks (API: ranks=, all_ranks=1) give every row",
             listed, qry_fmt_count((long)n, a, sizeof a), who, top, sign < 0 ? "lowest" : "highest",
             (v->flags & QRY_RV_LOWEST) ? sign < 0 ? " and highest" : " and lowest" : "", fig,
             qry_fmt_count((long)rest, b, sizeof b), qry_fmt_count((long)near, c, sizeof c), 100 * QRY_NEAR_MEDIAN, med,
             lo, hi);
    return cJSON_AddStringToObject(s, "note", note) ? 0 : HM_ENOMEM;
}

int qry_rank_view_apply(sqlite3 *db, const struct qry_rank_view *v, const struct qry_report_opts *o, cJSON *doc,
                        struct hm_err *err)
{
    cJSON *rows = cJSON_GetObjectItemCaseSensitive(doc, v->array), *out;
    int top = o->top_kernels > 0 ? o->top_kernels : QRY_TOP_DEFAULT, straggler, rc = 0;
    size_t n = 0, listed;
    struct item *it;

    if (!cJSON_IsArray(rows) || qry_rank_rows_asked(o))
        return 0;
    if (!(it = rank_items(v, rows, &n)))
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    if (n <= (size_t)((v->flags & QRY_RV_PAST_TOP) ? top : QRY_RANKS_LISTED_AT)) {
        free(it);
        return 0;
    }
    straggler = qry_rank_straggler(db, doc);
    listed = pick_ranks(v, it, n, top, straggler);
    if ((v->flags & QRY_RV_SPREAD) && (rc = add_spread(doc, rows)) != 0)
        goto out;
    if ((rc = add_rank_summary(doc, v, it, n, listed, top, straggler)) != 0 || !(out = listed_rows(v, rows, it, n, top))) {
        rc = HM_ENOMEM;
        goto out;
    }
    cJSON_ReplaceItemInObjectCaseSensitive(doc, v->array, out);
out:
    free(it);
    return rc ? hm_err_set(err, rc, NULL, -1, "out of memory") : 0;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

void qry_keep_ranks(cJSON *doc, const char *key, const int *listed, size_t n)
{
    cJSON *rows = cJSON_GetObjectItemCaseSensitive(doc, key), *row, *next;

    for (row = rows ? rows->child : NULL; row; row = next) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(row, "rank");
        next = row->next;
        if (cJSON_IsNumber(r) && !bsearch(&r->valueint, listed, n, sizeof *listed, cmp_int))
            cJSON_Delete(cJSON_DetachItemViaPointer(rows, row));
    }
}

int qry_rank_view_keep_listed(cJSON *doc, const char *from, const char *const *keys, struct hm_err *err)
{
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(doc, from), *row;
    int *listed, n = 0;

    if (!cJSON_GetObjectItemCaseSensitive(doc, "rank_summary") || !cJSON_IsArray(rows))
        return 0; /* not summarised: every row stays */
    if (!(listed = malloc(((size_t)cJSON_GetArraySize(rows) + 1) * sizeof *listed)))
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    cJSON_ArrayForEach(row, rows)
        if (row_rank(row, &listed[n]))
            n++;
    qsort(listed, (size_t)n, sizeof *listed, cmp_int);
    for (; *keys; keys++)
        qry_keep_ranks(doc, *keys, listed, (size_t)n);
    free(listed);
    return 0;
}
