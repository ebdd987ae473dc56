/* NVTX and record_function range stitching across ranks. A range's key is
 * its name path from the root of its thread (enclosing annotation names
 * joined by '/', ProfilerStep#N and gloo:/nccl: collective ranges left
 * out), its ProfilerStep, and its occurrence: the n-th range of that path
 * in that step on its rank. The same key on several ranks is one stitched
 * range with per-rank enter and exit, skew and late rank, and a GPU
 * projection per rank as Nsight Systems' nvtx_gpu_proj_sum defines it (the
 * GPU ops whose launch call lies inside the range on the same thread). */
#ifndef HM_ANALYSIS_CROSS_RANK_NVTX_STITCH_H
#define HM_ANALYSIS_CROSS_RANK_NVTX_STITCH_H

#include "cross_rank_int.h"

/* Fills nvtx_stitched and nvtx_stitched_ranks from x's rank view. */
int xr_nvtx_stitch(struct xr_ctx *x, struct hm_err *err);

#endif
