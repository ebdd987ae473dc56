/* Clock refinement from collectives, and the clock condition.
 *
 * A blocking collective ends at about the same moment on all its ranks, so
 * each matched instance gives a sample (reference exit - rank exit) at the
 * rank's exit time. Offline, a robust fit of those samples (Theil-Sen slope,
 * kept only when significant, and the median offset) refines each rank's
 * base-time alignment; when the correction exceeds its own uncertainty the
 * rank's data is re-timed (mrg_writer_realign) and its clock method becomes
 * "collectives". Ranks that share no instance with the reference are fitted
 * against ranks already fitted. Live runs keep the MPI ping-pong model; the
 * same samples only check it (clock_checks).
 *
 * Clock condition: no rank may leave an NxN instance before the last rank
 * entered it. Violations left after the fit are counted and repaired in the
 * matched records (not in slices) as Scalasca's controlled logical clock
 * does: the exit jumps forward to the last enter, and the rank's later
 * records keep that shift, amortised at 1% of elapsed time, so local
 * intervals keep their length. */
#ifndef HM_ANALYSIS_CROSS_RANK_CLOCK_REFINE_H
#define HM_ANALYSIS_CROSS_RANK_CLOCK_REFINE_H

#include "cross_rank_int.h"
#include "store/writer.h"

/* Least samples (instances shared with a fitted rank) for a fit. */
#define XR_CLOCK_MIN_SAMPLES 3

/* Fits (offline) or checks (live) every rank's clock; re-times data
 * through w when a fit is applied, and moves x's in-memory times with it. */
int xr_clock_refine(struct xr_ctx *x, struct mrg_writer *w, struct hm_err *err);

/* Counts and repairs clock condition violations in the matched records,
 * then re-summarises the instances. */
int xr_clock_condition(struct xr_ctx *x, struct hm_err *err);

/* Writes clock_checks. */
int xr_clock_store(struct xr_ctx *x, struct hm_err *err);

/* Robust line fit of y against x (n points, x relative to some origin so
 * doubles stay exact): *slope (y per x unit; 0 when it is not significant,
 * |slope| < 3 standard errors, or the x span is under 50 ms), *offset (at
 * x = 0), *sigma (1.4826 x MAD of the residuals). Exposed for tests.
 * Returns 0, or HM_ENOMEM. */
int xr_robust_fit(const double *xs, const double *ys, size_t n, double *slope, double *offset,
                  double *sigma);

#endif
