/* /api/search (search.h): the text is split into a word and a number
 * here; search_hits.sql finds ranks, steps, collectives and NVTX ranges,
 * search_names.sql the names, and a qry_search_first_fn each name's first
 * slice (this file's own: search_first_slice.sql). */
#include "search.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_sql.h"
#include "store/columns.h"

#define HIT_COLUMNS(X)                                                                             \
    X(HT_KIND, "kind") X(HT_LABEL, "label") X(HT_RANK, "rank") X(HT_T0, "t0") X(HT_T1, "t1")         \
    X(HT_ID, "id") X(HT_PG, "pg") X(HT_SEQ, "seq")
enum { HIT_COLUMNS(HM_COLUMN_ENUM) HT__COUNT };
static const char *const hit_names[] = {HIT_COLUMNS(HM_COLUMN_NAME)};

/* "N", "WORD N" or "WORD:N": *word (may be empty) and *num; 0 if the text
 * is not of that shape. word has room for QRY_SEARCH_MAX_TEXT + 1. */
static int split(const char *s, char *word, long long *num)
{
    size_t n = strlen(s), i = n, w;

    while (i > 0 && isdigit((unsigned char)s[i - 1]))
        i--;
    if (i == n || n - i > 15)
        return 0;
    *num = strtoll(s + i, NULL, 10);
    w = i;
    while (w > 0 && (s[w - 1] == ' ' || s[w - 1] == ':'))
        w--;
    if (w == i && w > 0)   /* a name that ends in digits, such as "layer12" */
        return 0;
    memcpy(word, s, w);
    word[w] = 0;
    for (size_t k = 0; k < w; k++)
        if (s[k] == ' ')
            return 0;      /* one word only */
    return 1;
}

static void add_time(cJSON *o, const char *key, sqlite3_stmt *st, int col, int64_t origin)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        cJSON_AddNullToObject(o, key);
    else
        cJSON_AddNumberToObject(o, key, (double)(sqlite3_column_int64(st, col) - origin));
}

static void add_opt(cJSON *o, const char *key, sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        cJSON_AddNullToObject(o, key);
    else if (sqlite3_column_type(st, col) == SQLITE_INTEGER)
        cJSON_AddNumberToObject(o, key, (double)sqlite3_column_int64(st, col));
    else
        cJSON_AddStringToObject(o, key, (const char *)sqlite3_column_text(st, col));
}

#define NAME_COLUMNS(X) X(NM_ID, "id") X(NM_STR, "str")
#define FIRST_COLUMNS(X) X(FS_ID, "id") X(FS_RANK, "rank") X(FS_TS, "ts") X(FS_DUR, "dur")
enum { NAME_COLUMNS(HM_COLUMN_ENUM) NM__COUNT };
enum { FIRST_COLUMNS(HM_COLUMN_ENUM) FS__COUNT };
static const char *const name_names[] = {NAME_COLUMNS(HM_COLUMN_NAME)};
static const char *const first_names[] = {FIRST_COLUMNS(HM_COLUMN_NAME)};

static int search_fail(sqlite3 *db, struct hm_err *err)
{
    return hm_err_set(err, HM_ESQL, NULL, -1, "search: %s", sqlite3_errmsg(db));
}

/* Whether the writer noted each name's first slice when it finished the
 * file (name_first_slices): a rare name's first slice can lie gigabytes
 * into a file that slices would be scanned through (2.1 s for "nccl" on
 * 64 x 55 MB of traces). */
static int first_noted(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int yes = sqlite3_prepare_v2(db, "SELECT 1 FROM meta WHERE key = 'name_first_slices' AND value = 'complete'", -1,
                                 &st, NULL) == SQLITE_OK &&
              sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return yes;
}

int qry_search_first_in_file(void *ctx, const char *name, int64_t name_id, struct qry_search_slice *out,
                         struct hm_err *err)
{
    sqlite3 *db = ctx;
    sqlite3_stmt *st = NULL;
    int rc;

    (void)name;
    if (sqlite3_prepare_v2(db, first_noted(db) ? hm_sql_search_first_slice_noted : hm_sql_search_first_slice, -1,
                           &st, NULL) != SQLITE_OK)
        return search_fail(db, err);
    HM_COLUMNS_CHECK(st, first_names);
    sqlite3_bind_int64(st, 1, name_id);
    if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        out->id = sqlite3_column_int64(st, FS_ID);
        out->rank = sqlite3_column_int(st, FS_RANK);
        out->ts = sqlite3_column_int64(st, FS_TS);
        out->dur = sqlite3_column_int64(st, FS_DUR);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : search_fail(db, err);
}

/* The hits of search_hits.sql (ranks, steps, collectives, NVTX ranges). */
static int add_hits(sqlite3 *db, const char *t, int numbered, long long num, const char *word, int64_t origin,
                    cJSON *hits, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;

    if (sqlite3_prepare_v2(db, hm_sql_search_hits, -1, &st, NULL) != SQLITE_OK)
        return search_fail(db, err);
    HM_COLUMNS_CHECK(st, hit_names);
    sqlite3_bind_text(st, 1, t, -1, SQLITE_TRANSIENT);
    if (numbered) {
        sqlite3_bind_int64(st, 2, num);
        if (*word)
            sqlite3_bind_text(st, 3, word, -1, SQLITE_TRANSIENT);
    }
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        cJSON *h = cJSON_CreateObject();
        cJSON_AddStringToObject(h, "kind", (const char *)sqlite3_column_text(st, HT_KIND));
        cJSON_AddStringToObject(h, "label", (const char *)sqlite3_column_text(st, HT_LABEL));
        add_opt(h, "rank", st, HT_RANK);
        add_time(h, "t0", st, HT_T0, origin);
        add_time(h, "t1", st, HT_T1, origin);
        add_opt(h, "id", st, HT_ID);
        add_opt(h, "pg", st, HT_PG);
        add_opt(h, "seq", st, HT_SEQ);
        cJSON_AddItemToArray(hits, h);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : search_fail(db, err);
}

static cJSON *slice_hit(const char *name, const struct qry_search_slice *s, int64_t origin)
{
    cJSON *h = cJSON_CreateObject();
    char label[QRY_SEARCH_MAX_TEXT + 64];

    snprintf(label, sizeof label, "%.*s (first on rank %d)", QRY_SEARCH_MAX_TEXT, name, s->rank);
    cJSON_AddStringToObject(h, "kind", "slice");
    cJSON_AddStringToObject(h, "label", label);
    cJSON_AddNumberToObject(h, "rank", s->rank);
    cJSON_AddNumberToObject(h, "t0", (double)(s->ts - origin));
    cJSON_AddNumberToObject(h, "t1", (double)(s->ts + s->dur - origin));
    cJSON_AddNumberToObject(h, "id", (double)s->id);
    cJSON_AddNullToObject(h, "pg");
    cJSON_AddNullToObject(h, "seq");
    return h;
}

/* The first slice of each name search_names.sql finds, in its order. */
static int add_slices(sqlite3 *db, const char *t, int64_t origin, qry_search_first_fn first, void *ctx,
                      cJSON *hits, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    struct qry_search_slice s;
    int rc, found = 0;

    if (sqlite3_prepare_v2(db, hm_sql_search_names, -1, &st, NULL) != SQLITE_OK)
        return search_fail(db, err);
    HM_COLUMNS_CHECK(st, name_names);
    sqlite3_bind_text(st, 1, t, -1, SQLITE_TRANSIENT);
    while (found >= 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, NM_STR);
        if ((found = first(ctx, name, sqlite3_column_int64(st, NM_ID), &s, err)) > 0)
            cJSON_AddItemToArray(hits, slice_hit(name, &s, origin));
    }
    sqlite3_finalize(st);
    if (found < 0)
        return found;
    return rc == SQLITE_DONE ? 0 : search_fail(db, err);
}

cJSON *qry_search(sqlite3 *db, const char *text, int64_t origin, struct hm_err *err)
{
    return qry_search_with(db, text, origin, qry_search_first_in_file, db, err);
}

cJSON *qry_search_with(sqlite3 *db, const char *text, int64_t origin, qry_search_first_fn first, void *ctx,
                       struct hm_err *err)
{
    char t[QRY_SEARCH_MAX_TEXT + 1], word[QRY_SEARCH_MAX_TEXT + 1];
    size_t a = 0, b = strlen(text);
    long long num = 0;
    cJSON *doc, *hits;
    int rc, numbered;

    while (a < b && isspace((unsigned char)text[a]))
        a++;
    while (b > a && isspace((unsigned char)text[b - 1]))
        b--;
    if (b - a > QRY_SEARCH_MAX_TEXT) {
        hm_err_set(err, HM_EINVAL, NULL, -1, "the search text is longer than %d bytes", QRY_SEARCH_MAX_TEXT);
        return NULL;
    }
    memcpy(t, text + a, b - a);
    t[b - a] = 0;
    numbered = split(t, word, &num);
    doc = cJSON_CreateObject();
    hits = cJSON_AddArrayToObject(doc, "hits");
    rc = add_hits(db, t, numbered, num, word, origin, hits, err);
    if (rc == 0 && !numbered)   /* a number names a rank, a step or a collective */
        rc = add_slices(db, t, origin, first, ctx, hits, err);
    if (rc != 0) {
        cJSON_Delete(doc);
        return NULL;
    }
    return doc;
}
