/* Straggler analysis in Scalasca's terms (docs/ANALYSES.md section 3), on
 * matched collectives with aligned (and repaired) clocks, judged by enter
 * times, never by durations. Per instance and rank: wait at NxN (last enter
 * - own enter) and NxN completion (own exit - first exit); the rank that
 * entered last is late and is blamed for every other rank's wait. Point-to-
 * point operations and instances on one rank are not analysed.
 *
 * Verdict rule (whole run, and each ProfilerStep alone). The candidate is
 * the rank with the most blame, or where the instances fall in ProfilerSteps
 * with known times, the one with the most hold-up (below); ties: the lowest
 * rank. It is the straggler when all of these hold, else the verdict is null:
 *   1. at least XR_STRAGGLER_MIN_INSTANCES analysed instances;
 *   2. it is late consistently, in one of two ways:
 *      a. it entered last in at least half of the instances it took part
 *         in, and in at least XR_STRAGGLER_CHANCE_FACTOR / (ranks taking
 *         part) of them (with two ranks: three in four, since two balanced
 *         ranks are each last half the time); or
 *      b. where the instances fall in ProfilerSteps: in as large a share
 *         of the steps it held the others up longest (its largest single
 *         arrival skew where it was last, the step's "hold-up", is the
 *         largest of any rank's). Counting instances misleads in overlapped
 *         data-parallel steps: behind one late bucket the others' allreduces
 *         queue up on the GPU, and the entry order of the rest is noise
 *         (tests/fixtures/gpu/nccl2_straggler1: last in 54 of 88, but
 *         holding up every step by 20-36 ms). A hold-up counts where it
 *         began: a rank released late from its previous collective (held
 *         there by R) passes up to that much of its next skew on to R (a
 *         2-D mesh's straggler delays its partners' other groups and the
 *         next steps; stragglers.c, attribute_delays);
 *   3. it carries at least half of all blame (with steps: of all the
 *      ranks' hold-ups, since blame counts a skew once per collective and
 *      so favours a rank a little behind for whole steps);
 *   4. its lateness matters: where it was last, the mean arrival skew is at
 *      least XR_STRAGGLER_MIN_SKEW_NS and at least 10% of the mean time
 *      from first enter to last exit of those instances (jitter between
 *      well-balanced ranks is neither);
 *   5. where step times are known, it matters to the step too: its hold-up,
 *      averaged over the steps, is at least XR_STRAGGLER_MIN_STEP_SHARE of
 *      the mean step time. A rank a millisecond behind for a whole step is
 *      last in every one of the step's collectives, each with a skew that
 *      is most of its span, yet costs the step a millisecond
 *      (nccl2_clean: 2.7 ms a 73 ms step).
 * The evidence sentence says which part decided. */
#ifndef HM_ANALYSIS_CROSS_RANK_STRAGGLERS_H
#define HM_ANALYSIS_CROSS_RANK_STRAGGLERS_H

#include <stddef.h>
#include <stdint.h>

#include "cross_rank_int.h"

#define XR_STRAGGLER_MIN_INSTANCES 2
#define XR_STRAGGLER_MIN_SKEW_NS 20000
#define XR_STRAGGLER_MIN_LATE_FRACTION 0.5
#define XR_STRAGGLER_CHANCE_FACTOR 1.5
#define XR_STRAGGLER_MIN_BLAME_SHARE 0.5
#define XR_STRAGGLER_MIN_SKEW_SHARE 0.1
#define XR_STRAGGLER_MIN_STEP_SHARE 0.1

/* One rank's totals over a set of instances. */
struct xr_blame {
    int64_t instances;     /* analysed instances it took part in */
    int64_t late;          /* of which it entered last */
    int64_t blame_ns;      /* waits of the others where it was last */
    int64_t wait_ns;       /* its own waits */
    int64_t skew_late_ns;  /* summed skew of the instances where it was last */
    int64_t span_late_ns;  /* summed first-enter-to-last-exit of those */
    int64_t holdup_ns;     /* summed over steps: its largest skew where it was last */
    int64_t top_steps;     /* steps where that hold-up was the largest of any rank's */
};

/* The ProfilerSteps the instances fall in, where their times are known. */
struct xr_step_totals {
    int64_t steps;         /* steps with analysed instances and a duration */
    double mean_step_ns;   /* their mean duration (mean over ranks, then steps) */
};

struct xr_verdict {
    int straggler;         /* rank, or -1 for none */
    int candidate;         /* rank with the most blame, or -1 */
    int64_t instances;     /* analysed instances */
    double blame_share;    /* candidate's share of all blame; -1 when none */
    char evidence[320];
};

/* Applies the rule to per-rank totals b[0..nranks) over `instances`
 * analysed instances; `what` names them in the plural ("allreduces").
 * steps is NULL, or has steps == 0, when no step time is known (rules 2b
 * and 5 then do not apply). */
void xr_straggler_verdict(const struct xr_blame *b, int nranks, int64_t instances,
                          const struct xr_step_totals *steps, const char *what,
                          struct xr_verdict *out);

/* Fills each analysed member's late flag, wait, completion and blame. */
int xr_stragglers_judge(struct xr_ctx *x, struct hm_err *err);

/* Writes straggler_verdicts: the whole run, then each step. */
int xr_stragglers_store(struct xr_ctx *x, struct hm_err *err);

#endif
