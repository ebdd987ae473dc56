/* The cross-rank analyses beside the slice index (overlap.c). */
#ifndef HM_ANALYSIS_CROSS_RANK_OVERLAP_H
#define HM_ANALYSIS_CROSS_RANK_OVERLAP_H

#include "cross_rank_int.h"

struct mrg_writer;

/* Starts building the slice index on another thread, with the writer's
 * connection, and points x->db at a scratch database holding what the
 * analyses read. The load's slices must be final but for their times
 * (the index is on correlation ids). Until xr_overlap_end, nothing on
 * this thread may use w's connection without xr_overlap_join first.
 * Where the scratch database cannot be made, nothing changes: the
 * analyses run on the load as they would without it. */
void xr_overlap_begin(struct xr_ctx *x, struct mrg_writer *w);

/* Waits for the index; 0 or its error. Nothing to wait for: 0. */
int xr_overlap_join(struct xr_ctx *x, struct hm_err *err);

/* Waits for the index, points x->db at the load again and, when rc and the
 * index are 0, copies every table the analyses filled into it. Returns rc,
 * else the index's or the copy's error. Without xr_overlap_begin: rc. */
int xr_overlap_end(struct xr_ctx *x, int rc, struct hm_err *err);

#endif
