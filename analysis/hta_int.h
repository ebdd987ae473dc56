/* Internal to analysis/: the working state of one an_hta_run. */
#ifndef HM_ANALYSIS_HTA_INT_H
#define HM_ANALYSIS_HTA_INT_H

#include <stddef.h>
#include <stdint.h>

#include "common/batch.h"
#include "common/vec.h"

struct an_rank_result;

/* A CPU row's correlation id and slice index, sorted for joins. */
struct an_corr {
    int64_t corr;
    size_t idx;
};

/* One kept event in HTA's units (us when rounded, else ns). */
struct an_row {
    int64_t start, end;
    int64_t stream;     /* HTA's stream: args.stream, or -1 */
    int64_t rt_start;   /* start of the CPU launch call */
    uint32_t slice;
    uint32_t name;      /* the slice's name id, for grouping */
    uint8_t has_rt;
    uint8_t kclass;     /* enum an_kclass, by name */
    uint8_t idle_kind;  /* kernel, memcpy or memset: counted by idle breakdown */
};

struct an_interval {
    int64_t start, end;
};

struct an_ctx {
    int fractional;         /* HTA rounds to whole us: units are us */
    int drop_last;          /* the last-step rule applies */
    int64_t last_start;     /* in units; INT64_MAX when nothing is dropped */
    int64_t first_start;    /* in units: rows before it are outside the window (hta.c step_window) */
    int skip_first;         /* the first step (warm-up) is left out of the window */
    uint8_t *is_gpu;        /* owned; per slice */
    struct an_corr *cpu_corr; /* owned; CPU rows with a correlation, sorted */
    size_t ncpu_corr;
    HM_VEC(struct an_row) rows; /* owned; kept rows */
    HM_VEC(struct an_row) all;  /* owned; every row with a stream, unfiltered */
    int64_t *step_start;        /* owned; per batch step, start in units */
    uint8_t *kclass;            /* owned; per name id, 0xff = not computed yet */
    uint32_t nkclass;
    /* owned; when live capture paused CUPTI, in units, sorted and disjoint:
     * nothing was recorded there, so that time is not GPU idle. The last
     * may end at INT64_MAX (paused to the end of the run). */
    struct an_interval *paused;
    size_t npaused;
};

/* Fills the metrics of r from the rows in c (hta_metrics.c). */
int an_metrics(struct an_ctx *c, const struct hm_batch *b, struct an_rank_result *r);

double an_round(double x, int decimals);
struct an_ctx;
int an_push_row(struct an_ctx *c, struct an_row **v, size_t *n, size_t *cap, const struct hm_batch *b,
                size_t i, int64_t start, int64_t end, int64_t rt_start);
int64_t an_corr_pos(const struct an_corr *v, size_t n, int64_t corr);

/* Merges rows into disjoint intervals exactly as HTA does (a new interval
 * starts only when ts > the running max end). *out is malloc'd. */
int an_merge(const struct an_row *const *rows, size_t n, struct an_interval **out, size_t *nout);
int64_t an_intervals_len(const struct an_interval *v, size_t n);

/* How much of [start, end) lies in c's paused intervals (0 when none). */
int64_t an_paused_within(const struct an_ctx *c, int64_t start, int64_t end);

#endif
