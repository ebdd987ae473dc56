/* Parallel ingest, collector side: under `mpirun -n N htamerge ingest`,
 * ranks 1..N-1 each read their share of the files and send the records to
 * rank 0, which only merges. Parsing happens where the files are. */
#ifndef HM_COLLECTOR_INGEST_SEND_H
#define HM_COLLECTOR_INGEST_SEND_H

#include <stddef.h>

#include "common/err.h"
#include "ingest_list.h"

/* Reads this rank's share of the list (ingest_list.h) and sends it, files
 * under the names rank 0 knows; returns after rank 0's goodbye. keep_args
 * as in src_kineto_opts. */
int col_ingest_send(const struct col_ingest_list *list, int keep_args, struct hm_err *err);

#endif
