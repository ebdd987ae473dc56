/* Memory peaks (table memory_peaks): each memory sample of a rank (the
 * counters Total Allocated and Total Reserved, from Kineto's [memory]
 * events) falls in the ProfilerStep holding its time and in the innermost
 * forward / backward / optimizer annotation open then (else "other"); per
 * (rank, device, step, phase) the largest of each counter and when the
 * allocated one peaked. A sample is the state after an allocation or a
 * free, so the peak of a phase is the largest of its samples and of what
 * was in use when it began (the sample before its first): as
 * torch.cuda.max_memory_allocated() after a reset at the phase's start.
 * Samples at a phase's very start (the Python hooks take one there, and
 * between their sparse samples memory may have been freed) say that level
 * themselves. */
#ifndef HM_ANALYSIS_CROSS_RANK_MEMORY_PEAKS_H
#define HM_ANALYSIS_CROSS_RANK_MEMORY_PEAKS_H

#include "cross_rank_int.h"

int xr_memory_peaks(struct xr_ctx *x, struct hm_err *err);

#endif
