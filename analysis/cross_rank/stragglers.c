/* Straggler analysis: wait states per matched collective, per-rank blame,
 * and the verdict with its evidence (rule and terms in stragglers.h). */
#include "stragglers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/record.h"
#include "hm_sql.h"

int xr_stragglers_judge(struct xr_ctx *x, struct hm_err *err)
{
    (void)err;
    for (size_t i = 0; i < x->inst.n; i++) {
        const struct xr_inst *in = &x->inst.v[i];
        struct xr_coll *late = NULL;
        int64_t blame = 0;
        for (size_t k = in->first; k < in->first + in->n; k++) {
            struct xr_coll *m = &x->coll.v[x->members.v[k]];
            m->late = 0;
            m->blame = 0;
            m->wait = in->analysed ? in->last_enter - m->enter : 0;
            m->completion = m->exit - in->min_exit;
            if (in->analysed && in->late_rank == m->rank && m->enter == in->last_enter)
                late = m;
            blame += m->wait;
        }
        if (late) {
            late->late = 1;
            late->blame = blame;
        }
    }
    return 0;
}

/* "541 ms", "3.2 ms", "870 us", "1.25 s". */
static void fmt_dur(int64_t ns, char *buf, size_t len)
{
    double us = (double)ns / 1e3;

    if (us < 1000)
        snprintf(buf, len, "%.0f us", us);
    else if (us < 10000)
        snprintf(buf, len, "%.1f ms", us / 1e3);
    else if (us < 1e6)
        snprintf(buf, len, "%.0f ms", us / 1e3);
    else
        snprintf(buf, len, "%.2f s", us / 1e6);
}

static int pick_candidate(const struct xr_blame *b, int nranks, int64_t *total)
{
    int cand = -1;

    *total = 0;
    for (int r = 0; r < nranks; r++) {
        *total += b[r].blame_ns;
        if (b[r].late > 0 && (cand < 0 || b[r].blame_ns > b[cand].blame_ns))
            cand = r;
    }
    return cand;
}

/* Rule 2's bar: half the instances, and XR_STRAGGLER_CHANCE_FACTOR times
 * what chance gives one of the ranks taking part; with two ranks, being last
 * half the time is what balanced ranks do. */
static double min_late_fraction(const struct xr_blame *b, int nranks)
{
    int active = 0;
    double chance;

    for (int r = 0; r < nranks; r++)
        active += b[r].instances > 0;
    chance = active > 0 ? XR_STRAGGLER_CHANCE_FACTOR / active : 1;
    return chance > XR_STRAGGLER_MIN_LATE_FRACTION ? chance : XR_STRAGGLER_MIN_LATE_FRACTION;
}

/* Where steps are known, the candidate is the rank with the most hold-up
 * (ties: the lowest); 0 when no rank held another up. */
static int pick_by_holdup(const struct xr_blame *b, int nranks, int *cand, int64_t *total)
{
    int c = -1;

    *total = 0;
    for (int r = 0; r < nranks; r++) {
        *total += b[r].holdup_ns;
        if (b[r].holdup_ns > 0 && (c < 0 || b[r].holdup_ns > b[c].holdup_ns))
            c = r;
    }
    if (c < 0)
        return 0;
    *cand = c;
    return 1;
}

/* Rule 2b: with steps, the candidate held the others up longest in at
 * least min_frac of them. */
static int steps_consistent(const struct xr_blame *k, const struct xr_step_totals *st, double min_frac)
{
    return st && st->steps > 0 && (double)k->top_steps >= min_frac * (double)st->steps;
}

void xr_straggler_verdict(const struct xr_blame *b, int nranks, int64_t instances,
                          const struct xr_step_totals *steps, const char *what,
                          struct xr_verdict *out)
{
    int64_t total, waited;
    int c = pick_candidate(b, nranks, &total);
    const struct xr_blame *k = c >= 0 ? &b[c] : NULL;
    int64_t hold_total = 0;
    double frac, min_frac, share, skew, span, holdup = 0, step_ns = 0;
    int by_count, by_steps, per_step;
    char d1[32], d2[32], d3[32];

    *out = (struct xr_verdict){.straggler = -1, .candidate = c, .instances = instances,
                               .blame_share = -1};
    if (instances < XR_STRAGGLER_MIN_INSTANCES) {
        snprintf(out->evidence, sizeof out->evidence,
                 "no rank stands out: fewer than %d collectives were matched on two or more ranks",
                 XR_STRAGGLER_MIN_INSTANCES);
        return;
    }
    if (!k || total <= 0) {
        snprintf(out->evidence, sizeof out->evidence,
                 "no rank stands out: the ranks entered each of the %lld matched %s together",
                 (long long)instances, what);
        return;
    }
    per_step = steps && steps->steps > 0 && steps->mean_step_ns > 0 &&
               pick_by_holdup(b, nranks, &c, &hold_total);
    if (per_step) {
        k = &b[c];
        out->candidate = c;
        holdup = (double)k->holdup_ns / (double)steps->steps;
        step_ns = steps->mean_step_ns;
    }
    frac = (double)k->late / (double)(k->instances ? k->instances : 1);
    min_frac = min_late_fraction(b, nranks);
    out->blame_share = (double)k->blame_ns / (double)total;
    /* Rule 3 weighs hold-ups where steps are known: blame adds up a skew
     * once per collective, so a rank a little behind for whole steps
     * gathers more of it than one that held everyone up once. */
    share = per_step ? (double)k->holdup_ns / (double)hold_total : out->blame_share;
    skew = k->late ? (double)k->skew_late_ns / (double)k->late : 0;
    span = k->late ? (double)k->span_late_ns / (double)k->late : 0;
    waited = k->blame_ns;
    by_count = frac >= min_frac;
    by_steps = steps_consistent(k, steps, min_frac);
    fmt_dur(waited, d1, sizeof d1);
    if ((by_count || by_steps) && share >= XR_STRAGGLER_MIN_BLAME_SHARE &&
        skew >= XR_STRAGGLER_MIN_SKEW_NS && skew >= XR_STRAGGLER_MIN_SKEW_SHARE * span &&
        (!per_step || holdup >= XR_STRAGGLER_MIN_STEP_SHARE * step_ns)) {
        out->straggler = c;
        if (by_count) {
            snprintf(out->evidence, sizeof out->evidence,
                     "rank %d entered last in %lld of %lld %s; the others waited %s for it", c,
                     (long long)k->late, (long long)k->instances, what, d1);
        } else {
            fmt_dur((int64_t)holdup, d2, sizeof d2);
            fmt_dur((int64_t)step_ns, d3, sizeof d3);
            if (steps->steps == 1)
                snprintf(out->evidence, sizeof out->evidence,
                         "rank %d held the others up longest, by %s (%.0f%% of the %s step); the "
                         "others waited %s for it", c, d2, 100.0 * holdup / step_ns, d3, d1);
            else
                snprintf(out->evidence, sizeof out->evidence,
                         "rank %d held the others up longest in %lld of %lld steps, by %s a step "
                         "(%.0f%% of the %s step); the others waited %s for it", c,
                         (long long)k->top_steps, (long long)steps->steps, d2,
                         100.0 * holdup / step_ns, d3, d1);
        }
    } else if ((by_count || by_steps) && share >= XR_STRAGGLER_MIN_BLAME_SHARE &&
               skew >= XR_STRAGGLER_MIN_SKEW_NS && skew >= XR_STRAGGLER_MIN_SKEW_SHARE * span) {
        fmt_dur((int64_t)holdup, d2, sizeof d2);
        fmt_dur((int64_t)step_ns, d3, sizeof d3);
        snprintf(out->evidence, sizeof out->evidence,
                 "no rank stands out: rank %d entered last in %lld of %lld %s, but held the others "
                 "up by only %s a step (%.1f%% of the %s step)", c, (long long)k->late,
                 (long long)k->instances, what, d2, 100.0 * holdup / step_ns, d3);
    } else if ((by_count || by_steps) && share >= XR_STRAGGLER_MIN_BLAME_SHARE) {
        fmt_dur((int64_t)skew, d2, sizeof d2);
        snprintf(out->evidence, sizeof out->evidence,
                 "no rank stands out: rank %d entered last in %lld of %lld %s, but only %s late "
                 "on average (%.0f%% of those collectives' time)", c, (long long)k->late,
                 (long long)k->instances, what, d2, span > 0 ? 100.0 * skew / span : 0.0);
    } else if (per_step) {
        fmt_dur((int64_t)holdup, d2, sizeof d2);
        snprintf(out->evidence, sizeof out->evidence,
                 "no rank stands out: the one holding the others up longest, rank %d, did so in "
                 "%lld of %lld steps, by %s a step, %.0f%% of all the ranks' hold-ups", c,
                 (long long)k->top_steps, (long long)steps->steps, d2, 100.0 * share);
    } else {
        fmt_dur(total, d2, sizeof d2);
        snprintf(out->evidence, sizeof out->evidence,
                 "no rank stands out: the most blamed, rank %d, entered last in %lld of %lld %s "
                 "and caused %.0f%% of the %s the ranks waited", c, (long long)k->late,
                 (long long)k->instances, what, 100.0 * share, d2);
    }
}

struct step_ref {
    int64_t step;
    size_t inst;
};

/* Mean duration of ProfilerStep `number` over the ranks that have it (each
 * rank's steps are sorted by number); 0 when none has. */
static double step_duration(const struct xr_ctx *x, int64_t number)
{
    double sum = 0;
    int n = 0;

    for (int r = 0; r < x->nranks; r++) {
        const struct xr_rank *rk = &x->ranks[r];
        size_t lo = 0, hi = rk->steps.n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (rk->steps.v[mid].number < number)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < rk->steps.n && rk->steps.v[lo].number == number &&
            rk->steps.v[lo].end > rk->steps.v[lo].ts) {
            sum += (double)(rk->steps.v[lo].end - rk->steps.v[lo].ts);
            n++;
        }
    }
    return n ? sum / n : 0;
}

/* Where each analysed instance's delay began (attribute_delays): `own` of
 * its skew is its late rank's, `passed` is `root`'s, passed on to the late
 * rank through the collective it left last. */
struct delay_origin {
    int64_t *own, *passed;     /* per instance */
    int *root;                 /* per instance */
    int64_t *release;          /* per rank: exit of its latest collective so far */
    int *release_root;         /* per rank: whose delay set that exit */
    struct step_ref *order;
};

static int cmp_step_ref(const void *pa, const void *pb)
{
    const struct step_ref *a = pa, *b = pb;
    return a->step != b->step ? (a->step > b->step) - (a->step < b->step)
                              : (a->inst > b->inst) - (a->inst < b->inst);
}

/* Scalasca's propagation of wait states to their root cause, on enter and
 * exit times. Ranks leave a collective together, so how much later the late
 * rank entered the next one than the first rank did is its own work, except
 * where it was released later (left its previous collective later, held
 * there by someone): up to that difference the delay is passed on, and
 * charged to whoever set that release. In a 2-D mesh the partner that
 * waited for a late tensor-parallel rank is in turn last into its
 * data-parallel group, and the others' next steps start late: without
 * this, one straggler's hold-ups split over several ranks, none of them the
 * majority. Instances are taken in the order their last rank entered. */
static void attribute_delays(const struct xr_ctx *x, const struct step_ref *ref, size_t n,
                             struct delay_origin *d)
{
    for (int r = 0; r < x->nranks; r++) {
        d->release[r] = INT64_MIN;
        d->release_root[r] = r;
    }
    for (size_t q = 0; q < n; q++)
        d->order[q] = (struct step_ref){x->inst.v[ref[q].inst].last_enter, ref[q].inst};
    xr_sort(d->order, n, sizeof *d->order, cmp_step_ref);
    for (size_t q = 0; q < n; q++) {
        size_t i = d->order[q].inst;
        const struct xr_inst *in = &x->inst.v[i];
        int late = in->late_rank, first = -1;
        int64_t skew = in->last_enter - in->first_enter, passed = 0;

        d->own[i] = d->passed[i] = 0;
        d->root[i] = late;
        if (late < 0 || late >= x->nranks || skew <= 0)
            continue;
        for (size_t k = in->first; k < in->first + in->n && first < 0; k++) {
            const struct xr_coll *m = &x->coll.v[x->members.v[k]];
            if (m->enter == in->first_enter && m->rank >= 0 && m->rank < x->nranks)
                first = m->rank;
        }
        if (first >= 0 && d->release[late] != INT64_MIN && d->release[first] != INT64_MIN &&
            d->release[late] > d->release[first])
            passed = d->release[late] - d->release[first];
        if (passed > skew)
            passed = skew;
        d->passed[i] = passed;
        d->own[i] = skew - passed;
        d->root[i] = passed > 0 ? d->release_root[late] : late;
        for (size_t k = in->first; k < in->first + in->n; k++) {
            const struct xr_coll *m = &x->coll.v[x->members.v[k]];
            if (m->rank < 0 || m->rank >= x->nranks || m->exit < d->release[m->rank])
                continue;
            d->release[m->rank] = m->exit;
            d->release_root[m->rank] = d->passed[i] > d->own[i] ? d->root[i] : late;
        }
    }
}

/* Each rank's hold-up in one step: its largest delay of the others in any
 * one instance, counting the delay it passed on through other ranks. */
static void step_holdups(const struct xr_ctx *x, const struct step_ref *ref, size_t n,
                         const struct delay_origin *d, int64_t *hold)
{
    memset(hold, 0, (size_t)x->nranks * sizeof *hold);
    for (size_t q = 0; q < n; q++) {
        size_t i = ref[q].inst;
        int late = x->inst.v[i].late_rank, root = d->root[i];
        int64_t own = d->own[i], passed = d->passed[i];

        if (late < 0 || late >= x->nranks)
            continue;
        if (root == late) {
            own += passed;
            passed = 0;
        }
        if (own > hold[late])
            hold[late] = own;
        if (passed > 0 && root >= 0 && root < x->nranks && passed > hold[root])
            hold[root] = passed;
    }
}

/* Totals per rank over the instances ref[0..n) (analysed ones, sorted by
 * step). Returns n; *op is the one op they share, or 0. Hold-ups (rules 2b
 * and 5) come from the steps with a known duration, into *st. */
static int64_t totals(struct xr_ctx *x, const struct step_ref *ref, size_t n, struct xr_blame *b,
                      const struct delay_origin *d, int64_t *hold, int64_t *op,
                      struct xr_step_totals *st)
{
    double dur_sum = 0;

    memset(b, 0, (size_t)x->nranks * sizeof *b);
    *st = (struct xr_step_totals){0};
    *op = -1;
    for (size_t i = 0; i < n; i++) {
        const struct xr_inst *in = &x->inst.v[ref[i].inst];
        *op = *op == -1 || *op == in->op ? in->op : 0;
        for (size_t k = in->first; k < in->first + in->n; k++) {
            const struct xr_coll *m = &x->coll.v[x->members.v[k]];
            struct xr_blame *t = &b[m->rank];
            t->instances++;
            t->wait_ns += m->wait;
            if (m->late) {
                t->late++;
                t->blame_ns += m->blame;
                t->skew_late_ns += in->last_enter - in->first_enter;
                t->span_late_ns += in->max_exit - in->first_enter;
            }
        }
    }
    for (size_t i = 0, j; i < n; i = j) {
        int64_t step = x->inst.v[ref[i].inst].step;
        double dur;
        int top = -1;

        for (j = i; j < n && x->inst.v[ref[j].inst].step == step; j++)
            ;
        if (step == HM_NONE || (dur = step_duration(x, step)) <= 0)
            continue;
        step_holdups(x, ref + i, j - i, d, hold);
        for (int r = 0; r < x->nranks; r++) {
            b[r].holdup_ns += hold[r];
            if (hold[r] > 0 && (top < 0 || hold[r] > hold[top]))
                top = r;
        }
        if (top >= 0)
            b[top].top_steps++;
        st->steps++;
        dur_sum += dur;
    }
    st->mean_step_ns = st->steps ? dur_sum / (double)st->steps : 0;
    return (int64_t)n;
}

static int store_verdict(struct xr_ctx *x, sqlite3_stmt *st, int64_t step,
                         const struct step_ref *ref, size_t nref, struct xr_blame *b,
                         const struct delay_origin *d, int64_t *hold)
{
    struct xr_verdict v;
    struct xr_step_totals steps;
    int64_t op, n = totals(x, ref, nref, b, d, hold, &op, &steps);
    char what[160];
    int rc;

    if (op > 0)
        snprintf(what, sizeof what, "%ss", xr_name(x, op));
    else
        snprintf(what, sizeof what, "collectives");
    xr_straggler_verdict(b, x->nranks, n, &steps, what, &v);
    xr_bind_opt(st, 1, step);
    xr_bind_opt(st, 2, v.straggler >= 0 ? v.straggler : HM_NONE);
    xr_bind_opt(st, 3, v.candidate >= 0 ? v.candidate : HM_NONE);
    sqlite3_bind_int64(st, 4, n);
    xr_bind_opt(st, 5, v.candidate >= 0 ? b[v.candidate].late : HM_NONE);
    if (v.blame_share >= 0)
        sqlite3_bind_double(st, 6, v.blame_share);
    else
        sqlite3_bind_null(st, 6);
    sqlite3_bind_text(st, 7, v.evidence, -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Rows: the whole run, then each step in order. Instances are grouped by
 * step once, so a run of many steps costs a sort, not a scan per step. */
int xr_stragglers_store(struct xr_ctx *x, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    size_t nr = (size_t)x->nranks + 1, ni = x->inst.n + 1;
    struct xr_blame *b = calloc(nr, sizeof *b);
    int64_t *hold = calloc(nr, sizeof *hold);
    struct delay_origin d = {calloc(ni, sizeof *d.own), calloc(ni, sizeof *d.passed),
                             calloc(ni, sizeof *d.root), calloc(nr, sizeof *d.release),
                             calloc(nr, sizeof *d.release_root), malloc(ni * sizeof *d.order)};
    struct step_ref *ref = malloc(ni * sizeof *ref);
    size_t n = 0;
    int rc = b && hold && d.own && d.passed && d.root && d.release && d.release_root && d.order && ref
                 ? xr_prepare(x, hm_sql_xrank_insert_verdict, &st, err)
                 : hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");

    for (size_t i = 0; rc == 0 && i < x->inst.n; i++)
        if (x->inst.v[i].analysed)
            ref[n++] = (struct step_ref){x->inst.v[i].step, i};
    if (rc == 0) {
        attribute_delays(x, ref, n, &d);
        xr_sort(ref, n, sizeof *ref, cmp_step_ref);
    }
    if (rc == 0 && store_verdict(x, st, HM_NONE, ref, n, b, &d, hold))
        rc = xr_sql_fail(x, err, "storing straggler verdicts");
    for (size_t i = 0, j; rc == 0 && i < n; i = j) {
        int64_t step = ref[i].step;
        for (j = i; j < n && x->inst.v[ref[j].inst].step == step; j++)
            ;
        if (step != HM_NONE && store_verdict(x, st, step, ref + i, j - i, b, &d, hold))
            rc = xr_sql_fail(x, err, "storing straggler verdicts");
    }
    sqlite3_finalize(st);
    free(b);
    free(hold);
    free(d.own);
    free(d.passed);
    free(d.root);
    free(d.release);
    free(d.release_root);
    free(d.order);
    free(ref);
    return rc;
}
