/* Where the parts of a sharded ingest's export wrote the slices of the
 * collectives (private to export_chrome.c and cli/cmd_export.c): each
 * part notes, per collective of its exported ranks, the event's pid, tid
 * and ts; the document's last part draws the arrows of the index's
 * collective instances through them. A collective is named by its rank and
 * its order among that rank's collectives, which the index and the shard
 * share (both writers store a rank's batches in the same order). One entry
 * per exported collective row: 48 bytes each. */
#ifndef HM_QUERY_EXPORT_ENDS_H
#define HM_QUERY_EXPORT_ENDS_H

#include <stdint.h>

/* One exported slice an arrow can start, pass or end at. */
struct qry_export_end {
    int rank;
    int64_t ord;           /* the collective's order within its rank (0-based); unused for a launch */
    int64_t pid, tid;      /* where its event was written */
    int64_t slice, ts;     /* its id in its file, its aligned start */
};

struct qry_export_ends;

struct qry_export_ends *qry_export_ends_new(void);
void qry_export_ends_free(struct qry_export_ends *e);

/* 0, or HM_ENOMEM. */
int qry_export_ends_add(struct qry_export_ends *e, const struct qry_export_end *end);

/* The end of rank's collective number ord, or NULL when it was not
 * exported. Sorts what was added on the first call after an add. */
const struct qry_export_end *qry_export_ends_find(struct qry_export_ends *e, int rank, int64_t ord);

#endif
