/* A rank of several files, joined where its files were read: a reader of
 * `mpirun -n N htamerge ingest` that holds every file of a rank (the
 * listing groups them: ingest_list.h) builds the batch that rank 0 would
 * read back from the database for that rank (store/readback.c, as
 * merger/rank_files.c does for the single-process ingest), so that the
 * rank's analyses run on the reader and rank 0 only stores their results.
 * It neither parses, analyses nor sends (ingest_send.c does). */
#ifndef HM_COLLECTOR_INGEST_JOIN_H
#define HM_COLLECTOR_INGEST_JOIN_H

#include <stddef.h>

#include "common/batch.h"

/* From the batches of one rank's files bs[0..n) (n >= 2, in list order,
 * as rank 0 will store them, after their own analyses), the batch rank 0
 * would read back: slices in storage order, tracks, strings and steps as
 * reading back makes them, times as its analyses see them (on the files'
 * clock where HTA rounds fractional microseconds, else aligned but for
 * rank 0's clock guess, which moves every time alike). Returns 1 and
 * *out (owned), 0 when rank 0 must read the rank back itself (steps other
 * than ProfilerSteps, which it finds again over the whole rank; live
 * capture's pauses; fractional times without a base time), or HM_ENOMEM. */
int col_ingest_join(struct hm_batch *const *bs, size_t n, struct hm_batch **out);

#endif
