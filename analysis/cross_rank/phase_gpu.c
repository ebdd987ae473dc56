/* GPU time per step phase (phase_gpu.h): each GPU op gets its launch time
 * (its correlated launch, else its own start), then the step and the
 * phase that time falls in; per (step, phase) the ops' intervals are
 * merged as they come, in start order. */
#include "phase_gpu.h"

#include <stdlib.h>

struct phase {
    int64_t ts, end, max_end;   /* max_end: the largest end of this and earlier phases */
    int kind;                   /* XR_PG_* */
};

static int cmp_phase(const void *pa, const void *pb)
{
    const struct phase *a = pa, *b = pb;
    return a->ts < b->ts ? -1 : a->ts > b->ts;
}

/* The phases of k, sorted by start; *n of them. NULL when there are none
 * (or no memory: *n is then -1). */
static struct phase *phases_of(struct xr_ctx *x, const struct xr_rank *k, long *n)
{
    struct phase *p = malloc((k->annots.n ? k->annots.n : 1) * sizeof *p);
    long m = 0;

    if (!p) {
        *n = -1;
        return NULL;
    }
    for (size_t i = 0; i < k->annots.n; i++) {
        unsigned f = xr_str_aflags(x, k->annots.v[i].name);
        int kind = f & XR_A_FWD ? XR_PG_FWD : f & XR_A_BWD ? XR_PG_BWD : f & XR_A_OPT ? XR_PG_OPT : -1;
        if (kind >= 0 && k->annots.v[i].end > k->annots.v[i].ts)
            p[m++] = (struct phase){k->annots.v[i].ts, k->annots.v[i].end, 0, kind};
    }
    xr_sort(p, (size_t)m, sizeof *p, cmp_phase);
    for (long i = 0; i < m; i++)
        p[i].max_end = i && p[i - 1].max_end > p[i].end ? p[i - 1].max_end : p[i].end;
    *n = m;
    return p;
}

/* The innermost (latest started) phase holding t, or XR_PG_OTHER. */
static int phase_at(const struct phase *p, long n, int64_t t)
{
    long lo = 0, hi = n;

    while (lo < hi) {   /* first phase starting after t */
        long m = (lo + hi) / 2;
        if (p[m].ts <= t)
            lo = m + 1;
        else
            hi = m;
    }
    for (long i = lo - 1; i >= 0 && p[i].max_end > t; i--)
        if (p[i].end > t)
            return p[i].kind;
    return XR_PG_OTHER;
}

/* The step (index) whose range holds t, or -1. Steps are sorted and disjoint. */
static long step_at(const struct xr_rank *k, int64_t t)
{
    size_t lo = 0, hi = k->steps.n;

    while (lo < hi) {
        size_t m = (lo + hi) / 2;
        if (k->steps.v[m].ts <= t)
            lo = m + 1;
        else
            hi = m;
    }
    return lo && t < k->steps.v[lo - 1].end ? (long)lo - 1 : -1;
}

int xr_phase_gpu(struct xr_ctx *x, const struct xr_rank *k, int64_t (*out)[XR_PG__COUNT])
{
    long nphase = 0;
    struct phase *p = NULL;
    int64_t *launch = NULL, (*merged_end)[XR_PG__COUNT] = NULL;
    int rc = HM_ENOMEM;

    if (!k->steps.n || !k->gpu.n)
        return 0;
    p = phases_of(x, k, &nphase);
    launch = malloc(k->gpu.n * sizeof *launch);
    merged_end = calloc(k->steps.n, sizeof *merged_end);
    if (nphase < 0 || !launch || !merged_end)
        goto out;
    for (size_t i = 0; i < k->gpu.n; i++)
        launch[i] = k->gpu.v[i].ts;
    for (size_t i = 0; i < k->launches.n; i++) {
        size_t lo, hi;
        xr_gpu_by_corr(k, k->launches.v[i].corr, &lo, &hi);
        for (size_t j = lo; j < hi; j++)
            launch[k->by_corr[j]] = k->launches.v[i].ts;
    }
    for (size_t i = 0; i < k->gpu.n; i++) {   /* in start order */
        const struct xr_gpu *g = &k->gpu.v[i];
        long s = step_at(k, launch[i]);
        int ph;
        int64_t *end;

        if (s < 0 || g->end <= g->ts)
            continue;
        ph = phase_at(p, nphase, launch[i]);
        end = &merged_end[s][ph];
        if (g->ts >= *end)
            out[s][ph] += g->end - g->ts;
        else if (g->end > *end)
            out[s][ph] += g->end - *end;
        if (g->end > *end)
            *end = g->end;
    }
    rc = 0;
out:
    free(p);
    free(launch);
    free(merged_end);
    return rc;
}
