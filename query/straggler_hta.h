/* `report stragglers --method hta`: the report's options handed to HTA's
 * straggler method, which lives with the other cross-rank analyses
 * (analysis/cross_rank.h, xr_stragglers_hta). Kept so that report.c reads
 * as before; report.c may call xr_stragglers_hta itself and drop this. */
#ifndef HM_QUERY_STRAGGLER_HTA_H
#define HM_QUERY_STRAGGLER_HTA_H

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "analysis/cross_rank.h"
#include "common/err.h"
#include "report.h"

/* Adds method, candidates (o->candidates ranks, default 2, as HTA's
 * num_candidates), kernel, stream, iterations, ranks (late_start_count per
 * rank) and evidence to doc. o->steps selects HTA's profiler_steps. */
static inline int qry_stragglers_hta(sqlite3 *db, const struct qry_report_opts *o, cJSON *doc,
                                     struct hm_err *err)
{
    const struct xr_hta_opts h = {o->candidates, o->steps, o->nsteps};

    return xr_stragglers_hta(db, &h, doc, err);
}

#endif
