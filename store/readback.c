/* Reading a rank back: a live run stores slices before their steps are
 * known, so at the end each rank is read back from the database as one
 * batch (aligned times, no base) for the analyses, and the iterations
 * they assign are written back to the same rows. */
#include "store/writer_int.h"

#include <stdlib.h>

#include "hm_sql.h"

/* Interns a global string into b, once per id (map: global id -> batch
 * id, 0 = not yet); UINT32_MAX when out of memory. */
static hm_strid to_batch(const struct mrg_writer *w, struct hm_batch *b, sqlite3_stmt *st, int col,
                         hm_strid *map)
{
    size_t len;
    const char *s;
    hm_strid g;

    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return 0;
    g = (hm_strid)sqlite3_column_int64(st, col);
    if (g < hm_strtab_count(w->strings) && map[g])
        return map[g];
    s = hm_strtab_get(w->strings, g, &len);
    hm_strid id = hm_batch_intern(b, s, len);
    if (g < hm_strtab_count(w->strings) && id != UINT32_MAX)
        map[g] = id;
    return id;
}

static int64_t col_opt(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? HM_NONE : sqlite3_column_int64(st, col);
}

static int load_slices(struct mrg_writer *w, int rank, struct hm_batch *b, int64_t **ids,
                       struct hm_err *err)
{
    size_t cap = 0;
    sqlite3_stmt *st = NULL;
    hm_strid *map = calloc(hm_strtab_count(w->strings) + 1, sizeof *map);
    int rc = map ? sqlite3_prepare_v2(w->db, hm_sql_writer_load_slices, -1, &st, NULL) : SQLITE_NOMEM;

    if (rc != SQLITE_OK) {
        free(map);
        return wr_fail_sql(w, err, "loading a rank");
    }
    sqlite3_bind_int(st, 1, rank);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t t = hm_batch_track(b, (uint32_t)sqlite3_column_int(st, 8), sqlite3_column_int64(st, 9),
                                   sqlite3_column_int64(st, 10));
        struct hm_slice *s = HM_VEC_PUSH(b->slices);
        if (t < 0 || !s) {
            sqlite3_finalize(st);
            free(map);
            return wr_refuse(w, err, HM_ENOMEM, rank, "out of memory loading a rank");
        }
        s->ts = sqlite3_column_int64(st, 0);
        s->dur = sqlite3_column_int64(st, 1);
        s->name = to_batch(w, b, st, 2, map);
        s->cat = (uint16_t)sqlite3_column_int(st, 3);
        s->correlation = col_opt(st, 4);
        s->external_id = col_opt(st, 5);
        s->bytes = col_opt(st, 6);
        s->flags = (uint16_t)sqlite3_column_int(st, 7);
        s->track = (uint32_t)t;
        s->iteration = HM_NONE;
        if (hm_vec_reserve((void **)ids, &cap, b->slices.n, sizeof **ids)) {
            sqlite3_finalize(st);
            free(map);
            return wr_refuse(w, err, HM_ENOMEM, rank, "out of memory loading a rank");
        }
        (*ids)[b->slices.n - 1] = sqlite3_column_int64(st, 11);
        if (s->name == UINT32_MAX) {
            sqlite3_finalize(st);
            free(map);
            return wr_refuse(w, err, HM_ENOMEM, rank, "out of memory loading a rank");
        }
    }
    sqlite3_finalize(st);
    free(map);
    return rc == SQLITE_DONE ? 0 : wr_fail_sql(w, err, "loading a rank");
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int load_steps(struct mrg_writer *w, int rank, struct hm_batch *b, const int64_t *ids,
                      struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(w->db, hm_sql_writer_load_steps, -1, &st, NULL);

    if (rc != SQLITE_OK)
        return wr_fail_sql(w, err, "loading steps");
    sqlite3_bind_int(st, 1, rank);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct hm_step *p = HM_VEC_PUSH(b->steps);
        if (!p) {
            sqlite3_finalize(st);
            return wr_refuse(w, err, HM_ENOMEM, rank, "out of memory loading steps");
        }
        p->number = sqlite3_column_int64(st, 0);
        p->ts = sqlite3_column_int64(st, 1);
        p->dur = sqlite3_column_int64(st, 2);
        int64_t id = sqlite3_column_int64(st, 3);
        const int64_t *hit = ids ? bsearch(&id, ids, b->slices.n, sizeof *ids, cmp_i64) : NULL;
        p->slice = hit ? (uint32_t)(hit - ids) : UINT32_MAX; /* position in load order */
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : wr_fail_sql(w, err, "loading steps");
}

/* The rank's CUPTI recording samples: the analyses leave paused time out
 * of GPU idle. Other counters (memory) are not analysed and stay behind. */
static int load_recording(struct mrg_writer *w, int rank, struct hm_batch *b, struct hm_err *err)
{
    static const char name[] = "htamerge/cupti recording";
    sqlite3_stmt *st = NULL;
    hm_strid id = 0;
    int rc = sqlite3_prepare_v2(w->db, hm_sql_writer_load_recording, -1, &st, NULL);

    if (rc != SQLITE_OK)
        return wr_fail_sql(w, err, "loading CUPTI pauses");
    sqlite3_bind_int(st, 1, rank);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct hm_counter *k = HM_VEC_PUSH(b->counters);
        if (k && !id)
            id = hm_batch_intern(b, name, sizeof name - 1);
        if (!k || id == UINT32_MAX) {
            sqlite3_finalize(st);
            return wr_refuse(w, err, HM_ENOMEM, rank, "out of memory loading CUPTI pauses");
        }
        k->ts = sqlite3_column_int64(st, 0);
        k->value = sqlite3_column_double(st, 1);
        k->device = sqlite3_column_int(st, 2);
        k->name = id;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : wr_fail_sql(w, err, "loading CUPTI pauses");
}

int mrg_writer_load_rank(struct mrg_writer *w, int rank, struct hm_batch **out, struct hm_err *err)
{
    struct hm_batch *b;
    int rc;

    *out = NULL;
    if ((rc = wr_usable(w, err)))
        return rc;
    if (rank < 0 || rank >= w->nranks || !w->ranks[rank].known || !w->ranks[rank].batches)
        return HM_EEMPTY;
    rc = wr_write_dimensions(w, 0, err);
    if (rc)
        return rc;
    b = hm_batch_new();
    if (!b)
        return wr_refuse(w, err, HM_ENOMEM, rank, "out of memory");
    b->info.rank = rank;
    b->info.flags = w->ranks[rank].trace_flags & ~HM_INFO_F_FRACTIONAL_TS;
    int64_t *ids = NULL;
    rc = load_slices(w, rank, b, &ids, err);
    if (rc == 0)
        rc = load_steps(w, rank, b, ids, err);
    if (rc == 0)
        rc = load_recording(w, rank, b, err);
    free(w->loaded_ids);
    w->loaded_ids = rc == 0 ? ids : NULL;
    w->nloaded = rc == 0 ? b->slices.n : 0;
    if (rc)
        free(ids);
    if (rc) {
        hm_batch_free(b);
        return rc;
    }
    *out = b;
    return 0;
}

int mrg_writer_store_iterations(struct mrg_writer *w, const struct hm_batch *b, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = wr_usable(w, err);

    if (rc)
        return rc;
    if (b->slices.n == 0 && w->nloaded == 0)   /* a rank that sent no slice: nothing to store */
        return 0;
    if (!w->loaded_ids || b->slices.n != w->nloaded)
        return wr_refuse(w, err, HM_EINVAL, b->info.rank, "storing iterations of a batch that was not loaded");
    if (sqlite3_prepare_v2(w->db, "UPDATE slices SET iteration = ?2 WHERE id = ?1", -1, &st, NULL) != SQLITE_OK)
        return wr_fail_sql(w, err, "storing iterations");
    for (size_t i = 0; i < b->slices.n; i++) {
        if (b->slices.v[i].iteration == HM_NONE)
            continue;
        sqlite3_bind_int64(st, 1, w->loaded_ids[i]);
        sqlite3_bind_int(st, 2, b->slices.v[i].iteration);
        rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE) {
            sqlite3_finalize(st);
            return wr_fail_sql(w, err, "storing iterations");
        }
    }
    sqlite3_finalize(st);
    return 0;
}
