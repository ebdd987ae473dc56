/* The report topics: one table of {name, help, flags, build} that every
 * place listing topics reads: `htamerge report` (its --help and the topics
 * it accepts), qry_report_build, /api/report/{topic}, /api/topics and so
 * the web viewer. Adding a topic is a row here (topics.c) with its
 * builder, its sql/queries/report_*.sql, and its man page entry, which
 * tests/cli/test_topics.sh checks against the table. diff.c's metric
 * table is the model. */
#ifndef HM_QUERY_TOPICS_H
#define HM_QUERY_TOPICS_H

#include <stdio.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "common/err.h"
#include "report.h"

enum qry_topic_flags {
    QRY_TOPIC_STEPS = 1u << 0,     /* --steps applies; the others cover the whole run */
    QRY_TOPIC_GPU_TIME = 1u << 1,  /* built on kernel times: says when CUPTI paused (gpu_recording) */
    QRY_TOPIC_WINDOW = 1u << 2,    /* per-rank figures over the steps: labels them when not ProfilerSteps (window.h) */
};

struct qry_topic {
    const char *name;
    /* One line of `report --help` after the name; a longer text goes on in
     * lines indented by 12 spaces, as the help prints it. */
    const char *help;
    unsigned flags;                /* enum qry_topic_flags */
    /* Adds the topic's members to doc (an empty object, or one holding
     * gpu_recording for QRY_TOPIC_GPU_TIME topics). */
    int (*build)(sqlite3 *db, const struct qry_report_opts *o, cJSON *doc, struct hm_err *err);
};

/* Every topic in the order help lists them; ends with an entry whose name
 * is NULL. */
extern const struct qry_topic qry_topics[];

/* The topic called name, or NULL. */
const struct qry_topic *qry_topic_find(const char *name);

/* Writes the topic lines of `report --help` ("  NAME      help\n"). */
void qry_topics_help(FILE *out);

/* {"topics": [{"name", "help", "steps"}]} for /api/topics: help on one
 * line, steps whether --steps (?steps=) applies. NULL when out of memory. */
cJSON *qry_topics_json(void);

#endif
