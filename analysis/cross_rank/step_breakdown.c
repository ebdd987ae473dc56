/* Step breakdown (buckets in step_breakdown.h): one sweep per rank over
 * the boundaries of its kernels, communication, phase annotations and
 * steps; each segment between two boundaries goes to one bucket of the
 * step it lies in. */
#include "step_breakdown.h"
#include "phase_gpu.h"

#include <stdlib.h>
#include <string.h>

#include "common/record.h"
#include "hm_sql.h"

enum { S_COMP, S_COMM, S_FWD, S_BWD, S_OPT, S_STEP, S__COUNT };
enum { B_FWD, B_BWD, B_OPT, B_COMPUTE, B_COMM, B_OTHER, B__COUNT };

struct ev {
    int64_t t;
    int kind;       /* S_* */
    int delta;      /* +1 open, -1 close */
    int64_t step;   /* index into the rank's steps for S_STEP */
};

typedef HM_VEC(struct ev) ev_vec;

static int push2(ev_vec *v, int64_t a, int64_t b, int kind, int64_t step)
{
    struct ev *e;

    if (b <= a)
        return 0;
    if (!(e = HM_VEC_PUSH(*v)))
        return HM_ENOMEM;
    *e = (struct ev){a, kind, +1, step};
    if (!(e = HM_VEC_PUSH(*v)))
        return HM_ENOMEM;
    *e = (struct ev){b, kind, -1, step};
    return 0;
}

/* Closes before opens at the same time: touching intervals do not overlap. */
static int cmp_ev(const void *pa, const void *pb)
{
    const struct ev *a = pa, *b = pb;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return a->delta - b->delta;
}

static int collect(struct xr_ctx *x, const struct xr_rank *k, ev_vec *v)
{
    int has_comm_kernel = 0, rc = 0;

    for (size_t i = 0; i < k->gpu.n && rc == 0; i++) {
        const struct xr_gpu *g = &k->gpu.v[i];
        if (g->kclass == XR_COMM)
            has_comm_kernel = 1;
        if (g->kclass != XR_MEM)
            rc = push2(v, g->ts, g->end, g->kclass == XR_COMM ? S_COMM : S_COMP, 0);
    }
    for (size_t i = 0; i < x->coll.n && rc == 0 && !has_comm_kernel; i++)
        if (x->coll.v[i].rank == k->rank)
            rc = push2(v, x->coll.v[i].enter, x->coll.v[i].exit, S_COMM, 0);
    for (size_t i = 0; i < k->annots.n && rc == 0; i++) {
        unsigned f = xr_str_aflags(x, k->annots.v[i].name);
        int kind = f & XR_A_FWD ? S_FWD : f & XR_A_BWD ? S_BWD : f & XR_A_OPT ? S_OPT : -1;
        if (kind >= 0)
            rc = push2(v, k->annots.v[i].ts, k->annots.v[i].end, kind, 0);
    }
    for (size_t i = 0; i < k->steps.n && rc == 0; i++)
        rc = push2(v, k->steps.v[i].ts, k->steps.v[i].end, S_STEP, (int64_t)i);
    return rc;
}

static int bucket(const int *c)
{
    if (c[S_COMM] > 0 && c[S_COMP] == 0)
        return B_COMM;
    if (c[S_FWD] > 0)
        return B_FWD;
    if (c[S_BWD] > 0)
        return B_BWD;
    if (c[S_OPT] > 0)
        return B_OPT;
    return c[S_COMP] > 0 ? B_COMPUTE : B_OTHER;
}

static int store_rank(struct xr_ctx *x, sqlite3_stmt *st, const struct xr_rank *k,
                      int64_t (*acc)[B__COUNT], const int *annotated, int64_t (*gpu)[XR_PG__COUNT])
{
    for (size_t i = 0; i < k->steps.n; i++) {
        int rc;
        sqlite3_bind_int(st, 1, k->rank);
        sqlite3_bind_int64(st, 2, k->steps.v[i].number);
        sqlite3_bind_int64(st, 3, k->steps.v[i].end - k->steps.v[i].ts);
        for (int b = 0; b < B__COUNT; b++)
            sqlite3_bind_int64(st, 4 + b, acc[i][b]);
        sqlite3_bind_text(st, 10, annotated[i] ? "annotations" : "kernels", -1, SQLITE_STATIC);
        for (int ph = 0; ph < XR_PG__COUNT; ph++)
            sqlite3_bind_int64(st, 11 + ph, gpu[i][ph]);
        rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE)
            return -1;
    }
    (void)x;
    return 0;
}

/* Sweeps one rank and stores its steps. */
static int rank_breakdown(struct xr_ctx *x, sqlite3_stmt *st, const struct xr_rank *k,
                          struct hm_err *err)
{
    ev_vec v = {0};
    int c[S__COUNT] = {0}, rc;
    int64_t (*acc)[B__COUNT] = calloc(k->steps.n + 1, sizeof *acc), cur = -1;
    int *annotated = calloc(k->steps.n + 1, sizeof *annotated);
    int64_t (*gpu)[XR_PG__COUNT] = calloc(k->steps.n + 1, sizeof *gpu);

    if (!acc || !annotated || !gpu || collect(x, k, &v) || xr_phase_gpu(x, k, gpu)) {
        rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory in the step breakdown");
        goto out;
    }
    xr_sort(v.v, v.n, sizeof *v.v, cmp_ev);
    for (size_t i = 0; i < v.n; i++) {
        const struct ev *e = &v.v[i];
        if (cur >= 0 && i > 0 && e->t > v.v[i - 1].t) {
            acc[cur][bucket(c)] += e->t - v.v[i - 1].t;
            annotated[cur] |= c[S_FWD] > 0 || c[S_BWD] > 0 || c[S_OPT] > 0;
        }
        c[e->kind] += e->delta;
        if (e->kind == S_STEP)
            cur = e->delta > 0 ? e->step : -1;
    }
    rc = store_rank(x, st, k, acc, annotated, gpu) ? xr_sql_fail(x, err, "storing the step breakdown") : 0;
out:
    HM_VEC_FREE(v);
    free(acc);
    free(annotated);
    free(gpu);
    return rc;
}

int xr_step_breakdown(struct xr_ctx *x, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = xr_prepare(x, hm_sql_xrank_insert_step, &st, err);

    for (int r = 0; r < x->nranks && rc == 0; r++)
        if (x->ranks[r].steps.n) {
            rc = rank_breakdown(x, st, &x->ranks[r], err);
            xr_rank_touched(x, &x->ranks[r]);
        }
    sqlite3_finalize(st);
    return rc;
}
