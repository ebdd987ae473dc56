/* HTA-compatible per-rank analyses: temporal breakdown, communication /
 * computation overlap, idle-time breakdown, kernel breakdown and steps.
 * Pure computation over one rank's batch: no I/O, no SQLite. The merger
 * runs it at ingest and stores the results; report re-runs it on batches
 * loaded back from the database when the user changes the options.
 * Definitions follow HTA exactly by default (docs/ANALYSES.md section 2). */
#ifndef HM_ANALYSIS_HTA_H
#define HM_ANALYSIS_HTA_H

#include <stdint.h>

#include "common/batch.h"
#include "common/err.h"
#include "common/vec.h"

/* Kernel classes, HTA's order of precedence. */
enum an_kclass {
    AN_KCLASS_COMM = 0,   /* ^nccl, ncclKernel, ncclDevKernel, ^hccl, ^hip */
    AN_KCLASS_MEMORY,     /* ^Memcpy, ^Memset, ^dma */
    AN_KCLASS_COMP,       /* every other GPU kernel */
    AN_KCLASS__COUNT
};
const char *an_kclass_name(enum an_kclass k); /* "COMMUNICATION", ... */
enum an_kclass an_kclass_of(const char *kernel_name);

struct an_options {
    int all_steps;          /* 1: keep the last ProfilerStep (HTA drops it) */
    const int64_t *steps;   /* keep only these step numbers; NULL = all */
    int nsteps;
};

/* When the batch holds "htamerge/cupti recording" samples (live capture
 * that paused CUPTI), paused time between GPU ops counts in neither
 * idle_us nor kernel_us (the span), nor in an_idle's gaps. */
struct an_temporal {
    int64_t idle_us, compute_us, non_compute_us, kernel_us;
    double idle_pct, compute_pct, non_compute_pct;
};

struct an_overlap {
    int64_t comm_us, overlap_us;
    double overlap_pct;      /* NaN when comm_us == 0 (HTA prints NaN) */
};

struct an_idle {
    int64_t stream;
    int64_t host_wait_us, kernel_wait_us, other_us;
};

/* Per kernel name on one rank. */
struct an_kernel {
    char *name;              /* owned */
    int kclass;              /* enum an_kclass */
    int64_t count;
    int64_t sum_us, min_us, max_us;
    double mean_us, std_us;
};

struct an_step {
    int64_t number;
    int64_t ts_ns, dur_ns;   /* CPU range of ProfilerStep#N, rank clock */
    int64_t gpu_busy_us;     /* union of GPU ops launched in this step */
    int64_t kernel_count;
    int dropped;             /* 1 if removed by the last-step rule */
    int source;              /* enum hm_step_source of the rank's steps */
};

/* Kernel-type labels of HTA's kernel breakdown: a bit per class, so
 * label_us[AN_LABEL_COMP | AN_LABEL_COMM] is "COMPUTATION overlapping
 * COMMUNICATION" and label_us[AN_LABEL_COMM] is communication alone. */
enum { AN_LABEL_COMP = 1, AN_LABEL_COMM = 2, AN_LABEL_MEMORY = 4 };
const char *an_label_name(int mask); /* "COMPUTATION overlapping COMMUNICATION" */

struct an_rank_result {
    int rank;
    int has_gpu;             /* 0: the rank has no GPU events */
    struct an_temporal temporal;
    struct an_overlap overlap;
    int64_t kclass_us[AN_KCLASS__COUNT];  /* union time per class */
    int64_t comp_overlap_comm_us;         /* label_us[COMP|COMM] */
    int64_t label_us[8];                  /* disjoint time per label mask */
    HM_VEC(struct an_idle) idle;          /* sorted by stream */
    HM_VEC(struct an_kernel) kernels;     /* sorted by sum_us descending */
    HM_VEC(struct an_step) steps;         /* sorted by number */
};

/* Runs every analysis on one rank's batch. The batch's slices get their
 * iteration field filled in. Returns 0 or a negative HM_E* code. */
int an_hta_run(struct hm_batch *b, const struct an_options *opt,
               struct an_rank_result *out, struct hm_err *err);

/* The same for nopts option sets at once (out has nopts entries), sharing
 * the work that does not depend on the options. */
int an_hta_run_modes(struct hm_batch *b, const struct an_options *opts, int nopts,
                     struct an_rank_result *out, struct hm_err *err);

/* Frees what an_hta_run allocated inside r (not r itself). */
void an_rank_result_clear(struct an_rank_result *r);

#endif
