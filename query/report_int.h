/* What report.c gives the topic builders of topics.c: adding a query's rows
 * or facts to a document, and the notes several topics share. Private to
 * query/. */
#ifndef HM_QUERY_REPORT_INT_H
#define HM_QUERY_REPORT_INT_H

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "common/err.h"
#include "report.h"

/* HM_ESQL "report WHAT: <sqlite's message>" on db's file. */
int qry_report_sql_error(sqlite3 *db, const char *what, struct hm_err *err);

/* Runs sql (binding ?1 = "hta" or "all_steps", ?2 = top kernels) and adds
 * its rows, as objects, to the array doc[key], keeping those of o's ranks
 * and steps. */
int qry_report_rows(sqlite3 *db, const struct qry_report_opts *o, const char *sql, cJSON *doc,
                    const char *key, struct hm_err *err);

/* The summary's facts (report_summary_run.sql) as scalar members of doc,
 * with run_status judged ("incomplete" when the merger is gone). */
int qry_report_facts(sqlite3 *db, cJSON *doc, struct hm_err *err);

/* The whole run's straggler verdict as doc.straggler (rank or null) and
 * doc.evidence. */
int qry_report_verdict(sqlite3 *db, cJSON *doc, struct hm_err *err);

/* doc.gpu_recording when live capture paused CUPTI; nothing otherwise. */
int qry_report_recording_note(sqlite3 *db, cJSON *doc, struct hm_err *err);

/* Whether the file's table has the column (files written before a column
 * was added have not). */
int qry_has_column(sqlite3 *db, const char *table, const char *column);

/* Adds each rank's clock step (step_ns, step_at_ns; null in older files)
 * to the rows of doc.ranks. */
int qry_report_clock_steps(sqlite3 *db, cJSON *doc, struct hm_err *err);

#endif
