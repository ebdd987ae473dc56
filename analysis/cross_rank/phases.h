/* A rank's forward / backward / optimizer annotations as a list sorted by
 * start, and which of them holds a time: what the phases' GPU time
 * (phase_gpu.c) and the critical path (critical_path.c) ask. */
#ifndef HM_ANALYSIS_CROSS_RANK_PHASES_H
#define HM_ANALYSIS_CROSS_RANK_PHASES_H

#include "cross_rank_int.h"

enum { XR_PH_FWD, XR_PH_BWD, XR_PH_OPT, XR_PH_OTHER };

struct xr_phase {
    int64_t ts, end, max_end;   /* max_end: the largest end of this and the earlier phases */
    int kind;                   /* XR_PH_* */
};

struct xr_phases {
    struct xr_phase *v;         /* owned, sorted by ts */
    size_t n;
};

/* Fills p from k's annotations. Returns 0 or HM_ENOMEM. */
int xr_phases_of(struct xr_ctx *x, const struct xr_rank *k, struct xr_phases *p);
void xr_phases_free(struct xr_phases *p);

/* The kind of the innermost (latest started) phase holding t, else
 * XR_PH_OTHER; a binary search, then back over the phases that may still
 * be open. */
int xr_phase_at(const struct xr_phases *p, int64_t t);
/* The same, and the start of that phase in *start (INT64_MIN for other). */
int xr_phase_find(const struct xr_phases *p, int64_t t, int64_t *start);
/* "forward", "backward", "optimizer" or "other". */
const char *xr_phase_name(int kind);

#endif
