/* Per-rank tables at a thousand ranks: which ranks a report lists by
 * default. Past QRY_RANKS_LISTED_AT ranks (stragglers: past --top) a
 * per-rank array keeps the ranks that stand out (the straggler, then the
 * highest and lowest by the topic's figure) and the document says what the
 * others look like (rank_summary, spread). --ranks and --all-ranks (API
 * ranks=, all_ranks=1) ask for the rows instead. The steps topic's own
 * summary across ranks is step_summary.c; the SQL behind the rows is the
 * topic's (topics.c). Private to query/. */
#ifndef HM_QUERY_RANK_VIEW_H
#define HM_QUERY_RANK_VIEW_H

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "common/err.h"
#include "report.h"

/* A run of more ranks than this gets summarised per-rank tables: 64 rows
 * still read as a table; a thousand do not. */
#define QRY_RANKS_LISTED_AT 64
#define QRY_TOP_DEFAULT 10     /* --top when not given */
#define QRY_NEAR_MEDIAN 0.02   /* "within 2 % of the median" */

enum qry_rank_view_flags {
    QRY_RV_LOWEST = 1u << 0,   /* list the lowest --top ranks as well as the highest */
    QRY_RV_SPREAD = 1u << 1,   /* add doc.spread: each numeric column over every row */
    QRY_RV_PAST_TOP = 1u << 2, /* summarise past --top ranks, not past QRY_RANKS_LISTED_AT */
};

/* How a topic's per-rank array is summarised: a row in topics.c. */
struct qry_rank_view {
    const char *array;    /* the member holding rows with a "rank" */
    /* What orders the ranks, the first key deciding: a column, or columns
     * joined by '+' (summed), over each rank's rows; a leading '-' means
     * lower is worse. Ranks without a value on the first key come last. */
    const char *order[3];
    unsigned flags;       /* enum qry_rank_view_flags */
    const char *label;    /* the first key's name in the document; NULL: the column's */
};

/* Whether o asks for per-rank rows (--ranks, --all-ranks) rather than the
 * summary. */
int qry_rank_rows_asked(const struct qry_report_opts *o);

/* The run's straggler (doc's "straggler" member, else the verdict), or -1
 * when none is known. */
int qry_rank_straggler(sqlite3 *db, const cJSON *doc);

/* Summarises doc[v->array] in place when the run is past the threshold and
 * o does not ask for rows; otherwise leaves doc as it is. */
int qry_rank_view_apply(sqlite3 *db, const struct qry_rank_view *v, const struct qry_report_opts *o, cJSON *doc,
                        struct hm_err *err);

/* The summary of a step table across ranks (step_summary.c): step_summary
 * and step_phases, and steps, breakdown and comm_by_pg cut to the listed
 * ranks, when the run is past the threshold and o does not ask for rows. */
int qry_step_summary_apply(sqlite3 *db, const struct qry_report_opts *o, cJSON *doc, struct hm_err *err);

/* After qry_rank_view_apply summarised doc[from]: keeps, in each array
 * doc[keys[i]] (NULL-terminated), only the rows of the ranks doc[from]
 * lists, so a topic's other per-rank arrays shrink with it. Nothing when
 * doc[from] was not summarised. */
int qry_rank_view_keep_listed(cJSON *doc, const char *from, const char *const *keys, struct hm_err *err);

/* Helpers shared by the two. */
/* Keeps the rows of doc[key] whose rank is in listed[0..n) (sorted). */
void qry_keep_ranks(cJSON *doc, const char *key, const int *listed, size_t n);
/* n with thousands separators ("1,024") in buf. */
const char *qry_fmt_count(long n, char *buf, size_t len);
/* The lower median of v[0..n) (sorts v); 0 when n is 0. */
double qry_median(double *v, size_t n);
/* Whether x is within QRY_NEAR_MEDIAN of median. */
int qry_near_median(double x, double median);

#endif
