/* Re-timing: once the clocks are fitted at the end of a run, every row of
 * a rank written with its start offset is moved onto its final clock model
 * in one SQL pass per table (sql/queries/writer_realign.sql), through C
 * functions registered for that pass. Here because only the writer knows
 * which track belongs to which rank. */
#include "store/writer_int.h"

#include <stdlib.h>

#include "hm_sql.h"

/* The clock models of a realign pass, by rank and by track. */
struct realign {
    const struct mrg_realign_rank *ranks; /* borrowed, indexed by rank; fn NULL = keep */
    int nranks;
    int *track_rank;                      /* owned: tracks.id -> rank, -1 none */
    int64_t ntracks;
};

/* The aligned time of raw + applied t of rank, read by row (-1: none);
 * end: t ends an interval that started at start. */
static int64_t realign_one(const struct realign *ra, int rank, int64_t row, int64_t start, int64_t t, int end)
{
    const struct mrg_realign_rank *m;
    int64_t peer;

    if (rank < 0 || rank >= ra->nranks || !ra->ranks[rank].offset_at)
        return t;
    m = &ra->ranks[rank];
    peer = t - m->applied_offset_ns;
    if (m->row_offset_at)
        return peer + m->row_offset_at(m->ctx, row, start - m->applied_offset_ns, peer, end);
    return peer + m->offset_at(m->ctx, peer);
}

static int track_rank(const struct realign *ra, sqlite3_value *v)
{
    int64_t track = sqlite3_value_int64(v);
    return track >= 0 && track < ra->ntracks ? ra->track_rank[track] : -1;
}

static int64_t row_of(int argc, sqlite3_value **argv, int at)
{
    return argc > at && sqlite3_value_type(argv[at]) != SQLITE_NULL ? sqlite3_value_int64(argv[at]) : -1;
}

/* hm_realign(rank, t [, row]) and hm_realign_track(track, t [, row]). */
static void sql_realign(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    const struct realign *ra = sqlite3_user_data(cx);
    int64_t t = sqlite3_value_int64(argv[1]);

    if (sqlite3_value_type(argv[1]) == SQLITE_NULL) {
        sqlite3_result_null(cx);
        return;
    }
    sqlite3_result_int64(cx, realign_one(ra, (int)sqlite3_value_int64(argv[0]), row_of(argc, argv, 2), t, t, 0));
}

static void sql_realign_track(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    const struct realign *ra = sqlite3_user_data(cx);
    int64_t t = sqlite3_value_int64(argv[1]);

    sqlite3_result_int64(cx, realign_one(ra, track_rank(ra, argv[0]), row_of(argc, argv, 2), t, t, 0));
}

/* hm_realign_end(rank, row, start, end) and hm_realign_track_end(track,
 * row, start, end): the end of an interval, which a clock step may put on
 * a later clock than its start. */
static void realign_end_result(sqlite3_context *cx, const struct realign *ra, int rank, sqlite3_value **argv)
{
    int64_t start = sqlite3_value_int64(argv[2]), end = sqlite3_value_int64(argv[3]);

    if (sqlite3_value_type(argv[3]) == SQLITE_NULL)
        sqlite3_result_null(cx);
    else if (sqlite3_value_type(argv[2]) == SQLITE_NULL)
        sqlite3_result_int64(cx, realign_one(ra, rank, row_of(4, argv, 1), end, end, 0));
    else
        sqlite3_result_int64(cx, realign_one(ra, rank, row_of(4, argv, 1), start, end, 1));
}

static void sql_realign_end(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    (void)argc;
    realign_end_result(cx, sqlite3_user_data(cx), (int)sqlite3_value_int64(argv[0]), argv);
}

static void sql_realign_track_end(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    const struct realign *ra = sqlite3_user_data(cx);

    (void)argc;
    realign_end_result(cx, ra, track_rank(ra, argv[0]), argv);
}

/* The functions writer_realign.sql calls, registered for one pass. */
static const struct {
    const char *name;
    int nargs;
    void (*fn)(sqlite3_context *, int, sqlite3_value **);
} realign_fns[] = {
    {"hm_realign", 2, sql_realign},           {"hm_realign", 3, sql_realign},
    {"hm_realign_track", 2, sql_realign_track}, {"hm_realign_track", 3, sql_realign_track},
    {"hm_realign_end", 4, sql_realign_end},   {"hm_realign_track_end", 4, sql_realign_track_end},
};

int mrg_writer_realign_all(struct mrg_writer *w, const struct mrg_realign_rank *ranks, int nranks,
                           struct hm_err *err)
{
    struct realign ra = {ranks, nranks, NULL, w->next_track};
    int rc, any = 0;

    for (int r = 0; r < nranks; r++)
        any |= ranks[r].offset_at != NULL;
    if (!any)
        return 0;
    if ((rc = wr_usable(w, err)))
        return rc;
    /* Re-timing stored data twice would compound the fits (and w knows
     * none of a reopened file's tracks): re-analyse with no_refine. */
    if (w->state == WR_REOPENED)
        return wr_refuse(w, err, HM_EINVAL, -1, "a reopened database cannot be re-timed");
    rc = wr_write_dimensions(w, 0, err);
    if (rc == 0)
        rc = wr_drop_load_index(w, err);
    if (rc)
        return rc;
    ra.track_rank = malloc((size_t)(ra.ntracks ? ra.ntracks : 1) * sizeof *ra.track_rank);
    if (!ra.track_rank)
        return wr_refuse(w, err, HM_ENOMEM, -1, "out of memory");
    for (int64_t t = 0; t < ra.ntracks; t++)
        ra.track_rank[t] = -1;
    for (int r = 0; r < w->nranks; r++)
        for (size_t i = 0; i < w->ranks[r].tracks.n; i++)
            ra.track_rank[w->ranks[r].tracks.v[i].id] = r;
    rc = 0;
    for (size_t i = 0; i < sizeof realign_fns / sizeof *realign_fns && rc == 0; i++)
        if (sqlite3_create_function(w->db, realign_fns[i].name, realign_fns[i].nargs,
                                    SQLITE_UTF8 | SQLITE_DETERMINISTIC, &ra, realign_fns[i].fn, NULL,
                                    NULL) != SQLITE_OK)
            rc = wr_fail_sql(w, err, "registering the clock function");
    if (rc == 0)
        rc = wr_exec(w, hm_sql_writer_realign, err, "applying the clock model");
    for (size_t i = 0; i < sizeof realign_fns / sizeof *realign_fns; i++)
        sqlite3_create_function(w->db, realign_fns[i].name, realign_fns[i].nargs, SQLITE_UTF8, NULL, NULL, NULL,
                                NULL);
    free(ra.track_rank);
    for (int r = 0; r < nranks && r < w->nranks && rc == 0; r++) {
        if (!ranks[r].offset_at)
            continue;
        w->ranks[r].retimed = ranks[r].lin ? 1 : -1;
        if (ranks[r].lin)
            w->ranks[r].final = *ranks[r].lin;
    }
    return rc;
}

int mrg_writer_final_model(const struct mrg_writer *w, int rank, struct mrg_lin_model *out)
{
    const struct rank_state *r = rank >= 0 && rank < w->nranks ? &w->ranks[rank] : NULL;

    *out = (struct mrg_lin_model){0, 0, 0};
    if (!r || !r->known)
        return 0;
    if (r->retimed < 0)
        return HM_EINVAL;
    if (r->retimed > 0)
        *out = r->final;
    else
        out->offset = (double)r->shift_ns;
    return 0;
}

int mrg_writer_build_indexes(struct mrg_writer *w, struct hm_err *err)
{
    int rc = wr_usable(w, err);

    if (rc == 0)
        rc = wr_write_dimensions(w, 0, err);
    return rc ? rc : wr_exec(w, hm_sql_indexes, err, "building indexes");
}
