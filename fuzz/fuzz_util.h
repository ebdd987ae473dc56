/* Helpers shared by the fuzz targets: a failed invariant aborts (libFuzzer
 * then saves the input), and the batch check every reader's output must
 * pass. Not a test framework: each target is one LLVMFuzzerTestOneInput. */
#ifndef HM_FUZZ_UTIL_H
#define HM_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "common/batch.h"

/* Aborts with the condition's text when cond is false (also under NDEBUG). */
#define FUZZ_ASSERT(cond) \
    do { \
        if (!(cond)) \
            fuzz_fail(__FILE__, __LINE__, #cond); \
    } while (0)

void fuzz_fail(const char *file, int line, const char *what) __attribute__((noreturn));

/* What a reader hands on must be a batch the wire format accepts: encoding
 * succeeds (every string, track and slice index is valid), the message
 * decodes, and re-encoding the decoded batch gives the same bytes. */
void fuzz_check_batch(const struct hm_batch *b);

#endif
