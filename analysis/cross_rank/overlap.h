/* The cross-rank stage's last analyses beside the slice index (overlap.c). */
#ifndef HM_ANALYSIS_CROSS_RANK_OVERLAP_H
#define HM_ANALYSIS_CROSS_RANK_OVERLAP_H

#include "cross_rank_int.h"

struct mrg_writer;

/* Runs tail(x) on another thread, with x->db a scratch database holding
 * the load's strings, while mrg_writer_build_slice_index(w) runs on this
 * one; then copies every table tail filled into the load (x->db again).
 * tail may use x->db and x's view, never w nor the load's connection.
 * The load's slices must be final. 0 or the first error (the index's,
 * else the tail's, else the copy's); the thread is always joined. */
int xr_overlap_tail(struct xr_ctx *x, struct mrg_writer *w, int (*tail)(struct xr_ctx *x, struct hm_err *err),
                    struct hm_err *err);

#endif
