/* libhtamerge-inject.so: the live-capture library that the collector puts
 * into the training process's environment. Its whole outward interface is
 * the four entry points the host libraries look up by name, and the
 * hand-over of CUPTI to torch.profiler; everything
 * else is hidden (-fvisibility=hidden and inject.map). Records go to the
 * collector through the shared-memory ring named by HTAMERGE_RING; without
 * it the library does nothing.
 *
 * Environment (read once per process):
 *   HTAMERGE_RING            ring name, set by the collector (none: inert)
 *   HTAMERGE_CAPTURE         "cupti,nvtx,nccl" (default all); leaving out cupti
 *                            leaves CUPTI to torch.profiler (CUDA 13 allows one
 *                            CUPTI client, and the library otherwise claims it
 *                            first, at cuInit)
 *   HTAMERGE_CUPTI_ALL_APIS  trace every runtime/driver call, not only launches,
 *                            copies, memsets, allocations and waits (slower)
 *   HTAMERGE_INJECT_DEBUG    a stderr line per notable step
 *   HTAMERGE_CLOCK_SKEW_NS, HTAMERGE_CLOCK_DRIFT_PPM: the clock test hook,
 *                            applied to every timestamp written */
#ifndef INJ_INJECT_H
#define INJ_INJECT_H

/* The library builds with -fvisibility=hidden; only these are visible. */
#define INJ_EXPORT __attribute__((visibility("default")))

/* CUDA_INJECTION64_PATH: called by the CUDA driver from cuInit; starts
 * CUPTI activity capture (kernels, copies, memsets, synchronisation,
 * launch calls) unless another CUPTI subscriber holds CUPTI. Returns 1. */
INJ_EXPORT int InitializeInjection(void);

/* NVTX_INJECTION64_PATH: called by each NVTX client (one per library that
 * embeds NVTX) with its export table; fills the core callbacks. Returns 1,
 * or 0 (NVTX then turns itself into no-ops) when capture is off. The
 * parameter is NVTX's NvtxGetExportTableFunc_t. */
INJ_EXPORT int InitializeInjectionNvtx2(const void *(*get_export_table)(unsigned int id));

/* htamerge's Python hooks (ctypes, the library already loaded by CUDA):
 * to_profiler 1 before a torch.profiler session that records CUDA prepares
 * its trace, 0 after it stops. CUPTI serves one client at a time, so
 * htamerge lets Kineto have it for the session and takes it back after;
 * the merger takes that window's GPU activity from the profiler's trace.
 * Returns 0 done, 1 nothing to do, -1 refused (said on stderr). */
INJ_EXPORT int htamerge_cupti_handover(int to_profiler);

/* The Python hooks at a step boundary, carrying out the capture plan
 * (common/capture_plan.h): on a plan of steps, 1 attaches CUPTI for the
 * coming step and 0 detaches it; on other plans 1 keeps CUPTI attached
 * (a requested step) until 0. Returns 0, or 1 when htamerge holds no
 * CUPTI in this process. */
INJ_EXPORT int htamerge_cupti_record(int on);

/* NCCL_PROFILER_PLUGIN: NCCL 2.28 looks up ncclProfiler_v5 first, then
 * ncclProfiler_v4 (declared in nccl_abi.h). */

#endif
