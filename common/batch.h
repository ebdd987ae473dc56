/* A batch: one rank's records plus the string table they refer to.
 * It is the unit a source fills, the wire format carries and the writer
 * stores. For offline ingest one batch holds one trace file; a live
 * collector sends many small batches. A batch has one owner at a time. */
#ifndef HM_BATCH_H
#define HM_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"
#include "strtab.h"
#include "vec.h"

struct hm_batch {
    struct hm_strtab *strings;   /* owned */
    struct hm_rank_info info;
    HM_VEC(struct hm_track) tracks;
    HM_VEC(struct hm_slice) slices;
    HM_VEC(struct hm_collective) collectives;
    HM_VEC(struct hm_counter) counters;
    HM_VEC(struct hm_step) steps;
    uint64_t source_bytes;       /* bytes of source text parsed into it */
};

/* Lifecycle. _free(NULL) does nothing. */
struct hm_batch *hm_batch_new(void);
void hm_batch_free(struct hm_batch *b);

/* Returns the index of the track (kind, pid, tid), adding it if new, or -1
 * when out of memory. Linear in the number of tracks, which stays small
 * (threads and streams of one process). */
int64_t hm_batch_track(struct hm_batch *b, uint32_t kind, int64_t pid, int64_t tid);

/* Shorthands for the batch's string table. */
hm_strid hm_batch_intern(struct hm_batch *b, const char *s, size_t len);
const char *hm_batch_str(const struct hm_batch *b, hm_strid id);

/* Approximate heap bytes held, for memory accounting and flow control. */
size_t hm_batch_bytes(const struct hm_batch *b);

#endif
