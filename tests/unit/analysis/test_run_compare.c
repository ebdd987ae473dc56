/* analysis/run_compare.c: the numbers of `htamerge diff` without a file:
 * reduction per step and per run, means over each run's own ranks, the
 * mode chosen from which runs have steps, the judgement of a value against
 * the threshold, and the gate's regression rule. */
#include <stdio.h>
#include <string.h>

#include "analysis/run_compare.h"
#include "test.h"

static void test_reduce_steps(void)
{
    struct an_cmp_run base = {0}, new = {0};
    const int ranks[] = {1, 0};
    double mean;

    CHECK_EQ_INT(an_cmp_run_init(&base, ranks, 2), 0);
    CHECK_EQ_INT(an_cmp_run_init(&new, ranks, 1), 0);
    CHECK_EQ_INT(base.r[0].rank, 0);   /* sorted */
    CHECK(an_cmp_find(&base, 2) == NULL);
    for (int s = 0; s < 4; s++) {   /* rank 0: 4 steps of 100 us, rank 1: 2 of 300 us */
        an_cmp_add_step(&base, 0);
        an_cmp_put(&base, 0, AN_M_STEP_TIME, 100);
    }
    for (int s = 0; s < 2; s++) {
        an_cmp_add_step(&base, 1);
        an_cmp_put(&base, 1, AN_M_STEP_TIME, 300);
    }
    an_cmp_put(&base, 0, AN_M_IDLE, 800);     /* a run total: per step when both have steps */
    an_cmp_put(&base, 0, AN_M_IDLE_PCT, 20);  /* a ratio: as is */
    CHECK(!an_cmp_add_step(&base, 7));
    an_cmp_count_steps(&base);
    CHECK_EQ_INT(base.steps, 6);
    CHECK_EQ_INT(base.step_ranks, 2);
    CHECK_EQ_INT(an_cmp_mode_of(&base, &new), AN_MODE_RATIOS);
    an_cmp_add_step(&new, 1);
    CHECK_EQ_INT(an_cmp_mode_of(&base, &new), AN_MODE_STEPS);
    an_cmp_reduce(&base, AN_MODE_STEPS);
    CHECK_NEAR(base.r[0].v[AN_M_STEP_TIME], 100, 1e-9);
    CHECK_NEAR(base.r[1].v[AN_M_STEP_TIME], 300, 1e-9);
    CHECK_NEAR(base.r[0].v[AN_M_IDLE], 200, 1e-9);
    CHECK_NEAR(base.r[0].v[AN_M_IDLE_PCT], 20, 1e-9);
    CHECK(an_cmp_mean(&base, AN_M_STEP_TIME, &mean));
    CHECK_NEAR(mean, 200, 1e-9);   /* a mean over ranks, not over steps */
    CHECK(!an_cmp_mean(&base, AN_M_BLAME, &mean));
    CHECK_NEAR(an_cmp_kernel_scale(AN_MODE_STEPS, &base), 6, 1e-9);
    an_cmp_run_free(&base);
    an_cmp_run_free(&new);
}

static void test_totals(void)
{
    struct an_cmp_run run = {0};
    const int ranks[] = {0, 1, 2};

    CHECK_EQ_INT(an_cmp_run_init(&run, ranks, 3), 0);
    an_cmp_put(&run, 0, AN_M_GPU_WINDOW, 5);
    an_cmp_put(&run, 2, AN_M_GPU_WINDOW, 7);
    an_cmp_put(&run, 1, AN_M_COMPUTE, 50);
    CHECK_EQ_INT(an_cmp_mode_of(&run, &run), AN_MODE_TOTALS);
    an_cmp_reduce(&run, AN_MODE_TOTALS);
    CHECK_NEAR(run.r[1].v[AN_M_COMPUTE], 50, 1e-9);   /* no steps: totals stay */
    CHECK_NEAR(an_cmp_kernel_scale(AN_MODE_TOTALS, &run), 2, 1e-9);   /* ranks with GPU time */
    an_cmp_reduce(&run, AN_MODE_STEPS);   /* a total with no steps to divide by is gone */
    CHECK_EQ_INT(run.r[1].cnt[AN_M_COMPUTE], 0);
    an_cmp_run_free(&run);
}

static void test_names_and_judgement(void)
{
    struct an_cmp_delta d;
    double pct;

    CHECK_STR(an_cmp_metric_name(AN_MODE_STEPS, AN_M_IDLE), "idle_us_per_step");
    CHECK_STR(an_cmp_metric_name(AN_MODE_TOTALS, AN_M_IDLE), "idle_us");
    CHECK(an_cmp_metric_name(AN_MODE_RATIOS, AN_M_IDLE) == NULL);
    CHECK_STR(an_cmp_metric_name(AN_MODE_RATIOS, AN_M_OVERLAP_PCT), "overlap_pct");
    CHECK(an_cmp_metric_name(AN_MODE_STEPS, AN_M_GPU_WINDOW) == NULL);
    d = an_cmp_judge(true, 100, true, 110, -1, 5);   /* lower is better, 10% up */
    CHECK(d.has_pct && d.worse && !d.improved);
    CHECK_NEAR(d.pct, 10, 1e-9);
    d = an_cmp_judge(true, 100, true, 104, -1, 5);   /* under the threshold */
    CHECK(!d.worse && !d.improved);
    d = an_cmp_judge(true, 50, true, 60, +1, 5);     /* higher is better */
    CHECK(d.improved && !d.worse);
    d = an_cmp_judge(true, 0, true, 3, -1, 5);       /* no percentage of 0 */
    CHECK(!d.has_pct && !d.worse);
    d = an_cmp_judge(false, 0, true, 3, -1, 5);
    CHECK(!d.has_pct);
    CHECK(an_cmp_regressed(100, 105, 5, &pct));     /* at the threshold counts */
    CHECK_NEAR(pct, 5, 1e-9);
    CHECK(!an_cmp_regressed(100, 104.9, 5, &pct));
    CHECK(!an_cmp_regressed(100, 90, 0, &pct));
}

int main(void)
{
    test_reduce_steps();
    test_totals();
    test_names_and_judgement();
    return hm_test_done();
}
