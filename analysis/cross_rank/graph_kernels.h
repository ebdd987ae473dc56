/* CUDA graph kernels and their CPU-side context (table graph_kernels).
 * A replayed kernel's launch is its graph's (cudaGraphLaunch shares the
 * kernels' correlation id), so the ranges open around the replay are its
 * launch context, as for any kernel. Its capture context is where its node
 * was made: live capture records each node made or cloned on the making
 * thread (collector/sources/inject/cupti.c, category cuda_graph), and a
 * kernel's node (a node of the executable graph, a clone) is followed back
 * to the node made at capture, whose innermost open annotation and phase
 * are taken. Ranks without such records (Kineto traces) are left alone.
 *
 * Runs before the stages that charge GPU time to phases: it marks each
 * graph kernel's xr_gpu.graph_phase, which phase_gpu.c uses where the
 * replay's own launch falls in no phase (a replay inside a step only). */
#ifndef HM_ANALYSIS_CROSS_RANK_GRAPH_KERNELS_H
#define HM_ANALYSIS_CROSS_RANK_GRAPH_KERNELS_H

#include "cross_rank_int.h"

/* Fills graph_kernels and the graph kernels' graph_phase. 0 or a negative
 * HM_E* code. */
int xr_graph_kernels(struct xr_ctx *x, struct hm_err *err);

#endif
