/* Tracks and rows: one batch becomes rows of slices (in the storage order
 * of slice_nesting.c), collectives, counters and steps, with times aligned
 * by its rank's clock (rank_state.c). Fact rows stream into SQLite as
 * batches arrive; tracks are kept per rank in memory and written with the
 * other dimension tables (analysis_rows.c).
 *
 * Slices go in SLICE_ROWS rows per statement: one statement execution per
 * row costs about as much as the row itself (cursor open, seek, halt), so
 * batching rows measured 1.5-2x faster; 32 was the best of 8/16/32/64. The
 * statements (ST_SLICE: one row, ST_SLICES: SLICE_ROWS) are built at open.
 * The id is left to SQLite (max + 1, measured 20% fewer instructions than
 * binding it, which makes SQLite seek): the writer is the only one adding
 * slices, so ids are w->next_slice, ... and insert_slices checks that. */
#include "store/writer_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hm_sql.h"


/* Prepares writer_insert_slices.sql followed by rows tuples (?, ...). */
int wr_prepare_slice_insert(struct mrg_writer *w, int rows, sqlite3_stmt **st)
{
    char sql[sizeof hm_sql_writer_insert_slices + SLICE_ROWS * (2 * SLICE_COLS + 2)];
    size_t n = sizeof hm_sql_writer_insert_slices - 1;

    memcpy(sql, hm_sql_writer_insert_slices, n);
    for (int r = 0; r < rows; r++) {
        sql[n++] = r ? ',' : '(';
        if (r)
            sql[n++] = '(';
        for (int k = 0; k < SLICE_COLS; k++) {
            sql[n++] = k ? ',' : '?';
            if (k)
                sql[n++] = '?';
        }
        sql[n++] = ')';
    }
    return sqlite3_prepare_v3(w->db, sql, (int)n, SQLITE_PREPARE_PERSISTENT, st, NULL);
}

/* Maps each batch track to its tracks.id, adding new tracks to the rank. */
static int map_tracks(struct mrg_writer *w, struct bctx *c)
{
    const struct hm_batch *b = c->b;

    if (hm_vec_reserve((void **)&w->sc.tmap, &w->sc.tmap_cap, b->tracks.n + 1, sizeof *w->sc.tmap))
        return HM_ENOMEM;
    for (size_t i = 0; i < b->tracks.n; i++) {
        const struct hm_track *t = &b->tracks.v[i];
        struct rank_track *rt = NULL;
        for (size_t j = 0; j < c->r->tracks.n && !rt; j++) {
            struct rank_track *x = &c->r->tracks.v[j];
            if (x->kind == t->kind && x->pid == t->pid && x->tid == t->tid)
                rt = x;
        }
        if (!rt) {
            rt = HM_VEC_PUSH(c->r->tracks);
            if (!rt)
                return HM_ENOMEM;
            *rt = (struct rank_track){t->pid, t->tid, w->next_track++, t->kind, 0};
        }
        wr_keep_sid(&rt->name, wr_gstr(w, b, t->name));
        w->sc.tmap[i] = rt->id;
    }
    return 0;
}

/* Checks the batch's internal references before anything is stored. */
static int check_batch(struct mrg_writer *w, const struct hm_batch *b, struct hm_err *err)
{
    int rank = b->info.rank;

    if (b->slices.n >= UINT32_MAX)
        return wr_refuse(w, err, HM_EINVAL, rank, "batch has too many slices");
    for (size_t i = 0; i < b->slices.n; i++)
        if (b->slices.v[i].track >= b->tracks.n)
            return wr_refuse(w, err, HM_EFORMAT, rank, "slice refers to a missing track");
    for (size_t i = 0; i < b->collectives.n; i++)
        if (b->collectives.v[i].slice >= b->slices.n)
            return wr_refuse(w, err, HM_EFORMAT, rank, "collective refers to a missing slice");
    for (size_t i = 0; i < b->steps.n; i++)
        if (b->steps.v[i].slice >= b->slices.n && b->steps.v[i].slice != HM_STEP_NO_SLICE)
            return wr_refuse(w, err, HM_EFORMAT, rank, "step refers to a missing slice");
    return 0;
}

/* Notes id as name's first slice if it has none yet (name_first_slices). */
static void note_first(struct mrg_writer *w, hm_strid name, int64_t id)
{
    if (!name || w->first_lost)
        return;
    if (name >= w->first_cap) {
        size_t cap = w->first_cap ? w->first_cap : 1024;
        int64_t *v;
        while (cap <= name)
            cap *= 2;
        if (!(v = realloc(w->first_slice, cap * sizeof *v))) {
            w->first_lost = 1;
            return;
        }
        memset(v + w->first_cap, 0, (cap - w->first_cap) * sizeof *v);
        w->first_slice = v;
        w->first_cap = cap;
    }
    if (!w->first_slice[name])
        w->first_slice[name] = id;
}

/* Binds the slice at storage position k (id c->first + k) to parameters
 * o+1 .. o+SLICE_COLS. */
static void bind_slice(struct mrg_writer *w, const struct bctx *c, sqlite3_stmt *st, int o,
                       size_t k)
{
    const struct hm_batch *b = c->b;
    uint32_t i = w->sc.nest.keys[k].idx, parent = w->sc.nest.parent[i];
    const struct hm_slice *s = &b->slices.v[i];
    int64_t ts = wr_align_ts(c, s->ts);
    hm_strid name = wr_gstr(w, b, s->name);

    if (!w->index_only)   /* an index keeps few slices: its shards answer */
        note_first(w, name, c->first + (int64_t)k);
    sqlite3_bind_int64(st, o + 1, w->sc.tmap[s->track]);
    sqlite3_bind_int64(st, o + 2, ts);
    sqlite3_bind_int64(st, o + 3, c->drift ? wr_align_ts(c, hm_add_wrap(s->ts, s->dur)) - ts : s->dur);
    wr_bind_sid(st, o + 4, name);
    sqlite3_bind_int(st, o + 5, s->cat < HM_CAT__COUNT ? s->cat : HM_CAT_OTHER);
    wr_bind_sid(st, o + 6, s->cat == HM_CAT_OTHER ? wr_gstr(w, b, s->cat_name) : 0);
    sqlite3_bind_int(st, o + 7, (int)w->sc.nest.depth[i]);
    wr_bind_opt(st, o + 8, parent ? c->first + parent - 1 : HM_NONE);
    wr_bind_opt(st, o + 9, s->correlation);
    wr_bind_opt(st, o + 10, s->external_id);
    wr_bind_opt(st, o + 11, s->bytes);
    wr_bind_opt(st, o + 12, s->iteration);
    wr_bind_str(st, o + 13, b->strings, s->args);
    sqlite3_bind_int(st, o + 14, s->flags);
}

/* slices.id of the batch's slice i. */
static int64_t slice_id(const struct mrg_writer *w, const struct bctx *c, uint32_t i)
{
    return c->first + w->sc.nest.pos[i];
}

/* Tells the slice tap the batch's slices, as bind_slice stored them. */
static void tap_slices(struct mrg_writer *w, const struct bctx *c)
{
    const struct hm_batch *b = c->b;

    for (size_t k = 0; k < b->slices.n; k++) {
        const struct hm_slice *s = &b->slices.v[w->sc.nest.keys[k].idx];
        struct mrg_slice_row row = {
            .rank = c->rank,
            .gpu = b->tracks.v[s->track].kind == HM_TRACK_GPU_STREAM,
            .cat = s->cat < HM_CAT__COUNT ? s->cat : HM_CAT_OTHER,
            .id = c->first + (int64_t)k,
            .track = w->sc.tmap[s->track],
            .ts = wr_align_ts(c, s->ts),
            .correlation = s->correlation,
            .name = wr_gstr(w, b, s->name),
            .iteration = s->iteration,
        };
        row.dur = c->drift ? wr_align_ts(c, hm_add_wrap(s->ts, s->dur)) - row.ts : s->dur;
        w->tap(w->tap_ctx, &row);
    }
}

void mrg_writer_set_slice_tap(struct mrg_writer *w, void (*tap)(void *ctx, const struct mrg_slice_row *row),
                              void *ctx)
{
    w->tap = tap;
    w->tap_ctx = ctx;
}

void mrg_writer_set_index_only(struct mrg_writer *w, int on)
{
    w->index_only = on;
}

/* Index mode: marks the batch's slices an index keeps (writer.h), by batch
 * index; 1 when that is every slice. */
static int mark_kept(struct mrg_writer *w, const struct hm_batch *b)
{
    if (hm_vec_reserve((void **)&w->keep, &w->keep_cap, b->slices.n + 1, 1))
        return -1;
    for (size_t i = 0; i < b->slices.n; i++)
        if (b->slices.v[i].cat == HM_CAT_CUDA_GRAPH)
            return 1;
    memset(w->keep, 0, b->slices.n);
    for (size_t i = 0; i < b->collectives.n; i++)
        w->keep[b->collectives.v[i].slice] = 1;
    for (size_t i = 0; i < b->steps.n; i++)
        if (b->steps.v[i].slice != HM_STEP_NO_SLICE)
            w->keep[b->steps.v[i].slice] = 1;
    return 0;
}

/* Index mode's insert: the kept slices, each with its id. */
static int insert_kept(struct mrg_writer *w, struct bctx *c, struct hm_err *err)
{
    sqlite3_stmt *st = w->st[ST_SLICE_ID];
    size_t n = c->b->slices.n;
    int all = mark_kept(w, c->b);

    if (all < 0)
        return wr_fail(w, err, HM_ENOMEM, c->rank, "out of memory");
    for (size_t k = 0; k < n; k++) {
        if (!all && !w->keep[w->sc.nest.keys[k].idx])
            continue;
        bind_slice(w, c, st, 0, k);
        sqlite3_bind_int64(st, SLICE_COLS + 1, c->first + (int64_t)k);
        if (sqlite3_step(st) != SQLITE_DONE)
            return wr_fail_sql(w, err, "storing a slice");
        sqlite3_reset(st);
        w->stats.rows++;
    }
    w->stats.slices += n;
    if (w->tap)
        tap_slices(w, c);
    return 0;
}

static int insert_slices(struct mrg_writer *w, struct bctx *c, struct hm_err *err)
{
    size_t i = 0, n = c->b->slices.n;
    sqlite3_stmt *st = w->st[ST_SLICES];

    c->drift = c->r->clk.drift_ppm != 0.0;
    if (w->index_only)
        return insert_kept(w, c, err);
    for (; i + SLICE_ROWS <= n; i += SLICE_ROWS) {
        for (int k = 0; k < SLICE_ROWS; k++)
            bind_slice(w, c, st, k * SLICE_COLS, i + (size_t)k);
        if (sqlite3_step(st) != SQLITE_DONE)
            return wr_fail_sql(w, err, "storing slices");
        sqlite3_reset(st);
    }
    st = w->st[ST_SLICE];
    for (; i < n; i++) {
        bind_slice(w, c, st, 0, i);
        if (sqlite3_step(st) != SQLITE_DONE)
            return wr_fail_sql(w, err, "storing a slice");
        sqlite3_reset(st);
    }
    if (n && sqlite3_last_insert_rowid(w->db) != c->first + (int64_t)n - 1)
        return wr_fail(w, err, HM_ESQL, c->rank, "slice ids out of step with the writer's count");
    w->stats.slices += n;
    w->stats.rows += n;
    if (w->tap)
        tap_slices(w, c);
    return 0;
}

static int insert_collectives(struct mrg_writer *w, struct bctx *c, struct hm_err *err)
{
    int rc;
    sqlite3_stmt *st = w->st[ST_COLL];
    const struct hm_batch *b = c->b;

    for (size_t i = 0; i < b->collectives.n; i++) {
        const struct hm_collective *k = &b->collectives.v[i];
        const struct hm_slice *s = &b->slices.v[k->slice];
        sqlite3_bind_int(st, 1, c->rank);
        sqlite3_bind_int64(st, 2, slice_id(w, c, k->slice));
        wr_bind_str(st, 3, b->strings, k->pg_name);
        wr_bind_str(st, 4, b->strings, k->pg_desc);
        wr_bind_str(st, 5, b->strings, k->op);
        wr_bind_opt(st, 6, k->seq);
        wr_bind_str(st, 7, b->strings, k->comms_id);
        wr_bind_opt(st, 8, k->in_nelems);
        wr_bind_opt(st, 9, k->out_nelems);
        wr_bind_opt(st, 10, k->group_size);
        wr_bind_str(st, 11, b->strings, k->dtype);
        wr_bind_str(st, 12, b->strings, k->pg_ranks);
        sqlite3_bind_int64(st, 13, wr_align_ts(c, s->ts));
        sqlite3_bind_int64(st, 14, wr_align_ts(c, hm_add_wrap(s->ts, s->dur)));
        if ((rc = wr_step(w, st, err, "storing a collective")))
            return rc;
    }
    w->stats.rows += b->collectives.n;
    return 0;
}

static int insert_counters_steps(struct mrg_writer *w, struct bctx *c, struct hm_err *err)
{
    int rc;
    sqlite3_stmt *st = w->st[ST_COUNTER];
    const struct hm_batch *b = c->b;

    for (size_t i = 0; i < b->counters.n; i++) {
        const struct hm_counter *k = &b->counters.v[i];
        sqlite3_bind_int(st, 1, c->rank);
        sqlite3_bind_int(st, 2, k->device);
        wr_bind_sid(st, 3, wr_gstr(w, b, k->name));
        sqlite3_bind_int64(st, 4, wr_align_ts(c, k->ts));
        wr_bind_real(st, 5, k->value);
        if ((rc = wr_step(w, st, err, "storing a counter")))
            return rc;
    }
    st = w->st[ST_STEP];
    for (size_t i = 0; i < b->steps.n; i++) {
        const struct hm_step *k = &b->steps.v[i];
        int64_t ts = wr_align_ts(c, k->ts);
        sqlite3_bind_int(st, 1, c->rank);
        sqlite3_bind_int64(st, 2, k->number);
        if (k->slice == HM_STEP_NO_SLICE)
            sqlite3_bind_null(st, 3);
        else
            sqlite3_bind_int64(st, 3, slice_id(w, c, k->slice));
        sqlite3_bind_int64(st, 4, ts);
        sqlite3_bind_int64(st, 5, wr_align_ts(c, hm_add_wrap(k->ts, k->dur)) - ts);
        sqlite3_bind_text(st, 6, hm_step_source_name(k->source), -1, SQLITE_STATIC);
        if ((rc = wr_step(w, st, err, "storing a step")))
            return rc;
    }
    w->stats.rows += b->counters.n + b->steps.n;
    return 0;
}

/* Prepares the per-batch context: rank state, string map, tracks, base. */
/* Remembers where a rank's slices went, so that reading the rank back
 * visits its own rows only (the table has no index by rank yet). */
static int note_span(struct rank_state *r, int64_t first, int64_t n)
{
    struct id_span *last = r->slice_spans.n ? &r->slice_spans.v[r->slice_spans.n - 1] : NULL;

    if (last && last->first + last->n == first) {
        last->n += n;
        return 0;
    }
    last = HM_VEC_PUSH(r->slice_spans);
    if (!last)
        return -1;
    *last = (struct id_span){first, n};
    return 0;
}

static int batch_begin(struct mrg_writer *w, const struct hm_batch *b, struct bctx *c,
                       struct hm_err *err)
{
    uint32_t ns = hm_strtab_count(b->strings);
    int rc = wr_check_rank(w, b->info.rank, err);

    if (rc || (rc = check_batch(w, b, err)))
        return rc;
    *c = (struct bctx){.b = b, .rank = b->info.rank, .r = &w->ranks[b->info.rank]};
    if (hm_vec_reserve((void **)&w->sc.smap, &w->sc.smap_cap, ns, sizeof *w->sc.smap))
        return wr_refuse(w, err, HM_ENOMEM, c->rank, "out of memory");
    memset(w->sc.smap, 0xff, (size_t)ns * sizeof *w->sc.smap);
    wr_merge_info(w, c);
    if (wr_merge_file(w, c) || map_tracks(w, c) ||
        hm_nesting_compute(&w->sc.nest, b->slices.v, b->slices.n, b->tracks.n))
        return wr_fail(w, err, HM_ENOMEM, c->rank, "out of memory");
    c->base = c->r->clk.base_ns != HM_NONE ? c->r->clk.base_ns
              : b->info.base_time_ns != HM_NONE ? b->info.base_time_ns : 0;
    c->first = w->next_slice;
    w->next_slice += (int64_t)b->slices.n;
    c->r->slices += b->slices.n;
    return b->slices.n && note_span(c->r, c->first, (int64_t)b->slices.n)
               ? wr_fail(w, err, HM_ENOMEM, c->rank, "out of memory")
               : 0;
}

int mrg_writer_add_batch(struct mrg_writer *w, const struct hm_batch *b, struct hm_err *err)
{
    struct bctx c;
    int rc = batch_begin(w, b, &c, err);

    if (rc == 0)
        rc = insert_slices(w, &c, err);
    if (rc == 0)
        rc = insert_collectives(w, &c, err);
    if (rc == 0)
        rc = insert_counters_steps(w, &c, err);
    if (rc == 0)
        rc = wr_usable(w, err);   /* a string that could not be interned */
    if (rc == 0)
        wr_writeback(w);
    if (rc && err) {
        err->rank = b->info.rank;
        hm_err_prefix(err, "storing rank %d", b->info.rank);
    }
    return rc;
}
