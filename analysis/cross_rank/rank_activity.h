/* Each rank's activity in time buckets over the run (table rank_activity),
 * for the views that draw whole runs: see analysis/activity_buckets.h.
 * Communication is the rank's communication kernels and its matched
 * collectives that no kernel timed (gloo, CPU ops). Busy is that, and any
 * kernel or copy on any of its GPU streams; on a rank without GPU ops, its
 * annotated work instead (forward, backward, optimizer, user ranges; not
 * the step ranges, which cover everything). Every rank shares one origin
 * and bucket width. */
#ifndef HM_ANALYSIS_CROSS_RANK_RANK_ACTIVITY_H
#define HM_ANALYSIS_CROSS_RANK_RANK_ACTIVITY_H

#include "cross_rank_int.h"

int xr_rank_activity(struct xr_ctx *x, struct hm_err *err);

#endif
