/* Each rank's activity in time buckets (rank_activity.h). */
#include "rank_activity.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/activity_buckets.h"
#include "hm_sql.h"

static void widen(int64_t *lo, int64_t *hi, int64_t a, int64_t b)
{
    if (b <= a)
        return;
    *lo = a < *lo ? a : *lo;
    *hi = b > *hi ? b : *hi;
}

/* The span every rank's buckets cover: all that the rows drawn here hold. */
static void run_span(struct xr_ctx *x, int64_t *lo, int64_t *hi)
{
    *lo = INT64_MAX, *hi = INT64_MIN;
    for (int r = 0; r < x->nranks; r++) {
        const struct xr_rank *k = &x->ranks[r];
        for (size_t i = 0; i < k->gpu.n; i++)
            widen(lo, hi, k->gpu.v[i].ts, k->gpu.v[i].end);
        for (size_t i = 0; i < k->annots.n; i++)
            widen(lo, hi, k->annots.v[i].ts, k->annots.v[i].end);
        xr_rank_touched(x, k);
    }
    for (size_t i = 0; i < x->coll.n; i++)
        widen(lo, hi, x->coll.v[i].enter, x->coll.v[i].exit);
}

/* ProfilerStep#N, and the Python hooks' "step" ranges: they span all of a
 * step, busy or not. */
static int is_step_range(struct xr_ctx *x, int64_t name)
{
    return (xr_str_aflags(x, name) & XR_A_STEP) || (name > 0 && !strcmp(xr_str(x, name), "step"));
}

/* The rank's busy and communication intervals (see the header); cpu_comm:
 * its collectives that no kernel timed. */
static int intervals(struct xr_ctx *x, const struct xr_rank *k, const struct an_intervals *cpu_comm,
                     struct an_intervals *busy, struct an_intervals *comm)
{
    int rc = 0;

    busy->n = comm->n = 0;
    for (size_t i = 0; i < k->gpu.n && rc == 0; i++) {
        const struct xr_gpu *g = &k->gpu.v[i];
        rc = an_intervals_push(busy, g->ts, g->end);
        if (rc == 0 && g->kclass == XR_COMM)
            rc = an_intervals_push(comm, g->ts, g->end);
    }
    for (size_t i = 0; i < k->annots.n && rc == 0 && !k->gpu.n; i++)
        if (!is_step_range(x, k->annots.v[i].name))
            rc = an_intervals_push(busy, k->annots.v[i].ts, k->annots.v[i].end);
    for (size_t i = 0; i < cpu_comm->n && rc == 0; i++) {
        rc = an_intervals_push(busy, cpu_comm->v[i].a, cpu_comm->v[i].b);
        if (rc == 0)
            rc = an_intervals_push(comm, cpu_comm->v[i].a, cpu_comm->v[i].b);
    }
    return rc;
}

/* Each rank's matched collectives that no kernel timed, in one pass. */
static int cpu_collectives(const struct xr_ctx *x, struct an_intervals *by_rank)
{
    for (size_t i = 0; i < x->coll.n; i++) {
        const struct xr_coll *c = &x->coll.v[i];
        if (c->inst >= 0 && c->src != XR_SRC_GPU && c->rank >= 0 && c->rank < x->nranks &&
            an_intervals_push(&by_rank[c->rank], c->enter, c->exit))
            return -1;
    }
    return 0;
}

/* Run before an_activity_cover sorts nothing away: the intervals' longest. */
static int64_t longest(const struct an_intervals *v)
{
    int64_t m = 0;

    for (size_t i = 0; i < v->n; i++)
        m = v->v[i].b - v->v[i].a > m ? v->v[i].b - v->v[i].a : m;
    return m;
}

int xr_rank_activity(struct xr_ctx *x, struct hm_err *err)
{
    struct an_intervals busy = {0}, comm = {0};
    struct an_intervals *cpu_comm = calloc((size_t)(x->nranks > 0 ? x->nranks : 1), sizeof *cpu_comm);
    uint8_t *b = malloc(2 * AN_ACTIVITY_BUCKETS);
    sqlite3_stmt *st = NULL;
    int64_t lo, hi, w;
    int rc = b && cpu_comm && cpu_collectives(x, cpu_comm) == 0 ? 0
             : hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");

    run_span(x, &lo, &hi);
    w = an_activity_bucket_ns(lo, hi);
    if (rc == 0 && hi > lo)
        rc = xr_prepare(x, hm_sql_xrank_insert_activity, &st, err);
    for (int r = 0; r < x->nranks && rc == 0 && hi > lo; r++) {
        const struct xr_rank *k = &x->ranks[r];
        if (!k->present)
            continue;
        if (intervals(x, k, &cpu_comm[r], &busy, &comm)) {
            rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
            break;
        }
        xr_rank_touched(x, k);
        an_activity_cover(b, AN_ACTIVITY_BUCKETS, lo, w, busy.v, busy.n);
        an_activity_cover(b + AN_ACTIVITY_BUCKETS, AN_ACTIVITY_BUCKETS, lo, w, comm.v, comm.n);
        sqlite3_bind_int(st, 1, k->rank);
        sqlite3_bind_int64(st, 2, lo);
        sqlite3_bind_int64(st, 3, w);
        sqlite3_bind_int(st, 4, AN_ACTIVITY_BUCKETS);
        sqlite3_bind_blob(st, 5, b, AN_ACTIVITY_BUCKETS, SQLITE_STATIC);
        sqlite3_bind_blob(st, 6, b + AN_ACTIVITY_BUCKETS, AN_ACTIVITY_BUCKETS, SQLITE_STATIC);
        sqlite3_bind_int64(st, 7, longest(&busy));
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = xr_sql_fail(x, err, "storing rank activity");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    for (int r = 0; cpu_comm && r < x->nranks; r++)
        free(cpu_comm[r].v);
    free(cpu_comm);
    free(busy.v);
    free(comm.v);
    free(b);
    return rc;
}
