/* What live capture lost, for `report summary`: records a full
 * shared-memory ring refused or a dead producer left half written, CUPTI
 * records dropped or left without times, NVTX ranges lost. The collectors
 * count them as "htamerge/..." counters, which a timeline shows but a
 * summary must say, so that no loss goes unnoticed. Listed in
 * report_summary_losses.sql. */
#ifndef HM_QUERY_CAPTURE_LOSSES_H
#define HM_QUERY_CAPTURE_LOSSES_H

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "common/err.h"

/* Adds "capture_lost" (a sentence: how many of what, on how many ranks)
 * and "capture_losses" (rank, what, count) to doc when anything was lost;
 * nothing otherwise. 0 or HM_ESQL / HM_ENOMEM with err filled. */
int qry_capture_losses(sqlite3 *db, cJSON *doc, struct hm_err *err);

#endif
