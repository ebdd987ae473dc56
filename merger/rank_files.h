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
 * gives the numbers of the unsplit file). Under `mpirun` ingest the reader
 * that read all of a rank's files makes those analyses and rank 0 only
 * stores them (mrg_rank_files_offer); a rank whose files were read on two
 * readers (two hosts) is read back as here. */
#ifndef HM_MERGER_RANK_FILES_H
#define HM_MERGER_RANK_FILES_H

#include <stddef.h>

#include "common/batch.h"
#include "analysis/hta.h"
#include "common/err.h"
#include "store/writer.h"

struct mrg_rank_files; /* opaque; NULL is an empty one */

/* Records file i's batch as stored for its rank (b->info.rank). */
int mrg_rank_files_note(struct mrg_rank_files **rf, size_t i, const struct hm_batch *b);

/* File i claims a rank already stored: returns 1 (it joins the rank; noted)
 * or HM_EDUP with err saying which file it repeats, or HM_ENOMEM. */
int mrg_rank_files_join(struct mrg_rank_files **rf, size_t i, const struct hm_batch *b, char *const *files,
                        struct hm_err *err);

/* The analyses of a rank of several files, made where its files were
 * read (`mpirun` ingest: collector/ingest_join.h) over files[0..n) (list
 * indices, increasing); res[0] mode hta, res[1] all_steps, owned from now
 * on. _finish stores them instead of reading the rank back, if they cover
 * exactly the files stored for the rank. HM_ENOMEM (res then freed). */
int mrg_rank_files_offer(struct mrg_rank_files **rf, int rank, const size_t *files, size_t n,
                         struct an_rank_result res[2]);

/* Re-runs the analyses of every rank that got more than one file, or
 * stores those offered for it. */
int mrg_rank_files_finish(struct mrg_rank_files *rf, struct mrg_writer *w, struct hm_err *err);

/* Ranks of several files so far finished: with analyses offered, and read
 * back and analysed here. */
void mrg_rank_files_counts(const struct mrg_rank_files *rf, size_t *offered, size_t *read_back);

void mrg_rank_files_free(struct mrg_rank_files *rf);

#endif
