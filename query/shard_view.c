/* The timeline of a sharded ingest's index, drawn from its shards
 * (shard_view.h). Each shard is a file of its own, with its own ids: a
 * shard's answer is translated to the index's before it leaves, so that the
 * viewer sees one run. Tracks map by (rank, kind, pid, tid), collectives by
 * their order within their rank (both writers store a rank's batches in
 * the same order), times share the index's origin, and slice ids carry
 * their shard (shard << QRY_SHARD_ID_SHIFT) so that /api/slice finds them.
 * The stitched NVTX rows and their names come from the index. At most
 * SHARDS_OPEN shards stay open, the least recently drawn closed first. */
#include "shard_view.h"

#include <stdlib.h>
#include <string.h>

#include "hm_sql.h"
#include "report.h"
#include "shards.h"

enum { SHARDS_OPEN = 8 };

struct open_shard {
    int id;              /* shards.id; 0: a free slot */
    sqlite3 *db;         /* owned */
    struct qry_lod *lod; /* owned */
    int64_t *tracks;     /* owned: shard tracks.id -> the index's, 0 unknown */
    int64_t ntracks;
    int64_t *colls;      /* owned: shard collectives.id -> the index's */
    int64_t ncolls;
    uint64_t used;       /* the view's clock when last drawn */
};

struct qry_shard_view {
    struct open_shard s[SHARDS_OPEN];
    uint64_t clock;
};

static void shard_close(struct open_shard *s)
{
    qry_lod_free(s->lod);
    sqlite3_close(s->db);
    free(s->tracks);
    free(s->colls);
    memset(s, 0, sizeof *s);
}

void qry_shard_view_free(struct qry_shard_view *v)
{
    if (!v)
        return;
    for (int i = 0; i < SHARDS_OPEN; i++)
        shard_close(&v->s[i]);
    free(v);
}

/* An empty id map for the shard's table: *map of *n zeros, indexed by the
 * table's ids. */
static int new_map(sqlite3 *db, const char *sql_max, int64_t **map, int64_t *n, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;

    *n = 0;
    if (sqlite3_prepare_v2(db, sql_max, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        *n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (!(*map = calloc((size_t)*n + 1, sizeof **map)))
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    return 0;
}

/* The index's id of each of the shard's tracks. */
static int map_tracks(sqlite3 *index, struct open_shard *s, struct hm_err *err)
{
    sqlite3_stmt *a = NULL, *b = NULL;
    int rc = new_map(s->db, "SELECT coalesce(max(id), 0) + 1 FROM tracks", &s->tracks, &s->ntracks, err);

    if (rc)
        return rc;
    if (sqlite3_prepare_v2(s->db, "SELECT id, rank, kind, pid, tid FROM tracks", -1, &a, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(index, "SELECT id FROM tracks WHERE rank = ?1 AND kind = ?2 AND pid IS ?3 AND tid IS ?4",
                           -1, &b, NULL) != SQLITE_OK)
        rc = hm_err_set(err, HM_ESQL, NULL, -1, "mapping a shard's tracks");
    while (rc == 0 && sqlite3_step(a) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(a, 0);
        for (int k = 1; k <= 4; k++)
            sqlite3_bind_value(b, k, sqlite3_column_value(a, k));
        if (sqlite3_step(b) == SQLITE_ROW && id > 0 && id < s->ntracks)
            s->tracks[id] = sqlite3_column_int64(b, 0);
        sqlite3_reset(b);
    }
    sqlite3_finalize(a);
    sqlite3_finalize(b);
    return rc;
}

/* The index's id of each of the shard's collectives: the k-th of a rank
 * in the shard is the k-th of that rank in the index. */
static int map_colls(sqlite3 *index, struct open_shard *s, struct hm_err *err)
{
    sqlite3_stmt *a = NULL, *b = NULL;
    int rc = new_map(s->db, "SELECT coalesce(max(id), 0) + 1 FROM collectives", &s->colls, &s->ncolls, err), ra, rb;

    if (rc)
        return rc;
    if (sqlite3_prepare_v2(s->db, "SELECT id, rank FROM collectives ORDER BY rank, id", -1, &a, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(index, "SELECT id, rank FROM collectives WHERE rank IN (SELECT rank FROM rank_shards "
                           "WHERE shard = ?1) ORDER BY rank, id", -1, &b, NULL) != SQLITE_OK)
        return hm_err_set(err, HM_ESQL, NULL, -1, "mapping a shard's collectives");
    sqlite3_bind_int(b, 1, s->id);
    ra = sqlite3_step(a);
    rb = sqlite3_step(b);
    while (ra == SQLITE_ROW && rb == SQLITE_ROW) {
        int64_t x = sqlite3_column_int64(a, 1), y = sqlite3_column_int64(b, 1), id = sqlite3_column_int64(a, 0);
        if (x == y && id > 0 && id < s->ncolls)
            s->colls[id] = sqlite3_column_int64(b, 0);
        if (x <= y)
            ra = sqlite3_step(a);
        if (y <= x)
            rb = sqlite3_step(b);
    }
    sqlite3_finalize(a);
    sqlite3_finalize(b);
    return rc;
}

/* The open shard id, opened (and its maps made) if it is not. */
static struct open_shard *shard_get(struct qry_shard_view *v, struct qry_dbh *h, int id, int rank, size_t budget,
                                    struct hm_err *err)
{
    struct open_shard *s = NULL, *lru = &v->s[0];
    int64_t origin, end;

    for (int i = 0; i < SHARDS_OPEN; i++) {
        if (v->s[i].id == id)
            s = &v->s[i];
        if (v->s[i].used < lru->used)
            lru = &v->s[i];
    }
    if (!s) {
        s = lru;
        shard_close(s);
        if (!(s->db = qry_shard_open(h->db, h->path, rank, err)))
            return NULL;
        s->id = id;
        if (map_tracks(h->db, s, err) || map_colls(h->db, s, err) ||
            !(s->lod = qry_lod_new(s->db, budget / SHARDS_OPEN, err))) {
            shard_close(s);
            return NULL;
        }
    }
    qry_lod_extent(h->lod, &origin, &end);
    qry_lod_set_extent(s->lod, origin, end);   /* one origin for the whole answer */
    s->used = ++v->clock;
    return s;
}

/* Moves one shard's answer's tracks into tracks, in the index's ids; its
 * slices' names are appended to names. */
static void translate(const struct open_shard *s, cJSON *doc, cJSON *tracks, cJSON *names)
{
    cJSON *t, *n, *nt = cJSON_GetObjectItemCaseSensitive(doc, "names");
    int base = cJSON_GetArraySize(names);

    cJSON_ArrayForEach(n, nt)
        cJSON_AddItemToArray(names, cJSON_Duplicate(n, 0));
    while ((t = cJSON_DetachItemFromArray(cJSON_GetObjectItemCaseSensitive(doc, "tracks"), 0)) != NULL) {
        cJSON *id = cJSON_GetObjectItemCaseSensitive(t, "id"), *sl;
        int64_t tid = cJSON_IsNumber(id) ? (int64_t)id->valuedouble : 0;
        if (cJSON_IsNumber(id))
            cJSON_SetNumberValue(id, (double)(tid > 0 && tid < s->ntracks ? s->tracks[tid] : 0));
        cJSON_ArrayForEach(sl, cJSON_GetObjectItemCaseSensitive(t, "slices")) {
            cJSON *f[7];
            int k = 0;
            for (cJSON *e = sl->child; e && k < 7; e = e->next)
                f[k++] = e;
            if (k < 7)
                continue;
            cJSON_SetNumberValue(f[0], (double)(((int64_t)s->id << QRY_SHARD_ID_SHIFT) + (int64_t)f[0]->valuedouble));
            if (f[4]->valuedouble >= 0)
                cJSON_SetNumberValue(f[4], f[4]->valuedouble + base);
            int64_t c = (int64_t)f[6]->valuedouble;
            cJSON_SetNumberValue(f[6], (double)(c > 0 && c < s->ncolls ? s->colls[c] : 0));
        }
        cJSON_AddItemToArray(tracks, t);
    }
}

/* The ranks asked for (every rank in a shard when ranks is NULL) that a
 * shard holds, with their shards, in the order asked: *n of them in *rk
 * and *sh (owned by the caller, also on failure). */
static int ranks_and_shards(sqlite3 *db, const int *ranks, int nranks, int **rk, int **sh, int *n, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int cap = ranks ? nranks : 0, step = SQLITE_ROW;

    *n = 0;
    if (!ranks && sqlite3_prepare_v2(db, "SELECT count(*) FROM rank_shards", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        cap = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    *rk = calloc((size_t)cap + 1, sizeof **rk);
    *sh = calloc((size_t)cap + 1, sizeof **sh);
    if (!*rk || !*sh)
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    const char *sql = ranks ? "SELECT shard FROM rank_shards WHERE rank = ?1"
                            : "SELECT rank, shard FROM rank_shards ORDER BY rank";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return hm_err_set(err, HM_ESQL, NULL, -1, "%s", sqlite3_errmsg(db));
    for (int i = 0; ranks && i < nranks && step != SQLITE_ERROR; i++) {
        sqlite3_bind_int(st, 1, ranks[i]);
        if ((step = sqlite3_step(st)) == SQLITE_ROW)
            (*rk)[*n] = ranks[i], (*sh)[(*n)++] = sqlite3_column_int(st, 0);
        sqlite3_reset(st);
    }
    while (!ranks && *n < cap && (step = sqlite3_step(st)) == SQLITE_ROW)
        (*rk)[*n] = sqlite3_column_int(st, 0), (*sh)[(*n)++] = sqlite3_column_int(st, 1);
    int bad = step != SQLITE_ROW && step != SQLITE_DONE;
    sqlite3_finalize(st);
    return bad ? hm_err_set(err, HM_ESQL, NULL, -1, "reading rank_shards: %s", sqlite3_errmsg(db)) : 0;
}

/* The ranks of the group that begins at i (the first of rk whose shard is
 * sh[i]) into sub; 0 when sh[i]'s group began earlier. */
static int shard_group(const int *rk, const int *sh, int n, int i, int *sub)
{
    int m = 0;

    for (int k = 0; k < i; k++)
        if (sh[k] == sh[i])
            return 0;
    for (int k = i; k < n; k++)
        if (sh[k] == sh[i])
            sub[m++] = rk[k];
    return m;
}

static struct open_shard *group_shard(struct qry_dbh *h, int id, int rank, struct hm_err *err)
{
    if (!h->shards && !(h->shards = calloc(1, sizeof *h->shards))) {
        hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        return NULL;
    }
    return shard_get(h->shards, h, id, rank, (size_t)h->memory_mb * 1048576 / 4, err);
}

int qry_shard_timeline(struct qry_dbh *h, const struct qry_window *w, struct qry_buf *out, struct hm_err *err)
{
    struct qry_buf b = {0};
    cJSON *doc = NULL, *tracks = NULL, *names = NULL;
    int *rk = NULL, *sh = NULL, *sub = NULL, n = 0;
    char *text;
    /* The index's own answer: the header, the stitched NVTX rows, names. */
    int rc = qry_timeline(h->lod, w, &b, err);

    if (rc == 0 && !(doc = cJSON_Parse(b.p)))
        rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    qry_buf_free(&b);
    if (rc == 0) {
        tracks = cJSON_CreateArray();
        names = cJSON_GetObjectItemCaseSensitive(doc, "names");
        cJSON_ReplaceItemInObjectCaseSensitive(doc, "tracks", tracks);
        rc = ranks_and_shards(h->db, w->ranks, w->nranks, &rk, &sh, &n, err);
    }
    if (rc == 0 && !(sub = calloc((size_t)n + 1, sizeof *sub)))
        rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    /* Shard by shard, in the order of the ranks asked for. */
    for (int i = 0; rc == 0 && i < n; i++) {
        struct open_shard *s;
        struct qry_window sw = *w;
        cJSON *part;
        if (!(sw.nranks = shard_group(rk, sh, n, i, sub)))
            continue;
        sw.ranks = sub;
        if (!(s = group_shard(h, sh[i], rk[i], err))) {
            rc = err->code ? err->code : HM_EIO;
            break;
        }
        memset(&b, 0, sizeof b);
        rc = qry_timeline(s->lod, &sw, &b, err);
        if (rc == 0 && !(part = cJSON_Parse(b.p)))
            rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        qry_buf_free(&b);
        if (rc == 0) {
            translate(s, part, tracks, names);
            cJSON_Delete(part);
        }
    }
    text = rc == 0 ? cJSON_PrintUnformatted(doc) : NULL;
    if (rc == 0 && !text)
        rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    if (rc == 0)
        qry_buf_puts(out, text);
    free(text);
    cJSON_Delete(doc);
    free(rk);
    free(sh);
    free(sub);
    return rc;
}

cJSON *qry_shard_gather(struct qry_dbh *h, const int *ranks, int nranks, const char *key, qry_shard_part_fn part,
                        void *arg, struct hm_err *err)
{
    int *rk = NULL, *sh = NULL, *sub = NULL, n = 0, m, truncated = 0;
    cJSON *doc = NULL;

    if (ranks_and_shards(h->db, ranks, nranks, &rk, &sh, &n, err) == 0 && !(sub = calloc((size_t)n + 1, sizeof *sub)))
        hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    for (int i = 0; sub && i < n; i++) {
        if (!(m = shard_group(rk, sh, n, i, sub)))
            continue;
        struct open_shard *s = group_shard(h, sh[i], rk[i], err);
        cJSON *one = s ? part(s->db, sub, m, arg, err) : NULL;
        if (!one) {
            cJSON_Delete(doc);
            doc = NULL;
            break;
        }
        truncated |= cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(one, "truncated"));
        if (!doc) {
            doc = one;
            continue;
        }
        cJSON *to = cJSON_GetObjectItemCaseSensitive(doc, key), *from = cJSON_GetObjectItemCaseSensitive(one, key), *e;
        while (to && from && (e = cJSON_DetachItemFromArray(from, 0)) != NULL)
            cJSON_AddItemToArray(to, e);
        cJSON_Delete(one);
    }
    /* no rank in any shard: the part's empty answer, from the index */
    if (sub && !doc && n == 0)
        doc = part(h->db, rk, 0, arg, err);
    if (doc && cJSON_GetObjectItemCaseSensitive(doc, "truncated"))
        cJSON_ReplaceItemInObjectCaseSensitive(doc, "truncated", cJSON_CreateBool(truncated));
    free(rk);
    free(sh);
    free(sub);
    return doc;
}

/* The open shard id, found by one of its ranks; NULL with err filled
 * (HM_EEMPTY: no such shard). */
static struct open_shard *shard_by_id(struct qry_dbh *h, int shard, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rank = -1;

    if (sqlite3_prepare_v2(h->db, "SELECT min(rank) FROM rank_shards WHERE shard = ?1", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int(st, 1, shard);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
            rank = sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
    if (rank < 0) {
        hm_err_set(err, HM_EEMPTY, NULL, -1, "no shard %d", shard);
        return NULL;
    }
    return group_shard(h, shard, rank, err);
}

sqlite3 *qry_shard_db(struct qry_dbh *h, int shard, struct hm_err *err)
{
    struct open_shard *s = shard_by_id(h, shard, err);
    return s ? s->db : NULL;
}

int qry_shard_route(struct qry_dbh *h, int64_t id, struct qry_dbh *tmp, int64_t *local, struct hm_err *err)
{
    struct open_shard *s = shard_by_id(h, (int)(id >> QRY_SHARD_ID_SHIFT), err);

    if (!s)
        return err->code ? err->code : HM_EIO;
    *tmp = *h;
    tmp->db = s->db;
    tmp->lod = s->lod;
    tmp->lod_version = tmp->version;   /* borrowed: never rebuilt through tmp */
    tmp->shards = NULL;
    *local = id & (((int64_t)1 << QRY_SHARD_ID_SHIFT) - 1);
    return 0;
}

void qry_shard_translate_slice(struct qry_dbh *h, int64_t id, cJSON *row)
{
    int shard = (int)(id >> QRY_SHARD_ID_SHIFT);
    const struct open_shard *s = NULL;
    cJSON *t = cJSON_GetObjectItemCaseSensitive(row, "track"), *c = cJSON_GetObjectItemCaseSensitive(row, "collective");

    for (int i = 0; h->shards && i < SHARDS_OPEN; i++)
        if (h->shards->s[i].id == shard)
            s = &h->shards->s[i];
    cJSON *p = cJSON_GetObjectItemCaseSensitive(row, "parent");

    cJSON_ReplaceItemInObjectCaseSensitive(row, "id", cJSON_CreateNumber((double)id));
    if (cJSON_IsNumber(p))
        cJSON_SetNumberValue(p, (double)(((int64_t)shard << QRY_SHARD_ID_SHIFT) + (int64_t)p->valuedouble));
    if (!s)
        return;
    if (cJSON_IsNumber(t) && t->valuedouble > 0 && t->valuedouble < (double)s->ntracks)
        cJSON_SetNumberValue(t, (double)s->tracks[(int64_t)t->valuedouble]);
    if (cJSON_IsNumber(c) && c->valuedouble > 0 && c->valuedouble < (double)s->ncolls)
        cJSON_SetNumberValue(c, (double)s->colls[(int64_t)c->valuedouble]);
}
