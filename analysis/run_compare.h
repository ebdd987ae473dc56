/* Comparing the numbers of two runs (what `htamerge diff` judges): the
 * metrics and how each is reduced to one value per rank (per ProfilerStep
 * when both runs have steps), the means over ranks, and the judgement of
 * NEW's value against BASE's. No SQL and no JSON here: query/diff.c loads
 * the numbers from the report documents and writes the comparison out. */
#ifndef HM_ANALYSIS_RUN_COMPARE_H
#define HM_ANALYSIS_RUN_COMPARE_H

#include <stdbool.h>

enum an_cmp_metric {
    AN_M_STEP_TIME, AN_M_GPU_BUSY, AN_M_EXPOSED_COMM, AN_M_GPU_WINDOW, AN_M_COMPUTE, AN_M_NON_COMPUTE, AN_M_IDLE,
    AN_M_IDLE_PCT, AN_M_COMPUTE_PCT, AN_M_COMM, AN_M_OVERLAP_PCT, AN_M_HOST_WAIT, AN_M_KERNEL_WAIT, AN_M_OTHER_WAIT,
    AN_M_LATE_FRACTION, AN_M_BLAME, AN_M_WAIT, AN_M_GPU_PEAK_MEMORY, AN_N_METRICS
};

/* How a metric is reduced and when it can be compared. */
enum an_cmp_kind {
    AN_K_STEP,   /* a mean over analysed steps: only when both runs have steps */
    AN_K_TOTAL,  /* a run total: per analysed step when both runs have steps, as is when neither has */
    AN_K_RATIO,  /* a percentage or fraction: always comparable */
};

struct an_cmp_metric_def {
    const char *step_name;   /* name when both runs have steps; NULL: not shown then */
    const char *total_name;  /* name when neither has; NULL: not shown then */
    enum an_cmp_kind kind;
    int better;              /* -1: lower is better, +1: higher is better */
    bool overall;            /* has an overall row (a mean over ranks that means something) */
};
extern const struct an_cmp_metric_def an_cmp_metrics[AN_N_METRICS];

enum an_cmp_mode {
    AN_MODE_STEPS,   /* both runs have steps */
    AN_MODE_TOTALS,  /* neither has */
    AN_MODE_RATIOS,  /* one has: only ratios compare */
};

/* One rank's values: sums while loading, then reduced by an_cmp_reduce. */
struct an_cmp_rank {
    int rank;
    int nsteps;              /* analysed ProfilerSteps */
    double v[AN_N_METRICS];
    int cnt[AN_N_METRICS];      /* values summed into v; 0: none */
};

/* One run's ranks, sorted by rank. */
struct an_cmp_run {
    struct an_cmp_rank *r;   /* owned (an_cmp_run_free) */
    int n;
    int step_ranks;          /* ranks with at least one analysed step (an_cmp_count_steps) */
    long steps;              /* analysed steps over all ranks */
};

/* Sets up run with the given ranks (any order, copied); 0 or HM_ENOMEM. */
int an_cmp_run_init(struct an_cmp_run *run, const int *ranks, int n);
void an_cmp_run_free(struct an_cmp_run *run);

/* The rank's values, or NULL when the run lacks it. */
struct an_cmp_rank *an_cmp_find(const struct an_cmp_run *run, int rank);

/* Adds v to metric m of the rank (nothing when the run lacks it). */
void an_cmp_put(struct an_cmp_run *run, int rank, enum an_cmp_metric m, double v);

/* Counts an analysed step of the rank; false when the run lacks it. */
bool an_cmp_add_step(struct an_cmp_run *run, int rank);

/* Sets step_ranks once the steps are in. */
void an_cmp_count_steps(struct an_cmp_run *run);

/* What compares: both runs have steps, neither, or only one. */
enum an_cmp_mode an_cmp_mode_of(const struct an_cmp_run *base, const struct an_cmp_run *new);

/* Turns sums into the compared values: step means, and run totals per
 * analysed step in AN_MODE_STEPS. A value that cannot be normalised is gone. */
void an_cmp_reduce(struct an_cmp_run *run, enum an_cmp_mode mode);

/* The mean of metric m over the run's ranks that have it; false if none. */
bool an_cmp_mean(const struct an_cmp_run *run, int m, double *out);

/* Metric m's name in this mode, or NULL when it does not compare. */
const char *an_cmp_metric_name(enum an_cmp_mode mode, int m);

/* NEW's value against BASE's: pct (when both exist and BASE is not 0),
 * and whether it moved by threshold_pct or more for the worse or better
 * (better: -1 lower is better, +1 higher). */
struct an_cmp_delta {
    bool has_pct;
    double pct;
    bool worse, improved;
};
struct an_cmp_delta an_cmp_judge(bool hb, double b, bool hn, double n, int better, double threshold_pct);

/* Whether the gate value grew from b to n by threshold_pct or more (b > 0);
 * *pct the change in percent. */
bool an_cmp_regressed(double b, double n, double threshold_pct, double *pct);

/* The denominator that makes a run's kernel-type time (summed over ranks)
 * a per-rank value, per analysed step in AN_MODE_STEPS: analysed steps, or
 * the ranks with GPU time. */
double an_cmp_kernel_scale(enum an_cmp_mode mode, const struct an_cmp_run *run);

#endif
