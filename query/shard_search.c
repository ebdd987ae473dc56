/* The slices of /api/search from a sharded ingest's shards
 * (shard_search.h). The first slice of a name in the unsharded file is its
 * lowest id, and ids follow the run's storage order: files in the order of
 * the list, each file's slices after the previous file's. Each shard gives
 * its own first (its ids keep that order among its files), and of those
 * the one from the earliest file of the run (the index's files.id) is the
 * run's first. Shards are visited in the order of their first file, so
 * that one whose files all come after the best found is never opened: a
 * name on every rank opens one shard. */
#include "shard_search.h"

#include <stdlib.h>

#include "hm_sql.h"
#include "search.h"
#include "shard_view.h"
#include "store/columns.h"

#define SHARD_COLUMNS(X) X(SS_SHARD, "shard") X(SS_RANK, "rank") X(SS_FIRST_FILE, "first_file")
enum { SHARD_COLUMNS(HM_COLUMN_ENUM) SS__COUNT };
static const char *const shard_names[] = {SHARD_COLUMNS(HM_COLUMN_NAME)};

struct shard_at {
    int shard;
    int64_t first_file;   /* its earliest file in the run's order */
};

struct search_ctx {
    struct qry_dbh *h;    /* borrowed: the index */
    struct shard_at *s;   /* owned, in first_file order */
    int n;
};

static int sql_fail(sqlite3 *db, struct hm_err *err)
{
    return hm_err_set(err, HM_ESQL, sqlite3_db_filename(db, "main"), -1, "search: %s", sqlite3_errmsg(db));
}

/* The first row of sql (?1 = a, ?2 = b; ?2 may be unused): its first
 * ncol (1 or 2) integer columns into out. 1, 0 (no row, or a NULL) or
 * < 0. */
static int first_row(sqlite3 *db, const char *sql, int64_t a, int64_t b, int64_t *out, int ncol, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc, found = 0;

    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db, err);
    sqlite3_bind_int64(st, 1, a);
    if (sqlite3_bind_parameter_count(st) >= 2)
        sqlite3_bind_int64(st, 2, b);
    if ((rc = sqlite3_step(st)) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        for (int k = 0; k < ncol; k++)
            out[k] = sqlite3_column_int64(st, k);
        found = 1;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sql_fail(db, err);
    return found;
}

/* The shard's string id of name: 1, 0 (the shard has no such string) or < 0. */
static int name_id(sqlite3 *db, const char *name, int64_t *id, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;

    if (sqlite3_prepare_v2(db, "SELECT id FROM strings WHERE str = ?1 LIMIT 1", -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db, err);
    sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
    if ((rc = sqlite3_step(st)) == SQLITE_ROW)
        *id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sql_fail(db, err);
    return rc == SQLITE_ROW;
}

/* The run's file (the index's files.id) that slice local of shard db came
 * from: 1, 0 (not found: the shard's files do not add up) or < 0. */
static int file_of(sqlite3 *index, sqlite3 *db, int64_t local, int64_t *file, struct hm_err *err)
{
    int64_t rank_ord[2] = {0, 0};   /* the file as the index knows it: its rank, its order among the rank's files */
    int rc = first_row(db, hm_sql_search_slice_file, local, 0, rank_ord, 2, err);

    return rc > 0 ? first_row(index, hm_sql_search_file_order, rank_ord[0], rank_ord[1], file, 1, err) : rc;
}

/* A qry_search_first_fn over the shards. */
static int first_in_shards(void *ctx, const char *name, int64_t index_id, struct qry_search_slice *out,
                           struct hm_err *err)
{
    struct search_ctx *c = ctx;
    int64_t best = INT64_MAX, id = 0, file = 0;
    int found = 0;

    (void)index_id;   /* the shards number their strings themselves */
    for (int i = 0; i < c->n && c->s[i].first_file < best; i++) {
        struct qry_search_slice s;
        sqlite3 *db = qry_shard_db(c->h, c->s[i].shard, err);
        int rc = db ? name_id(db, name, &id, err) : (err->code ? err->code : HM_EIO);
        if (rc > 0)
            rc = qry_search_first_in_file(db, name, id, &s, err);
        if (rc > 0 && (rc = file_of(c->h->db, db, s.id, &file, err)) == 0)
            file = INT64_MAX - 1;   /* cannot be placed: after every placed one */
        if (rc < 0)
            return rc;
        if (rc == 0 || (found && file >= best))
            continue;
        *out = s;
        out->id = ((int64_t)c->s[i].shard << QRY_SHARD_ID_SHIFT) + s.id;
        best = file;
        found = 1;
    }
    return found;
}

static int load_shards(struct search_ctx *c, struct hm_err *err)
{
    sqlite3 *db = c->h->db;
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc;

    if (sqlite3_prepare_v2(db, hm_sql_search_shards, -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db, err);
    HM_COLUMNS_CHECK(st, shard_names);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if ((size_t)c->n == cap) {
            struct shard_at *g = realloc(c->s, (cap = cap * 2 + 8) * sizeof *g);
            if (!g) {
                sqlite3_finalize(st);
                return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
            }
            c->s = g;
        }
        c->s[c->n].shard = sqlite3_column_int(st, SS_SHARD);
        c->s[c->n++].first_file = sqlite3_column_int64(st, SS_FIRST_FILE);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : sql_fail(db, err);
}

cJSON *qry_shard_search(struct qry_dbh *h, const char *text, int64_t origin, struct hm_err *err)
{
    struct search_ctx c = {h, NULL, 0};
    cJSON *doc = load_shards(&c, err) == 0 ? qry_search_with(h->db, text, origin, first_in_shards, &c, err) : NULL;

    free(c.s);
    return doc;
}
