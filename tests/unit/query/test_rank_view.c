/* query/rank_view.c on constructed documents: which ranks a per-rank table
 * lists past QRY_RANKS_LISTED_AT (the straggler first, the highest, the
 * lowest, ranks without a value last), where it leaves a run alone (at the
 * threshold, --ranks, --all-ranks), the rest counted near the median, and
 * the helpers (thousands, lower median). No database: the documents carry
 * their straggler. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/rank_view.h"
#include "test.h"

/* {"straggler": s, "ranks": [{"rank": r, "v": f(r)}...]} for r < n; rank
 * 3's v is null. */
static cJSON *doc_of(int n, int straggler)
{
    cJSON *doc = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(doc, "ranks");

    straggler >= 0 ? cJSON_AddNumberToObject(doc, "straggler", straggler) : cJSON_AddNullToObject(doc, "straggler");
    for (int r = 0; r < n; r++) {
        cJSON *row = cJSON_CreateObject();
        cJSON_AddNumberToObject(row, "rank", r);
        if (r == 3)
            cJSON_AddNullToObject(row, "v");
        else   /* 100 everywhere, rank 10 high, rank 20 low, 2 % apart around */
            cJSON_AddNumberToObject(row, "v", r == 10 ? 500 : r == 20 ? 1 : 100 + (r % 5));
        cJSON_AddItemToArray(arr, row);
    }
    return doc;
}

static int rank_at(const cJSON *doc, int i)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "ranks"), i) ?
               cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "ranks"), i), "rank")->valueint : -1;
}

static const char *standing_at(const cJSON *doc, int i)
{
    const cJSON *s = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "ranks"), i), "standing");
    return cJSON_IsString(s) ? s->valuestring : NULL;
}

static void test_listing(void)
{
    static const struct qry_rank_view v = {"ranks", {"v"}, QRY_RV_LOWEST | QRY_RV_SPREAD, NULL};
    struct qry_report_opts o = {.topic = "x", .top_kernels = 2};
    struct hm_err err;
    cJSON *doc = doc_of(100, 57), *s;

    hm_err_clear(&err);
    CHECK_EQ_INT(qry_rank_view_apply(NULL, &v, &o, doc, &err), 0);
    /* straggler, then the 2 highest (10, then 4 before 9 by rank), the 2 lowest (20, then 0). */
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "ranks")), 5);
    CHECK_EQ_INT(rank_at(doc, 0), 57);
    CHECK_STR(standing_at(doc, 0), "straggler");
    CHECK_EQ_INT(rank_at(doc, 1), 10);
    CHECK_STR(standing_at(doc, 1), "highest v");
    CHECK_EQ_INT(rank_at(doc, 2), 4);
    CHECK_EQ_INT(rank_at(doc, 3), 20);
    CHECK_STR(standing_at(doc, 3), "lowest v");
    CHECK_EQ_INT(rank_at(doc, 4), 0);
    s = cJSON_GetObjectItem(doc, "rank_summary");
    CHECK_EQ_INT(cJSON_GetObjectItem(s, "ranks")->valueint, 100);
    CHECK_EQ_INT(cJSON_GetObjectItem(s, "listed")->valueint, 5);
    CHECK_EQ_INT(cJSON_GetObjectItem(s, "rest")->valueint, 95);
    CHECK_NEAR(cJSON_GetObjectItem(s, "median")->valuedouble, 102, 0);
    /* 100..104 are within 2 % of 102; rank 3 has no value. */
    CHECK_EQ_INT(cJSON_GetObjectItem(s, "rest_near_median")->valueint, 94);
    CHECK_CONTAINS(cJSON_GetObjectItem(s, "note")->valuestring, "5 of 100 ranks listed: rank 57 (the straggler)");
    s = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "spread"), 0);
    CHECK_STR(cJSON_GetObjectItem(s, "column")->valuestring, "v");
    CHECK_EQ_INT(cJSON_GetObjectItem(s, "max_rank")->valueint, 10);
    CHECK_EQ_INT(cJSON_GetObjectItem(s, "min_rank")->valueint, 20);
    cJSON_Delete(doc);
}

/* "-v": lower is worse; the listing turns round. */
static void test_lower_is_worse(void)
{
    static const struct qry_rank_view v = {"ranks", {"-v"}, 0, NULL};
    struct qry_report_opts o = {.topic = "x", .top_kernels = 1};
    struct hm_err err;
    cJSON *doc = doc_of(100, -1);

    hm_err_clear(&err);
    CHECK_EQ_INT(qry_rank_view_apply(NULL, &v, &o, doc, &err), 0);
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "ranks")), 1);
    CHECK_EQ_INT(rank_at(doc, 0), 20);
    CHECK_STR(standing_at(doc, 0), "lowest v");
    CHECK(!cJSON_GetObjectItem(doc, "spread"));
    cJSON_Delete(doc);
}

/* At the threshold, with --ranks or --all-ranks: the document as it was. */
static void test_left_alone(void)
{
    static const struct qry_rank_view v = {"ranks", {"v"}, QRY_RV_LOWEST, NULL};
    static const int one[] = {5};
    struct qry_report_opts small = {.topic = "x"}, picked = {.topic = "x", .ranks = one, .nranks = 1},
                           all = {.topic = "x", .all_ranks = 1};
    const struct qry_report_opts *os[] = {&small, &picked, &all};
    struct hm_err err;

    hm_err_clear(&err);
    for (int i = 0; i < 3; i++) {
        cJSON *doc = doc_of(i == 0 ? QRY_RANKS_LISTED_AT : 100, 1);
        char *before = cJSON_PrintUnformatted(doc), *after;
        CHECK_EQ_INT(qry_rank_view_apply(NULL, &v, os[i], doc, &err), 0);
        after = cJSON_PrintUnformatted(doc);
        CHECK_STR(after, before);
        free(before);
        free(after);
        cJSON_Delete(doc);
    }
}

static void test_helpers(void)
{
    char buf[32];
    double v[] = {5, 1, 4, 2};

    CHECK_STR(qry_fmt_count(1024, buf, sizeof buf), "1,024");
    CHECK_STR(qry_fmt_count(1234567, buf, sizeof buf), "1,234,567");
    CHECK_STR(qry_fmt_count(999, buf, sizeof buf), "999");
    CHECK_NEAR(qry_median(v, 4), 2, 0);
    CHECK(qry_near_median(102, 100) && !qry_near_median(103, 100) && qry_near_median(0, 0));
}

int main(void)
{
    test_listing();
    test_lower_is_worse();
    test_left_alone();
    test_helpers();
    return hm_test_done();
}
