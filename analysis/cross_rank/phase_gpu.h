/* GPU time of a step's phases: the GPU work launched while the rank's CPU
 * was inside a forward, backward or optimizer annotation (by the launch's
 * time, on any thread of the rank: autograd launches the backward's
 * kernels from its own threads), as the union of that work's intervals on
 * the GPU. Work launched in the step outside the three is "other". The
 * four sum to the step's GPU busy time (steps.gpu_busy_us) give or take
 * overlap between them, whereas the step breakdown's CPU-time buckets say
 * where the host was, which on a GPU-bound loop runs ahead of the GPU. */
#ifndef HM_ANALYSIS_CROSS_RANK_PHASE_GPU_H
#define HM_ANALYSIS_CROSS_RANK_PHASE_GPU_H

#include "cross_rank_int.h"
#include "phases.h"

/* Indexed by the phase kinds of phases.h. */
enum { XR_PG_FWD = XR_PH_FWD, XR_PG_BWD = XR_PH_BWD, XR_PG_OPT = XR_PH_OPT, XR_PG_OTHER = XR_PH_OTHER,
       XR_PG__COUNT };

/* Fills out[i][phase] (ns) for each of k's steps (k->steps.n rows, zeroed
 * by the caller). Returns 0 or HM_ENOMEM. */
int xr_phase_gpu(struct xr_ctx *x, const struct xr_rank *k, int64_t (*out)[XR_PG__COUNT]);

#endif
