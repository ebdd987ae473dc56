/* The served file: one read-only connection kept across requests, and the
 * two ways the file changes under a server:
 *   - another connection commits (a live run writing through WAL):
 *     PRAGMA data_version moves, and `version` with it;
 *   - a new file is renamed over the path (an ingest or run finishing):
 *     the inode changes, and the connection is reopened.
 * Caches elsewhere key on `version`. Not here: what is read (api.c). */
#include "query_int.h"

#include <sys/stat.h>
#include <time.h>

#include "report.h"
#include "shard_view.h"
#include "shards.h"
#include "common/monotime.h"
#include "store/columns.h"

#define VERSION_COLUMNS(X) X(VERSION_VALUE, "data_version")
enum { VERSION_COLUMNS(HM_COLUMN_ENUM) VERSION__COUNT };
static const char *const version_names[] = {VERSION_COLUMNS(HM_COLUMN_NAME)};

static int64_t data_version(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;

    if (sqlite3_prepare_v2(db, "PRAGMA data_version", -1, &st, NULL) == SQLITE_OK)
        HM_COLUMNS_CHECK(st, version_names);
    if (st && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, VERSION_VALUE);
    sqlite3_finalize(st);
    return v;
}

/* Drops the connection and everything built on it. */
static void dbh_drop(struct qry_dbh *h)
{
    qry_lod_free(h->lod);
    h->lod = NULL;
    qry_shard_view_free(h->shards);
    h->shards = NULL;
    sqlite3_close(h->db);
    h->db = NULL;
    h->version++;
}

int qry_dbh_open(struct qry_dbh *h, const char *path, struct hm_err *err)
{
    struct stat sb;

    h->path = path;
    if (stat(path, &sb) != 0)
        return hm_err_set(err, HM_EIO, path, -1, "cannot open: no such file");
    h->db = qry_open(path, err);
    if (!h->db)
        return err->code;
    /* Timeline windows read rows all over a large file: map a quarter of the
     * budget of it instead of copying pages through read(), and cache an
     * eighth (mapped pages count in the server's resident memory). */
    char pragmas[128];
    if (h->memory_mb <= 0)
        h->memory_mb = QRY_MEMORY_MB_DEFAULT;
    snprintf(pragmas, sizeof pragmas, "PRAGMA mmap_size = %lld; PRAGMA cache_size = -%lld",
             (long long)h->memory_mb * 1048576 / 4, (long long)h->memory_mb * 1024 / 8);
    sqlite3_exec(h->db, pragmas, NULL, NULL, NULL);
    h->dev = sb.st_dev;
    h->ino = sb.st_ino;
    h->data_version = data_version(h->db);
    h->version++;
    return 0;
}

int qry_dbh_refresh(struct qry_dbh *h, struct hm_err *err)
{
    struct stat sb;
    int64_t dv;

    if (stat(h->path, &sb) == 0 && h->db && (sb.st_dev != h->dev || sb.st_ino != h->ino))
        dbh_drop(h);   /* replaced: what we hold is the old file */
    if (!h->db)
        return qry_dbh_open(h, h->path, err);
    dv = data_version(h->db);
    if (dv != h->data_version) {
        h->data_version = dv;
        h->version++;
    }
    return 0;
}

/* An index of a sharded ingest keeps few slices: the run's extent is its
 * shards' (shards.first_ns, end_ns), one origin for every shard's answer. */
static void index_extent(struct qry_dbh *h)
{
    sqlite3_stmt *st = NULL;

    if (qry_shard_count(h->db) <= 0)
        return;
    if (sqlite3_prepare_v2(h->db, "SELECT min(first_ns), max(end_ns) FROM shards", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        qry_lod_set_extent(h->lod, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
    sqlite3_finalize(st);
}

struct qry_lod *qry_dbh_lod(struct qry_dbh *h, bool *fresh, struct hm_err *err)
{
    double t = hm_mono_s();

    if (h->lod && h->lod_version != h->version && t - h->lod_time >= QRY_LOD_REBUILD_S) {
        qry_lod_free(h->lod);
        h->lod = NULL;
    }
    if (!h->lod) {
        h->lod = qry_lod_new(h->db, (size_t)h->memory_mb * 1048576 / 4, err);
        h->lod_version = h->version;
        h->lod_time = t;
        if (h->lod)
            index_extent(h);
    }
    *fresh = h->lod && h->lod_version == h->version;
    return h->lod;
}

void qry_dbh_close(struct qry_dbh *h)
{
    qry_shard_view_free(h->shards);
    h->shards = NULL;
    qry_lod_free(h->lod);
    sqlite3_close(h->db);
    h->lod = NULL;
    h->db = NULL;
}
