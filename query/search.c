/* /api/search (search.h): the text is split into a word and a number
 * here; search_hits.sql does the rest. */
#include "search.h"

#include <ctype.h>
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

cJSON *qry_search(sqlite3 *db, const char *text, int64_t origin, struct hm_err *err)
{
    char t[QRY_SEARCH_MAX_TEXT + 1], word[QRY_SEARCH_MAX_TEXT + 1];
    size_t a = 0, b = strlen(text);
    long long num = 0;
    sqlite3_stmt *st = NULL;
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
    if (sqlite3_prepare_v2(db, hm_sql_search_hits, -1, &st, NULL) != SQLITE_OK) {
        hm_err_set(err, HM_ESQL, NULL, -1, "search: %s", sqlite3_errmsg(db));
        return NULL;
    }
    HM_COLUMNS_CHECK(st, hit_names);
    sqlite3_bind_text(st, 1, t, -1, SQLITE_TRANSIENT);
    if (numbered) {
        sqlite3_bind_int64(st, 2, num);
        if (*word)
            sqlite3_bind_text(st, 3, word, -1, SQLITE_TRANSIENT);
    }
    doc = cJSON_CreateObject();
    hits = cJSON_AddArrayToObject(doc, "hits");
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
    if (rc != SQLITE_DONE) {
        hm_err_set(err, HM_ESQL, NULL, -1, "search: %s", sqlite3_errmsg(db));
        cJSON_Delete(doc);
        return NULL;
    }
    return doc;
}
