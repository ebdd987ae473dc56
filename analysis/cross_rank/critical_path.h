/* The critical path of each step across ranks (issue 18): the chain of
 * work and communication that set the step's duration.
 *
 * It is walked backwards from the step's end on the rank that ended it
 * last. On the current rank, the latest matched collective that ended
 * before the cursor splits the time: after its exit, the rank's own work
 * up to the cursor is on the path; before, the collective's transfer (from
 * its last rank's enter to this rank's exit) is on the path, and the path
 * moves to the rank that entered last (the one the others waited for), at
 * its enter. With no collective left, the rank's work back to its step's
 * start closes the path. So a late rank's work before a collective, the
 * collective, and whatever the ending rank did after it, are the path,
 * and the waits that other ranks spent are not.
 *
 * A work segment is cut at the rank's forward / backward / optimizer
 * annotations (else "other"); each piece says how much of it a
 * computation kernel of the rank ran (compute) and how much not (host:
 * CPU work, launch gaps, idle GPU). Stored in critical_path, one row per
 * segment in time order (seq 0 first). */
#ifndef HM_ANALYSIS_CROSS_RANK_CRITICAL_PATH_H
#define HM_ANALYSIS_CROSS_RANK_CRITICAL_PATH_H

#include "cross_rank_int.h"

/* Fills critical_path for every step number that some rank has. */
int xr_critical_path(struct xr_ctx *x, struct hm_err *err);

#endif
