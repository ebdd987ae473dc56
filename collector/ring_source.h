/* The live-capture source: drains the shared-memory ring that the injection
 * library (or the test producer) fills inside the child, and turns its
 * records into batches. Ring string ids live for the whole run, batch
 * string ids for one batch: this file keeps the mapping. Drops and losses
 * the ring counted become counters "htamerge/ring dropped records" and
 * "htamerge/ring lost records" (device -1), so they reach the database. */
#ifndef HM_COLLECTOR_RING_SOURCE_H
#define HM_COLLECTOR_RING_SOURCE_H

#include <stddef.h>

#include "common/batch.h"
#include "common/err.h"

struct col_ring;

/* The name given to thread 0 of a live capture, which holds the launches
 * rebuilt from kernels' queued times (collector/sources/inject/cupti.c). */
#define COL_RING_LAUNCH_TRACK "CUDA launches (from queued times)"

/* Creates the ring `name` (see hm_ring_format_name) of `bytes` (0 default). */
struct col_ring *col_ring_new(const char *name, size_t bytes, int rank, struct hm_err *err);
void col_ring_free(struct col_ring *r);

/* Drains what is there into the batch being built. Returns a batch when one
 * is ready (enough records, or flush set and any records), else NULL; the
 * caller owns it. flush also adds the drop counters when they changed. */
struct hm_batch *col_ring_drain(struct col_ring *r, int flush, struct hm_err *err);

/* The next trace file the program reported (HM_RING_TRACE_FILE) since the
 * last call, owned by the caller (free()), or NULL. Filled by
 * col_ring_drain. */
char *col_ring_take_trace_file(struct col_ring *r);

/* The producers are gone (the child exited): stop waiting for unfinished
 * records. */
void col_ring_abandon(struct col_ring *r);

/* The ring's control area (common/capture_plan.h: the plan for the sources
 * and their progress), NULL for a NULL ring. */
void *col_ring_control(struct col_ring *r);

#endif
