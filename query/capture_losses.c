/* report summary's capture losses (capture_losses.h): the per-rank rows of
 * report_summary_losses.sql, and one sentence over them, kind by kind,
 * with what each means for the numbers and what to change. */
#include "capture_losses.h"

#include <stdio.h>
#include <string.h>

#include "hm_sql.h"
#include "store/columns.h"

#define LOSS_COLUMNS(X) X(LOSS_RANK, "rank") X(LOSS_WHAT, "what") X(LOSS_COUNT, "count")
enum { LOSS_COLUMNS(HM_COLUMN_ENUM) LOSS__COUNT };
static const char *const loss_names[] = {LOSS_COLUMNS(HM_COLUMN_NAME)};

/* Why each kind happens, for the sentence; the query's order of kinds
 * does not matter. */
static const struct {
    const char *what, *why;
} kinds[] = {
    {"ring dropped records", "the shared-memory ring was full, the collector or rank 0 fell behind; "
                             "a larger HTAMERGE_RING_BYTES or a lower --overhead-budget helps"},
    {"ring lost records", "a producer died or stalled in the middle of a record"},
    {"cupti dropped records", "CUPTI had no buffer free"},
    {"cupti incomplete records", "CUPTI gave them without times when it was detached, so they were left out"},
    {"cupti buffers lost at detach", "CUPTI held them when it was detached"},
    {"nvtx lost ranges", "NVTX ranges the library could not record"},
};

struct kind_total {
    long long count;
    int ranks;
};

static int add_row(cJSON *arr, sqlite3_stmt *st)
{
    cJSON *row = cJSON_CreateObject();

    if (!row || !cJSON_AddItemToArray(arr, row))
        return -1;
    return cJSON_AddNumberToObject(row, "rank", (double)sqlite3_column_int64(st, LOSS_RANK)) &&
                   cJSON_AddStringToObject(row, "what", (const char *)sqlite3_column_text(st, LOSS_WHAT)) &&
                   cJSON_AddNumberToObject(row, "count", (double)sqlite3_column_int64(st, LOSS_COUNT))
               ? 0
               : -1;
}

int qry_capture_losses(sqlite3 *db, cJSON *doc, struct hm_err *err)
{
    enum { NKINDS = sizeof kinds / sizeof kinds[0] };
    struct kind_total tot[NKINDS] = {{0, 0}};
    sqlite3_stmt *st = NULL;
    cJSON *arr = cJSON_CreateArray(); /* added after the sentence, which reads first */
    char text[2048] = "";
    size_t at = 0;
    int rc = sqlite3_prepare_v2(db, hm_sql_report_summary_losses, -1, &st, NULL), bad = 0;

    if (rc != SQLITE_OK) {
        cJSON_Delete(arr);
        return hm_err_set(err, HM_ESQL, sqlite3_db_filename(db, "main"), -1, "report summary: %s",
                          sqlite3_errmsg(db));
    }
    bad = arr == NULL;
    HM_COLUMNS_CHECK(st, loss_names);
    while (!bad && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *what = (const char *)sqlite3_column_text(st, LOSS_WHAT);
        bad = add_row(arr, st) != 0;
        for (size_t k = 0; what && k < NKINDS; k++)
            if (!strcmp(what, kinds[k].what)) {
                tot[k].count += sqlite3_column_int64(st, LOSS_COUNT);
                tot[k].ranks++;
            }
    }
    sqlite3_finalize(st);
    if (bad || rc != SQLITE_DONE)
        cJSON_Delete(arr);
    if (bad)
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    if (rc != SQLITE_DONE)
        return hm_err_set(err, HM_ESQL, sqlite3_db_filename(db, "main"), -1, "report summary: %s",
                          sqlite3_errmsg(db));
    for (size_t k = 0; k < NKINDS && at < sizeof text - 1; k++)
        if (tot[k].count > 0)
            at += (size_t)snprintf(text + at, sizeof text - at, "%s%lld %s on %d rank%s: %s", at ? "; " : "",
                                   tot[k].count, kinds[k].what, tot[k].ranks, tot[k].ranks == 1 ? "" : "s",
                                   kinds[k].why);
    if (!at) {
        cJSON_Delete(arr);
        return 0;
    }
    if (!cJSON_AddStringToObject(doc, "capture_lost", text) || !cJSON_AddItemToObject(doc, "capture_losses", arr)) {
        cJSON_Delete(arr); /* not yet doc's when the sentence failed; a failed add leaves it ours */
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    }
    return 0;
}
