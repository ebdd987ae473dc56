/* Which steps a rank has: the step source priority (issue 17).
 *
 * A rank's steps all come from the first of these sources that has any:
 *   profiler  Kineto ProfilerStep#N ranges (the trace reader makes them);
 *   hooks     NVTX ranges named "step" in domain "htamerge" (the Python
 *             bootstrap's hooks, one per optimizer step; the ring source
 *             keeps the domain as args {"domain": "htamerge"}). Numbered
 *             1, 2, ... in order of their start;
 *   nvtx      user NVTX / record_function ranges (categories nvtx,
 *             user_annotation) with a step-like name (step, train_step,
 *             training_step, iteration, iter, train_iter, ProfilerStep,
 *             global_step; any case, with or without a trailing number
 *             such as "step 12" or "iteration_3") that repeat, one after
 *             the other, on one CPU thread: the group with the longest
 *             total time (the outermost) wins. Numbered by their trailing
 *             numbers when every range has one and they increase, else 1..;
 *   inferred  cut from the period of the rank's collective stream (op and
 *             size), else its NVTX / annotation names, else its kernel
 *             names in launch order (step_infer.h), at least 3 steps (a
 *             period of one event only for collectives); numbered 1.. A step
 *             runs from the CPU time of its first event (a GPU op's launch
 *             call where known) to the next step's start; the last one to
 *             the end of its block's last event. These have no slice.
 * Pure computation over one batch (the whole rank). */
#ifndef HM_ANALYSIS_STEP_SOURCE_H
#define HM_ANALYSIS_STEP_SOURCE_H

#include "common/batch.h"

struct an_ctx;

/* Gives b the steps of its best source: a batch with steps keeps those of
 * its highest-priority source and loses the others (several files of one
 * rank may bring different ones); a batch without looks for hooks, NVTX,
 * then infers. c (classified: is_gpu, cpu_corr) gives the launch times of
 * GPU ops. Returns 0 or HM_ENOMEM. */
int an_steps_resolve(struct hm_batch *b, const struct an_ctx *c);

/* The source of b's steps (that of the first; one source per rank), or -1
 * when it has none. */
int an_steps_source(const struct hm_batch *b);

#endif
