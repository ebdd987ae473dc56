/* query/report.c, topics.c and diff.c on a committed fixture (a 2-rank
 * NCCL run with rank 1 straggling): every topic of the table builds, the
 * table's flags decide --steps and gpu_recording, summary has rank_count
 * and the ranks array once each, filters keep their ranks, the help lines
 * and /api/topics come from the table, and a run diffed against itself
 * does not regress while the straggler run against the clean one does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/diff.h"
#include "query/report.h"
#include "query/topics.h"
#include "test.h"

/* gzip -dc gz > out (the fixtures are gzip files; gzip is on every machine
 * that builds htamerge). */
static int gunzip_to(const char *gz, const char *out)
{
    char cmd[9000];

    snprintf(cmd, sizeof cmd, "gzip -dc '%s' > '%s'", gz, out);
    return system(cmd) == 0 ? 0 : -1;
}

static sqlite3 *open_fixture(const char *name)
{
    char gz[256], file[128], db[4096];
    struct hm_err err;

    snprintf(gz, sizeof gz, "gpu/%s.db.gz", name);
    snprintf(file, sizeof file, "%s.report.db", name);
    snprintf(db, sizeof db, "%s", hm_tmpfile(file));
    hm_err_clear(&err);
    if (gunzip_to(hm_fixture(gz), db) != 0)
        return NULL;
    return qry_open(db, &err);
}

static void test_every_topic(sqlite3 *db)
{
    for (const struct qry_topic *t = qry_topics; t->name; t++) {
        struct qry_report_opts o = {.topic = t->name};
        struct hm_err err;
        cJSON *doc = NULL;
        hm_err_clear(&err);
        CHECK_EQ_INT(qry_report_build(db, &o, &doc, &err), 0);
        CHECK(cJSON_IsObject(doc) && doc->child != NULL);
        CHECK(qry_topic_find(t->name) == t);
        CHECK(t->help && t->help[0] && t->build);
        cJSON_Delete(doc);
    }
    CHECK(qry_topic_find("no_such_topic") == NULL);
    CHECK(qry_topic_find(NULL) == NULL);
}

static void test_summary(sqlite3 *db)
{
    struct qry_report_opts o = {.topic = "summary"};
    struct hm_err err;
    cJSON *doc = NULL, *it;
    int ranks_members = 0;

    hm_err_clear(&err);
    CHECK_EQ_INT(qry_report_build(db, &o, &doc, &err), 0);
    CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(doc, "rank_count")));
    CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(doc, "rank_count")->valueint, 2);
    cJSON_ArrayForEach(it, doc)
        ranks_members += !strcmp(it->string, "ranks");
    CHECK_EQ_INT(ranks_members, 1);   /* the count was once a second "ranks" */
    CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "ranks")));
    CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(doc, "straggler")->valueint, 1);
    cJSON_Delete(doc);
}

static void test_options(sqlite3 *db)
{
    const int only1[] = {1};
    const int64_t steps[] = {3};
    struct qry_report_opts o = {.topic = "stragglers", .ranks = only1, .nranks = 1};
    struct hm_err err;
    cJSON *doc = NULL, *row;

    hm_err_clear(&err);
    CHECK_EQ_INT(qry_report_build(db, &o, &doc, &err), 0);
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "ranks")), 1);
    cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(doc, "ranks"))
        CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(row, "rank")->valueint, 1);
    cJSON_Delete(doc);
    o.topic = "temporal";
    o.steps = steps;   /* temporal covers the whole run: the message names the table's steps topics */
    o.nsteps = 1;
    CHECK_EQ_INT(qry_report_build(db, &o, &doc, &err), HM_EINVAL);
    CHECK_CONTAINS(err.msg, "--steps applies to the steps, stragglers, collectives, critical-path, nvtx and memory topics");
    o.topic = "steps";
    hm_err_clear(&err);
    CHECK_EQ_INT(qry_report_build(db, &o, &doc, &err), 0);
    cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(doc, "steps"))
        CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(row, "step")->valueint, 3);
    cJSON_Delete(doc);
    o.topic = "bogus";
    CHECK_EQ_INT(qry_report_build(db, &o, &doc, &err), HM_EINVAL);
    CHECK_CONTAINS(err.msg, "unknown report topic 'bogus'");
}

static void test_help_and_json(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cJSON *doc = qry_topics_json(), *t;
    int n = 0;

    qry_topics_help(f);
    fclose(f);
    CHECK_CONTAINS(text, "  summary   run facts,");
    CHECK_CONTAINS(text, "  stragglers  the rank that holds the others back");
    CHECK_CONTAINS(text, "into\n            forward / backward");
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(doc, "topics")) {
        const struct qry_topic *q = qry_topic_find(cJSON_GetObjectItemCaseSensitive(t, "name")->valuestring);
        CHECK(q == &qry_topics[n]);
        CHECK(!strchr(cJSON_GetObjectItemCaseSensitive(t, "help")->valuestring, '\n'));
        CHECK_EQ_INT(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "steps")), q && (q->flags & QRY_TOPIC_STEPS));
        n++;
    }
    CHECK(n >= 10 && qry_topics[n].name == NULL);
    cJSON_Delete(doc);
    free(text);
}

static void test_diff(sqlite3 *clean, sqlite3 *late)
{
    struct qry_diff_opts o = {.base_name = "clean", .new_name = "late", .threshold_pct = 5};
    struct hm_err err;
    cJSON *doc = NULL;

    hm_err_clear(&err);
    CHECK_EQ_INT(qry_diff_build(clean, clean, &o, &doc, &err), 0);
    CHECK(qry_diff_comparable(doc) && !qry_diff_regressed(doc));
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(doc, "gate")->valuestring, "step_time_mean_us");
    cJSON_Delete(doc);
    CHECK_EQ_INT(qry_diff_build(clean, late, &o, &doc, &err), 0);
    CHECK(qry_diff_comparable(doc) && qry_diff_regressed(doc));
    CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "new"), "ranks")->valueint, 2);
    cJSON_Delete(doc);
    o.threshold_pct = -1;
    CHECK_EQ_INT(qry_diff_build(clean, late, &o, &doc, &err), HM_EINVAL);
}

int main(void)
{
    sqlite3 *late = open_fixture("nccl2_straggler1"), *clean = open_fixture("nccl2_clean");

    CHECK(late && clean);
    if (late && clean) {
        test_every_topic(late);
        test_summary(late);
        test_options(late);
        test_diff(clean, late);
    }
    test_help_and_json();
    sqlite3_close(late);
    sqlite3_close(clean);
    return hm_test_done();
}
