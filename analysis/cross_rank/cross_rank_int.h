/* What the cross-rank analyses share (cross_rank.c drives them):
 * the rank view loaded from the database being written, the collectives
 * of each rank as logical calls, and the instances matched across ranks.
 * Times are aligned ns as stored; a clock refinement moves them in place.
 * Private to analysis/cross_rank/ (and its unit tests); the rest of the
 * program uses analysis/cross_rank.h. */
#ifndef HM_ANALYSIS_CROSS_RANK_INT_H
#define HM_ANALYSIS_CROSS_RANK_INT_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "analysis/cross_rank.h"
#include "common/err.h"
#include "common/vec.h"

/* Kernel classes as HTA names them (analysis/hta.h order). */
enum { XR_COMM = 0, XR_MEM = 1, XR_COMP = 2 };

/* One GPU op (kernel, memcpy, memset) of a rank. */
struct xr_gpu {
    int64_t ts, end;
    int64_t corr;        /* correlation id; HM_NONE if absent */
    int64_t name;        /* kernels: strings.id of the name, 0 none */
    int kclass;          /* XR_COMM, XR_MEM, XR_COMP; -1 until known (xr_view) */
    unsigned char graph_phase;   /* a CUDA graph's kernel: 1 + the phase (phases.h) its
                                    node was captured in; 0 none (graph_kernels.c) */
};

/* One CUDA launch call (runtime or driver) with a correlation id. */
struct xr_launch {
    int64_t ts;
    int64_t corr;
    int64_t track;
};

/* One user annotation / NVTX range on a CPU thread. */
struct xr_annot {
    int64_t id;          /* slices.id */
    int64_t ts, end;
    int64_t track;
    int64_t name;        /* strings.id */
    int64_t iteration;   /* ProfilerStep number; HM_NONE if none */
};

/* A ProfilerStep of a rank. */
struct xr_step {
    int64_t number, ts, end;
    int dropped;
};

/* What the analyses need of one rank, each vector sorted by ts. */
struct xr_rank {
    int rank;
    int present;                   /* the rank has a ranks row */
    HM_VEC(struct xr_gpu) gpu;
    HM_VEC(struct xr_launch) launches;   /* sorted by (track, ts) */
    HM_VEC(struct xr_annot) annots;
    HM_VEC(struct xr_step) steps;
    size_t *by_corr;               /* owned: indexes into gpu, sorted by corr (ops with one) */
    size_t nby_corr;
    size_t graph_events;           /* slices of category cuda_graph: CUDA graph nodes made */
};

/* How a logical collective is keyed across ranks. */
enum xr_keytype {
    XR_KEY_PG_SEQ = 0,   /* ("Process Group Name", "Seq") */
    XR_KEY_COMM_SEQ,     /* (Comms Id / NCCL commId, Seq / seqNumber) */
    XR_KEY_ORDER,        /* k-th of (pg, op, size) within a ProfilerStep */
};

#define XR_ANY_SIZE (INT64_MIN + 1)

/* Where a logical collective's enter and exit come from. */
enum xr_src { XR_SRC_GPU = 0, XR_SRC_CPU, XR_SRC_ANNOT };

/* One collective call on one rank: its collectives rows merged (CPU op,
 * kernel, annotation), timed by the best of them. */
struct xr_coll {
    int rank;
    int keytype;           /* enum xr_keytype */
    int src;               /* enum xr_src */
    int64_t row;           /* collectives.id of the row that gives the times */
    int64_t pg;            /* id in xr_ctx.names of the pg name, or of "comm:<id>"; 0 = none */
    int64_t op;            /* id in xr_ctx.names of the normalised op */
    int64_t seq;           /* key sequence, or the order index for XR_KEY_ORDER */
    int64_t size;          /* elements (in msg nelems or input dims); HM_NONE */
    int64_t size_key;      /* size as a matching key: size, or XR_ANY_SIZE for the
                              second pass over calls the first left alone */
    int64_t group_size;    /* HM_NONE if unknown */
    int64_t step;          /* ProfilerStep number; HM_NONE */
    int64_t track;         /* track of the timing row (CPU rows: for overlap tests) */
    int64_t enter, exit;   /* aligned ns */
    int64_t inst;          /* index into xr_ctx.inst; -1 unmatched */
    /* wait states, filled by stragglers.c (repair by clock_refine.c) */
    int64_t repair, wait, completion, blame;
    int late;
};

/* One collective matched across ranks. */
struct xr_inst {
    int keytype;
    int64_t pg, op, seq, step;
    int64_t group_size;
    size_t first, n;       /* its members: xr_ctx.members[first .. first + n) */
    int64_t first_enter, last_enter, min_exit, max_exit;
    int late_rank;         /* -1 when every rank entered at the same ns */
    int analysed;          /* counts for the straggler analysis */
    int64_t id;            /* collective_instances.id once stored */
};

/* Per-rank result of clock refinement (or of the live model's check). */
struct xr_clock {
    int fitted;            /* 1: a fit from collectives was made */
    int applied;           /* 1: the data was re-timed with it */
    int64_t samples;       /* instances used */
    int reference;         /* rank the exits were compared with */
    int64_t after_ns;      /* median exit difference after the fit */
    int64_t ref_ns;        /* aligned ns where the correction is offset_ns */
    int64_t offset_ns;     /* correction added at ref_ns */
    double drift_ppm;      /* correction slope */
    int64_t resid_ns;      /* robust scatter (1.4826 MAD) of exit differences after the fit */
    int64_t uncertainty_ns;
    int64_t before_ns;     /* median exit difference against the reference before the fit */
    int64_t violations;    /* clock condition violations found (after the fit) */
    int64_t repaired_ns;   /* largest forward shift applied by the repair */
};

struct xr_ctx {
    sqlite3 *db;                       /* borrowed from the writer */
    struct xr_view *view;              /* borrowed, NULL: read the view from db */
    struct hm_strtab *names;           /* owned: pg and op texts */
    struct xr_rank *ranks;             /* owned, indexed by rank */
    int nranks;                        /* entries in ranks (max rank + 1) */
    HM_VEC(struct xr_coll) coll;       /* logical collectives */
    HM_VEC(struct xr_inst) inst;       /* matched instances */
    HM_VEC(size_t) members;            /* indexes into coll, grouped per instance */
    struct xr_clock *clock;            /* owned, nranks entries */
    struct hm_spill *spill;            /* owned, or NULL: where the ranks' gpu, launches,
                                          annots and by_corr live (else malloc) */
    int live;                          /* clocks come from MPI: check, do not refit */
    int no_refine;                     /* never re-time the data */
    /* strings.id -> facts, filled on first use (see xr_str_*) */
    char **str;                        /* owned texts, NULL until looked up */
    signed char *kcls;                 /* kernel class, -1 unknown */
    unsigned char *aflags;             /* XR_A_* | XR_A_KNOWN */
    size_t nstr;
    sqlite3_stmt *str_st;              /* owned: SELECT str FROM strings WHERE id = ? */
    struct xr_overlap *ovl;            /* owned, or NULL: the slice index being built
                                          beside the analyses (overlap.h) */
};

/* Facts about an annotation name. */
#define XR_A_KNOWN 0x01
#define XR_A_STEP 0x02       /* ProfilerStep#N */
#define XR_A_FWD 0x04
#define XR_A_BWD 0x08
#define XR_A_OPT 0x10
#define XR_A_COLL 0x20       /* gloo:* / nccl:* collective range */

/* --- Shared helpers (cross_rank.c) ------------------------------------- */

/* A stage is done with rank r's view for now: with the view in a spill
 * arena, its pages count towards the arena's resident budget. */
void xr_rank_touched(struct xr_ctx *x, const struct xr_rank *r);
/* qsort that accepts an empty (possibly NULL) array. */
void xr_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
/* Fails with HM_ESQL and SQLite's message. */
int xr_sql_fail(struct xr_ctx *x, struct hm_err *err, const char *what);
/* Prepares sql; 0 or HM_ESQL. */
int xr_prepare(struct xr_ctx *x, const char *sql, sqlite3_stmt **st, struct hm_err *err);
/* Runs sql (several statements allowed). */
int xr_exec(struct xr_ctx *x, const char *sql, struct hm_err *err, const char *what);
/* Binds v, or NULL for HM_NONE. */
void xr_bind_opt(sqlite3_stmt *st, int i, int64_t v);
/* Column as int64, or HM_NONE when NULL. */
int64_t xr_col_opt(sqlite3_stmt *st, int col);
/* Text of a names id ("" for 0). */
const char *xr_name(const struct xr_ctx *x, int64_t id);
/* Text of strings.id id ("" when unknown); valid until the context is freed. */
const char *xr_str(struct xr_ctx *x, int64_t id);
/* XR_A_* flags of annotation name id. */
unsigned xr_str_aflags(struct xr_ctx *x, int64_t id);
/* The rank's launches on track with ts in [a, b]: [*lo, *hi) of launches. */
void xr_launch_range(const struct xr_rank *r, int64_t track, int64_t a, int64_t b, size_t *lo,
                     size_t *hi);
/* The GPU ops with correlation corr: [*lo, *hi) of r->by_corr. */
void xr_gpu_by_corr(const struct xr_rank *r, int64_t corr, size_t *lo, size_t *hi);
/* Interns text into x->names; 0 when out of memory. */
int64_t xr_intern(struct xr_ctx *x, const char *s);

#endif
