/* `report stragglers --method hta`: HTA's get_potential_stragglers, for
 * users who compare with it. Its metric is the iteration-normalised start
 * of the last long ncclKernel* of each (rank, stream, iteration, kernel);
 * of the (stream, kernel) pairs it keeps the one whose normalised duration
 * varies most across ranks, and in every iteration it marks the ranks at or
 * above the k-th latest start. The k ranks marked most often are its
 * candidates. It always names k ranks, straggler or not, and finds nothing
 * on ncclDevKernel_* (NCCL >= 2.19) or gloo traces: both are said in the
 * evidence. Ties are broken by the lower rank (pandas leaves them to its
 * sort). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/cross_rank.h"
#include "common/vec.h"
#include "hm_sql.h"
#include "store/columns.h"

struct kernel_row {              /* the last long kernel of one group */
    int rank;
    int64_t stream, iter, ts, dur;
    char *name;
};

typedef HM_VEC(struct kernel_row) kernel_vec;

struct pair_score {              /* mean over iterations of the cross-rank std */
    int64_t stream;
    const char *name;
    double sum;
    int n;
};

static void free_rows(kernel_vec *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->v[i].name);
    HM_VEC_FREE(*v);
}

static int same_group(const struct kernel_row *a, int rank, int64_t stream, int64_t iter, const char *name)
{
    return a->rank == rank && a->stream == stream && a->iter == iter && !strcmp(a->name, name);
}

/* The columns of report_stragglers_hta_extent.sql and report_stragglers_hta.sql. */
#define EXTENT_COLUMNS(X) X(HE_ITERATION, "iteration") X(HE_T_MIN, "t_min") X(HE_T_MAX, "t_max")
#define HTA_COLUMNS(X)                                                                           \
    X(HC_RANK, "rank") X(HC_STREAM, "stream") X(HC_ITERATION, "iteration") X(HC_NAME, "name")     \
    X(HC_TS, "ts") X(HC_DUR, "dur")
enum { EXTENT_COLUMNS(HM_COLUMN_ENUM) HE__COUNT };
enum { HTA_COLUMNS(HM_COLUMN_ENUM) HC__COUNT };
static const char *const extent_names[] = {EXTENT_COLUMNS(HM_COLUMN_NAME)};
static const char *const hta_names[] = {HTA_COLUMNS(HM_COLUMN_NAME)};

/* HTA's normalisation over every file: the first start and last end of
 * the selected steps, and how many steps there are (a step on several
 * files counts once). */
struct extent {
    int64_t t_min, t_max;
    HM_VEC(int64_t) iters;   /* each file's steps, a step on several files repeated */
    size_t distinct;         /* steps, once iters is complete (count_steps) */
};

static int hta_sql_fail(sqlite3 *db, struct hm_err *err)
{
    return hm_err_set(err, HM_ESQL, sqlite3_db_filename(db, "main"), -1, "report stragglers --method hta: %s",
                      sqlite3_errmsg(db));
}

static int load_extent(sqlite3 *db, const char *steps_json, struct extent *e, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, hm_sql_report_stragglers_hta_extent, -1, &st, NULL);

    if (rc != SQLITE_OK)
        return hta_sql_fail(db, err);
    HM_COLUMNS_CHECK(st, extent_names);
    if (steps_json)
        sqlite3_bind_text(st, 1, steps_json, -1, SQLITE_TRANSIENT);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t it = sqlite3_column_int64(st, HE_ITERATION), lo = sqlite3_column_int64(st, HE_T_MIN);
        int64_t hi = sqlite3_column_int64(st, HE_T_MAX);
        if (e->iters.n == 0 || lo < e->t_min)
            e->t_min = lo;
        if (e->iters.n == 0 || hi > e->t_max)
            e->t_max = hi;
        int64_t *slot = HM_VEC_PUSH(e->iters);
        if (!slot) {
            sqlite3_finalize(st);
            return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        }
        *slot = it;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : hta_sql_fail(db, err);
}

/* e->distinct: the steps over every file, each once (sorted, not searched:
 * a file holds tens of thousands of steps). */
static void count_steps(struct extent *e)
{
    e->distinct = 0;
    if (e->iters.n)
        qsort(e->iters.v, e->iters.n, sizeof *e->iters.v, hm_cmp_i64);
    for (size_t k = 0; k < e->iters.n; k++)
        e->distinct += k == 0 || e->iters.v[k] != e->iters.v[k - 1];
}

/* Appends the file's rows, keeping the last of each group (a group's rows
 * are on one rank, so in one file). */
static int load_rows(sqlite3 *db, const char *steps_json, const struct extent *e, kernel_vec *rows,
                     struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, hm_sql_report_stragglers_hta, -1, &st, NULL);
    size_t first = rows->n;   /* the groups before are another file's */

    if (rc != SQLITE_OK)
        return hta_sql_fail(db, err);
    HM_COLUMNS_CHECK(st, hta_names);
    if (steps_json)
        sqlite3_bind_text(st, 1, steps_json, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, e->t_min);
    sqlite3_bind_int64(st, 3, e->t_max);
    sqlite3_bind_int64(st, 4, (int64_t)e->distinct);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int rank = sqlite3_column_int(st, HC_RANK);
        int64_t stream = sqlite3_column_int64(st, HC_STREAM), iter = sqlite3_column_int64(st, HC_ITERATION);
        const char *name = (const char *)sqlite3_column_text(st, HC_NAME);
        struct kernel_row *last = rows->n > first ? &rows->v[rows->n - 1] : NULL;

        if (!last || !same_group(last, rank, stream, iter, name)) {
            if (!(last = HM_VEC_PUSH(*rows)) || !(last->name = strdup(name))) {
                sqlite3_finalize(st);
                return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
            }
            last->rank = rank, last->stream = stream, last->iter = iter;
        }
        last->ts = sqlite3_column_int64(st, HC_TS);
        last->dur = sqlite3_column_int64(st, HC_DUR);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : hta_sql_fail(db, err);
}

/* The query's order (rank, stream, iteration, name), whatever the order of
 * the files. */
static int cmp_row(const void *pa, const void *pb)
{
    const struct kernel_row *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->stream != b->stream)
        return a->stream < b->stream ? -1 : 1;
    if (a->iter != b->iter)
        return a->iter < b->iter ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* Reads every file, one open at a time: first the extent over all of them,
 * then each file's rows. */
static int load_files(const struct xr_hta_files *f, const char *steps_json, kernel_vec *rows, int64_t *t_min,
                      double *mean_iter, struct hm_err *err)
{
    struct extent e = {0};
    int rc = 0;

    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        if (pass == 1)
            count_steps(&e);
        for (int i = 0; i < f->n && rc == 0; i++) {
            sqlite3 *db = f->open(f->ctx, i, err);
            if (!db)
                rc = err->code ? err->code : HM_EIO;
            else
                rc = pass == 0 ? load_extent(db, steps_json, &e, err) : load_rows(db, steps_json, &e, rows, err);
            if (db && f->done)
                f->done(f->ctx, db);
        }
    }
    if (rows->n > 1)
        qsort(rows->v, rows->n, sizeof *rows->v, cmp_row);
    *t_min = e.t_min;
    *mean_iter = e.distinct ? (double)(e.t_max - e.t_min) / (double)e.distinct : 0;
    HM_VEC_FREE(e.iters);
    return rc;
}

/* Sample standard deviation (pandas' default), NaN below two values. */
static double sample_std(const double *x, int n)
{
    double mean = 0, ss = 0;
    if (n < 2)
        return NAN;
    for (int i = 0; i < n; i++)
        mean += x[i];
    mean /= n;
    for (int i = 0; i < n; i++)
        ss += (x[i] - mean) * (x[i] - mean);
    return sqrt(ss / (n - 1));
}

static int cmp_pair(const struct pair_score *p, int64_t stream, const char *name)
{
    if (p->stream != stream)
        return p->stream < stream ? -1 : 1;
    return strcmp(p->name, name);
}

/* The (stream, kernel) whose normalised duration varies most across ranks;
 * -1 when no pair has two ranks in any iteration. */
static int pick_pair(const kernel_vec *rows, double mean_iter, int64_t *stream, const char **name)
{
    HM_VEC(struct pair_score) pairs = {0};
    double *vals = malloc((rows->n + 1) * sizeof *vals), best = -1;
    int found = -1;

    for (size_t i = 0; vals && i < rows->n; i++) {
        const struct kernel_row *r = &rows->v[i];
        int n = 0, seen = 0;
        double sd;
        for (size_t j = 0; j < rows->n; j++) {   /* this (stream, iter, name) on every rank */
            const struct kernel_row *q = &rows->v[j];
            if (q->stream == r->stream && q->iter == r->iter && !strcmp(q->name, r->name)) {
                if (j < i) {
                    seen = 1;   /* counted with its first member */
                    break;
                }
                vals[n++] = (double)q->dur / mean_iter;
            }
        }
        if (seen || isnan(sd = sample_std(vals, n)))
            continue;
        size_t k = 0;
        while (k < pairs.n && cmp_pair(&pairs.v[k], r->stream, r->name) != 0)
            k++;
        if (k == pairs.n) {
            struct pair_score *p = HM_VEC_PUSH(pairs);
            if (!p)
                break;
            p->stream = r->stream, p->name = r->name;
        }
        pairs.v[k].sum += sd;
        pairs.v[k].n++;
    }
    for (size_t k = 0; k < pairs.n; k++) {   /* pandas' idxmax: the first maximum in key order */
        double m = pairs.v[k].sum / pairs.v[k].n;
        if (found < 0 || m > best || (m == best && cmp_pair(&pairs.v[k], *stream, *name) < 0)) {
            best = m;
            *stream = pairs.v[k].stream;
            *name = pairs.v[k].name;
            found = 0;
        }
    }
    free(vals);
    HM_VEC_FREE(pairs);
    return found;
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

struct rank_count {
    int rank, count;
};

static int cmp_count(const void *pa, const void *pb)
{
    const struct rank_count *a = pa, *b = pb;
    if (a->count != b->count)
        return b->count - a->count;
    return a->rank - b->rank;
}

static int add_count(struct rank_count *c, int *nc, int rank, int marked)
{
    for (int i = 0; i < *nc; i++)
        if (c[i].rank == rank) {
            c[i].count += marked;
            return 0;
        }
    c[*nc].rank = rank;
    c[(*nc)++].count = marked;
    return 0;
}

/* Marks, in each iteration, the ranks at or above the k-th latest start. */
static int count_marks(const kernel_vec *rows, int64_t stream, const char *name, double mean_iter, int64_t t_min,
                       int k, struct rank_count *counts, int *ncounts, int *iters)
{
    size_t n = rows->n;
    double *m = malloc((n + 1) * sizeof *m);

    if (!m)
        return -1;
    *ncounts = *iters = 0;
    for (size_t i = 0; i < n; i++) {
        const struct kernel_row *r = &rows->v[i];
        int nm = 0, first = 1;
        if (r->stream != stream || strcmp(r->name, name))
            continue;
        for (size_t j = 0; j < n; j++) {
            const struct kernel_row *q = &rows->v[j];
            if (q->stream == stream && q->iter == r->iter && !strcmp(q->name, name)) {
                if (j < i)
                    first = 0;
                m[nm++] = (double)(q->ts - t_min) / mean_iter;
            }
        }
        if (!first)
            continue;
        (*iters)++;
        qsort(m, (size_t)nm, sizeof *m, cmp_desc);
        double threshold = m[(nm < k ? nm : k) - 1];
        for (size_t j = 0; j < n; j++) {
            const struct kernel_row *q = &rows->v[j];
            if (q->stream == stream && q->iter == r->iter && !strcmp(q->name, name))
                add_count(counts, ncounts, q->rank, (double)(q->ts - t_min) / mean_iter >= threshold);
        }
    }
    free(m);
    qsort(counts, (size_t)*ncounts, sizeof *counts, cmp_count);
    return 0;
}

static char *steps_to_json(const struct xr_hta_opts *o)
{
    size_t cap = 16 + (size_t)o->nsteps * 24, n = 0;
    char *s = o->steps ? malloc(cap) : NULL;

    if (!s)
        return NULL;
    n += (size_t)snprintf(s + n, cap - n, "[");
    for (int i = 0; i < o->nsteps; i++)
        n += (size_t)snprintf(s + n, cap - n, "%s%lld", i ? "," : "", (long long)o->steps[i]);
    snprintf(s + n, cap - n, "]");
    return s;
}

static sqlite3 *one_file(void *ctx, int i, struct hm_err *err)
{
    (void)i, (void)err;
    return ctx;
}

int xr_stragglers_hta(sqlite3 *db, const struct xr_hta_opts *o, cJSON *doc, struct hm_err *err)
{
    const struct xr_hta_files one = {1, one_file, NULL, db};
    return xr_stragglers_hta_files(&one, o, doc, err);
}

int xr_stragglers_hta_files(const struct xr_hta_files *f, const struct xr_hta_opts *o, cJSON *doc,
                            struct hm_err *err)
{
    kernel_vec rows = {0};
    int64_t t_min = 0, stream = 0;
    double mean_iter = 0;
    const char *name = NULL;
    char *steps = steps_to_json(o), evidence[512];
    int k = o->candidates > 0 ? o->candidates : 2, ncounts = 0, iters = 0, rc;
    struct rank_count *counts = NULL;
    cJSON *cand, *ranks;

    if (o->steps && !steps)
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    rc = load_files(f, steps, &rows, &t_min, &mean_iter, err);
    free(steps);
    if (rc)
        goto out;
    cJSON_AddStringToObject(doc, "method", "hta");
    cand = cJSON_AddArrayToObject(doc, "candidates");
    ranks = cJSON_AddArrayToObject(doc, "ranks");
    if (rows.n == 0 || pick_pair(&rows, mean_iter, &stream, &name) != 0) {
        cJSON_AddNullToObject(doc, "kernel");
        cJSON_AddStringToObject(doc, "evidence",
                                rows.n ? "HTA's method needs a long ncclKernel* on two or more ranks in one "
                                         "iteration; there is none"
                                       : "HTA's method finds no long ncclKernel* in a ProfilerStep > 0 (NCCL >= "
                                         "2.19 names its kernels ncclDevKernel_*, gloo has none): HTA raises an "
                                         "error here; the default method does not need them");
        goto out;
    }
    counts = calloc(rows.n + 1, sizeof *counts);
    if (!counts || count_marks(&rows, stream, name, mean_iter, t_min, k, counts, &ncounts, &iters)) {
        rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        goto out;
    }
    cJSON_AddStringToObject(doc, "kernel", name);
    cJSON_AddNumberToObject(doc, "stream", (double)stream);
    cJSON_AddNumberToObject(doc, "iterations", iters);
    for (int i = 0; i < ncounts; i++) {
        cJSON *row = cJSON_CreateObject();
        cJSON_AddNumberToObject(row, "rank", counts[i].rank);
        cJSON_AddNumberToObject(row, "late_start_count", counts[i].count);
        cJSON_AddItemToArray(ranks, row);
        if (i < k)
            cJSON_AddItemToArray(cand, cJSON_CreateNumber(counts[i].rank));
    }
    snprintf(evidence, sizeof evidence,
             "HTA's get_potential_stragglers: of %d ranks, the %d that most often started the last long %.120s "
             "on stream %lld among the %d latest, over %d iteration%s (it always names %d)",
             ncounts, ncounts < k ? ncounts : k, name, (long long)stream, k, iters, iters == 1 ? "" : "s", k);
    cJSON_AddStringToObject(doc, "evidence", evidence);
out:
    free(counts);
    free_rows(&rows);
    return rc;
}
