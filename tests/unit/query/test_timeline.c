/* Tests of the timeline's level of detail (query/timeline.c) on databases
 * built here: at every zoom a track sends at most ~4 narrow slices per
 * pixel column and summarises the rest (count, busy fraction); counts are
 * conserved; wide slices and slices reaching in from before the window are
 * always sent; a file without the slices_track_ts index (a live run) gives
 * the same answers through the temp copy. The stitched NVTX row: every
 * range in the window is sent or counted by the entry standing for its
 * column (compared with a brute-force count), wide ones always one by one;
 * /api/nvtx/{id} gives one range on every rank. */
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "hm_sql.h"
#include "query/query_int.h"
#include "store/columns.h"

#define TRUTH_COLUMNS(X) X(TRUTH_VALUE, "n")
enum { TRUTH_COLUMNS(HM_COLUMN_ENUM) TRUTH__COUNT };
static const char *const truth_names[] = {TRUTH_COLUMNS(HM_COLUMN_NAME)};

#define MS INT64_C(1000000)
#define US INT64_C(1000)
#define NTINY 100000   /* per track: every 10 us, 5 us long, over 1 s */

static void exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "sql failed: %s\n", msg);
        hm_test_failures++;
    }
    sqlite3_free(msg);
}

static void add_slice(sqlite3_stmt *st, int64_t track, int64_t ts, int64_t dur, int depth, int64_t name)
{
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, track);
    sqlite3_bind_int64(st, 2, ts);
    sqlite3_bind_int64(st, 3, dur);
    sqlite3_bind_int(st, 4, depth);
    sqlite3_bind_int64(st, 5, name);
    sqlite3_step(st);
}

/* Track 1: a 1 s slice (depth 0) over tiny ones (depth 1); track 2: tiny
 * ones only (50% busy); track 3 (rank 1): random bursts. Origin is 1e18 so
 * times exceed 2^53 as real epoch times do. */
enum db_kind { DB_LIVE, DB_INDEXED, DB_COVERING };

static sqlite3 *make_db(enum db_kind kind)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st;
    const int64_t o = INT64_C(1000000000000000000);
    uint64_t x = 12345;

    sqlite3_open(":memory:", &db);
    exec(db, hm_sql_schema);
    exec(db, "INSERT INTO strings VALUES (1, 'step'), (2, 'tiny'), (3, \"burst \"\"q\"\"\");"
             "INSERT INTO tracks VALUES (1, 0, 'cpu_thread', 1, 1, NULL), (2, 0, 'gpu_stream', 0, 7, NULL),"
             " (3, 1, 'gpu_stream', 0, 7, NULL);"
             "INSERT INTO collectives (id, rank, slice, pg, op, seq) VALUES (9, 0, 1, '0', 'allreduce', 1);"
             "BEGIN");
    sqlite3_prepare_v2(db, "INSERT INTO slices (track, ts, dur, depth, name, cat) VALUES (?1, ?2, ?3, ?4, ?5, 1)", -1,
                       &st, NULL);
    add_slice(st, 1, o, 1000 * MS, 0, 1);
    for (int i = 0; i < NTINY; i++) {
        add_slice(st, 1, o + i * 10 * US, 5 * US, 1, 2);
        add_slice(st, 2, o + i * 10 * US, 5 * US, 0, 2);
    }
    for (int b = 0; b < 200; b++) {   /* bursts of 0..999 slices of 1..100 ns, 5 ms apart */
        int64_t t = o + b * 5 * MS;
        x = x * 6364136223846793005u + 1442695040888963407u;
        for (int i = 0; i < (int)(x >> 54); i++, t += 150)
            add_slice(st, 3, t, 1 + (int64_t)((x >> (i % 40)) % 100), 0, 3);
    }
    sqlite3_finalize(st);
    /* Stitched NVTX, ranks 0 and 1: 50 "train_step" of 20 ms (late rank
     * alternating 1, 0, none), a 1 ms "fwd" inside each, and 1000 "k" of
     * 10 us every 100 us in the first 100 ms (depth 2, rank 0 only). */
    exec(db, "INSERT INTO strings VALUES (4, 'train_step'), (5, 'fwd'), (6, 'k');"
             "WITH RECURSIVE i(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM i WHERE n < 999)"
             " INSERT INTO nvtx_stitched (id, name, path, step, occurrence, ranks, first_enter_ns, late_rank, skew_ns)"
             " SELECT 1 + n, 4, 'train_step', n, 0, 2, 1000000000000000000 + n * 20000000,"
             "        CASE n % 3 WHEN 0 THEN 1 WHEN 1 THEN 0 END, CASE n % 3 WHEN 2 THEN 0 ELSE 1000 + n END"
             " FROM i WHERE n < 50"
             " UNION ALL SELECT 101 + n, 5, 'train_step/fwd', n, 0, 2, 1000000000000000000 + n * 20000000, 0, 7"
             " FROM i WHERE n < 50"
             " UNION ALL SELECT 1001 + n, 6, 'train_step/fwd/k', 0, n, 1, 1000000000000000000 + n * 100000, NULL, 0"
             " FROM i;"
             "INSERT INTO nvtx_stitched_ranks (stitched, rank, slice, enter_ns, exit_ns)"
             " SELECT id, r.rank, NULL, first_enter_ns + CASE WHEN late_rank = r.rank THEN skew_ns ELSE 0 END,"
             "        first_enter_ns + CASE path WHEN 'train_step' THEN 20000000 WHEN 'train_step/fwd' THEN 1000000"
             "        ELSE 10000 END"
             " FROM nvtx_stitched, (SELECT 0 AS rank UNION ALL SELECT 1) r WHERE path != 'train_step/fwd/k' OR r.rank = 0;");
    exec(db, "COMMIT");
    if (kind != DB_LIVE)
        exec(db, hm_sql_indexes);
    if (kind == DB_COVERING)   /* what a fine window reads in one index-only scan */
        exec(db, "DROP INDEX slices_track_ts; CREATE INDEX slices_track_ts ON slices (track, ts, dur, depth, name, cat)");
    return db;
}

/* Runs one window; the parsed document, or NULL. */
static cJSON *window(struct qry_lod *lod, int64_t t0, int64_t t1, int px, const int *ranks, int nranks)
{
    struct qry_window w = {t0, t1, px, ranks, nranks};
    struct qry_buf out = {0};
    struct hm_err err;
    cJSON *doc;

    hm_err_clear(&err);
    if (qry_timeline(lod, &w, &out, &err) != 0) {
        fprintf(stderr, "timeline failed: %s\n", err.msg);
        qry_buf_free(&out);
        return NULL;
    }
    doc = cJSON_Parse(out.p);
    CHECK(doc != NULL);
    qry_buf_free(&out);
    return doc;
}

static const cJSON *track_of(const cJSON *doc, int id)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(doc, "tracks"))
        if (cJSON_GetObjectItem(t, "id")->valueint == id)
            return t;
    return NULL;
}

static int count(const cJSON *t, const char *key) { return cJSON_GetArraySize(cJSON_GetObjectItem(t, key)); }

static double dense_sum(const cJSON *t, int field)
{
    const cJSON *d;
    double s = 0;
    cJSON_ArrayForEach(d, cJSON_GetObjectItem(t, "dense"))
        s += cJSON_GetArrayItem(d, field)->valuedouble;
    return s;
}

/* At most 4 narrow slices start per column; a bucket may lean into its
 * neighbour, so two neighbouring columns hold at most 8. */
static void check_cap(const cJSON *doc, const cJSON *t)
{
    double t0 = cJSON_GetObjectItem(doc, "t0")->valuedouble, w = cJSON_GetObjectItem(doc, "col_ns")->valuedouble;
    int px = cJSON_GetObjectItem(doc, "px")->valueint, *per = calloc((size_t)px + 1, sizeof *per), worst = 0;
    const cJSON *s;

    cJSON_ArrayForEach(s, cJSON_GetObjectItem(t, "slices")) {
        double ts = cJSON_GetArrayItem(s, 1)->valuedouble, dur = cJSON_GetArrayItem(s, 2)->valuedouble;
        int c = (int)floor((ts - t0) / w);
        if (dur < w && c >= 0 && c < px)
            per[c]++;
    }
    for (int c = 0; c + 1 < px; c++)
        worst = per[c] + per[c + 1] > worst ? per[c] + per[c + 1] : worst;
    CHECK(worst <= 2 * QRY_LOD_MAX_PER_COL);
    free(per);
}

static void test_zooms(struct qry_lod *lod)
{
    cJSON *doc = window(lod, 0, 1000 * MS, 1000, NULL, 0);   /* whole run: 100 tiny a column */
    const cJSON *t1 = track_of(doc, 1), *t2 = track_of(doc, 2);

    CHECK_EQ_INT(count(t1, "slices"), 1);                 /* the 1 s slice alone */
    CHECK_EQ_INT(count(t2, "slices"), 0);
    CHECK_NEAR(dense_sum(t2, 1), NTINY, 0.5);             /* every slice counted once */
    CHECK_NEAR(dense_sum(t2, 2) / count(t2, "dense"), 0.5, 0.02);   /* 5 us of every 10 */
    CHECK_NEAR(dense_sum(t1, 2) / count(t1, "dense"), 1.0, 0.01);   /* the long slice covers all */
    CHECK_STR(cJSON_GetObjectItem(doc, "origin_ns")->valuestring, "1000000000000000000");
    cJSON_Delete(doc);

    doc = window(lod, 0, 20 * MS, 1000, NULL, 0);           /* 2 a column: all sent */
    CHECK_EQ_INT(count(track_of(doc, 2), "slices"), 2000);
    CHECK_EQ_INT(count(track_of(doc, 2), "dense"), 0);
    cJSON_Delete(doc);

    doc = window(lod, 0, 80 * MS, 1000, NULL, 0);           /* 8 a column: all summarised */
    CHECK_EQ_INT(count(track_of(doc, 2), "slices"), 0);
    CHECK_NEAR(dense_sum(track_of(doc, 2), 1), 8000, 0.5);
    cJSON_Delete(doc);

    doc = window(lod, 500 * MS, 500 * MS + 200 * US, 1000, NULL, 0);   /* slices 25 columns wide */
    CHECK_EQ_INT(count(track_of(doc, 2), "slices"), 20);
    CHECK_EQ_INT(count(track_of(doc, 1), "slices"), 21);   /* and the 1 s slice from before */
    cJSON_Delete(doc);

    doc = window(lod, 500 * MS + 2 * US, 500 * MS + 3 * US, 100, NULL, 0);   /* inside one tiny slice */
    CHECK_EQ_INT(count(track_of(doc, 2), "slices"), 1);
    cJSON_Delete(doc);
}

static void test_slice_fields(struct qry_lod *lod)
{
    int r0[] = {0};
    cJSON *doc = window(lod, -10 * MS, 10 * US, 100, r0, 1);
    const cJSON *t1 = track_of(doc, 1), *s, *names = cJSON_GetObjectItem(doc, "names");
    bool long_seen = false;

    CHECK(track_of(doc, 3) == NULL);   /* rank 1 not asked for */
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(t1, "slices")) {
        if (cJSON_GetArrayItem(s, 2)->valuedouble != 1000 * MS)
            continue;
        long_seen = true;
        CHECK_EQ_INT(cJSON_GetArrayItem(s, 1)->valuedouble, 0);   /* ts relative to origin */
        CHECK_EQ_INT(cJSON_GetArrayItem(s, 3)->valueint, 0);      /* depth */
        CHECK_STR(cJSON_GetArrayItem(names, cJSON_GetArrayItem(s, 4)->valueint)->valuestring, "step");
        CHECK_EQ_INT(cJSON_GetArrayItem(s, 6)->valueint, 9);      /* its collectives row */
    }
    CHECK(long_seen);
    cJSON_Delete(doc);
}

static void test_bursts(struct qry_lod *lod)
{
    const int64_t spans[] = {1000 * MS, 100 * MS, 10 * MS, MS, 100 * US, 10 * US};
    int r1[] = {1};

    for (size_t i = 0; i < sizeof spans / sizeof *spans; i++) {
        for (int64_t t0 = 0; t0 < 1000 * MS; t0 += 997 * MS / 5 + spans[i] / 3) {
            cJSON *doc = window(lod, t0, t0 + spans[i], 800, r1, 1);
            const cJSON *t = track_of(doc, 3);
            CHECK(t != NULL);
            if (t)
                check_cap(doc, t);
            cJSON_Delete(doc);
        }
    }
}

/* Brute force: the NVTX ranges of (rank, depth) overlapping [t0, t1). */
static int nvtx_truth(sqlite3 *db, int rank, int depth, int64_t t0, int64_t t1)
{
    sqlite3_stmt *st = NULL;
    int n = -1;
    const int64_t o = INT64_C(1000000000000000000);

    sqlite3_prepare_v2(db,
                       "SELECT count(*) AS n FROM nvtx_stitched_ranks r JOIN nvtx_stitched n ON n.id = r.stitched"
                       " WHERE r.rank = ?1 AND length(n.path) - length(replace(n.path, '/', '')) = ?2"
                       " AND r.exit_ns > ?3 AND r.enter_ns < ?4",
                       -1, &st, NULL);
    HM_COLUMNS_CHECK(st, truth_names);
    sqlite3_bind_int(st, 1, rank);
    sqlite3_bind_int(st, 2, depth);
    sqlite3_bind_int64(st, 3, o + t0);
    sqlite3_bind_int64(st, 4, o + t1);
    if (sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, TRUTH_VALUE);
    sqlite3_finalize(st);
    return n;
}

/* Per (rank, depth): the n of the entries add up to the ranges in the
 * window; entries do not overlap; a range at least a column wide stands for
 * itself alone; at most one narrow entry starts in a column. */
static void check_nvtx(sqlite3 *db, const cJSON *doc, int64_t t0, int64_t t1, int px)
{
    double w = (double)(t1 - t0) / px;
    int sum[2][3] = {{0}}, worst = 0;
    int *per = calloc((size_t)2 * 3 * px, sizeof *per);
    double last_end[2][3];
    const cJSON *r;

    for (int i = 0; i < 6; i++)
        last_end[i / 3][i % 3] = -1e300;

    cJSON_ArrayForEach(r, cJSON_GetObjectItem(doc, "nvtx")) {
        int rank = cJSON_GetArrayItem(r, 0)->valueint, depth = cJSON_GetArrayItem(r, 4)->valueint;
        double ts = cJSON_GetArrayItem(r, 2)->valuedouble, dur = cJSON_GetArrayItem(r, 3)->valuedouble;
        int n = cJSON_GetArrayItem(r, 8)->valueint;
        CHECK(rank >= 0 && rank < 2 && depth >= 0 && depth < 3);
        if (rank < 0 || rank >= 2 || depth < 0 || depth >= 3)
            continue;
        sum[rank][depth] += n;
        CHECK(ts >= last_end[rank][depth]);   /* in time order, no overlap */
        last_end[rank][depth] = ts + dur;
        if (n > 1)
            CHECK_EQ_INT(cJSON_GetArrayItem(r, 6)->valueint, -1);
        else if (dur >= w)
            continue;
        else if (ts >= t0) {
            int c = (int)floor((ts - t0) / w);
            c = c < 0 ? 0 : c >= px ? px - 1 : c;
            if (++per[(rank * 3 + depth) * px + c] > worst)
                worst = per[(rank * 3 + depth) * px + c];
        }
    }
    CHECK(worst <= 1);
    for (int rank = 0; rank < 2; rank++)
        for (int depth = 0; depth < 3; depth++)
            CHECK_EQ_INT(sum[rank][depth], nvtx_truth(db, rank, depth, t0, t1));
    free(per);
}

static void test_nvtx(sqlite3 *db, struct qry_lod *lod)
{
    const int64_t wins[][2] = {{0, 1000 * MS}, {0, 100 * MS}, {0, 2 * MS}, {55 * MS, 57 * MS}, {-5 * MS, 31 * MS},
                               {990 * MS, 1100 * MS}, {2 * MS, 2 * MS + 5 * US}};
    const int pxs[] = {1, 7, 100, 1000};
    int r1[] = {1};
    const cJSON *r, *names;
    int seen = 0;

    for (size_t i = 0; i < sizeof wins / sizeof *wins; i++)
        for (size_t j = 0; j < sizeof pxs / sizeof *pxs; j++) {
            cJSON *doc = window(lod, wins[i][0], wins[i][1], pxs[j], NULL, 0);
            if (doc)
                check_nvtx(db, doc, wins[i][0], wins[i][1], pxs[j]);
            cJSON_Delete(doc);
        }
    /* Fields, on rank 1 alone: train_step #1 (late rank 0: rank 1 entered
     * on time) and #3 (late rank 1, entered 1003 ns late). */
    cJSON *doc = window(lod, 20 * MS, 80 * MS, 1000, r1, 1);
    names = cJSON_GetObjectItem(doc, "names");
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(doc, "nvtx")) {
        int id = cJSON_GetArrayItem(r, 1)->valueint;
        CHECK_EQ_INT(cJSON_GetArrayItem(r, 0)->valueint, 1);
        if (id == 2) {
            seen++;
            CHECK_EQ_INT(cJSON_GetArrayItem(r, 2)->valuedouble, 20 * MS);
            CHECK_EQ_INT(cJSON_GetArrayItem(r, 3)->valuedouble, 20 * MS);
            CHECK_EQ_INT(cJSON_GetArrayItem(r, 4)->valueint, 0);
            CHECK_STR(cJSON_GetArrayItem(names, cJSON_GetArrayItem(r, 5)->valueint)->valuestring, "train_step");
            CHECK_EQ_INT(cJSON_GetArrayItem(r, 6)->valueint, 0);
            CHECK_EQ_INT(cJSON_GetArrayItem(r, 7)->valueint, 1001);
        } else if (id == 4) {
            seen++;
            CHECK_EQ_INT(cJSON_GetArrayItem(r, 2)->valuedouble, 60 * MS + 1003);
            CHECK_EQ_INT(cJSON_GetArrayItem(r, 6)->valueint, 1);
        } else if (id == 3) {
            seen++;
            CHECK_EQ_INT(cJSON_GetArrayItem(r, 6)->valueint, -1);
        } else if (id == 103) {
            seen++;
            CHECK_EQ_INT(cJSON_GetArrayItem(r, 4)->valueint, 1);
            CHECK_STR(cJSON_GetArrayItem(names, cJSON_GetArrayItem(r, 5)->valueint)->valuestring, "fwd");
        }
    }
    CHECK_EQ_INT(seen, 4);
    cJSON_Delete(doc);
}

/* /api/nvtx/{id} through the API dispatcher on a file copy of db. */
static void test_api_nvtx(sqlite3 *db)
{
    char path[] = "/tmp/hm_test_timeline_XXXXXX";
    int fd = mkstemp(path);
    char *sql = sqlite3_mprintf("VACUUM INTO '%q'", path);
    struct qry_dbh h = {0};
    struct hm_err err;
    const char *ids[] = {"/api/nvtx/4", "/api/nvtx/99999", "/api/nvtx/x"};
    const int want[] = {200, 404, 400};

    CHECK(fd >= 0);
    close(fd);
    unlink(path);
    exec(db, sql);
    sqlite3_free(sql);
    hm_err_clear(&err);
    CHECK_EQ_INT(qry_dbh_open(&h, path, &err), 0);
    for (int i = 0; i < 3 && h.db; i++) {
        struct qry_call c = {.path = ids[i]};
        cJSON *doc, *m;
        qry_api_dispatch(&h, &c);
        CHECK_EQ_INT(c.status, want[i]);
        doc = cJSON_Parse(c.out);
        CHECK(doc != NULL);
        if (i == 0 && doc) {   /* train_step #3: rank 1 entered 1003 ns after rank 0 */
            const cJSON *members = cJSON_GetObjectItem(doc, "members");
            CHECK_STR(cJSON_GetObjectItem(doc, "name")->valuestring, "train_step");
            CHECK_EQ_INT(cJSON_GetObjectItem(doc, "late_rank")->valueint, 1);
            CHECK_EQ_INT(cJSON_GetObjectItem(doc, "skew_ns")->valueint, 1003);
            CHECK_EQ_INT(cJSON_GetArraySize(members), 2);
            cJSON_ArrayForEach(m, members) {
                int rank = cJSON_GetObjectItem(m, "rank")->valueint;
                CHECK_EQ_INT(cJSON_GetObjectItem(m, "lag_ns")->valueint, rank == 1 ? 1003 : 0);
                CHECK_EQ_INT(cJSON_GetObjectItem(m, "enter_ns")->valuedouble, 60 * MS + (rank == 1 ? 1003 : 0));
                CHECK(cJSON_GetObjectItem(m, "late_rank") == NULL);
            }
        }
        cJSON_Delete(doc);
        free(c.out);
    }
    qry_dbh_close(&h);
    unlink(path);
}

static void test_refusals(struct qry_lod *lod)
{
    struct qry_window w = {10, 10, 100, NULL, 0};
    struct qry_buf out = {0};
    struct hm_err err;

    CHECK_EQ_INT(qry_timeline(lod, &w, &out, &err), HM_EINVAL);
    w.t1 = 20, w.px = 0;
    CHECK_EQ_INT(qry_timeline(lod, &w, &out, &err), HM_EINVAL);
    w.px = QRY_MAX_PX + 1;
    CHECK_EQ_INT(qry_timeline(lod, &w, &out, &err), HM_EINVAL);
    qry_buf_free(&out);
}

#define BUDGET ((size_t)128 << 20)

/* A budget too small for one track: every request drops the tracks of the
 * one before, rebuilds them, and answers as a roomy budget does. */
static void test_eviction(sqlite3 *db)
{
    struct hm_err err;
    struct qry_lod *roomy = qry_lod_new(db, BUDGET, &err), *tight = qry_lod_new(db, 1, &err);
    const int64_t windows[][2] = {{0, 1000 * MS}, {0, 20 * MS}, {500 * MS, 500 * MS + 200 * US}, {0, 1000 * MS}};

    CHECK(roomy && tight);
    for (size_t i = 0; roomy && tight && i < sizeof windows / sizeof windows[0]; i++) {
        cJSON *a = window(roomy, windows[i][0], windows[i][1], 500, NULL, 0);
        cJSON *b = window(tight, windows[i][0], windows[i][1], 500, NULL, 0);
        char *sa = cJSON_PrintUnformatted(a), *sb = cJSON_PrintUnformatted(b);
        CHECK(sa && sb && !strcmp(sa, sb));
        free(sa), free(sb);
        cJSON_Delete(a), cJSON_Delete(b);
        CHECK(qry_lod_held_bytes(tight) <= qry_lod_held_bytes(roomy));
    }
    CHECK(tight && roomy && qry_lod_held_bytes(tight) < qry_lod_held_bytes(roomy));
    qry_lod_free(roomy);
    qry_lod_free(tight);
}

static void run_all(enum db_kind kind)
{
    struct hm_err err;
    sqlite3 *db = make_db(kind);
    struct qry_lod *lod = qry_lod_new(db, BUDGET, &err);
    int64_t origin, end;

    CHECK(lod != NULL);
    if (!lod)
        return;
    qry_lod_extent(lod, &origin, &end);
    CHECK_EQ_INT(origin, INT64_C(1000000000000000000));
    CHECK(end - origin >= 999995 * US);   /* from each track's tail */
    test_zooms(lod);
    qry_lod_extent(lod, &origin, &end);
    CHECK_EQ_INT(end - origin, 1000 * MS);   /* exact once the tracks are built */
    test_slice_fields(lod);
    test_bursts(lod);
    test_refusals(lod);
    test_nvtx(db, lod);
    test_zooms(lod);   /* again, from the built pyramids */
    qry_lod_free(lod);
    sqlite3_close(db);
}

int main(void)
{
    run_all(DB_INDEXED);
    run_all(DB_COVERING);
    run_all(DB_LIVE);   /* a live file: no index yet */
    {
        sqlite3 *db = make_db(DB_INDEXED);
        test_api_nvtx(db);
        test_eviction(db);
        sqlite3_close(db);
    }
    return hm_test_done();
}
