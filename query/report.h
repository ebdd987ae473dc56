/* Reports: the answers of `htamerge report` and /api/report/{topic}, built
 * as JSON documents from a merged database, and rendered for people
 * (aligned table) or machines (JSON, CSV). One builder per topic, in the
 * table of topics.h; the renderers are generic over "a document of scalars and arrays of flat
 * objects". */
#ifndef HM_QUERY_REPORT_H
#define HM_QUERY_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "common/err.h"

enum qry_format { QRY_FORMAT_TABLE = 0, QRY_FORMAT_JSON, QRY_FORMAT_CSV };

struct qry_report_opts {
    const char *topic;       /* a name in topics.h's qry_topics */
    int all_steps;           /* keep the last ProfilerStep (HTA drops it) */
    const int *ranks;        /* only these ranks; NULL = all */
    int nranks;
    const int64_t *steps;    /* only these ProfilerStep numbers; NULL = all */
    int nsteps;
    int top_kernels;         /* --top (0 = 10): kernels per rank in the kernels topic, and the
                                ranks listed at each end of a summarised per-rank table
                                (rank_view.h; stragglers: the worst ranks) */
    int all_ranks;           /* every rank's rows even past QRY_RANKS_LISTED_AT ranks */
    const char *method;      /* stragglers: NULL or "scalasca" (default), "hta" */
    int candidates;          /* stragglers --method hta: ranks to name (0 = 2) */
    const char *by;          /* kernels: NULL, or "graph" (per CUDA graph, table graph_kernels) */
};

/* Opens a merged database read-only; NULL with err filled on failure
 * (missing file, not an htamerge database, newer schema). */
sqlite3 *qry_open(const char *path, struct hm_err *err);

/* Builds the topic's document. *out is owned by the caller (cJSON_Delete). */
int qry_report_build(sqlite3 *db, const struct qry_report_opts *opts, cJSON **out,
                     struct hm_err *err);

/* Renders a document. color: 1 to use ANSI colour (callers pass isatty). */
int qry_report_render(const cJSON *doc, enum qry_format fmt, int color, FILE *out);

#endif
