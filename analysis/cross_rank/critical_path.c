/* The critical path across ranks (critical_path.h): per rank, its matched
 * collectives by exit, the union of its computation kernels and its phase
 * annotations; then one backward walk per step number. */
#include "critical_path.h"
#include "phases.h"

#include <stdlib.h>
#include <string.h>

#include "hm_sql.h"

enum { SEG_WORK = 0, SEG_COMM = 1 };
static const char *const phase_name[] = {[XR_PH_FWD] = "forward", [XR_PH_BWD] = "backward",
                                         [XR_PH_OPT] = "optimizer", [XR_PH_OTHER] = "other"};

struct seg {
    int rank, kind, phase;   /* phase: SEG_WORK only */
    size_t inst;             /* SEG_COMM only */
    int64_t a, b, compute;
};

typedef HM_VEC(struct seg) seg_vec;

struct ival {
    int64_t a, b;
};

/* What the walk needs of one rank. */
struct rank_facts {
    size_t *coll;            /* borrowed from calls_by_rank's array: indexes into
                                x->coll of its matched calls, by exit */
    size_t ncoll;
    struct ival *comp;       /* union of its computation kernels, sorted, disjoint */
    size_t ncomp;
    struct xr_phases phases; /* its forward / backward / optimizer annotations */
    size_t *by_number;       /* indexes into its steps, by (number, index): each walk
                                looks a step number up on every rank, and a scan of
                                62,500 steps per lookup made the stage quadratic */
};

static const struct xr_ctx *sort_ctx;   /* for cmp_exit (qsort has no user pointer) */
static const struct xr_rank *sort_rank; /* for cmp_number */

static int cmp_exit(const void *pa, const void *pb)
{
    const struct xr_coll *a = &sort_ctx->coll.v[*(const size_t *)pa], *b = &sort_ctx->coll.v[*(const size_t *)pb];
    return a->exit < b->exit ? -1 : a->exit > b->exit;
}

static int cmp_number(const void *pa, const void *pb)
{
    size_t i = *(const size_t *)pa, j = *(const size_t *)pb;
    int64_t a = sort_rank->steps.v[i].number, b = sort_rank->steps.v[j].number;
    if (a != b)
        return a < b ? -1 : 1;
    return (i > j) - (i < j);   /* the first of equal numbers first, as a scan finds it */
}

static int on_path(const struct xr_ctx *x, const struct xr_coll *c)
{
    return c->rank >= 0 && c->rank < x->nranks && c->inst >= 0 && x->inst.v[c->inst].n >= 2 &&
           c->exit > c->enter;
}

/* The calls that can be on a path, grouped by rank in one array (owned by
 * the caller): rank r's are facts[r].coll[0 .. ncoll). One pass over the
 * calls for all ranks, so memory and time stay linear in calls and ranks. */
static size_t *calls_by_rank(struct xr_ctx *x, struct rank_facts *facts)
{
    size_t *all = malloc((x->coll.n ? x->coll.n : 1) * sizeof *all), at = 0;

    if (!all)
        return NULL;
    for (size_t i = 0; i < x->coll.n; i++)
        if (on_path(x, &x->coll.v[i]))
            facts[x->coll.v[i].rank].ncoll++;
    for (int r = 0; r < x->nranks; r++) {
        facts[r].coll = all + at;
        at += facts[r].ncoll;
        facts[r].ncoll = 0;
    }
    for (size_t i = 0; i < x->coll.n; i++)
        if (on_path(x, &x->coll.v[i])) {
            struct rank_facts *f = &facts[x->coll.v[i].rank];
            f->coll[f->ncoll++] = i;
        }
    return all;
}

static int facts_of(struct xr_ctx *x, const struct xr_rank *k, struct rank_facts *f)
{
    size_t n = 0;

    f->comp = malloc((k->gpu.n ? k->gpu.n : 1) * sizeof *f->comp);
    f->by_number = malloc((k->steps.n ? k->steps.n : 1) * sizeof *f->by_number);
    if (!f->comp || !f->by_number || xr_phases_of(x, k, &f->phases))
        return HM_ENOMEM;
    sort_ctx = x;
    xr_sort(f->coll, f->ncoll, sizeof *f->coll, cmp_exit);
    for (size_t i = 0; i < k->steps.n; i++)
        f->by_number[i] = i;
    sort_rank = k;
    xr_sort(f->by_number, k->steps.n, sizeof *f->by_number, cmp_number);
    for (size_t i = 0; i < k->gpu.n; i++) {   /* k->gpu is sorted by start */
        const struct xr_gpu *g = &k->gpu.v[i];
        if (g->kclass != XR_COMP || g->end <= g->ts)
            continue;
        if (n && g->ts <= f->comp[n - 1].b) {
            if (g->end > f->comp[n - 1].b)
                f->comp[n - 1].b = g->end;
        } else {
            f->comp[n++] = (struct ival){g->ts, g->end};
        }
    }
    f->ncomp = n;
    if (n < k->gpu.n) {   /* every rank's union is held until the walks end */
        struct ival *c = realloc(f->comp, (n ? n : 1) * sizeof *c);
        f->comp = c ? c : f->comp;
    }
    return 0;
}

static void facts_free(struct rank_facts *f)
{
    free(f->comp);
    free(f->by_number);
    xr_phases_free(&f->phases);
}

/* Computation time of the rank within [a, b). */
static int64_t compute_within(const struct rank_facts *f, int64_t a, int64_t b)
{
    size_t lo = 0, hi = f->ncomp;
    int64_t s = 0;

    while (lo < hi) {   /* first interval ending after a */
        size_t m = (lo + hi) / 2;
        if (f->comp[m].b <= a)
            lo = m + 1;
        else
            hi = m;
    }
    for (size_t i = lo; i < f->ncomp && f->comp[i].a < b; i++) {
        int64_t p = f->comp[i].a > a ? f->comp[i].a : a, q = f->comp[i].b < b ? f->comp[i].b : b;
        if (q > p)
            s += q - p;
    }
    return s;
}

static int push(seg_vec *path, struct seg s)
{
    struct seg *e = HM_VEC_PUSH(*path);
    if (!e)
        return HM_ENOMEM;
    *e = s;
    return 0;
}

/* Pushes the rank's work over [a, b), cut where its phase changes (pieces
 * of one phase in a row are one segment); latest first, as the walk goes. */
static int push_work(seg_vec *path, int rank, const struct rank_facts *f, int64_t a, int64_t b)
{
    int64_t *cuts;
    size_t n = 0, m = 0, lo = 0, hi = f->phases.n, end;
    int rc = 0;

    if (b <= a)
        return 0;
    /* max_end never falls: phases before the first whose max_end passes a
     * all ended by a. */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (f->phases.v[mid].max_end <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Phases from the first starting at b on do not cut [a, b); the cuts
     * are sized by those that may, not by all of the rank's phases, which
     * would be one allocation of the whole run's size per segment. */
    end = f->phases.n;
    for (size_t l = lo; l < end;) {
        size_t mid = (l + end) / 2;
        if (f->phases.v[mid].ts < b)
            l = mid + 1;
        else
            end = mid;
    }
    cuts = malloc((2 * (end > lo ? end - lo : 0) + 2) * sizeof *cuts);
    if (!cuts)
        return HM_ENOMEM;
    cuts[n++] = a;
    cuts[n++] = b;
    for (size_t i = lo; i < end; i++) {
        if (f->phases.v[i].ts > a)
            cuts[n++] = f->phases.v[i].ts;
        if (f->phases.v[i].end > a && f->phases.v[i].end < b)
            cuts[n++] = f->phases.v[i].end;
    }
    qsort(cuts, n, sizeof *cuts, hm_cmp_i64);
    for (size_t i = 0; i < n; i++)   /* unique */
        if (!m || cuts[i] != cuts[m - 1])
            cuts[m++] = cuts[i];
    for (size_t i = m - 1; i > 0 && rc == 0;) {
        int64_t q = cuts[i], p;
        int ph = xr_phase_at(&f->phases, cuts[i - 1]);
        while (i > 1 && xr_phase_at(&f->phases, cuts[i - 2]) == ph)
            i--;
        p = cuts[i - 1];
        i--;
        rc = push(path, (struct seg){rank, SEG_WORK, ph, 0, p, q, compute_within(f, p, q)});
    }
    free(cuts);
    return rc;
}

/* The rank's latest matched call that ended by t and entered at or after
 * lo; -1 when none. */
static long latest_call(const struct xr_ctx *x, const struct rank_facts *f, int64_t t, int64_t lo)
{
    size_t a = 0, b = f->ncoll;

    while (a < b) {   /* first call ending after t */
        size_t mid = (a + b) / 2;
        if (x->coll.v[f->coll[mid]].exit <= t)
            a = mid + 1;
        else
            b = mid;
    }
    for (size_t i = a; i > 0; i--) {
        const struct xr_coll *c = &x->coll.v[f->coll[i - 1]];
        if (c->exit < lo)
            break;
        if (c->enter >= lo)
            return (long)f->coll[i - 1];
    }
    return -1;
}

/* The rank's first step (in time) numbered `number`, else NULL. */
static const struct xr_step *step_numbered(const struct xr_rank *k, const struct rank_facts *f,
                                           int64_t number)
{
    size_t lo = 0, hi = k->steps.n;

    while (lo < hi) {
        size_t m = (lo + hi) / 2;
        if (k->steps.v[f->by_number[m]].number < number)
            lo = m + 1;
        else
            hi = m;
    }
    if (lo < k->steps.n && k->steps.v[f->by_number[lo]].number == number)
        return &k->steps.v[f->by_number[lo]];
    return NULL;
}

/* The path of step `number`, latest segment first. */
static int walk(struct xr_ctx *x, const struct rank_facts *facts, int64_t number, seg_vec *path)
{
    const struct xr_step *st = NULL;
    int rank = -1, rc = 0;
    int64_t t = INT64_MIN;
    size_t guard = 0;

    for (int r = 0; r < x->nranks; r++) {   /* the rank that ended the step last */
        const struct xr_step *s = step_numbered(&x->ranks[r], &facts[r], number);
        if (s && s->end > t) {
            t = s->end;
            rank = r;
            st = s;
        }
    }
    while (rank >= 0 && rc == 0 && guard++ <= 2 * x->coll.n + 2) {
        const struct rank_facts *f = &facts[rank];
        long ci = latest_call(x, f, t, st->ts);
        const struct xr_coll *c;
        const struct xr_inst *in;
        int next;

        if (ci < 0) {
            rc = push_work(path, rank, f, st->ts, t);
            break;
        }
        c = &x->coll.v[ci];
        in = &x->inst.v[c->inst];
        rc = push_work(path, rank, f, c->exit, t);
        if (rc == 0 && c->exit > in->last_enter)
            rc = push(path, (struct seg){rank, SEG_COMM, XR_PH_OTHER, (size_t)c->inst, in->last_enter, c->exit, 0});
        next = in->late_rank >= 0 ? in->late_rank : rank;
        if (in->last_enter >= t)
            break;   /* no progress: a clock that runs backwards */
        t = in->last_enter;
        if (next != rank && next < x->nranks) {
            const struct xr_step *s = step_numbered(&x->ranks[next], &facts[next], number);
            if (!s)
                break;
            rank = next;
            st = s;
        }
    }
    return rc;
}

static int store_step(struct xr_ctx *x, sqlite3_stmt *st, int64_t number, const seg_vec *path,
                      struct hm_err *err)
{
    for (size_t i = path->n, seq = 0; i > 0; i--, seq++) {   /* oldest first */
        const struct seg *s = &path->v[i - 1];
        sqlite3_bind_int64(st, 1, number);
        sqlite3_bind_int64(st, 2, (int64_t)seq);
        sqlite3_bind_int(st, 3, s->rank);
        sqlite3_bind_text(st, 4, s->kind == SEG_COMM ? "comm" : "work", -1, SQLITE_STATIC);
        if (s->kind == SEG_COMM) {
            const struct xr_inst *in = &x->inst.v[s->inst];
            sqlite3_bind_text(st, 5, xr_name(x, in->op), -1, SQLITE_TRANSIENT);
            if (in->pg)
                sqlite3_bind_text(st, 6, xr_name(x, in->pg), -1, SQLITE_TRANSIENT);
            else
                sqlite3_bind_null(st, 6);
            sqlite3_bind_int64(st, 10, in->id);
        } else {
            sqlite3_bind_text(st, 5, phase_name[s->phase], -1, SQLITE_STATIC);
            sqlite3_bind_null(st, 6);
            sqlite3_bind_null(st, 10);
        }
        sqlite3_bind_int64(st, 7, s->a);
        sqlite3_bind_int64(st, 8, s->b);
        sqlite3_bind_int64(st, 9, s->compute);
        if (sqlite3_step(st) != SQLITE_DONE) {
            sqlite3_reset(st);
            return xr_sql_fail(x, err, "storing the critical path");
        }
        sqlite3_reset(st);
    }
    return 0;
}

int xr_critical_path(struct xr_ctx *x, struct hm_err *err)
{
    struct rank_facts *facts = calloc(x->nranks > 0 ? (size_t)x->nranks : 1, sizeof *facts);
    size_t *calls = facts ? calls_by_rank(x, facts) : NULL;
    int64_t *numbers = NULL;
    size_t nnum = 0, cap = 0;
    seg_vec path = {0};
    sqlite3_stmt *st = NULL;
    int rc = calls ? 0 : HM_ENOMEM;

    for (int r = 0; r < x->nranks && rc == 0; r++) {
        const struct xr_rank *k = &x->ranks[r];
        rc = facts_of(x, k, &facts[r]);
        xr_rank_touched(x, k);
        for (size_t i = 0; i < k->steps.n && rc == 0; i++) {
            if (nnum == cap) {
                size_t c2 = cap ? 2 * cap : 64;
                int64_t *p = realloc(numbers, c2 * sizeof *p);
                if (!p) {
                    rc = HM_ENOMEM;
                    break;
                }
                numbers = p;
                cap = c2;
            }
            numbers[nnum++] = k->steps.v[i].number;
        }
    }
    if (rc)
        rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory in the critical path");
    if (rc == 0 && nnum)
        rc = xr_prepare(x, hm_sql_xrank_insert_path, &st, err);
    if (rc == 0)
        xr_sort(numbers, nnum, sizeof *numbers, hm_cmp_i64);
    for (size_t i = 0; i < nnum && rc == 0; i++) {
        if (i && numbers[i] == numbers[i - 1])
            continue;
        path.n = 0;
        if (walk(x, facts, numbers[i], &path))
            rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory in the critical path");
        else
            rc = store_step(x, st, numbers[i], &path, err);
    }
    sqlite3_finalize(st);
    for (int r = 0; facts && r < x->nranks; r++)
        facts_free(&facts[r]);
    free(facts);
    free(calls);
    free(numbers);
    HM_VEC_FREE(path);
    return rc;
}
