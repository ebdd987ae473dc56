/* Step breakdown per rank, MLPerf style: every instant of a ProfilerStep
 * goes to one bucket, first match wins: exposed communication (a
 * communication kernel, or on ranks without any the CPU range of a
 * collective, while no computation kernel runs), forward / backward /
 * optimizer (the CPU is inside an annotation of that name), compute (a
 * computation kernel runs), other. Annotation names when present, else
 * kernel classes alone. */
#ifndef HM_ANALYSIS_CROSS_RANK_STEP_BREAKDOWN_H
#define HM_ANALYSIS_CROSS_RANK_STEP_BREAKDOWN_H

#include "cross_rank_int.h"

/* Fills step_breakdown from x's rank view and logical collectives. */
int xr_step_breakdown(struct xr_ctx *x, struct hm_err *err);

#endif
