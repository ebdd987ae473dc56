/* Clock refinement and the clock condition (API and method in
 * clock_refine.h). Times in ns; fits run on doubles of times relative to a
 * rank's first sample, never on epoch-sized doubles. */
#include "clock_refine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/record.h"
#include "hm_sql.h"
#include "store/columns.h"
#include "match.h"
#include "overlap.h"

#define MAX_FIT_POINTS 1500          /* Theil-Sen pairs grow as n^2: subsample beyond */
#define MIN_SLOPE_SPAN_NS 50e6       /* under 50 ms of samples a slope says nothing */
#define MAX_DRIFT_PPM 2000.0         /* beyond this a slope is not a clock */
#define FLOOR_UNCERTAINTY_NS 1000    /* trace timestamps are often whole us */
#define CLC_AMORTISE 0.01            /* a repair shift decays by 1% of elapsed time */

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* Median of v[0..n) (reorders v). */
static double median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    xr_sort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Theil-Sen slope over at most MAX_FIT_POINTS evenly picked points. */
static int theil_sen(const double *xs, const double *ys, size_t n, double *slope)
{
    size_t step = n > MAX_FIT_POINTS ? (n + MAX_FIT_POINTS - 1) / MAX_FIT_POINTS : 1, m = 0;
    size_t k = (n + step - 1) / step;
    double *s = malloc((k * (k - 1) / 2 + 1) * sizeof *s);

    if (!s)
        return HM_ENOMEM;
    for (size_t i = 0; i < n; i += step)
        for (size_t j = i + step; j < n; j += step)
            if (xs[j] != xs[i])
                s[m++] = (ys[j] - ys[i]) / (xs[j] - xs[i]);
    *slope = median(s, m);
    free(s);
    return 0;
}

/* Offset (median of y - slope x) and sigma of the residuals around it. */
static int center(const double *xs, const double *ys, size_t n, double slope, double *offset,
                  double *sigma)
{
    double *r = malloc((n ? n : 1) * sizeof *r);

    if (!r)
        return HM_ENOMEM;
    for (size_t i = 0; i < n; i++)
        r[i] = ys[i] - slope * xs[i];
    *offset = median(r, n);
    for (size_t i = 0; i < n; i++)
        r[i] = fabs(ys[i] - slope * xs[i] - *offset);
    *sigma = 1.4826 * median(r, n);
    free(r);
    return 0;
}

int xr_robust_fit(const double *xs, const double *ys, size_t n, double *slope, double *offset,
                  double *sigma)
{
    double lo = INFINITY, hi = -INFINITY, mean = 0, var = 0, se;

    *slope = 0;
    for (size_t i = 0; i < n; i++) {
        lo = fmin(lo, xs[i]);
        hi = fmax(hi, xs[i]);
        mean += xs[i] / (double)n;
    }
    for (size_t i = 0; i < n; i++)
        var += (xs[i] - mean) * (xs[i] - mean) / (double)n;
    if (n >= 6 && hi - lo >= MIN_SLOPE_SPAN_NS && theil_sen(xs, ys, n, slope))
        return HM_ENOMEM;
    if (center(xs, ys, n, *slope, offset, sigma))
        return HM_ENOMEM;
    /* Keep the slope only when it stands out of the scatter. */
    se = *sigma / (sqrt(var) * sqrt((double)n) + 1e-300);
    if (*slope != 0 && (fabs(*slope) < 3 * se || fabs(*slope) * 1e6 > MAX_DRIFT_PPM)) {
        *slope = 0;
        return center(xs, ys, n, 0, offset, sigma);
    }
    return 0;
}

int xr_op_is_nxn(const char *op)
{
    static const char *const rooted[] = {"broadcast", "reduce", "scatter", "gather", NULL};
    for (int i = 0; rooted[i]; i++)
        if (!strcmp(op, rooted[i]))
            return 0;
    return !xr_op_is_p2p(op);
}

/* The member of instance in on rank r, or NULL. */
static struct xr_coll *member_of(struct xr_ctx *x, const struct xr_inst *in, int r)
{
    for (size_t k = in->first; k < in->first + in->n; k++) {
        struct xr_coll *m = &x->coll.v[x->members.v[k]];
        if (m->rank == r)
            return m;
    }
    return NULL;
}

/* Samples (exit, reference exit - exit) of rank r against the lowest
 * rank of each instance marked in `fitted`. */
struct samples {
    double *xs, *ys;
    size_t n;
    int64_t x0;
    int ref;
};

/* The member of in that r's exit is compared with: the first other rank
 * already fitted; NULL if none. */
static struct xr_coll *partner(struct xr_ctx *x, const struct xr_inst *in, int r,
                               const int *fitted)
{
    for (size_t k = in->first; k < in->first + in->n; k++) {
        struct xr_coll *m = &x->coll.v[x->members.v[k]];
        if (m->rank != r && fitted[m->rank])
            return m;
    }
    return NULL;
}

static int gather(struct xr_ctx *x, int r, const int *fitted, struct samples *s)
{
    int64_t *e = malloc((x->inst.n + 1) * sizeof *e);

    *s = (struct samples){.ref = -1, .x0 = INT64_MAX};
    s->xs = malloc((x->inst.n + 1) * sizeof *s->xs);
    s->ys = malloc((x->inst.n + 1) * sizeof *s->ys);
    if (!e || !s->xs || !s->ys) {
        free(e);
        return HM_ENOMEM;
    }
    for (size_t i = 0; i < x->inst.n; i++) {
        const struct xr_inst *in = &x->inst.v[i];
        struct xr_coll *me, *q;
        if (in->n < 2 || !xr_op_is_nxn(xr_name(x, in->op)) || !(me = member_of(x, in, r)) ||
            !(q = partner(x, in, r, fitted)))
            continue;
        if (s->ref < 0)
            s->ref = q->rank;
        if (me->exit < s->x0)
            s->x0 = me->exit;
        e[s->n] = me->exit;
        s->ys[s->n++] = (double)(q->exit - me->exit);
    }
    for (size_t i = 0; i < s->n; i++)
        s->xs[i] = (double)(e[i] - s->x0);
    free(e);
    return 0;
}

struct lin {
    int64_t ref;
    double offset, slope;
};

/* Correction of the fit at aligned time t. */
static int64_t lin_at(void *ctx, int64_t t)
{
    const struct lin *l = ctx;
    return (int64_t)llround(l->offset + l->slope * (double)(t - l->ref));
}

/* Moves every in-memory time of rank r by the correction. */
static void shift_rank(struct xr_ctx *x, int r, struct lin *l)
{
    struct xr_rank *k = &x->ranks[r];

    for (size_t i = 0; i < x->coll.n; i++)
        if (x->coll.v[i].rank == r) {
            x->coll.v[i].enter += lin_at(l, x->coll.v[i].enter);
            x->coll.v[i].exit += lin_at(l, x->coll.v[i].exit);
        }
    for (size_t i = 0; i < k->gpu.n; i++) {
        k->gpu.v[i].ts += lin_at(l, k->gpu.v[i].ts);
        k->gpu.v[i].end += lin_at(l, k->gpu.v[i].end);
    }
    for (size_t i = 0; i < k->launches.n; i++)
        k->launches.v[i].ts += lin_at(l, k->launches.v[i].ts);
    for (size_t i = 0; i < k->annots.n; i++) {
        k->annots.v[i].ts += lin_at(l, k->annots.v[i].ts);
        k->annots.v[i].end += lin_at(l, k->annots.v[i].end);
    }
    for (size_t i = 0; i < k->steps.n; i++) {
        k->steps.v[i].ts += lin_at(l, k->steps.v[i].ts);
        k->steps.v[i].end += lin_at(l, k->steps.v[i].end);
    }
    xr_rank_touched(x, k);
}

/* The columns of the three small ranks queries below. */
#define BASE_COLUMNS(X) X(BC_BASE, "base_time_ns")
enum { BASE_COLUMNS(HM_COLUMN_ENUM) BC__COUNT };
static const char *const base_names[] = {BASE_COLUMNS(HM_COLUMN_NAME)};
#define METHOD_COLUMNS(X) X(MC_METHOD, "clock_method")
enum { METHOD_COLUMNS(HM_COLUMN_ENUM) MC__COUNT };
static const char *const method_names[] = {METHOD_COLUMNS(HM_COLUMN_NAME)};
#define UNC_COLUMNS(X) X(UC_RANK, "rank") X(UC_UNCERTAINTY, "clock_uncertainty_ns")
enum { UNC_COLUMNS(HM_COLUMN_ENUM) UC__COUNT };
static const char *const unc_names[] = {UNC_COLUMNS(HM_COLUMN_NAME)};

static int64_t rank_base(struct xr_ctx *x, int r)
{
    sqlite3_stmt *st = NULL;
    int64_t b = 0;

    if (sqlite3_prepare_v2(x->db, "SELECT base_time_ns FROM ranks WHERE rank = ?1", -1, &st, NULL) ==
        SQLITE_OK) {
        HM_COLUMNS_CHECK(st, base_names);
        sqlite3_bind_int(st, 1, r);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, BC_BASE) != SQLITE_NULL)
            b = sqlite3_column_int64(st, BC_BASE);
    }
    sqlite3_finalize(st);
    return b;
}

/* Applies a significant fit: records the model and moves rank r's
 * in-memory times; the data is re-timed for all ranks at once at the end. */
static int apply_fit(struct xr_ctx *x, struct mrg_writer *w, int r, const struct lin *l,
                     struct lin *fits, struct hm_err *err)
{
    struct xr_clock *c = &x->clock[r];
    int rc = mrg_writer_update_clock(w, r, lin_at((void *)l, l->ref), l->slope * 1e6,
                                     l->ref - rank_base(x, r), "collectives", c->uncertainty_ns,
                                     err);

    if (rc == 0) {
        fits[r] = *l;
        shift_rank(x, r, &fits[r]);
        c->applied = 1;
    }
    return rc;
}

/* A fit too small to apply still bounds the rank's error: its clock keeps
 * its method (base_time or none) with that bound as uncertainty. */
static int keep_clock(struct xr_ctx *x, struct mrg_writer *w, int r, int64_t bound,
                      struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    char method[16] = "none";
    int rc;

    if (sqlite3_prepare_v2(x->db, "SELECT clock_method FROM ranks WHERE rank = ?1", -1, &st, NULL) ==
        SQLITE_OK) {
        HM_COLUMNS_CHECK(st, method_names);
        sqlite3_bind_int(st, 1, r);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, MC_METHOD))
            snprintf(method, sizeof method, "%s", (const char *)sqlite3_column_text(st, MC_METHOD));
    }
    sqlite3_finalize(st);
    rc = mrg_writer_update_clock(w, r, 0, 0, 0, method, bound, err);
    return rc;
}

/* Error bound of a fit's correction from n samples of scatter sigma. */
static int64_t fit_uncertainty(double sigma, size_t n)
{
    int64_t u = (int64_t)ceil(3 * sigma / sqrt((double)n));
    return u < FLOOR_UNCERTAINTY_NS ? FLOOR_UNCERTAINTY_NS : u;
}

int xr_clock_guess(const double *xs, const double *ys, size_t n, int64_t *shift)
{
    double slope, offset, sigma;
    int64_t c;

    *shift = 0;
    if (n < XR_CLOCK_MIN_SAMPLES)
        return 0;
    if (xr_robust_fit(xs, ys, n, &slope, &offset, &sigma))
        return HM_ENOMEM;
    c = (int64_t)llround(offset);
    if (slope == 0 && llabs(c) > fit_uncertainty(sigma, n))
        *shift = c;
    return 0;
}

/* Fits rank r from s; applies the fit when it is significant (offline). */
static int fit_rank(struct xr_ctx *x, struct mrg_writer *w, int r, struct samples *s,
                    struct lin *fits, struct hm_err *err)
{
    struct xr_clock *c = &x->clock[r];
    struct lin l = {s->x0, 0, 0};
    double sigma, *tmp = malloc(s->n * sizeof *tmp);
    int64_t worst;

    if (!tmp || xr_robust_fit(s->xs, s->ys, s->n, &l.slope, &l.offset, &sigma)) {
        free(tmp);
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    }
    memcpy(tmp, s->ys, s->n * sizeof *tmp);
    c->fitted = 1;
    c->samples = (int64_t)s->n;
    c->ref_ns = s->x0;
    c->offset_ns = (int64_t)llround(l.offset);
    c->drift_ppm = l.slope * 1e6;
    c->before_ns = (int64_t)llround(median(tmp, s->n));
    c->resid_ns = (int64_t)llround(sigma);
    c->uncertainty_ns = fit_uncertainty(sigma, s->n);
    free(tmp);
    worst = llabs(lin_at(&l, s->x0));
    if (llabs(lin_at(&l, s->x0 + (int64_t)s->xs[s->n - 1])) > worst)
        worst = llabs(lin_at(&l, s->x0 + (int64_t)s->xs[s->n - 1]));
    if (x->live)
        return 0;
    if (x->no_refine || worst <= c->uncertainty_ns)
        return keep_clock(x, w, r, llabs(c->before_ns) + c->uncertainty_ns, err);
    return apply_fit(x, w, r, &l, fits, err);
}

/* Median and scatter of the samples after the fit (clock_checks). */
static int recheck(struct xr_ctx *x, int r, const int *fitted)
{
    struct samples s;
    double sl, off, sigma;
    int rc = gather(x, r, fitted, &s);

    if (rc == 0 && s.n && (rc = xr_robust_fit(s.xs, s.ys, s.n, &sl, &off, &sigma)) == 0) {
        x->clock[r].resid_ns = (int64_t)llround(sigma);
        x->clock[r].after_ns = (int64_t)llround(median(s.ys, s.n));
    }
    free(s.xs);
    free(s.ys);
    return rc;
}

/* The reference: the lowest rank that has a logical collective. */
static int reference_rank(struct xr_ctx *x)
{
    int ref = -1;
    for (size_t i = 0; i < x->coll.n; i++)
        if (ref < 0 || x->coll.v[i].rank < ref)
            ref = x->coll.v[i].rank;
    return ref;
}

/* No correction: takes a guessed shift back out. */
static int64_t zero_at(void *ctx, int64_t t)
{
    (void)ctx;
    (void)t;
    return 0;
}

/* Re-times, in one pass, the data of every rank whose rows are not yet at
 * their final times: rows carry the writer's guessed shift (0 when none)
 * and must end at the applied fit's times, or unmoved when none was
 * applied. A guess equal to a fit without drift leaves the rank alone. */
static int retime(struct xr_ctx *x, struct mrg_writer *w, struct lin *fits, struct hm_err *err)
{
    struct mrg_realign_rank *ra = calloc((size_t)x->nranks + 1, sizeof *ra);
    struct mrg_lin_model *models = calloc((size_t)x->nranks + 1, sizeof *models);
    int any = 0, rc;

    if (!ra || !models) {
        free(ra);
        free(models);
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    }
    for (int r = 0; r < x->nranks; r++) {
        int64_t shift = mrg_writer_time_shift(w, r);
        if (x->clock[r].applied) {
            if (fits[r].slope == 0 && lin_at(&fits[r], fits[r].ref) == shift)
                continue;
            models[r] = (struct mrg_lin_model){fits[r].offset, fits[r].slope, fits[r].ref};
            ra[r] = (struct mrg_realign_rank){shift, lin_at, &fits[r], NULL, &models[r]};
            any = 1;
        } else if (shift != 0) {
            ra[r] = (struct mrg_realign_rank){shift, zero_at, NULL, NULL, &models[r]};   /* zeros */
            any = 1;
        }
    }
    rc = any ? xr_overlap_join(x, err) : 0;   /* the index holds the writer's connection */
    if (rc == 0 && any)
        rc = mrg_writer_realign_all(w, ra, x->nranks, err);
    free(ra);
    free(models);
    return rc;
}

int xr_clock_refine(struct xr_ctx *x, struct mrg_writer *w, struct hm_err *err)
{
    int ref = reference_rank(x), progress = 1, rc = 0;
    int *fitted = calloc((size_t)x->nranks + 1, sizeof *fitted);
    struct lin *fits = calloc((size_t)x->nranks + 1, sizeof *fits);
    struct samples s = {0};

    if (!fitted || !fits) {
        free(fitted);
        free(fits);
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    }
    if (ref >= 0 && ref < x->nranks)
        fitted[ref] = 1;
    while (ref >= 0 && progress && rc == 0) {
        progress = 0;
        for (int r = 0; r < x->nranks && rc == 0; r++) {
            if (fitted[r])
                continue;
            if (gather(x, r, fitted, &s))
                rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
            else if (s.n >= XR_CLOCK_MIN_SAMPLES) {
                x->clock[r].reference = s.ref;
                rc = fit_rank(x, w, r, &s, fits, err);
                if (rc == 0 && recheck(x, r, fitted))
                    rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
                fitted[r] = progress = 1;
            }
            free(s.xs);
            free(s.ys);
            s = (struct samples){0};
        }
    }
    if (rc == 0)
        rc = retime(x, w, fits, err);
    free(fitted);
    free(fits);
    xr_match_summarise(x);
    return rc;
}

/* --- Clock condition -------------------------------------------------------- */

struct clc {
    int64_t shift;   /* correction at `at` */
    int64_t at;      /* aligned time of the last jump */
};

/* The rank's repair correction at t: the last jump, amortised. */
static int64_t clc_at(const struct clc *c, int64_t t)
{
    int64_t d;

    if (c->shift <= 0 || t <= c->at)
        return c->shift > 0 ? c->shift : 0;
    d = c->shift - (int64_t)(CLC_AMORTISE * (double)(t - c->at));
    return d > 0 ? d : 0;
}

static const struct xr_inst *order_base;

static int cmp_last_enter(const void *pa, const void *pb)
{
    int64_t a = order_base[*(const size_t *)pa].last_enter, b = order_base[*(const size_t *)pb].last_enter;
    return (a > b) - (a < b);
}

/* Repairs one instance's members with the ranks' running corrections.
 * unc[r]: rank r's clock uncertainty. A violation larger than twice the
 * clock uncertainty of the two ranks involved (+1 us) is no clock error
 * (the calls do not correspond, or the trace is odd): counted, not
 * repaired. */
static void repair_instance(struct xr_ctx *x, const struct xr_inst *in, struct clc *st,
                           const int64_t *unc)
{
    int64_t last = INT64_MIN;
    int late = -1;

    for (size_t k = in->first; k < in->first + in->n; k++) {
        struct xr_coll *m = &x->coll.v[x->members.v[k]];
        int64_t e = m->enter + clc_at(&st[m->rank], m->enter);
        if (e > last)
            last = e, late = m->rank;
    }
    for (size_t k = in->first; k < in->first + in->n; k++) {
        struct xr_coll *m = &x->coll.v[x->members.v[k]];
        struct clc *c = &st[m->rank];
        int64_t e = m->enter + clc_at(c, m->enter), q = m->exit + clc_at(c, m->exit);
        if (q < last)
            x->clock[m->rank].violations++;
        if (q < last && last - q <= 2 * (unc[m->rank] + unc[late]) + FLOOR_UNCERTAINTY_NS) {
            struct xr_clock *ck = &x->clock[m->rank];
            c->shift = clc_at(c, m->exit) + (last - q);
            c->at = m->exit;
            if (c->shift > ck->repaired_ns)
                ck->repaired_ns = c->shift;
            q = last;
        }
        m->repair = q - m->exit;
        m->enter = e;
        m->exit = q;
    }
}

/* Each rank's clock uncertainty: the fit's, else what `ranks` holds (MPI
 * ping-pong), else 0 (the reference, or unknown). */
static void uncertainties(struct xr_ctx *x, int64_t *unc)
{
    sqlite3_stmt *st = NULL;

    if (sqlite3_prepare_v2(x->db, "SELECT rank, clock_uncertainty_ns FROM ranks", -1, &st, NULL) ==
        SQLITE_OK) {
        HM_COLUMNS_CHECK(st, unc_names);
        while (sqlite3_step(st) == SQLITE_ROW) {
            int r = sqlite3_column_int(st, UC_RANK);
            if (r >= 0 && r < x->nranks)
                unc[r] = sqlite3_column_int64(st, UC_UNCERTAINTY);
        }
    }
    sqlite3_finalize(st);
    for (int r = 0; r < x->nranks; r++)
        if (x->clock[r].fitted)
            unc[r] = x->clock[r].uncertainty_ns;
}

int xr_clock_condition(struct xr_ctx *x, struct hm_err *err)
{
    size_t n = x->inst.n, *idx = malloc((n ? n : 1) * sizeof *idx);
    struct clc *st = calloc((size_t)x->nranks + 1, sizeof *st);
    int64_t *unc = calloc((size_t)x->nranks + 1, sizeof *unc);

    if (!idx || !st || !unc) {
        free(idx);
        free(st);
        free(unc);
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    }
    uncertainties(x, unc);
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    order_base = x->inst.v;
    xr_sort(idx, n, sizeof *idx, cmp_last_enter);
    for (size_t i = 0; i < n; i++) {
        const struct xr_inst *in = &x->inst.v[idx[i]];
        if (in->n >= 2 && xr_op_is_nxn(xr_name(x, in->op)))
            repair_instance(x, in, st, unc);
    }
    free(idx);
    free(st);
    free(unc);
    xr_match_summarise(x);
    return 0;
}

int xr_clock_store(struct xr_ctx *x, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = xr_prepare(x, hm_sql_xrank_insert_clock, &st, err);

    for (int r = 0; rc == 0 && r < x->nranks; r++) {
        const struct xr_clock *c = &x->clock[r];
        if (!c->fitted && !c->violations)
            continue;
        sqlite3_bind_int(st, 1, r);
        xr_bind_opt(st, 2, c->fitted ? c->reference : HM_NONE);
        sqlite3_bind_int64(st, 3, c->samples);
        sqlite3_bind_int64(st, 4, c->before_ns);
        sqlite3_bind_int64(st, 5, c->after_ns);
        sqlite3_bind_int64(st, 6, c->resid_ns);
        sqlite3_bind_int64(st, 7, c->offset_ns);
        sqlite3_bind_double(st, 8, c->drift_ppm);
        xr_bind_opt(st, 9, c->fitted ? c->ref_ns : HM_NONE);
        sqlite3_bind_int(st, 10, c->applied);
        sqlite3_bind_int64(st, 11, c->violations);
        sqlite3_bind_int64(st, 12, c->repaired_ns);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = xr_sql_fail(x, err, "storing clock checks");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}
