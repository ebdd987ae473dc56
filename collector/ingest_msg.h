/* What follows the wire batch in a reader's message to rank 0 (parallel
 * ingest): the file's analysis results (analysis/hta_codec.h) and, on the
 * last file of a rank whose files the reader joined (ingest_join.h), the
 * rank's results over all its files and the names of the files they
 * cover, which rank 0 checks against the files it stored for the rank
 * (merger/rank_files.h). Both ends are the same htamerge: not durable. */
#ifndef HM_COLLECTOR_INGEST_MSG_H
#define HM_COLLECTOR_INGEST_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* The parts of a tail; pointers borrow from the buffer decoded. */
struct col_ingest_tail {
    const uint8_t *file_res; /* the file's results (an_results, 2 modes) */
    size_t file_len;
    const uint8_t *rank_res; /* NULL, or the rank's joined results (2 modes) */
    size_t rank_len;
    const char *names;       /* rank_res's files: nnames NUL-terminated names, one after another */
    size_t nnames;
};

/* Encodes file_res with, when rank_res is not NULL, the rank's results and
 * its files' names; *buf owned by the caller (free). 0 or HM_ENOMEM. */
int col_ingest_tail_encode(const uint8_t *file_res, size_t file_len, const uint8_t *rank_res, size_t rank_len,
                           const char *const *names, size_t nnames, uint8_t **buf, size_t *len);

/* Splits buf[0..len); a tail of file results alone (an older reader's, or
 * a file not joined) gives rank_res NULL. HM_EFORMAT with err->offset on
 * anything malformed. */
int col_ingest_tail_decode(const uint8_t *buf, size_t len, struct col_ingest_tail *out, struct hm_err *err);

#endif
