/* The report topics (topics.h): the table, and each topic's builder, which
 * names the queries the topic runs and the arrays its document holds. The
 * shapes are a contract (docs/ARCHITECTURE.md, "Report JSON"). */
#include "topics.h"

#include <stdlib.h>
#include <string.h>

#include "hm_sql.h"
#include "rank_view.h"
#include "capture_losses.h"
#include "shard_hta.h"
#include "shards.h"
#include "report_int.h"
#include "window.h"
#include "analysis/cross_rank.h"

/* Tables and columns added after the first schema: a file written before
 * one of them gets a stand-in (temp, on this connection only), so that its
 * reports read as having none of those facts. */
static int stand_ins(sqlite3 *db, struct hm_err *err)
{
    static const struct { const char *table, *column, *sql; } added[] = {
        {"step_breakdown", "forward_gpu_ns", hm_sql_report_missing_phase_gpu},
        {"process_groups", "dim", hm_sql_report_missing_process_groups},
        {"comm_exposed", "exposed_ns", hm_sql_report_missing_comm_exposed},
        {"critical_path", "compute_ns", hm_sql_report_missing_critical_path},
        {"rank_slices", "slices", hm_sql_report_missing_rank_slices},
        {"memory_peaks", "allocated_bytes", hm_sql_report_missing_memory_peaks},
        {"graph_kernels", "phase", hm_sql_report_missing_graph_kernels}};

    for (size_t i = 0; i < sizeof added / sizeof added[0]; i++)
        if (!qry_has_column(db, added[i].table, added[i].column) &&
            sqlite3_exec(db, added[i].sql, NULL, NULL, NULL) != SQLITE_OK)
            return qry_report_sql_error(db, added[i].table, err);
    return 0;
}

/* How each per-rank topic lists its ranks past QRY_RANKS_LISTED_AT
 * (rank_view.h): the figure a user looks at first to find the odd rank. */
static const struct qry_rank_view view_summary = {"ranks", {"idle_pct"}, QRY_RV_LOWEST | QRY_RV_SPREAD, NULL};
static const struct qry_rank_view view_temporal = {"ranks", {"idle_pct"}, QRY_RV_LOWEST | QRY_RV_SPREAD, NULL};
static const struct qry_rank_view view_overlap = {"ranks", {"-overlap_pct", "-overlap_us"},
                                                  QRY_RV_LOWEST | QRY_RV_SPREAD, NULL};
static const struct qry_rank_view view_idle = {"streams", {"host_wait_us+kernel_wait_us+other_us"},
                                               QRY_RV_LOWEST | QRY_RV_SPREAD, "idle_us"};
static const struct qry_rank_view view_kernels = {"kernels", {"sum_us"}, QRY_RV_LOWEST, NULL};
/* Clocks: violations of the clock condition first, then the exit scatter
 * left after alignment; the lowest are all zero, so not listed. */
static const struct qry_rank_view view_clocks = {"ranks", {"violations", "exit_scatter_us", "uncertainty_ns"},
                                                 QRY_RV_SPREAD, NULL};
/* Memory: the highest peak first (who runs out first), and the lowest
 * (an unbalanced shard); its per-phase and per-step rows follow the ranks
 * listed. */
static const struct qry_rank_view view_memory = {"ranks", {"peak_allocated_bytes", "peak_reserved_bytes"},
                                                 QRY_RV_LOWEST | QRY_RV_SPREAD, NULL};
/* Stragglers: the blame caused, then how often late, then the least wait
 * (who came last waited least). */
static const struct qry_rank_view view_stragglers = {"ranks", {"blame_us", "late_count", "-wait_us"},
                                                     QRY_RV_PAST_TOP | QRY_RV_SPREAD, NULL};

/* Run facts, the verdict, the definitions used, what live capture lost,
 * then the per-rank numbers and the skipped events. */
static int build_summary(sqlite3 *db, const struct qry_report_opts *o, cJSON *doc, struct hm_err *err)
{
    int rc = stand_ins(db, err);

    if (rc == 0)
        rc = qry_report_facts(db, doc, err);

    if (rc == 0)
        rc = qry_report_verdict(db, doc, err);
    if (rc == 0 && !cJSON_AddStringToObject(doc, "definitions",
                                            o->all_steps ? "all steps" : "HTA (last step dropped)"))
        rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    if (rc == 0)   /* after the facts: summary is not a QRY_TOPIC_GPU_TIME topic */
        rc = qry_report_recording_note(db, doc, err);
    if (rc == 0)
        rc = qry_capture_losses(db, doc, err);
    if (rc == 0)   /* what the Python hooks cost, by their own clock */
        rc = qry_report_rows(db, o, hm_sql_report_summary_hooks, doc, "python_hooks", err);
    if (rc == 0)
        rc = qry_report_rows(db, o, hm_sql_report_summary_ranks, doc, "ranks", err);
    if (rc == 0)
        rc = qry_rank_view_apply(db, &view_summary, o, doc, err);
    if (rc == 0)
        rc = qry_report_rows(db, o, hm_sql_report_summary_skipped, doc, "skipped", err);
    if (rc == 0)   /* a sharded ingest's index: which shards are there */
        rc = qry_shards_status(db, doc, err);
    return rc;
}

static int build_temporal(sqlite3 *db, const struct qry_report_opts *o, cJSON *doc, struct hm_err *err)
{
    int rc = qry_report_rows(db, o, hm_sql_report_temporal, doc, "ranks", err);
    return rc ? rc : qry_rank_view_apply(db, &view_temporal, o, doc, err);
}

static int build_overlap(sqlite3 *db, const struct qry_report_opts *o, cJSON *doc, struct hm_err *err)
{
    int rc = qry_report_rows(db, o, hm_sql_report_overlap, doc, "ranks", err);
    return rc ? rc : qry_rank_view_apply(db, &view_overlap, o, doc, err);
}

static int build_idle(sqlite3 *db, const struct qry_report_opts *o, cJSON *doc, struct hm_err *err)
{
    int rc = qry_report_rows(db, o, hm_sql_report_idle, doc, "streams", err);
    return rc ? rc : qry_rank_view_apply(db, &view_idle, o, doc, err);
}

/* By graph: the CUDA graphs' kernels instead of HTA's breakdown. */
static int build_kernels(sqlite3 *db, const struct qry_report_opts *o, cJSON *doc, struct hm_err *err)
{
    int rc = o->by ? stand_ins(db, err) : 0;

    if (o->by)
        return rc ? rc : qry_report_rows(db, o, hm_sql_report_kernels_graph, doc, "graphs", err);
    rc = qry_report_rows(db, o, hm_sql_report_kernel_types, doc, "kernel_types", err);
    if (rc == 0)
        rc = qry_report_rows(db, o, hm_sql_report_kernels, doc, "kernels", err);
    return rc ? rc : qry_rank_view_apply(db, &view_kernels, o, doc, err);
}


/* The step sources are looked up once the rows are cut to the listed ranks
 * (a query per row). */
static int build_steps(sqlite3 *db, const struct qry_report_opts *o, cJSON *doc, struct hm_err *err)
{
    int rc = qry_report_rows(db, o, hm_sql_report_steps, doc, "steps", err);

    if (rc == 0)
        rc = stand_ins(db, err);
    if (rc == 0)
        rc = qry_report_rows(db, o, hm_sql_report_step_breakdown, doc, "breakdown", err);
    if (rc == 0)
        rc = qry_report_rows(db, o, hm_sql_report_steps_comm, doc, "comm_by_pg", err);
    if (rc == 0)
        rc = qry_step_summary_apply(db, o, doc, err);
    return rc ? rc : qry_report_step_sources(db, doc, err);
}

static int build_clocks(sqlite3 *db, const struct qry_report_opts *o, cJSON *doc, struct hm_err *err)
{
    int rc = qry_report_rows(db, o, hm_sql_report_clocks, doc, "ranks", err);

    if (rc == 0)
        rc = qry_report_clock_steps(db, doc, err);
    return rc ? rc : qry_rank_view_apply(db, &view_clocks, o, doc, err);
}

/* The cross-rank verdict (analysis/cross_rank/stragglers.c), or HTA's method. */
static int build_stragglers(sqlite3 *db, const struct qry_report_opts *o, cJSON *doc, struct hm_err *err)
{
    const struct xr_hta_opts hta = {o->candidates, o->steps, o->nsteps};
    int rc;

    /* HTA's method reads every rank's kernels, which an index leaves in
     * its shards: read there. */
    if (o->method && !strcmp(o->method, "hta"))
        return qry_shard_count(db) > 0 ? qry_shard_stragglers_hta(db, &hta, doc, err)
                                       : xr_stragglers_hta(db, &hta, doc, err);
    rc = qry_report_verdict(db, doc, err);
    if (rc == 0)
        rc = qry_report_rows(db, o, hm_sql_report_stragglers_ranks, doc, "ranks", err);
    if (rc == 0)
        rc = qry_rank_view_apply(db, &view_stragglers, o, doc, err);
    if (rc == 0)
        rc = qry_report_rows(db, o, hm_sql_report_stragglers_steps, doc, "steps", err);
    return rc;
}

static int build_collectives(sqlite3 *db, const struct qry_report_opts *o, cJSON *doc, struct hm_err *err)
{
    return qry_report_rows(db, o, hm_sql_report_collectives, doc, "instances", err);
}

static int build_comms(sqlite3 *db, const struct qry_report_opts *o, cJSON *doc, struct hm_err *err)
{
    int rc = stand_ins(db, err);

    if (rc == 0)
        rc = qry_report_rows(db, o, hm_sql_report_comms, doc, "groups", err);
    return rc ? rc : qry_report_rows(db, o, hm_sql_report_comms_exposed, doc, "exposed", err);
}

static int build_critical_path(sqlite3 *db, const struct qry_report_opts *o, cJSON *doc, struct hm_err *err)
{
    int rc = stand_ins(db, err);

    if (rc == 0)
        rc = qry_report_rows(db, o, hm_sql_report_path_steps, doc, "steps", err);
    return rc ? rc : qry_report_rows(db, o, hm_sql_report_path_segments, doc, "segments", err);
}

/* Across ranks first (who runs out first), then per rank, step, phase. */
static int build_memory(sqlite3 *db, const struct qry_report_opts *o, cJSON *doc, struct hm_err *err)
{
    static const char *const per_rank[] = {"phases", "steps", NULL};
    int rc = stand_ins(db, err);

    if (rc == 0)
        rc = qry_report_rows(db, o, hm_sql_report_memory_highest, doc, "highest", err);
    if (rc == 0)
        rc = qry_report_rows(db, o, hm_sql_report_memory_ranks, doc, "ranks", err);
    if (rc == 0)
        rc = qry_report_rows(db, o, hm_sql_report_memory_phases, doc, "phases", err);
    if (rc == 0)
        rc = qry_report_rows(db, o, hm_sql_report_memory_steps, doc, "steps", err);
    if (rc == 0)
        rc = qry_rank_view_apply(db, &view_memory, o, doc, err);
    return rc ? rc : qry_rank_view_keep_listed(doc, "ranks", per_rank, err);
}

static int build_nvtx(sqlite3 *db, const struct qry_report_opts *o, cJSON *doc, struct hm_err *err)
{
    return qry_report_rows(db, o, hm_sql_report_nvtx, doc, "ranges", err);
}

const struct qry_topic qry_topics[] = {
    {"summary", "run facts, per-rank headline numbers, skipped events, capture losses (default)", 0, build_summary},
    {"temporal", "GPU time per rank: idle / compute / non-compute, as HTA computes it",
     QRY_TOPIC_GPU_TIME | QRY_TOPIC_WINDOW, build_temporal},
    {"overlap", "share of communication time overlapped by computation, per rank",
     QRY_TOPIC_GPU_TIME | QRY_TOPIC_WINDOW, build_overlap},
    {"idle", "GPU idle time per stream: host wait / kernel wait / other",
     QRY_TOPIC_GPU_TIME | QRY_TOPIC_WINDOW, build_idle},
    {"kernels",
     "time per kernel type (HTA's kernel breakdown) and top kernels per rank;\n"
     "            --by graph: per CUDA graph, its launches, kernels, GPU time and capture ranges",
     QRY_TOPIC_GPU_TIME | QRY_TOPIC_WINDOW, build_kernels},
    {"steps",
     "ProfilerStep iterations per rank, and each step broken down into\n"
     "            forward / backward / optimizer / compute / exposed communication / other",
     QRY_TOPIC_STEPS, build_steps},
    {"clocks",
     "clock offset, drift, method and uncertainty per rank, checked against\n"
     "            the collectives (exit lag, scatter, clock condition violations)",
     0, build_clocks},
    {"stragglers",
     "the rank that holds the others back (or null) with evidence; per rank\n"
     "            late count, late fraction, blame (wait caused) and wait; per step",
     QRY_TOPIC_STEPS, build_stragglers},
    {"collectives", "collectives matched across ranks: key, step, skew, late rank, wait", QRY_TOPIC_STEPS,
     build_collectives},
    {"critical-path",
     "per step, the chain of work and communication across ranks that set\n"
     "            its duration: segments by rank, phase, compute / host, collective",
     QRY_TOPIC_STEPS, build_critical_path},
    {"comms",
     "communication by process group (dp, tp, ... from its name), op and\n"
     "            message size: calls, time, algorithm and bus bandwidth, wait, skew",
     0, build_comms},
    {"nvtx",
     "record_function / NVTX ranges stitched across ranks: skew, late rank,\n"
     "            GPU time of the work launched inside",
     QRY_TOPIC_STEPS | QRY_TOPIC_GPU_TIME, build_nvtx},
    {"memory",
     "GPU (and CPU) memory per rank: peak allocated and reserved bytes per\n"
     "            step and phase, and the rank that peaks highest over the median",
     QRY_TOPIC_STEPS, build_memory},
    {NULL, NULL, 0, NULL},
};

const struct qry_topic *qry_topic_find(const char *name)
{
    for (const struct qry_topic *t = qry_topics; name && t->name; t++)
        if (!strcmp(t->name, name))
            return t;
    return NULL;
}

void qry_topics_help(FILE *out)
{
    for (const struct qry_topic *t = qry_topics; t->name; t++)
        fprintf(out, "  %-8s  %s\n", t->name, t->help);
}

/* help as one line: each line break and the indent after it become one space. */
static char *one_line(const char *help)
{
    char *s = strdup(help), *w = s;

    for (const char *r = help; s && *r; r++) {
        if (*r == '\n') {
            while (r[1] == ' ')
                r++;
            *w++ = ' ';
        } else {
            *w++ = *r;
        }
    }
    if (s)
        *w = '\0';
    return s;
}

static cJSON *topic_json(const struct qry_topic *t)
{
    cJSON *o = cJSON_CreateObject();
    char *help = one_line(t->help);

    if (!o || !help || !cJSON_AddStringToObject(o, "name", t->name) || !cJSON_AddStringToObject(o, "help", help) ||
        !cJSON_AddBoolToObject(o, "steps", (t->flags & QRY_TOPIC_STEPS) != 0)) {
        cJSON_Delete(o);
        o = NULL;
    }
    free(help);
    return o;
}

cJSON *qry_topics_json(void)
{
    cJSON *doc = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(doc, "topics"), *o;

    for (const struct qry_topic *t = qry_topics; arr && t->name; t++) {
        if (!(o = topic_json(t)) || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            arr = NULL;
        }
    }
    if (!arr) {
        cJSON_Delete(doc);
        return NULL;
    }
    return doc;
}
