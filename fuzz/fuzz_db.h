/* A small real htamerge database for the query fuzz targets: the full
 * schema, indexes and views of sql/, two ranks, a few tracks and a few
 * thousand slices (nested, on CPU and GPU tracks, with steps, a collective
 * and a counter), so that reports, timelines and console SQL all have
 * rows to read. */
#ifndef HM_FUZZ_DB_H
#define HM_FUZZ_DB_H

#include <stddef.h>

/* Creates the database in a new temporary folder and writes its path to
 * path[len]; both are removed when the process exits normally. Call once
 * per process. Aborts on failure (a fuzz target cannot start without it). */
void fuzz_db_make(char *path, size_t len);

#endif
