/* Opening the shard of a rank (shards.h). */
#include "shards.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "hm_sql.h"
#include "report.h"
#include "store/columns.h"

#define SHARD_COLUMNS(X) X(SH_PATH, "path") X(SH_BYTES, "bytes") X(SH_HOST, "host")
enum { SHARD_COLUMNS(HM_COLUMN_ENUM) SH__COUNT };
static const char *const shard_names[] = {SHARD_COLUMNS(HM_COLUMN_NAME)};

int qry_shard_count(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int n = 0;

    if (sqlite3_prepare_v2(db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'shards'", -1, &st, NULL) ==
            SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return n;
}

int qry_shard_of(sqlite3 *db, const char *index_path, int rank, char *buf, size_t cap, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    const char *slash = strrchr(index_path, '/');
    struct stat sb;
    int rc = HM_EEMPTY;

    if (qry_shard_count(db) <= 0)
        return hm_err_set(err, HM_EEMPTY, index_path, -1, "not the index of a sharded ingest");
    if (sqlite3_prepare_v2(db, hm_sql_shard_of_rank, -1, &st, NULL) != SQLITE_OK)
        return hm_err_set(err, HM_ESQL, index_path, -1, "%s", sqlite3_errmsg(db));
    HM_COLUMNS_CHECK(st, shard_names);
    sqlite3_bind_int(st, 1, rank);
    if (sqlite3_step(st) == SQLITE_ROW) {
        const char *p = (const char *)sqlite3_column_text(st, SH_PATH);
        int64_t bytes = sqlite3_column_int64(st, SH_BYTES);
        const char *host = (const char *)sqlite3_column_text(st, SH_HOST);
        if (p && p[0] != '/' && slash)
            snprintf(buf, cap, "%.*s/%s", (int)(slash - index_path), index_path, p);
        else
            snprintf(buf, cap, "%s", p ? p : "");
        if (stat(buf, &sb) != 0)
            rc = hm_err_set(err, HM_EIO, NULL, -1, "%s, the shard of rank %d (host %s), is missing: its ranks' "
                            "slices cannot be read; the index's reports still can", buf, rank, host ? host : "?");
        else if (bytes > 0 && (int64_t)sb.st_size != bytes)
            rc = hm_err_set(err, HM_EIO, NULL, -1, "%s, the shard of rank %d (host %s), is incomplete or was "
                            "replaced: %lld bytes, the index recorded %lld", buf, rank, host ? host : "?",
                            (long long)sb.st_size, (long long)bytes);
        else
            rc = 0;
    } else {
        hm_err_set(err, HM_EEMPTY, index_path, -1, "rank %d is in no shard of this index", rank);
    }
    sqlite3_finalize(st);
    return rc;
}

sqlite3 *qry_shard_open(sqlite3 *db, const char *index_path, int rank, struct hm_err *err)
{
    char path[4096];

    if (qry_shard_of(db, index_path, rank, path, sizeof path, err) != 0)
        return NULL;
    return qry_open(path, err);
}

int qry_shards_status(sqlite3 *db, cJSON *doc, struct hm_err *err)
{
    const char *index = sqlite3_db_filename(db, "main"), *slash = index ? strrchr(index, '/') : NULL;
    sqlite3_stmt *st = NULL;
    cJSON *arr;
    int rc = 0;

    if (qry_shard_count(db) <= 0)
        return 0;
    if (!(arr = cJSON_AddArrayToObject(doc, "shards")))
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    if (sqlite3_prepare_v2(db, "SELECT host, path, ranks, bytes FROM shards ORDER BY id", -1, &st, NULL) != SQLITE_OK)
        return 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        const char *p = (const char *)sqlite3_column_text(st, 1);
        char path[4096];
        struct stat sb;
        cJSON *o = cJSON_CreateObject();
        if (p && p[0] != '/' && slash)
            snprintf(path, sizeof path, "%.*s/%s", (int)(slash - index), index, p);
        else
            snprintf(path, sizeof path, "%s", p ? p : "");
        if (!o || !cJSON_AddStringToObject(o, "host", (const char *)sqlite3_column_text(st, 0)) ||
            !cJSON_AddStringToObject(o, "path", p ? p : "") ||
            !cJSON_AddStringToObject(o, "ranks", (const char *)sqlite3_column_text(st, 2)) ||
            !cJSON_AddStringToObject(o, "status", stat(path, &sb) != 0 ? "missing"
                                                  : (int64_t)sb.st_size != sqlite3_column_int64(st, 3) ? "incomplete"
                                                                                                       : "ok"))
            rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        if (o)
            cJSON_AddItemToArray(arr, o);
    }
    sqlite3_finalize(st);
    return rc;
}
