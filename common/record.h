/* The record model: what every source produces and every stage consumes.
 * A rank's profile is tracks (CPU threads, GPU streams) holding slices,
 * plus collectives (metadata attached to a slice), counters, profiler steps
 * and one rank-info record. Strings are ids into the owning batch's table.
 * Times are int64 nanoseconds on the rank's own trace clock; the merger maps
 * them to the aligned clock (see hm_rank_info.base_time_ns). */
#ifndef HM_RECORD_H
#define HM_RECORD_H

#include <stdint.h>

#include "strtab.h"

enum hm_track_kind {
    HM_TRACK_CPU_THREAD = 0,
    HM_TRACK_GPU_STREAM = 1,
};

/* Event categories we act on; anything else is HM_CAT_OTHER with its text
 * kept in hm_slice.cat_name. Values are stored in the database: append only. */
enum hm_cat {
    HM_CAT_OTHER = 0,
    HM_CAT_CPU_OP,
    HM_CAT_USER_ANNOTATION,
    HM_CAT_GPU_USER_ANNOTATION,
    HM_CAT_KERNEL,
    HM_CAT_GPU_MEMCPY,
    HM_CAT_GPU_MEMSET,
    HM_CAT_CUDA_RUNTIME,
    HM_CAT_CUDA_DRIVER,
    HM_CAT_CUDA_SYNC,
    HM_CAT_CUDA_EVENT,
    HM_CAT_PYTHON_FUNCTION,
    HM_CAT_COLLECTIVE_COMM,
    HM_CAT_CPU_INSTANT_EVENT,
    HM_CAT_OVERHEAD,
    HM_CAT_TRACE,
    HM_CAT_NVTX,
    HM_CAT_CUDA_GRAPH,     /* a CUDA graph node made or an executable graph instantiated (CUPTI) */
    HM_CAT__COUNT
};

/* Category text <-> enum. Unknown text gives HM_CAT_OTHER. */
enum hm_cat hm_cat_parse(const char *s, unsigned len);
const char *hm_cat_name(enum hm_cat cat);

/* True for categories that execute on a GPU stream. */
int hm_cat_is_gpu(enum hm_cat cat);

struct hm_track {
    uint32_t kind;     /* enum hm_track_kind */
    int64_t pid;       /* process id, or device index for GPU streams */
    int64_t tid;       /* thread id, or stream id for GPU streams */
    hm_strid name;     /* thread name or "stream N"; 0 if unknown */
};

#define HM_NONE (-1)   /* "absent" for optional integer fields */

/* hm_slice.flags */
#define HM_SLICE_F_STREAM_ARG 0x1u /* the source named a stream (Kineto args.stream):
                                      HTA counts only such events as GPU work */

/* hm_rank_info.flags */
#define HM_INFO_F_FRACTIONAL_TS 0x1u /* some ts had a fraction or was missing:
                                        HTA then rounds every event inward to whole us */
#define HM_INFO_F_LIVE 0x2u          /* read back from a live capture, which holds the
                                        whole run, not only the profiled steps */

struct hm_slice {
    int64_t ts;          /* start, ns on the rank's trace clock */
    int64_t dur;         /* ns, >= 0 */
    int64_t correlation; /* CUPTI correlation id, HM_NONE if absent */
    int64_t external_id; /* Kineto "External id", HM_NONE if absent */
    int64_t bytes;       /* bytes moved/set by memcpy/memset, HM_NONE if absent */
    uint32_t track;      /* index into the batch's tracks */
    hm_strid name;
    hm_strid cat_name;   /* category text as found in the source */
    hm_strid args;       /* args as compact JSON object text; 0 if none */
    uint16_t cat;        /* enum hm_cat */
    uint16_t flags;      /* HM_SLICE_F_* */
    int32_t iteration;   /* ProfilerStep number containing it, HM_NONE if none
                            or not computed yet */
};

/* Collective metadata found on a slice (record_param_comms CPU op, NCCL
 * kernel, gloo/nccl annotation). One per slice that carries it. */
struct hm_collective {
    uint32_t slice;      /* index into the batch's slices */
    hm_strid op;         /* "allreduce", "allgather", ... ("Collective name") */
    hm_strid pg_name;    /* "Process Group Name" */
    hm_strid pg_desc;    /* "Process Group Description" */
    hm_strid pg_ranks;   /* "Process Group Ranks" text, e.g. "[0, 1]" */
    hm_strid dtype;
    hm_strid comms_id;   /* "Comms Id" as text; 0 if absent */
    int64_t seq;         /* "Seq", HM_NONE if absent */
    int64_t in_nelems;   /* HM_NONE if absent */
    int64_t out_nelems;
    int64_t group_size;
};

/* A sampled value on a device: [memory] instants give "Total Allocated" and
 * "Total Reserved" per device (device -1 is the CPU). */
struct hm_counter {
    int64_t ts;
    double value;
    hm_strid name;
    int32_t device;
    int32_t pad;
};

/* Where a rank's steps came from (hm_step.source, steps.source), in the
 * order of priority: a rank's steps all come from the first source that
 * has any (analysis/step_source.h). Values go on the wire: append only. */
enum hm_step_source {
    HM_STEP_PROFILER = 0, /* Kineto ProfilerStep#N */
    HM_STEP_HOOKS,        /* NVTX ranges "step" in domain "htamerge" (the bootstrap) */
    HM_STEP_NVTX,         /* user NVTX / record_function ranges with a step-like name */
    HM_STEP_INFERRED,     /* cut from the period of the collective, NVTX or kernel stream */
    HM_STEP__COUNT
};
const char *hm_step_source_name(enum hm_step_source s); /* "profiler", ... */
enum hm_step_source hm_step_source_parse(const char *s); /* NULL or unknown: profiler */

#define HM_STEP_NO_SLICE UINT32_MAX /* hm_step.slice of a step with no slice (inferred) */

/* One step: a ProfilerStep#N range on the CPU, or a step of another source. */
struct hm_step {
    int64_t number;      /* N of ProfilerStep#N (other sources: see hm_step_source) */
    int64_t ts, dur;
    uint32_t slice;      /* index of its slice; HM_STEP_NO_SLICE if none */
    uint8_t source;      /* enum hm_step_source; 0 = profiler */
    uint8_t pad[3];
};

/* Events a source saw but did not keep, by reason; stored per rank. */
enum hm_skip_reason {
    HM_SKIP_NO_DUR = 0,     /* X event without dur */
    HM_SKIP_BAD_VALUE,      /* wrong type, NaN, out-of-range number */
    HM_SKIP_NO_CAT,         /* X event without cat */
    HM_SKIP_UNSUPPORTED_PH, /* phases we do not model (B/E/flows are derivable) */
    HM_SKIP_NEGATIVE_DUR,
    HM_SKIP_UNREADABLE_FILE, /* a whole trace file the reader refused (count: files) */
    HM_SKIP__COUNT
};
const char *hm_skip_name(enum hm_skip_reason r);

/* Facts about the rank that produced a batch. */
struct hm_rank_info {
    int32_t rank;            /* HM_NONE until known */
    int32_t world_size;      /* HM_NONE if unknown */
    int64_t base_time_ns;    /* Unix ns of trace time 0; HM_NONE if absent */
    int64_t pid;             /* host process id, HM_NONE if unknown */
    hm_strid rank_source;    /* "distributedInfo", "file name", "mpi", ... */
    hm_strid backend;        /* distributedInfo.backend */
    hm_strid hostname;
    hm_strid source_file;
    hm_strid pg_config;      /* distributedInfo.pg_config as JSON text */
    hm_strid device_props;   /* deviceProperties as JSON text */
    hm_strid nccl_version;
    hm_strid trace_meta;     /* other top-level scalars as a JSON object */
    uint32_t flags;          /* HM_INFO_F_* */
    uint64_t skipped[HM_SKIP__COUNT];
};

#endif
