/* Tests of the SQLite writer (store/writer.c): hand-built batches of two
 * ranks are written, then the database is reopened with sqlite3 and its
 * rows, views, clock alignment, nesting and NULLs checked; plus abort,
 * appending batches, clock and argument errors, and unwritable outputs. */
#include "test.h"

#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "analysis/cross_rank.h"
#include "store/writer.h"
#include "test_sql.h"

#define BASE0 INT64_C(1700000000000000000)
#define SKEW1 INT64_C(30000000)   /* rank 1's clock runs 30 ms ahead */

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static const char *tmp_of(const char *final)
{
    static char buf[4200];
    snprintf(buf, sizeof buf, "%s.tmp-%ld", final, (long)getpid());
    return buf;
}

/* First column of the first row as a real; NaN for none (q_int: test_sql.h). */
static double q_real(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    double v = NAN;

    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return v;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* First column of the first row as text, in a static buffer; "(null)" for
 * NULL, "(none)" without a row. */
static const char *q_text(sqlite3 *db, const char *sql)
{
    static char buf[1024];
    sqlite3_stmt *st;

    snprintf(buf, sizeof buf, "(none)");
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(buf, sizeof buf, "(error: %s)", sqlite3_errmsg(db));
        return buf;
    }
    if (sqlite3_step(st) == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(st, 0);
        snprintf(buf, sizeof buf, "%s", t ? (const char *)t : "(null)");
    }
    sqlite3_finalize(st);
    return buf;
}

static hm_strid S(struct hm_batch *b, const char *s)
{
    return hm_batch_intern(b, s, strlen(s));
}

static uint32_t add_slice(struct hm_batch *b, uint32_t track, const char *name, enum hm_cat cat,
                          int64_t ts, int64_t dur)
{
    struct hm_slice *s = HM_VEC_PUSH(b->slices);
    s->ts = ts;
    s->dur = dur;
    s->track = track;
    s->name = S(b, name);
    s->cat = (uint16_t)cat;
    s->cat_name = S(b, hm_cat_name(cat));
    s->correlation = s->external_id = s->bytes = HM_NONE;
    s->iteration = HM_NONE;
    return (uint32_t)(b->slices.n - 1);
}

static void add_collective(struct hm_batch *b, uint32_t slice, int64_t seq)
{
    struct hm_collective *c = HM_VEC_PUSH(b->collectives);
    c->slice = slice;
    c->op = S(b, "allreduce");
    c->pg_name = S(b, "0");
    c->pg_desc = S(b, "default_pg");
    c->pg_ranks = S(b, "[0, 1]");
    c->dtype = S(b, "Float");
    c->seq = seq;
    c->in_nelems = c->out_nelems = 1024;
    c->group_size = 2;
}

/* One rank's trace: a CPU thread with nested ops (added out of time order),
 * a GPU stream with a kernel and an NCCL kernel, a collective on each side,
 * a counter, a step and some skipped counts. cpu_delay shifts the
 * collective's CPU op so that a rank can arrive late. */
static struct hm_batch *make_batch(int rank, int64_t base, int64_t coll_ts)
{
    struct hm_batch *b = hm_batch_new();
    uint32_t cpu, gpu, step, kern, comm, nccl, other;

    b->info.rank = rank;
    b->info.world_size = 2;
    b->info.base_time_ns = base;
    b->info.pid = 1000 + rank;
    b->info.hostname = S(b, "node-a");
    b->info.source_file = S(b, rank ? "rank1.json" : "rank0.json");
    b->info.backend = S(b, "nccl");
    b->info.skipped[HM_SKIP_NO_DUR] = 2;
    b->info.skipped[HM_SKIP_BAD_VALUE] = 1;
    cpu = (uint32_t)hm_batch_track(b, HM_TRACK_CPU_THREAD, 1000 + rank, 1);
    gpu = (uint32_t)hm_batch_track(b, HM_TRACK_GPU_STREAM, rank, 7);
    b->tracks.v[cpu].name = S(b, "python main");
    b->tracks.v[gpu].name = S(b, "stream 7");

    kern = add_slice(b, cpu, "cudaLaunchKernel", HM_CAT_CUDA_RUNTIME, 2500, 500);
    b->slices.v[kern].correlation = 42;
    kern = add_slice(b, cpu, "aten::mm", HM_CAT_CPU_OP, 2000, 3000);
    b->slices.v[kern].external_id = 5;
    step = add_slice(b, cpu, "ProfilerStep#1", HM_CAT_USER_ANNOTATION, 1000, 10000);
    add_slice(b, cpu, "aten::add", HM_CAT_CPU_OP, 6000, 1000);
    comm = add_slice(b, cpu, "record_param_comms", HM_CAT_CPU_OP, coll_ts, 500);
    other = add_slice(b, cpu, "odd event", HM_CAT_OTHER, 9000, 0);
    b->slices.v[other].cat_name = S(b, "weird_cat");
    kern = add_slice(b, gpu, "sgemm_128x64", HM_CAT_KERNEL, 3000, 1000);
    b->slices.v[kern].correlation = 42;
    b->slices.v[kern].args = S(b, "{\"grid\":[1,1,1]}");
    nccl = add_slice(b, gpu, "ncclDevKernel_AllReduce_Sum_f32", HM_CAT_KERNEL, 8000, 2000);
    for (size_t i = 0; i < b->slices.n; i++)
        b->slices.v[i].iteration = 1;
    add_collective(b, comm, 1);
    add_collective(b, nccl, 1);

    struct hm_counter *c = HM_VEC_PUSH(b->counters);
    c->ts = 1500;
    c->value = 1024.0;
    c->name = S(b, "Total Allocated");
    c->device = 0;
    struct hm_step *st = HM_VEC_PUSH(b->steps);
    st->number = 1;
    st->ts = 1000;
    st->dur = 10000;
    st->slice = step;
    return b;
}

/* A second batch of rank 0 from the same file: same tracks, one new slice. */
static struct hm_batch *make_second_batch(int64_t base)
{
    struct hm_batch *b = hm_batch_new();
    uint32_t cpu;

    b->info.rank = 0;
    b->info.base_time_ns = base;
    b->info.source_file = S(b, "rank0.json");
    b->info.skipped[HM_SKIP_NO_DUR] = 3;
    cpu = (uint32_t)hm_batch_track(b, HM_TRACK_CPU_THREAD, 1000, 1);
    add_slice(b, cpu, "aten::mm", HM_CAT_CPU_OP, 20000, 100);
    add_slice(b, cpu, "late op", HM_CAT_CPU_OP, 20010, 50);
    return b;
}

static void fill_analysis(struct an_rank_result *r, int rank)
{
    memset(r, 0, sizeof *r);
    r->rank = rank;
    r->has_gpu = 1;
    r->temporal = (struct an_temporal){10, 60, 30, 100, 10.0, 60.0, 30.0};
    r->overlap = (struct an_overlap){0, 0, NAN};
    r->kclass_us[AN_KCLASS_COMP] = 60;
    r->kclass_us[AN_KCLASS_COMM] = 20;
    r->comp_overlap_comm_us = 5;
    r->label_us[AN_LABEL_COMP] = 55;
    r->label_us[AN_LABEL_COMP | AN_LABEL_COMM] = 5;
    struct an_idle *d = HM_VEC_PUSH(r->idle);
    *d = (struct an_idle){7, 6, 3, 1};
    struct an_kernel *k = HM_VEC_PUSH(r->kernels);
    k->name = strdup("sgemm_128x64");
    k->kclass = AN_KCLASS_COMP;
    k->count = 2;
    k->sum_us = 4;
    k->min_us = k->max_us = 2;
    k->mean_us = 2.0;
    struct an_step *s = HM_VEC_PUSH(r->steps);
    *s = (struct an_step){1, 1000, 10000, 5, 2, 0, HM_STEP_PROFILER};
}

static void free_analysis(struct an_rank_result *r)
{
    for (size_t i = 0; i < r->kernels.n; i++)
        free(r->kernels.v[i].name);
    HM_VEC_FREE(r->idle);
    HM_VEC_FREE(r->kernels);
    HM_VEC_FREE(r->steps);
}

/* Writes the two-rank run; returns 0 on success. */
/* Ranks 0 and 1, then a second batch of rank 0 (rows for earlier tracks). */
static void add_batches(struct mrg_writer *w)
{
    struct hm_batch *b[3] = {make_batch(0, BASE0, 7000), make_batch(1, BASE0 + SKEW1, 8000),
                             make_second_batch(BASE0)};
    struct hm_err err;

    hm_err_clear(&err);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(mrg_writer_add_batch(w, b[i], &err), 0);
        hm_batch_free(b[i]);
    }
}

static int write_run(const char *path)
{
    struct hm_err err;
    struct mrg_writer *w;
    struct an_rank_result r;
    struct mrg_writer_stats ws;

    hm_err_clear(&err);
    w = mrg_writer_open(path, &err);
    CHECK(w != NULL);
    if (!w)
        return -1;
    CHECK(exists(tmp_of(path)));
    /* Rank 1's raw clock runs SKEW1 ahead; its CPU op enters 1 us later. */
    CHECK_EQ_INT(mrg_writer_set_clock(w, 1, HM_NONE, -SKEW1, 0.0, 0, "mpi", 2000, &err), 0);
    add_batches(w);
    CHECK_EQ_INT(mrg_writer_set_clock(w, 0, HM_NONE, 5, 0.0, 0, "mpi", HM_NONE, &err), HM_EINVAL);
    fill_analysis(&r, 0);
    CHECK_EQ_INT(mrg_writer_add_analysis(w, &r, "hta", &err), 0);
    CHECK_EQ_INT(mrg_writer_add_analysis(w, &r, "hta", &err), 0); /* replaces */
    CHECK_EQ_INT(mrg_writer_add_analysis(w, &r, NULL, &err), 0);
    CHECK_EQ_INT(mrg_writer_add_analysis(w, &r, "all_steps", &err), 0);
    free_analysis(&r);
    CHECK_EQ_INT(mrg_writer_set_meta(w, "created_by", "test_writer", &err), 0);
    mrg_writer_stats(w, &ws);
    CHECK_EQ_INT(ws.slices, 2 * 8 + 2);
    CHECK(ws.rows >= ws.slices);
    CHECK(ws.bytes > 0);
    CHECK(ws.strings > 10);
    /* v_stragglers reads the matcher's tables (analysis/cross_rank.h). */
    return tw_finish(w);
}

static void check_counts(sqlite3 *db)
{
    CHECK_STR(q_text(db, "PRAGMA integrity_check"), "ok");
    CHECK_STR(q_text(db, "SELECT value FROM meta WHERE key = 'schema_version'"), "1");
    CHECK_STR(q_text(db, "SELECT value FROM meta WHERE key = 'created_by'"), "test_writer");
    CHECK_STR(q_text(db, "PRAGMA journal_mode"), "delete");
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM ranks"), 2);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM tracks"), 4);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM slices"), 18);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM v_slices"), 18);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM collectives"), 4);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM counters"), 2);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM steps"), 2);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM files"), 2);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM categories"), HM_CAT__COUNT);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM collective_instances"), 1);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM nvtx_stitched"), 0);
    /* Strings are shared across ranks and batches. */
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM strings WHERE str = 'aten::mm'"), 1);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM strings WHERE str LIKE '{%'"), 0);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' "
                           "AND name = 'slices_track_ts'"), 1);
}

static void check_ranks(sqlite3 *db)
{
    CHECK_STR(q_text(db, "SELECT host FROM ranks WHERE rank = 0"), "node-a");
    CHECK_STR(q_text(db, "SELECT backend FROM ranks WHERE rank = 1"), "nccl");
    CHECK_EQ_INT(q_int(db, "SELECT pid FROM ranks WHERE rank = 1"), 1001);
    CHECK_EQ_INT(q_int(db, "SELECT world_size FROM ranks WHERE rank = 0"), 2);
    CHECK_EQ_INT(q_int(db, "SELECT base_time_ns FROM ranks WHERE rank = 0"), BASE0);
    CHECK_STR(q_text(db, "SELECT clock_method FROM ranks WHERE rank = 0"), "base_time");
    CHECK_STR(q_text(db, "SELECT clock_method FROM ranks WHERE rank = 1"), "mpi");
    CHECK_EQ_INT(q_int(db, "SELECT clock_offset_ns FROM ranks WHERE rank = 1"), -SKEW1);
    CHECK_EQ_INT(q_int(db, "SELECT clock_uncertainty_ns FROM ranks WHERE rank = 1"), 2000);
    CHECK_EQ_INT(q_int(db, "SELECT clock_uncertainty_ns FROM ranks WHERE rank = 0"), INT64_MIN);
    CHECK_EQ_INT(q_int(db, "SELECT complete FROM ranks WHERE rank = 0"), 1);
    CHECK_EQ_INT(q_int(db, "SELECT batches FROM ranks WHERE rank = 0"), 2);
    CHECK_EQ_INT(q_int(db, "SELECT offset_ns FROM v_clocks WHERE rank = 1"), -SKEW1);
    /* The second batch of rank 0 appended: counts add up per file. */
    CHECK_EQ_INT(q_int(db, "SELECT count FROM skipped WHERE rank = 0 AND reason = 'no_dur'"), 5);
    CHECK_EQ_INT(q_int(db, "SELECT count FROM skipped WHERE rank = 0 AND reason = 'bad_value'"), 1);
    CHECK_EQ_INT(q_int(db, "SELECT count FROM skipped WHERE rank = 1 AND reason = 'no_dur'"), 2);
    CHECK_STR(q_text(db, "SELECT file FROM skipped WHERE rank = 1 LIMIT 1"), "rank1.json");
    CHECK_EQ_INT(q_int(db, "SELECT batches FROM files WHERE rank = 0"), 2);
    CHECK_EQ_INT(q_int(db, "SELECT slices FROM files WHERE rank = 0"), 10);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM skipped WHERE count = 0"), 0);
}

static void check_slices(sqlite3 *db)
{
    /* Aligned ts = raw + base (+ offset for rank 1). */
    CHECK_EQ_INT(q_int(db, "SELECT ts FROM v_slices WHERE rank = 0 AND name = 'aten::mm' "
                           "ORDER BY ts LIMIT 1"), BASE0 + 2000);
    CHECK_EQ_INT(q_int(db, "SELECT ts FROM v_slices WHERE rank = 1 AND name = 'aten::mm'"),
                 BASE0 + 2000);
    CHECK_EQ_INT(q_int(db, "SELECT dur FROM v_slices WHERE rank = 1 AND name = 'aten::mm'"), 3000);
    CHECK_EQ_INT(q_int(db, "SELECT ts FROM v_slices WHERE rank = 0 AND name = 'late op'"),
                 BASE0 + 20010);
    /* Nesting: step > mm > launch; add is a child of step. */
    CHECK_EQ_INT(q_int(db, "SELECT depth FROM v_slices WHERE rank = 0 AND name LIKE 'ProfilerStep%'"), 0);
    CHECK_EQ_INT(q_int(db, "SELECT parent FROM v_slices WHERE rank = 0 AND name LIKE 'ProfilerStep%'"),
                 INT64_MIN);
    CHECK_EQ_INT(q_int(db, "SELECT depth FROM v_slices WHERE rank = 0 AND name = 'cudaLaunchKernel'"), 2);
    CHECK_EQ_INT(q_int(db, "SELECT p.name = 'aten::mm' FROM v_slices s JOIN v_slices p ON p.id = s.parent "
                           "WHERE s.rank = 1 AND s.name = 'cudaLaunchKernel'"), 1);
    CHECK_EQ_INT(q_int(db, "SELECT p.name = 'ProfilerStep#1' FROM v_slices s JOIN v_slices p "
                           "ON p.id = s.parent WHERE s.rank = 0 AND s.name = 'aten::add'"), 1);
    CHECK_EQ_INT(q_int(db, "SELECT depth FROM v_slices WHERE rank = 0 AND name = 'aten::add'"), 1);
    CHECK_EQ_INT(q_int(db, "SELECT depth FROM v_slices WHERE rank = 0 AND name = 'odd event'"), 1);
    CHECK_EQ_INT(q_int(db, "SELECT depth FROM v_slices WHERE kind = 'gpu_stream' AND rank = 0 "
                           "AND name LIKE 'nccl%'"), 0);
    /* A second batch starts its own nesting. */
    CHECK_EQ_INT(q_int(db, "SELECT depth FROM v_slices WHERE name = 'aten::mm' AND ts = "
                           "(SELECT max(ts) FROM v_slices WHERE name = 'aten::mm')"), 0);
    CHECK_EQ_INT(q_int(db, "SELECT depth FROM v_slices WHERE name = 'late op'"), 1);
    /* Storage order: parents before children, a track's slices of one batch
     * in time order. */
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM slices WHERE parent >= id"), 0);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM slices a JOIN slices b ON b.id = a.id + 1 "
                           "AND b.track = a.track WHERE b.ts < a.ts"), 0);
    /* NULL for absent values; categories; args. */
    CHECK_EQ_INT(q_int(db, "SELECT correlation FROM v_slices WHERE rank = 0 AND name = 'aten::add'"),
                 INT64_MIN);
    CHECK_EQ_INT(q_int(db, "SELECT external_id FROM v_slices WHERE rank = 0 AND name = 'aten::mm' "
                           "ORDER BY ts LIMIT 1"), 5);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM slices WHERE bytes IS NULL"), 18);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM slices WHERE args IS NULL"), 16);
    CHECK_STR(q_text(db, "SELECT args FROM v_slices WHERE rank = 1 AND name LIKE 'sgemm%'"),
              "{\"grid\":[1,1,1]}");
    CHECK_STR(q_text(db, "SELECT category FROM v_slices WHERE rank = 0 AND name LIKE 'sgemm%'"),
              "kernel");
    CHECK_STR(q_text(db, "SELECT category FROM v_slices WHERE rank = 0 AND name = 'odd event'"),
              "weird_cat");
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM slices WHERE cat_name IS NOT NULL"), 2);
    CHECK_EQ_INT(q_int(db, "SELECT stream FROM v_slices WHERE name LIKE 'sgemm%' LIMIT 1"), 7);
    CHECK_EQ_INT(q_int(db, "SELECT tid FROM v_slices WHERE name LIKE 'sgemm%' LIMIT 1"), INT64_MIN);
    CHECK_STR(q_text(db, "SELECT track_name FROM v_slices WHERE name = 'aten::add' LIMIT 1"),
              "python main");
    CHECK_EQ_INT(q_int(db, "SELECT iteration FROM v_slices WHERE name = 'aten::add' LIMIT 1"), 1);
    CHECK_EQ_INT(q_int(db, "SELECT iteration FROM v_slices WHERE name = 'late op'"), INT64_MIN);
}

static void check_collectives(sqlite3 *db)
{
    CHECK_EQ_INT(q_int(db, "SELECT enter_ns FROM v_collectives WHERE rank = 1 AND track_kind = 'cpu_thread'"),
                 BASE0 + 8000);
    CHECK_EQ_INT(q_int(db, "SELECT exit_ns FROM v_collectives WHERE rank = 0 AND track_kind = 'gpu_stream'"),
                 BASE0 + 10000);
    CHECK_STR(q_text(db, "SELECT slice_name FROM v_collectives WHERE rank = 0 AND track_kind = 'gpu_stream'"),
              "ncclDevKernel_AllReduce_Sum_f32");
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM collectives WHERE comms_id IS NULL"), 4);
    CHECK_STR(q_text(db, "SELECT pg_ranks FROM collectives LIMIT 1"), "[0, 1]");
    /* Rank 1's CPU op enters 1 us after rank 0's, but the NCCL kernels,
     * which time the call, start together: nobody is late. */
    CHECK_EQ_INT(q_int(db, "SELECT late_count FROM v_stragglers WHERE rank = 1"), 0);
    CHECK_EQ_INT(q_int(db, "SELECT late_count FROM v_stragglers WHERE rank = 0"), 0);
    CHECK_EQ_INT(q_int(db, "SELECT instances FROM v_stragglers WHERE rank = 0"), 1);
    CHECK_NEAR(q_real(db, "SELECT blame_us FROM v_stragglers WHERE rank = 1"), 0.0, 1e-9);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM collective_instance_ranks WHERE source = 'gpu'"), 2);
    CHECK_EQ_INT(q_int(db, "SELECT ts FROM counters WHERE rank = 1"), BASE0 + 1500);
    CHECK_NEAR(q_real(db, "SELECT value FROM counters WHERE rank = 1"), 1024.0, 0);
}

static void check_analysis(sqlite3 *db)
{
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM a_temporal"), 2);
    CHECK_EQ_INT(q_int(db, "SELECT idle_us FROM v_temporal WHERE rank = 0"), 10);
    CHECK_NEAR(q_real(db, "SELECT compute_pct FROM v_temporal WHERE rank = 0"), 60.0, 1e-9);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM v_overlap WHERE overlap_pct IS NULL"), 1);
    CHECK_NEAR(q_real(db, "SELECT host_wait_ratio FROM v_idle WHERE rank = 0 AND stream = 7"), 0.6, 1e-9);
    CHECK_NEAR(q_real(db, "SELECT other_ratio FROM v_idle WHERE rank = 0"), 0.1, 1e-9);
    CHECK_STR(q_text(db, "SELECT name FROM v_kernels WHERE rank = 0"), "sgemm_128x64");
    CHECK_NEAR(q_real(db, "SELECT pct FROM v_kernels WHERE rank = 0"), 100.0, 1e-9);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM a_kernels"), 2);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM v_kernel_class WHERE rank = 0"), AN_KCLASS__COUNT);
    CHECK_EQ_INT(q_int(db, "SELECT union_us FROM v_kernel_class WHERE class = 'COMMUNICATION'"), 20);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM v_kernel_labels WHERE rank = 0"), 7);
    CHECK_EQ_INT(q_int(db, "SELECT us FROM v_kernel_labels WHERE label = "
                           "'COMPUTATION overlapping COMMUNICATION'"), 5);
    CHECK_EQ_INT(q_int(db, "SELECT us FROM v_kernel_labels WHERE mask = 1"), 55);
    CHECK_EQ_INT(q_int(db, "SELECT gpu_busy_us FROM v_steps WHERE rank = 0"), 5);
    CHECK_EQ_INT(q_int(db, "SELECT dropped FROM v_steps WHERE rank = 0"), 0);
    CHECK_EQ_INT(q_int(db, "SELECT ts FROM v_steps WHERE rank = 0"), BASE0 + 1000);
    CHECK_EQ_INT(q_int(db, "SELECT gpu_busy_us FROM v_steps WHERE rank = 1"), INT64_MIN);
    CHECK_EQ_INT(q_int(db, "SELECT s.name = 'ProfilerStep#1' FROM v_steps t JOIN v_slices s "
                           "ON s.id = t.slice WHERE t.rank = 1"), 1);
}

static void test_run(void)
{
    const char *p = hm_tmpfile("writer_run.db");
    char path[4096];
    sqlite3 *db = NULL;

    snprintf(path, sizeof path, "%s", p);
    unlink(path);
    if (write_run(path) != 0)
        return;
    CHECK(exists(path));
    CHECK(!exists(tmp_of(path)));
    CHECK_EQ_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    check_counts(db);
    check_ranks(db);
    check_slices(db);
    check_collectives(db);
    check_analysis(db);
    sqlite3_close(db);
    /* Writing again replaces the file. */
    CHECK_EQ_INT(write_run(path), 0);
    CHECK_EQ_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM slices"), 18);
    sqlite3_close(db);
    unlink(path);
}

/* slices_track_ts exists from the open of a fresh file (store/load_index.c)
 * and is kept through batches that add rows to earlier tracks (the third is a
 * second batch of rank 0); the finished file has it exactly as
 * sql/indexes.sql writes it, consistent with the table, and
 * sqlite_stat1 gives its exact row count whatever its pages look like. */
static void test_load_index(void)
{
    const char *p = hm_tmpfile("writer_load_index.db");
    char path[4096];
    struct hm_err err;
    struct mrg_writer *w;
    sqlite3 *db = NULL;

    snprintf(path, sizeof path, "%s", p);
    unlink(path);
    hm_err_clear(&err);
    w = mrg_writer_open(path, &err);
    CHECK(w != NULL);
    if (!w)
        return;
    CHECK_EQ_INT(q_int(mrg_writer_db(w),
                       "SELECT count(*) FROM sqlite_master WHERE name = 'slices_track_ts'"), 1);
    add_batches(w);
    CHECK_EQ_INT(xr_finish(w, &(struct xr_opts){.no_refine = 1}, &err), 0);
    CHECK_EQ_INT(mrg_writer_finish(w, &err), 0);
    CHECK_EQ_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    CHECK_STR(q_text(db, "SELECT sql FROM sqlite_master WHERE name = 'slices_track_ts'"),
                 "CREATE INDEX slices_track_ts ON slices (track, ts, dur)");
    CHECK_STR(q_text(db, "PRAGMA integrity_check"), "ok");
    CHECK_EQ_INT(q_int(db, "SELECT CAST(substr(stat, 1, instr(stat, ' ') - 1) AS INTEGER)"
                           " FROM sqlite_stat1 WHERE idx = 'slices_track_ts'"),
                 q_int(db, "SELECT count(*) FROM slices"));
    /* The index's order is (track, ts): walking it never goes back. */
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM (SELECT track, ts, lag(track) OVER w AS pt,"
                           " lag(ts) OVER w AS pts FROM slices INDEXED BY slices_track_ts"
                           " WHERE track > 0 WINDOW w AS (ORDER BY track, ts, dur))"
                           " WHERE pt = track AND pts > ts"), 0);
    sqlite3_close(db);
    unlink(path);
}

static void test_drift(void)
{
    char path[4096];
    struct hm_err err;
    struct mrg_writer *w;
    struct hm_batch *b = make_batch(3, HM_NONE, 7000);
    sqlite3 *db = NULL;
    const int64_t base = 1000000, off = -250, ref = 1000;
    const double ppm = 500.0;
    int64_t expect = 2000 + base + off + (int64_t)(ppm * 1e-6 * (double)(2000 - ref));
    int64_t expect_end = 5000 + base + off + (int64_t)(ppm * 1e-6 * (double)(5000 - ref));

    snprintf(path, sizeof path, "%s", hm_tmpfile("writer_drift.db"));
    w = mrg_writer_open(path, &err);
    CHECK(w != NULL);
    if (!w)
        return;
    CHECK_EQ_INT(mrg_writer_set_clock(w, 3, base, off, ppm, ref, "collectives", HM_NONE, &err), 0);
    /* A refused argument leaves the writer usable. */
    CHECK_EQ_INT(mrg_writer_set_clock(w, 3, base, off, ppm, ref, "guess", HM_NONE, &err), HM_EINVAL);
    CHECK_EQ_INT(mrg_writer_set_clock(w, -2, base, off, ppm, ref, "none", HM_NONE, &err), HM_EINVAL);
    CHECK_EQ_INT(mrg_writer_add_batch(w, b, &err), 0);
    CHECK_EQ_INT(mrg_writer_set_rank_complete(w, 3, 0, &err), 0);
    CHECK_EQ_INT(mrg_writer_finish(w, &err), 0);
    hm_batch_free(b);
    CHECK_EQ_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    CHECK_EQ_INT(q_int(db, "SELECT ts FROM v_slices WHERE name = 'aten::mm'"), expect);
    CHECK_EQ_INT(q_int(db, "SELECT ts + dur FROM v_slices WHERE name = 'aten::mm'"), expect_end);
    CHECK_EQ_INT(q_int(db, "SELECT complete FROM ranks WHERE rank = 3"), 0);
    CHECK_EQ_INT(q_int(db, "SELECT base_time_ns FROM ranks WHERE rank = 3"), base);
    CHECK_STR(q_text(db, "SELECT clock_method FROM ranks"), "collectives");
    CHECK_NEAR(q_real(db, "SELECT clock_drift_ppm FROM ranks"), ppm, 0);
    sqlite3_close(db);
    unlink(path);
}

static void test_abort(void)
{
    char path[4096];
    struct hm_err err;
    struct mrg_writer *w;
    struct hm_batch *b = make_batch(0, BASE0, 7000);

    snprintf(path, sizeof path, "%s", hm_tmpfile("writer_abort.db"));
    unlink(path);
    mrg_writer_abort(NULL);
    w = mrg_writer_open(path, &err);
    CHECK(w != NULL);
    if (!w)
        return;
    CHECK_EQ_INT(mrg_writer_add_batch(w, b, &err), 0);
    CHECK(exists(tmp_of(path)));
    mrg_writer_abort(w);
    CHECK(!exists(tmp_of(path)));
    CHECK(!exists(path));

    /* Bad batches are refused and change nothing. */
    w = mrg_writer_open(path, &err);
    b->info.rank = -1;
    CHECK_EQ_INT(mrg_writer_add_batch(w, b, &err), HM_EINVAL);
    CHECK_EQ_INT(err.rank, -1);
    b->info.rank = 1;
    b->slices.v[0].track = 99;
    CHECK_EQ_INT(mrg_writer_add_batch(w, b, &err), HM_EFORMAT);
    CHECK_EQ_INT(err.rank, 1);
    CHECK_CONTAINS(err.msg, "track");
    b->slices.v[0].track = 0;
    b->collectives.v[0].slice = 1000;
    CHECK_EQ_INT(mrg_writer_add_batch(w, b, &err), HM_EFORMAT);
    b->collectives.v[0].slice = 0;
    CHECK_EQ_INT(mrg_writer_add_batch(w, b, &err), 0);
    CHECK_EQ_INT(mrg_writer_finish(w, &err), 0);
    sqlite3 *db = NULL;
    CHECK_EQ_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM slices"), 8);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM ranks"), 1);
    CHECK_EQ_INT(q_int(db, "SELECT batches FROM ranks"), 1);
    sqlite3_close(db);
    unlink(path);

    /* A failure while storing (a duplicate kernel row) fails the writer:
     * every later call reports that first cause, code and message, and
     * finish then cleans up and leaves nothing. */
    struct an_rank_result r;
    struct hm_err first;
    fill_analysis(&r, 0);
    struct an_kernel *k = HM_VEC_PUSH(r.kernels);
    *k = r.kernels.v[0];
    k->name = strdup(k->name);
    w = mrg_writer_open(path, &err);
    CHECK_EQ_INT(mrg_writer_add_analysis(w, &r, "hta", &err), HM_ESQL);
    CHECK_EQ_INT(err.rank, 0);
    CHECK_CONTAINS(err.msg, "storing a_kernels");
    first = err;
    hm_err_clear(&err);
    CHECK_EQ_INT(mrg_writer_set_meta(w, "k", "v", &err), HM_ESQL);
    CHECK_STR(err.msg, first.msg);
    hm_err_clear(&err);
    CHECK_EQ_INT(mrg_writer_set_clock(w, 0, HM_NONE, 0, 0.0, 0, "none", HM_NONE, &err), HM_ESQL);
    CHECK_STR(err.msg, first.msg);
    hm_err_clear(&err);
    CHECK_EQ_INT(mrg_writer_add_batch(w, b, &err), HM_ESQL);
    CHECK_CONTAINS(err.msg, first.msg);
    hm_err_clear(&err);
    CHECK_EQ_INT(mrg_writer_flush(w, &err), HM_ESQL);
    CHECK_STR(err.msg, first.msg);
    hm_err_clear(&err);
    CHECK_EQ_INT(mrg_writer_finish(w, &err), HM_ESQL);
    CHECK_STR(err.msg, first.msg);
    CHECK(!exists(tmp_of(path)));
    CHECK(!exists(path));
    free_analysis(&r);
    hm_batch_free(b);
}

/* A batch with nothing but skipped counts and rank facts (no tracks). */
static void test_empty_batch(void)
{
    char path[4096];
    struct hm_err err;
    struct mrg_writer *w;
    struct hm_batch *b = hm_batch_new();
    sqlite3 *db = NULL;

    snprintf(path, sizeof path, "%s", hm_tmpfile("writer_empty.db"));
    b->info.rank = 5;
    b->info.skipped[HM_SKIP_UNSUPPORTED_PH] = 7;
    b->info.hostname = S(b, "node-z");
    w = mrg_writer_open(path, &err);
    CHECK(w != NULL);
    if (!w)
        return;
    CHECK_EQ_INT(mrg_writer_add_batch(w, b, &err), 0);
    CHECK_EQ_INT(mrg_writer_add_batch(w, b, &err), 0);
    /* A live run analyses each rank at finish: one that sent batches
     * without a slice (a CUDA program with CUPTI off and no NVTX) loads as
     * an empty batch and stores no iterations, without failing the run. */
    struct hm_batch *loaded = NULL;
    CHECK_EQ_INT(mrg_writer_load_rank(w, 5, &loaded, &err), 0);
    CHECK(loaded != NULL && loaded->slices.n == 0);
    if (loaded)
        CHECK_EQ_INT(mrg_writer_store_iterations(w, loaded, &err), 0);
    hm_batch_free(loaded);
    CHECK_EQ_INT(mrg_writer_finish(w, &err), 0);
    hm_batch_free(b);
    CHECK_EQ_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM slices"), 0);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM files"), 0);
    CHECK_EQ_INT(q_int(db, "SELECT count FROM skipped WHERE rank = 5 AND reason = 'unsupported_ph' "
                           "AND file IS NULL"), 14);
    CHECK_STR(q_text(db, "SELECT host || ' ' || clock_method || ' ' || complete FROM ranks"),
              "node-z none 1");
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM v_stragglers"), 0);
    CHECK_STR(q_text(db, "PRAGMA integrity_check"), "ok");
    sqlite3_close(db);
    unlink(path);
}

static void test_unwritable(void)
{
    struct hm_err err;
    struct mrg_writer *w;
    char dir[4096], path[4200];

    hm_err_clear(&err);
    w = mrg_writer_open("/nonexistent-htamerge-dir/x/out.db", &err);
    CHECK(w == NULL);
    CHECK(err.code == HM_EIO || err.code == HM_ESQL);
    CHECK_STR(err.file, "/nonexistent-htamerge-dir/x/out.db");
    CHECK(err.msg[0] != '\0');
    mrg_writer_abort(w);

    if (geteuid() == 0)
        return; /* root writes anywhere: the permission case cannot be shown */
    snprintf(dir, sizeof dir, "%s", hm_tmpfile("writer_ro_dir"));
    mkdir(dir, 0755);
    chmod(dir, 0555);
    snprintf(path, sizeof path, "%s/out.db", dir);
    hm_err_clear(&err);
    w = mrg_writer_open(path, &err);
    CHECK(w == NULL);
    CHECK(err.code == HM_EIO || err.code == HM_ESQL);
    CHECK_STR(err.file, path);
    mrg_writer_abort(w);
    chmod(dir, 0755);
    rmdir(dir);
}

int main(void)
{
    test_run();
    test_load_index();
    test_drift();
    test_abort();
    test_empty_batch();
    test_unwritable();
    return hm_test_done();
}
