/* Several trace files of one rank (a torch.profiler schedule with
 * repeat > 1, several profiler windows, each writing its own file) are
 * that rank's data, not a duplicate rank.
 *
 * Rule: a file that claims a rank already stored joins it (its slices,
 * steps and collectives are stored as another batch of the rank) unless
 * it repeats data already stored for the rank: a ProfilerStep number that
 * an earlier file of the rank has (one process numbers its steps once), or
 * the very same events (same count, first start and last end, on the same
 * base time). Such a file is refused as before ("rank N is also claimed
 * by ..., with the same ...": an error, or skipped and counted under
 * --keep-going), so nothing is counted twice.
 * The HTA analyses of a rank with several files are made once all files
 * are stored, over the rank read back from the database (all its files
 * together; times are moved back to the files' trace clock when they share
 * a base time, so that HTA's rounding of fractional microseconds gives what
 * one file holding all the windows would: a rank split into two files
 * gives the numbers of the unsplit file). */
#ifndef HM_MERGER_RANK_FILES_H
#define HM_MERGER_RANK_FILES_H

#include <stddef.h>

#include "common/batch.h"
#include "common/err.h"
#include "store/writer.h"

struct mrg_rank_files; /* opaque; NULL is an empty one */

/* Records file i's batch as stored for its rank (b->info.rank). */
int mrg_rank_files_note(struct mrg_rank_files **rf, size_t i, const struct hm_batch *b);

/* File i claims a rank already stored: returns 1 (it joins the rank; noted)
 * or HM_EDUP with err saying which file it repeats, or HM_ENOMEM. */
int mrg_rank_files_join(struct mrg_rank_files **rf, size_t i, const struct hm_batch *b, char *const *files,
                        struct hm_err *err);

/* Re-runs the analyses of every rank that got more than one file. */
int mrg_rank_files_finish(struct mrg_rank_files *rf, struct mrg_writer *w, struct hm_err *err);

void mrg_rank_files_free(struct mrg_rank_files *rf);

#endif
