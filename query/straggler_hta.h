/* HTA's get_potential_stragglers as a report (`report stragglers --method
 * hta`), for comparison with HTA; the default straggler analysis is the
 * cross-rank one of merger/stragglers.c. */
#ifndef HM_QUERY_STRAGGLER_HTA_H
#define HM_QUERY_STRAGGLER_HTA_H

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "common/err.h"
#include "report.h"

/* Adds method, candidates (o->candidates ranks, default 2, as HTA's
 * num_candidates), kernel, stream, iterations, ranks (late_start_count per
 * rank) and evidence to doc. o->steps selects HTA's profiler_steps. */
int qry_stragglers_hta(sqlite3 *db, const struct qry_report_opts *o, cJSON *doc, struct hm_err *err);

#endif
