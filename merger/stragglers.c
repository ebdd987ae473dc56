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

void xr_straggler_verdict(const struct xr_blame *b, int nranks, int64_t instances,
                          const char *what, struct xr_verdict *out)
{
    int64_t total, waited;
    int c = pick_candidate(b, nranks, &total);
    const struct xr_blame *k = c >= 0 ? &b[c] : NULL;
    double frac, min_frac, share, skew, span;
    char d1[32], d2[32];

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
    frac = (double)k->late / (double)(k->instances ? k->instances : 1);
    min_frac = min_late_fraction(b, nranks);
    share = out->blame_share = (double)k->blame_ns / (double)total;
    skew = (double)k->skew_late_ns / (double)k->late;
    span = (double)k->span_late_ns / (double)k->late;
    waited = k->blame_ns;
    fmt_dur(waited, d1, sizeof d1);
    if (frac >= min_frac && share >= XR_STRAGGLER_MIN_BLAME_SHARE &&
        skew >= XR_STRAGGLER_MIN_SKEW_NS && skew >= XR_STRAGGLER_MIN_SKEW_SHARE * span) {
        out->straggler = c;
        snprintf(out->evidence, sizeof out->evidence,
                 "rank %d entered last in %lld of %lld %s; the others waited %s for it", c,
                 (long long)k->late, (long long)k->instances, what, d1);
    } else if (frac >= min_frac && share >= XR_STRAGGLER_MIN_BLAME_SHARE) {
        fmt_dur((int64_t)skew, d2, sizeof d2);
        snprintf(out->evidence, sizeof out->evidence,
                 "no rank stands out: rank %d entered last in %lld of %lld %s, but only %s late "
                 "on average (%.0f%% of those collectives' time)", c, (long long)k->late,
                 (long long)k->instances, what, d2, span > 0 ? 100.0 * skew / span : 0.0);
    } else {
        fmt_dur(total, d2, sizeof d2);
        snprintf(out->evidence, sizeof out->evidence,
                 "no rank stands out: the most blamed, rank %d, entered last in %lld of %lld %s "
                 "and caused %.0f%% of the %s the ranks waited", c, (long long)k->late,
                 (long long)k->instances, what, 100.0 * share, d2);
    }
}

/* Totals per rank over the analysed instances of step (HM_NONE: all).
 * Returns the number of instances; *op is the one op they share, or 0. */
static int64_t totals(struct xr_ctx *x, int64_t step, int all, struct xr_blame *b, int64_t *op)
{
    int64_t n = 0;

    memset(b, 0, (size_t)x->nranks * sizeof *b);
    *op = -1;
    for (size_t i = 0; i < x->inst.n; i++) {
        const struct xr_inst *in = &x->inst.v[i];
        if (!in->analysed || (!all && in->step != step))
            continue;
        n++;
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
    return n;
}

static int store_verdict(struct xr_ctx *x, sqlite3_stmt *st, int64_t step, int all,
                         struct xr_blame *b)
{
    struct xr_verdict v;
    int64_t op, n = totals(x, step, all, b, &op);
    char what[160];
    int rc;

    if (op > 0)
        snprintf(what, sizeof what, "%ss", xr_name(x, op));
    else
        snprintf(what, sizeof what, "collectives");
    xr_straggler_verdict(b, x->nranks, n, what, &v);
    xr_bind_opt(st, 1, all ? HM_NONE : step);
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

static int cmp_i64(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

int xr_stragglers_store(struct xr_ctx *x, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    struct xr_blame *b = calloc((size_t)x->nranks + 1, sizeof *b);
    int64_t *steps = malloc((x->inst.n + 1) * sizeof *steps);
    size_t ns = 0;
    int rc = b && steps ? xr_prepare(x, hm_sql_xrank_insert_verdict, &st, err)
                        : hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");

    if (rc == 0 && store_verdict(x, st, HM_NONE, 1, b))
        rc = xr_sql_fail(x, err, "storing straggler verdicts");
    for (size_t i = 0; rc == 0 && i < x->inst.n; i++)
        if (x->inst.v[i].analysed && x->inst.v[i].step != HM_NONE)
            steps[ns++] = x->inst.v[i].step;
    if (rc == 0)
        xr_sort(steps, ns, sizeof *steps, cmp_i64);
    for (size_t i = 0; rc == 0 && i < ns; i++)
        if ((i == 0 || steps[i] != steps[i - 1]) && store_verdict(x, st, steps[i], 0, b))
            rc = xr_sql_fail(x, err, "storing straggler verdicts");
    sqlite3_finalize(st);
    free(b);
    free(steps);
    return rc;
}
