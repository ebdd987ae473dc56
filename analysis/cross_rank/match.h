/* Collective matching across ranks. A rank's collectives rows of one call
 * (record_param_comms CPU op, its NCCL kernel, the gloo:/nccl: annotation)
 * become one logical collective, timed by the GPU kernel where there is one
 * (also a kernel launched inside an annotation-only call), else the CPU
 * range. Logical collectives are matched across ranks by (pg, seq), else
 * (comms id, seq), else as the k-th call of the same (pg, op, size) in the
 * same ProfilerStep (gloo and NCCL traces without Seq). Not here: clocks,
 * wait states (clock_refine.c, stragglers.c). */
#ifndef HM_ANALYSIS_CROSS_RANK_MATCH_H
#define HM_ANALYSIS_CROSS_RANK_MATCH_H

#include "cross_rank_int.h"

/* Builds x->coll from the collectives table (needs the rank view). */
int xr_match_collect(struct xr_ctx *x, struct hm_err *err);

/* Groups x->coll into x->inst / x->members and summarises them. */
int xr_match_build(struct xr_ctx *x, struct hm_err *err);

/* Recomputes each instance's enters, exits and late rank from its members
 * (after the clocks moved them). */
void xr_match_summarise(struct xr_ctx *x);

/* Writes collective_instances and collective_instance_ranks. */
int xr_match_store(struct xr_ctx *x, struct hm_err *err);

/* True for point-to-point operations (send, recv, ...), which have no
 * NxN wait states. */
int xr_op_is_p2p(const char *op);

#endif
