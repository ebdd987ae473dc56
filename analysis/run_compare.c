/* Comparing the numbers of two runs (run_compare.h). Runs of different
 * length compare because run totals are divided by each rank's analysed
 * ProfilerSteps; runs of different rank counts because overall values are
 * means over each run's own ranks. */
#include "run_compare.h"

#include <math.h>
#include <stdlib.h>

#include "common/err.h"

const struct an_cmp_metric_def an_cmp_metrics[AN_N_METRICS] = {
    [AN_M_STEP_TIME] = {"step_time_mean_us", NULL, AN_K_STEP, -1, true},
    [AN_M_GPU_BUSY] = {"gpu_busy_us_per_step", NULL, AN_K_STEP, -1, true},
    [AN_M_EXPOSED_COMM] = {"exposed_comm_us_per_step", NULL, AN_K_STEP, -1, true},
    [AN_M_GPU_WINDOW] = {NULL, "gpu_window_us", AN_K_TOTAL, -1, true},
    [AN_M_COMPUTE] = {"compute_us_per_step", "compute_us", AN_K_TOTAL, -1, true},
    [AN_M_NON_COMPUTE] = {"non_compute_us_per_step", "non_compute_us", AN_K_TOTAL, -1, true},
    [AN_M_IDLE] = {"idle_us_per_step", "idle_us", AN_K_TOTAL, -1, true},
    [AN_M_IDLE_PCT] = {"idle_pct", "idle_pct", AN_K_RATIO, -1, true},
    [AN_M_COMPUTE_PCT] = {"compute_pct", "compute_pct", AN_K_RATIO, +1, true},
    [AN_M_COMM] = {"comm_us_per_step", "comm_us", AN_K_TOTAL, -1, true},
    [AN_M_OVERLAP_PCT] = {"overlap_pct", "overlap_pct", AN_K_RATIO, +1, true},
    [AN_M_HOST_WAIT] = {"host_wait_us_per_step", "host_wait_us", AN_K_TOTAL, -1, true},
    [AN_M_KERNEL_WAIT] = {"kernel_wait_us_per_step", "kernel_wait_us", AN_K_TOTAL, -1, true},
    [AN_M_OTHER_WAIT] = {"other_wait_us_per_step", "other_wait_us", AN_K_TOTAL, -1, true},
    [AN_M_LATE_FRACTION] = {"late_fraction", "late_fraction", AN_K_RATIO, -1, false},
    [AN_M_BLAME] = {"blame_us_per_step", "blame_us", AN_K_TOTAL, -1, true},
    [AN_M_WAIT] = {"wait_us_per_step", "wait_us", AN_K_TOTAL, -1, true},
    /* Each step's peak of allocated GPU memory (its GPUs' peaks summed), MiB. */
    [AN_M_GPU_PEAK_MEMORY] = {"gpu_peak_allocated_mib", NULL, AN_K_STEP, -1, true},
};

static int by_rank(const void *a, const void *b)
{
    const struct an_cmp_rank *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

int an_cmp_run_init(struct an_cmp_run *run, const int *ranks, int n)
{
    run->r = calloc((size_t)n + 1, sizeof *run->r);
    run->n = 0;
    if (!run->r)
        return HM_ENOMEM;
    for (int i = 0; i < n; i++)
        run->r[run->n++].rank = ranks[i];
    qsort(run->r, (size_t)run->n, sizeof *run->r, by_rank);
    return 0;
}

void an_cmp_run_free(struct an_cmp_run *run)
{
    free(run->r);
    run->r = NULL;
    run->n = 0;
}

struct an_cmp_rank *an_cmp_find(const struct an_cmp_run *run, int rank)
{
    struct an_cmp_rank key = {.rank = rank};
    return run->n ? bsearch(&key, run->r, (size_t)run->n, sizeof key, by_rank) : NULL;
}

void an_cmp_put(struct an_cmp_run *run, int rank, enum an_cmp_metric m, double v)
{
    struct an_cmp_rank *rv = an_cmp_find(run, rank);

    if (rv) {
        rv->v[m] += v;
        rv->cnt[m]++;
    }
}

bool an_cmp_add_step(struct an_cmp_run *run, int rank)
{
    struct an_cmp_rank *rv = an_cmp_find(run, rank);

    if (rv) {
        rv->nsteps++;
        run->steps++;
    }
    return rv != NULL;
}

void an_cmp_count_steps(struct an_cmp_run *run)
{
    run->step_ranks = 0;
    for (int i = 0; i < run->n; i++)
        run->step_ranks += run->r[i].nsteps > 0;
}

enum an_cmp_mode an_cmp_mode_of(const struct an_cmp_run *base, const struct an_cmp_run *new)
{
    bool sb = base->steps > 0, sn = new->steps > 0;
    return sb && sn ? AN_MODE_STEPS : !sb && !sn ? AN_MODE_TOTALS : AN_MODE_RATIOS;
}

void an_cmp_reduce(struct an_cmp_run *run, enum an_cmp_mode mode)
{
    for (int i = 0; i < run->n; i++) {
        struct an_cmp_rank *rv = &run->r[i];
        for (int m = 0; m < AN_N_METRICS; m++) {
            if (!rv->cnt[m])
                continue;
            if (an_cmp_metrics[m].kind == AN_K_STEP)
                rv->v[m] /= rv->cnt[m];
            else if (an_cmp_metrics[m].kind == AN_K_TOTAL && mode == AN_MODE_STEPS && rv->nsteps)
                rv->v[m] /= rv->nsteps;
            else if (an_cmp_metrics[m].kind == AN_K_TOTAL && mode == AN_MODE_STEPS)
                rv->cnt[m] = 0;
        }
    }
}

bool an_cmp_mean(const struct an_cmp_run *run, int m, double *out)
{
    double sum = 0;
    int n = 0;

    for (int i = 0; i < run->n; i++)
        if (run->r[i].cnt[m]) {
            sum += run->r[i].v[m];
            n++;
        }
    *out = n ? sum / n : 0;
    return n > 0;
}

const char *an_cmp_metric_name(enum an_cmp_mode mode, int m)
{
    const struct an_cmp_metric_def *d = &an_cmp_metrics[m];
    if (mode == AN_MODE_RATIOS)
        return d->kind == AN_K_RATIO ? d->step_name : NULL;
    return mode == AN_MODE_STEPS ? d->step_name : d->total_name;
}

struct an_cmp_delta an_cmp_judge(bool hb, double b, bool hn, double n, int better, double threshold_pct)
{
    struct an_cmp_delta d = {.has_pct = hb && hn && b != 0};
    bool moved;

    d.pct = d.has_pct ? 100 * (n - b) / fabs(b) : 0;
    moved = d.has_pct && n != b && fabs(d.pct) >= threshold_pct;
    d.worse = moved && (n - b) * better < 0;
    d.improved = moved && (n - b) * better > 0;
    return d;
}

bool an_cmp_regressed(double b, double n, double threshold_pct, double *pct)
{
    *pct = 100 * (n - b) / b;
    return n > b && *pct >= threshold_pct;
}

double an_cmp_kernel_scale(enum an_cmp_mode mode, const struct an_cmp_run *run)
{
    int gpu_ranks = 0;

    if (mode == AN_MODE_STEPS)
        return (double)run->steps;
    for (int i = 0; i < run->n; i++)
        gpu_ranks += run->r[i].cnt[AN_M_GPU_WINDOW] > 0;
    return gpu_ranks;
}
