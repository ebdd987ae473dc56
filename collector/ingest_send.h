/* Parallel ingest, collector side: under `mpirun -n N htamerge ingest`,
 * ranks 1..N-1 each read their share of the files and send the records to
 * rank 0, which only merges. Parsing happens where the files are. */
#ifndef HM_COLLECTOR_INGEST_SEND_H
#define HM_COLLECTOR_INGEST_SEND_H

#include <stddef.h>

#include "common/err.h"

/* Reads files i with i % (size - 1) == rank - 1 and sends them; returns
 * after rank 0's goodbye. keep_args as in src_kineto_opts. */
int col_ingest_send(char *const *files, size_t nfiles, int rank, int size, int keep_args,
                    struct hm_err *err);

#endif
