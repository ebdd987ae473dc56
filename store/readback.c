/* Reading a rank back: a live run stores slices before their steps are
 * known, so at the end each rank is read back from the database as one
 * batch (aligned times, no base) for the analyses, and the iterations
 * they assign are written back to the same rows; so are the steps found
 * over a rank of several files (merger/rank_files.c). */
#include "store/writer_int.h"

#include <stdlib.h>

#include "hm_sql.h"
#include "store/columns.h"

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

/* The columns of writer_load_slices.sql, in its order. */
#define LOAD_SLICE_COLUMNS(X)                                                                     \
    X(LS_TS, "ts") X(LS_DUR, "dur") X(LS_NAME, "name") X(LS_CAT, "cat")                            \
    X(LS_CORRELATION, "correlation") X(LS_EXTERNAL_ID, "external_id") X(LS_BYTES, "bytes")         \
    X(LS_FLAGS, "flags") X(LS_GPU, "gpu") X(LS_PID, "pid") X(LS_TID, "tid") X(LS_ID, "id")             \
    X(LS_NVTX_ARGS, "nvtx_args")
enum { LOAD_SLICE_COLUMNS(HM_COLUMN_ENUM) LS__COUNT };
static const char *const load_slice_names[] = {LOAD_SLICE_COLUMNS(HM_COLUMN_NAME)};

/* Appends the slice of st's current row to b and its id to *ids;
 * HM_ENOMEM when out of memory. */
static int read_slice(const struct mrg_writer *w, sqlite3_stmt *st, struct hm_batch *b, int64_t **ids,
                      size_t *cap, hm_strid *map)
{
    int64_t t = hm_batch_track(b, (uint32_t)sqlite3_column_int(st, LS_GPU), sqlite3_column_int64(st, LS_PID),
                               sqlite3_column_int64(st, LS_TID));
    struct hm_slice *s = HM_VEC_PUSH(b->slices);

    if (t < 0 || !s)
        return HM_ENOMEM;
    s->ts = sqlite3_column_int64(st, LS_TS);
    s->dur = sqlite3_column_int64(st, LS_DUR);
    s->name = to_batch(w, b, st, LS_NAME, map);
    s->cat = (uint16_t)sqlite3_column_int(st, LS_CAT);
    s->correlation = col_opt(st, LS_CORRELATION);
    s->external_id = col_opt(st, LS_EXTERNAL_ID);
    s->bytes = col_opt(st, LS_BYTES);
    s->flags = (uint16_t)sqlite3_column_int(st, LS_FLAGS);
    s->track = (uint32_t)t;
    s->iteration = HM_NONE;
    if (sqlite3_column_type(st, LS_NVTX_ARGS) == SQLITE_TEXT) /* NVTX domain: step_source.h */
        s->args = hm_batch_intern(b, (const char *)sqlite3_column_text(st, LS_NVTX_ARGS),
                                  (size_t)sqlite3_column_bytes(st, LS_NVTX_ARGS));
    if (hm_vec_reserve((void **)ids, cap, b->slices.n, sizeof **ids))
        return HM_ENOMEM;
    (*ids)[b->slices.n - 1] = sqlite3_column_int64(st, LS_ID);
    return s->name == UINT32_MAX ? HM_ENOMEM : 0;
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
    HM_COLUMNS_CHECK(st, load_slice_names);
    rc = SQLITE_DONE;
    for (size_t k = 0; k < w->ranks[rank].slice_spans.n && rc == SQLITE_DONE; k++) {
        const struct id_span *sp = &w->ranks[rank].slice_spans.v[k];
        sqlite3_reset(st);
        sqlite3_bind_int(st, 1, rank);
        sqlite3_bind_int64(st, 2, sp->first);
        sqlite3_bind_int64(st, 3, sp->first + sp->n - 1);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
            if (read_slice(w, st, b, ids, &cap, map))
                break;
    }
    sqlite3_finalize(st);
    free(map);
    if (rc == SQLITE_ROW)
        return wr_refuse(w, err, HM_ENOMEM, rank, "out of memory loading a rank");
    return rc == SQLITE_DONE ? 0 : wr_fail_sql(w, err, "loading a rank");
}

#define LOAD_STEP_COLUMNS(X) \
    X(LP_NUMBER, "number") X(LP_TS, "ts") X(LP_DUR, "dur") X(LP_SLICE, "slice") X(LP_SOURCE, "source")
enum { LOAD_STEP_COLUMNS(HM_COLUMN_ENUM) LP__COUNT };
static const char *const load_step_names[] = {LOAD_STEP_COLUMNS(HM_COLUMN_NAME)};

static int load_steps(struct mrg_writer *w, int rank, struct hm_batch *b, const int64_t *ids,
                      struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(w->db, hm_sql_writer_load_steps, -1, &st, NULL);

    if (rc != SQLITE_OK)
        return wr_fail_sql(w, err, "loading steps");
    HM_COLUMNS_CHECK(st, load_step_names);
    sqlite3_bind_int(st, 1, rank);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct hm_step *p = HM_VEC_PUSH(b->steps);
        if (!p) {
            sqlite3_finalize(st);
            return wr_refuse(w, err, HM_ENOMEM, rank, "out of memory loading steps");
        }
        p->number = sqlite3_column_int64(st, LP_NUMBER);
        p->ts = sqlite3_column_int64(st, LP_TS);
        p->dur = sqlite3_column_int64(st, LP_DUR);
        int64_t id = sqlite3_column_int64(st, LP_SLICE);
        const int64_t *hit = ids ? bsearch(&id, ids, b->slices.n, sizeof *ids, hm_cmp_i64) : NULL;
        p->slice = hit ? (uint32_t)(hit - ids) : UINT32_MAX; /* position in load order */
        p->source = (uint8_t)hm_step_source_parse((const char *)sqlite3_column_text(st, LP_SOURCE));
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : wr_fail_sql(w, err, "loading steps");
}

#define LOAD_RECORDING_COLUMNS(X) X(LR_TS, "ts") X(LR_VALUE, "value") X(LR_DEVICE, "device")
enum { LOAD_RECORDING_COLUMNS(HM_COLUMN_ENUM) LR__COUNT };
static const char *const load_recording_names[] = {LOAD_RECORDING_COLUMNS(HM_COLUMN_NAME)};

/* The rank's CUPTI recording samples: the analyses leave paused time out
 * of GPU idle. Other counters (memory) are not analysed and stay behind. */
static int load_recording(struct mrg_writer *w, int rank, struct hm_batch *b, struct hm_err *err)
{
    static const char name[] = "htamerge/cupti recording";
    sqlite3_stmt *st = NULL;
    hm_strid id = 0;
    int rc;

    /* No rank stored any (every offline ingest): the query would scan every
     * counter once per rank (0.58 s of 1,024 ranks read back at ingest). */
    if (!hm_strtab_find(w->strings, name, sizeof name - 1))
        return 0;
    rc = sqlite3_prepare_v2(w->db, hm_sql_writer_load_recording, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return wr_fail_sql(w, err, "loading CUPTI pauses");
    HM_COLUMNS_CHECK(st, load_recording_names);
    sqlite3_bind_int(st, 1, rank);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct hm_counter *k = HM_VEC_PUSH(b->counters);
        if (k && !id)
            id = hm_batch_intern(b, name, sizeof name - 1);
        if (!k || id == UINT32_MAX) {
            sqlite3_finalize(st);
            return wr_refuse(w, err, HM_ENOMEM, rank, "out of memory loading CUPTI pauses");
        }
        k->ts = sqlite3_column_int64(st, LR_TS);
        k->value = sqlite3_column_double(st, LR_VALUE);
        k->device = sqlite3_column_int(st, LR_DEVICE);
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
    rc = wr_write_rank_dimensions(w, rank, err);
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

int mrg_writer_drop_steps(struct mrg_writer *w, int rank, int keep_profiler, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = wr_usable(w, err);

    if (rc)
        return rc;
    if (sqlite3_prepare_v2(w->db, hm_sql_writer_drop_steps, -1, &st, NULL) != SQLITE_OK)
        return wr_fail_sql(w, err, "dropping steps");
    sqlite3_bind_int(st, 1, rank);
    sqlite3_bind_int(st, 2, keep_profiler ? 1 : 0);
    rc = wr_step(w, st, err, "dropping steps");
    sqlite3_finalize(st);
    return rc;
}

int mrg_writer_store_steps(struct mrg_writer *w, const struct hm_batch *b, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = wr_usable(w, err);

    if (rc)
        return rc;
    if (sqlite3_prepare_v2(w->db, hm_sql_writer_store_steps, -1, &st, NULL) != SQLITE_OK)
        return wr_fail_sql(w, err, "storing steps");
    for (size_t k = 0; k < b->steps.n && rc == 0; k++) {
        const struct hm_step *s = &b->steps.v[k];
        sqlite3_bind_int(st, 1, b->info.rank);
        sqlite3_bind_int64(st, 2, s->number);
        sqlite3_bind_int64(st, 3, s->ts);
        sqlite3_bind_int64(st, 4, s->dur);
        sqlite3_bind_text(st, 5, hm_step_source_name(s->source), -1, SQLITE_STATIC);
        rc = wr_step(w, st, err, "storing steps");
    }
    sqlite3_finalize(st);
    return rc;
}
