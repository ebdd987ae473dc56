/* Comparing two merged runs (`htamerge diff`): the same report builders run
 * on both files, their numbers are reduced to per-rank and overall values
 * normalised per ProfilerStep, and each value of NEW is judged against
 * BASE's. The document, not the command line, decides the verdict, so the
 * CLI and any other caller agree on it. */
#ifndef HM_QUERY_DIFF_H
#define HM_QUERY_DIFF_H

#include <stdbool.h>
#include <stdio.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "common/err.h"
#include "report.h"

#define QRY_DIFF_THRESHOLD_DEFAULT 5.0

struct qry_diff_opts {
    const char *base_name;   /* borrowed: shown in the document ("base.file") */
    const char *new_name;
    double threshold_pct;    /* regression when the gate metric grows by >= this (>= 0) */
    int all_steps;           /* keep the last ProfilerStep (HTA drops it) */
};

/* ---- building ---- */

/* Compares the runs in base and new (both borrowed, opened by qry_open).
 * *out, owned by the caller, is
 *   {"threshold_pct", "comparable", "regressed", "gate", "verdict",
 *    "base": {run facts}, "new": {..}, "metrics": [{"metric", "rank",
 *    "base", "new", "delta", "pct", "better", "worse", "improved"}],
 *    "notes": ["..."]}
 * A pair that cannot be compared (say, one run has ProfilerSteps and the
 * other none) is not an error: the document says why, with comparable
 * false. Errors are the builders' (unreadable file, SQL). */
int qry_diff_build(sqlite3 *base, sqlite3 *new, const struct qry_diff_opts *o, cJSON **out,
                   struct hm_err *err);

/* ---- reading the verdict ---- */

bool qry_diff_comparable(const cJSON *doc);
bool qry_diff_regressed(const cJSON *doc);

/* ---- rendering ---- */

/* Renders doc: table (verdict, overall metrics, per-rank metrics that moved
 * by the threshold or more, or all of them when all_ranks, notes), json,
 * or csv (the metrics, after "# key: value" lines). color: ANSI colour in
 * the table (regressions red, improvements green). */
int qry_diff_render(const cJSON *doc, enum qry_format fmt, int color, bool all_ranks, FILE *out);

#endif
