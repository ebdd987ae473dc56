/* What offline ingest does to spare the cross-rank analyses work must not
 * change their result: guessed clock shifts (mrg_writer_set_time_shift):
 * whatever shift a rank's rows are written with, clock refinement must
 * leave exactly the database written without one; and the rank view
 * gathered through the writer's slice tap (xr_view_tap) must be the one
 * read back from the slices. The 4-rank gloo DDP fixture, with ranks 1-3
 * given clocks off by ms (so their fits are applied), is written four
 * times: no shifts; wrong shifts (including one on the reference rank,
 * whose clock is never corrected); shifts equal to the corrections
 * refinement finds (nothing to re-time); and wrong shifts with the tapped
 * view. Every table must match the first file's.
 *
 * A sharded ingest (merger/ingest_shards.h) splits that file in two: the
 * index, written in index mode (wrong shifts, tapped view), must hold every
 * table of it but the slices, of which a subset with the same ids (those
 * collectives and steps name); and a shard, written unshifted with no
 * cross-rank stage and then re-timed by the models the index writer
 * reports (mrg_writer_final_model) with its clock columns, must hold every
 * row of it but the cross-rank tables. */
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "collector/sources/kineto_json/kineto_json.h"
#include "analysis/cross_rank.h"
#include "analysis/cross_rank/cross_rank_int.h" /* struct xr_rank: the test inspects the tapped view */
#include "store/columns.h"
#include "store/writer.h"

#define TABLE_COLUMNS(X) X(TABLE_NAME, "name")
enum { TABLE_COLUMNS(HM_COLUMN_ENUM) TABLE__COUNT };
static const char *const table_names[] = {TABLE_COLUMNS(HM_COLUMN_NAME)};

#define NRANKS 4

static const int64_t skew[NRANKS] = {0, 3000000, -5000000, 1500000};

/* What the index writer of a sharded ingest tells its host writers. */
struct final_clock {
    struct mrg_lin_model model;
    int64_t offset_ns, ref_ns, unc_ns;
    double drift_ppm;
    char method[16];
};

/* How write_db writes: the ordinary file, the index of a sharded ingest
 * (tells out its ranks' final clocks), or a shard (re-timed to in). */
enum mode { WHOLE, INDEX, SHARD };

static int64_t lin_at(void *ctx, int64_t t)
{
    const struct mrg_lin_model *m = ctx;
    return (int64_t)llround(m->offset + m->slope * (double)(t - m->ref));
}

/* The index writer's side: each rank's final model and clock columns. */
static int take_clocks(struct mrg_writer *w, struct final_clock *out, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = mrg_writer_flush(w, err);

    if (rc == 0 && sqlite3_prepare_v2(mrg_writer_db(w), "SELECT rank, clock_offset_ns, clock_drift_ppm, "
                                      "clock_ref_ns, clock_method, clock_uncertainty_ns FROM ranks", -1, &st,
                                      NULL) != SQLITE_OK)
        rc = HM_ESQL;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        int r = sqlite3_column_int(st, 0);
        struct final_clock *c = &out[r];
        CHECK(r >= 0 && r < NRANKS);
        rc = mrg_writer_final_model(w, r, &c->model);
        c->offset_ns = sqlite3_column_int64(st, 1);
        c->drift_ppm = sqlite3_column_double(st, 2);
        c->ref_ns = sqlite3_column_int64(st, 3);
        snprintf(c->method, sizeof c->method, "%s", (const char *)sqlite3_column_text(st, 4));
        c->unc_ns = sqlite3_column_type(st, 5) == SQLITE_NULL ? HM_NONE : sqlite3_column_int64(st, 5);
    }
    sqlite3_finalize(st);
    return rc;
}

/* The host writer's side: its unshifted rows moved to the final clocks. */
static int apply_clocks(struct mrg_writer *w, const struct final_clock *in, struct hm_err *err)
{
    struct mrg_realign_rank ra[NRANKS];
    int rc;

    memset(ra, 0, sizeof ra);
    for (int r = 0; r < NRANKS; r++)
        if (in[r].model.offset != 0 || in[r].model.slope != 0)
            ra[r] = (struct mrg_realign_rank){0, lin_at, (void *)&in[r].model, NULL, &in[r].model};
    rc = mrg_writer_realign_all(w, ra, NRANKS, err);
    for (int r = 0; rc == 0 && r < NRANKS; r++)
        rc = mrg_writer_update_clock(w, r, in[r].offset_ns, in[r].drift_ppm, in[r].ref_ns, in[r].method,
                                     in[r].unc_ns, err);
    return rc;
}

/* Writes the fixture to path with rank r's rows shifted by shift[r]; with
 * tap, the analyses take the view tapped while writing; mode: above. */
static int write_db_as(const char *dir, const char *path, const int64_t *shift, int tap, enum mode mode,
                       struct final_clock *clocks)
{
    struct hm_err err = {0};
    struct mrg_writer *w = mrg_writer_open(path, &err);
    struct xr_view view = {0};
    int rc = w ? 0 : 1;

    if (w && tap)
        mrg_writer_set_slice_tap(w, xr_view_tap, &view);
    if (w && mode == INDEX)
        mrg_writer_set_index_only(w, 1);

    for (int r = 0; rc == 0 && r < NRANKS; r++) {
        char file[4200];
        struct src_kineto_opts ko = {0};
        struct hm_batch *b = NULL;
        snprintf(file, sizeof file, "%s/rank-%d.pt.trace.json.gz", dir, r);
        rc = src_kineto_read(file, &ko, &b, &err);
        if (rc == 0) {
            b->info.base_time_ns += skew[r];
            if (shift[r])
                rc = mrg_writer_set_time_shift(w, r, shift[r], &err);
        }
        if (rc == 0)
            rc = mrg_writer_add_batch(w, b, &err);
        if (rc == 0 && shift[r])   /* too late once the rank has rows */
            CHECK_EQ_INT(mrg_writer_set_time_shift(w, r, 1, &err), HM_EINVAL);
        if (rc == 0)
            CHECK_EQ_INT(mrg_writer_time_shift(w, r), shift[r]);
        hm_batch_free(b);
    }
    if (tap) {
        CHECK(view.nranks >= NRANKS && !view.broken);
        CHECK(rc != 0 || (view.ranks[1].annots.n > 10 && view.ranks[3].launches.n > 10));
    }
    if (rc == 0 && mode == SHARD)
        rc = apply_clocks(w, clocks, &err);
    else if (rc == 0)
        rc = tap ? xr_finish_view(w, NULL, &view, &err) : xr_finish(w, NULL, &err);
    if (rc == 0 && mode == INDEX)
        rc = take_clocks(w, clocks, &err);
    xr_view_free(&view);
    if (rc == 0)
        return mrg_writer_finish(w, &err);
    fprintf(stderr, "writing %s: %s (%s)\n", path, err.msg, err.file);
    if (w)
        mrg_writer_abort(w);
    return rc ? rc : 1;
}

static int write_db(const char *dir, const char *path, const int64_t *shift, int tap)
{
    return write_db_as(dir, path, shift, tap, WHOLE, NULL);
}

static int64_t q_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = INT64_MIN;

    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    else
        fprintf(stderr, "%s: %s\n", sql, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return v;
}

/* Rows of table that differ between main and o (both ways); meta's
 * creation time may differ. */
static int64_t differing_rows(sqlite3 *db, const char *table)
{
    char sql[1200];
    const char *where = strcmp(table, "meta") ? "" : " WHERE key <> 'created_at'";

    snprintf(sql, sizeof sql,
             "SELECT (SELECT count(*) FROM (SELECT * FROM main.\"%s\"%s EXCEPT SELECT * FROM o.\"%s\"%s))"
             " + (SELECT count(*) FROM (SELECT * FROM o.\"%s\"%s EXCEPT SELECT * FROM main.\"%s\"%s))",
             table, where, table, where, table, where, table, where);
    return q_int(db, sql);
}

/* Is table one of skip (NULL-terminated; skip NULL: none)? */
static int skipped(const char *table, const char *const *skip)
{
    for (int i = 0; skip && skip[i]; i++)
        if (!strcmp(table, skip[i]))
            return 1;
    return 0;
}

/* check_same but for the tables of skip. */
static void check_same_but(const char *a, const char *b, const char *const *skip);

static void check_same(const char *a, const char *b)
{
    check_same_but(a, b, NULL);
}

static void check_same_but(const char *a, const char *b, const char *const *skip)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char sql[4300];
    int tables = 0;

    CHECK_EQ_INT(sqlite3_open_v2(a, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    snprintf(sql, sizeof sql, "ATTACH '%s' AS o", b);
    CHECK_EQ_INT(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM main.sqlite_master WHERE type = 'table'"),
                 q_int(db, "SELECT count(*) FROM o.sqlite_master WHERE type = 'table'"));
    CHECK_EQ_INT(sqlite3_prepare_v2(db, "SELECT name FROM main.sqlite_master WHERE type = 'table'",
                                    -1, &st, NULL), SQLITE_OK);
    HM_COLUMNS_CHECK(st, table_names);
    while (sqlite3_step(st) == SQLITE_ROW) {
        char name[128];
        int64_t n;
        snprintf(name, sizeof name, "%s", (const char *)sqlite3_column_text(st, TABLE_NAME));
        if (skipped(name, skip))
            continue;
        n = differing_rows(db, name);
        if (n != 0)
            fprintf(stderr, "%s vs %s: table %s differs in %lld rows\n", a, b, name, (long long)n);
        CHECK_EQ_INT(n, 0);
        tables++;
    }
    sqlite3_finalize(st);
    CHECK(tables > 10);
    /* The comparison has something to compare: ranks 1-3 were re-timed. */
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM ranks WHERE clock_method = 'collectives'"), 3);
    CHECK(q_int(db, "SELECT count(*) FROM slices") > 1000);
    sqlite3_close(db);
}

int main(void)
{
    const char *src = getenv("HM_SOURCE_DIR"), *tmp = getenv("HM_TMPDIR");
    char dir[4096], plain[4200], wrong[4200], right[4200], tapped[4200];
    int64_t none[NRANKS] = {0}, bad[NRANKS] = {777, 12345, -99, 0}, good[NRANKS] = {0};
    sqlite3 *db = NULL;

    snprintf(dir, sizeof dir, "%s/tests/fixtures/gloo/ddp4_straggler2", src ? src : ".");
    tmp = tmp ? tmp : "/tmp";
    snprintf(plain, sizeof plain, "%s/time_shift_plain_%ld.db", tmp, (long)getpid());
    snprintf(wrong, sizeof wrong, "%s/time_shift_wrong_%ld.db", tmp, (long)getpid());
    snprintf(right, sizeof right, "%s/time_shift_right_%ld.db", tmp, (long)getpid());
    snprintf(tapped, sizeof tapped, "%s/time_shift_tapped_%ld.db", tmp, (long)getpid());

    CHECK_EQ_INT(write_db(dir, plain, none, 0), 0);
    CHECK_EQ_INT(sqlite3_open_v2(plain, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    for (int r = 1; r < NRANKS; r++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT clock_offset_ns FROM ranks WHERE rank = %d AND "
                 "clock_drift_ppm = 0 AND clock_method = 'collectives'", r);
        good[r] = q_int(db, sql);
        CHECK(good[r] != INT64_MIN && good[r] != 0);
    }
    sqlite3_close(db);

    CHECK_EQ_INT(write_db(dir, wrong, bad, 0), 0);
    check_same(plain, wrong);
    CHECK_EQ_INT(write_db(dir, right, good, 0), 0);
    check_same(plain, right);
    CHECK_EQ_INT(write_db(dir, tapped, bad, 1), 0);
    check_same(plain, tapped);

    {   /* A sharded ingest's index and shard (see the top). */
        /* The index interns slice names in another order (only the stored
         * slices' as they are stored): tables of string ids compare resolved.
         * It notes no name's first slice: its shards answer the search. */
        static const char *const not_in_index[] = {"slices", "strings", "nvtx_stitched", "meta", "sqlite_stat1",
                                                   "name_first_slices", NULL};
        static const char *const not_in_shard[] = {"collective_instances", "collective_instance_ranks",
                                                   "straggler_verdicts", "clock_checks", "nvtx_stitched",
                                                   "nvtx_stitched_ranks", "step_breakdown", "comm_exposed",
                                                   "process_groups", "critical_path", "rank_activity",
                                                   "memory_peaks", "graph_kernels", "meta", "sqlite_stat1", NULL};
        struct final_clock clocks[NRANKS];
        char index[4200], shard[4200], sql[4400];
        memset(clocks, 0, sizeof clocks);
        snprintf(index, sizeof index, "%s/time_shift_index_%ld.db", tmp, (long)getpid());
        snprintf(shard, sizeof shard, "%s/time_shift_shard_%ld.db", tmp, (long)getpid());
        CHECK_EQ_INT(write_db_as(dir, index, bad, 1, INDEX, clocks), 0);
        CHECK_EQ_INT(write_db_as(dir, shard, none, 0, SHARD, clocks), 0);
        check_same_but(plain, index, not_in_index);
        check_same_but(plain, shard, not_in_shard);
        CHECK_EQ_INT(sqlite3_open_v2(plain, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        snprintf(sql, sizeof sql, "ATTACH '%s' AS o", index);
        CHECK_EQ_INT(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        /* The index's slices: rows of the whole file's, ids and all, and
         * exactly those its collectives and steps name. */
        CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM (SELECT s.id, track, ts, dur, n.str, cat, depth, parent, "
                               "correlation, iteration FROM o.slices s JOIN o.strings n ON n.id = s.name EXCEPT "
                               "SELECT s.id, track, ts, dur, n.str, cat, depth, parent, correlation, iteration "
                               "FROM main.slices s JOIN main.strings n ON n.id = s.name)"), 0);
        CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM (SELECT n.str, s.step, s.ranks, s.skew_ns, s.late_rank FROM "
                               "o.nvtx_stitched s JOIN o.strings n ON n.id = s.name EXCEPT SELECT n.str, s.step, "
                               "s.ranks, s.skew_ns, s.late_rank FROM main.nvtx_stitched s JOIN main.strings n "
                               "ON n.id = s.name)"), 0);
        CHECK(q_int(db, "SELECT count(*) FROM o.nvtx_stitched") > 10);
        CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM o.slices WHERE id NOT IN (SELECT slice FROM o.collectives) "
                               "AND id NOT IN (SELECT slice FROM o.steps WHERE slice IS NOT NULL)"), 0);
        CHECK(q_int(db, "SELECT count(*) FROM o.slices") > 0);
        CHECK(q_int(db, "SELECT count(*) FROM o.slices") * 4 < q_int(db, "SELECT count(*) FROM main.slices"));
        sqlite3_close(db);
        unlink(index);
        unlink(shard);
    }

    unlink(plain);
    unlink(wrong);
    unlink(right);
    unlink(tapped);
    return hm_test_done();
}
