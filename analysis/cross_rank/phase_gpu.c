/* GPU time per step phase (phase_gpu.h): each GPU op gets its launch time
 * (its correlated launch, else its own start), then the step and the
 * phase that time falls in; per (step, phase) the ops' intervals are
 * merged as they come, in start order. A CUDA graph's kernel replayed
 * outside every phase goes to the phase its node was captured in
 * (graph_kernels.h), so that a step-level replay of a forward graph still
 * counts as forward. */
#include "phase_gpu.h"
#include "phases.h"

#include <stdlib.h>

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
    struct xr_phases p = {0};
    int64_t *launch = NULL, (*merged_end)[XR_PG__COUNT] = NULL;
    int rc = HM_ENOMEM;

    if (!k->steps.n || !k->gpu.n)
        return 0;
    launch = malloc(k->gpu.n * sizeof *launch);
    merged_end = calloc(k->steps.n, sizeof *merged_end);
    if (xr_phases_of(x, k, &p) || !launch || !merged_end)
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
        ph = xr_phase_at(&p, launch[i]);
        if (ph == XR_PH_OTHER && g->graph_phase)   /* a replay in no finer phase: where it was captured */
            ph = g->graph_phase - 1;
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
    xr_phases_free(&p);
    free(launch);
    free(merged_end);
    return rc;
}
