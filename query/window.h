/* The window of the per-rank figures in reports: steps N..M (source) or
 * the whole run (window.c says when each label appears). Private to
 * query/: called by qry_report_build and the steps topic (topics.c). */
#ifndef HM_QUERY_WINDOW_H
#define HM_QUERY_WINDOW_H

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "common/err.h"
#include "report.h"

/* Adds the window labels to a built document of a QRY_TOPIC_WINDOW topic
 * (temporal, overlap, idle, kernels). */
int qry_report_window(sqlite3 *db, const struct qry_report_opts *o, cJSON *doc, struct hm_err *err);

/* Adds "source" to each row of doc.steps (the steps topic). */
int qry_report_step_sources(sqlite3 *db, cJSON *doc, struct hm_err *err);

#endif
