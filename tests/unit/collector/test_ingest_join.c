/* A reader's join of a rank's files (collector/ingest_join.h) is the batch
 * rank 0 reads back after storing them (store/readback.c): the two are
 * built here from the same two files and compared field by field, on the
 * files' clock (fractional times, one base) and aligned (two bases), and
 * the cases rank 0 must read back itself are refused. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "collector/ingest_join.h"
#include "store/writer.h"
#include "test.h"

#define BASE 1700000000000000000LL

/* One file of rank 3: slices out of time order on two CPU threads and a
 * GPU stream (the writer stores them by track and start), an NVTX range
 * with args (kept by reading back) and a kernel with args (dropped), and
 * two ProfilerSteps whose slices move with the storage order. */
static struct hm_batch *file(int64_t base, int64_t t0, int64_t step0, uint32_t flags)
{
    struct hm_batch *b = hm_batch_new();
    int64_t cpu = hm_batch_track(b, HM_TRACK_CPU_THREAD, 10, 11), cpu2 = hm_batch_track(b, HM_TRACK_CPU_THREAD, 10, 12);
    int64_t gpu = hm_batch_track(b, HM_TRACK_GPU_STREAM, 0, 7);
    struct { int64_t track, ts, dur; const char *name; uint16_t cat; const char *args; } rows[] = {
        {gpu, t0 + 5500, 1200, "ncclKernel_AllReduce", HM_CAT_KERNEL, "{\"stream\": 7}"},
        {cpu, t0 + 1000, 900, "ProfilerStep#", HM_CAT_CPU_OP, NULL},
        {cpu, t0, 900, "ProfilerStep#", HM_CAT_CPU_OP, NULL},
        {cpu2, t0 + 100, 50, "nvtx range", HM_CAT_NVTX, "{\"domain\": \"htamerge\"}"},
        {cpu, t0 + 10, 200, "aten::mm", HM_CAT_CPU_OP, "{\"x\": 1}"},
        {gpu, t0 + 300, 333, "sgemm", HM_CAT_KERNEL, NULL},
        {cpu, t0 + 10, 500, "aten::linear", HM_CAT_CPU_OP, NULL},
    };

    b->info.rank = 3;
    b->info.base_time_ns = base;
    b->info.flags = flags;
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        struct hm_slice *s = HM_VEC_PUSH(b->slices);
        s->track = (uint32_t)rows[i].track;
        s->ts = rows[i].ts;
        s->dur = rows[i].dur;
        s->name = hm_batch_intern(b, rows[i].name, strlen(rows[i].name));
        s->cat = rows[i].cat;
        s->correlation = rows[i].cat == HM_CAT_KERNEL ? (int64_t)i : HM_NONE;
        s->external_id = HM_NONE;
        s->bytes = HM_NONE;
        s->iteration = HM_NONE;
        if (rows[i].args)
            s->args = hm_strtab_append(b->strings, rows[i].args, strlen(rows[i].args));
    }
    for (int k = 0; k < 2; k++) {
        struct hm_step *st = HM_VEC_PUSH(b->steps);
        st->number = step0 + k;
        st->slice = k == 0 ? 2 : 1;
        st->ts = b->slices.v[st->slice].ts;
        st->dur = b->slices.v[st->slice].dur;
        st->source = HM_STEP_PROFILER;
    }
    return b;
}

/* Rank 0's batch: the files stored, then the rank read back. */
static struct hm_batch *read_back(struct hm_batch *const *bs, size_t n, const char *name)
{
    struct hm_batch *out = NULL;
    struct hm_err err;
    char path[4096];
    struct mrg_writer *w;

    snprintf(path, sizeof path, "%s", hm_tmpfile(name));
    unlink(path);
    w = mrg_writer_open(path, &err);
    CHECK(w != NULL);
    if (!w)
        return NULL;
    for (size_t i = 0; i < n; i++)
        CHECK_EQ_INT(mrg_writer_add_batch(w, bs[i], &err), 0);
    CHECK_EQ_INT(mrg_writer_load_rank(w, 3, &out, &err), 0);
    mrg_writer_abort(w);
    return out;
}

/* Equal but for times moved by shift (reading back aligns them). */
static void same(const struct hm_batch *j, const struct hm_batch *rb, int64_t shift)
{
    CHECK_EQ_INT(j->info.rank, rb->info.rank);
    CHECK_EQ_INT(j->tracks.n, rb->tracks.n);
    for (size_t i = 0; i < j->tracks.n && i < rb->tracks.n; i++) {
        CHECK_EQ_INT(j->tracks.v[i].kind, rb->tracks.v[i].kind);
        CHECK_EQ_INT(j->tracks.v[i].pid, rb->tracks.v[i].pid);
        CHECK_EQ_INT(j->tracks.v[i].tid, rb->tracks.v[i].tid);
    }
    CHECK_EQ_INT(j->slices.n, rb->slices.n);
    for (size_t i = 0; i < j->slices.n && i < rb->slices.n; i++) {
        const struct hm_slice *a = &j->slices.v[i], *b = &rb->slices.v[i];
        CHECK_EQ_INT(a->ts + shift, b->ts);
        CHECK_EQ_INT(a->dur, b->dur);
        CHECK_EQ_INT(a->track, b->track);
        CHECK_EQ_INT(a->name, b->name); /* the same ids: interned in the same order */
        CHECK_STR(hm_batch_str(j, a->name), hm_batch_str(rb, b->name));
        CHECK_EQ_INT(a->args, b->args);
        CHECK_STR(hm_batch_str(j, a->args), hm_batch_str(rb, b->args));
        CHECK_EQ_INT(a->cat, b->cat);
        CHECK_EQ_INT(a->correlation, b->correlation);
        CHECK_EQ_INT(a->iteration, b->iteration);
        CHECK_EQ_INT(a->flags, b->flags);
    }
    CHECK_EQ_INT(j->steps.n, rb->steps.n);
    for (size_t i = 0; i < j->steps.n && i < rb->steps.n; i++) {
        CHECK_EQ_INT(j->steps.v[i].number, rb->steps.v[i].number);
        CHECK_EQ_INT(j->steps.v[i].ts + shift, rb->steps.v[i].ts);
        CHECK_EQ_INT(j->steps.v[i].dur, rb->steps.v[i].dur);
        CHECK_EQ_INT(j->steps.v[i].slice, rb->steps.v[i].slice);
        CHECK_EQ_INT(j->steps.v[i].source, rb->steps.v[i].source);
    }
}

static void joined(int64_t base2, uint32_t flags, const char *name, int64_t shift)
{
    struct hm_batch *bs[2] = {file(BASE, 1000000, 4, flags), file(base2, 5000, 0, flags)}, *j = NULL;
    struct hm_batch *rb = read_back(bs, 2, name);

    CHECK_EQ_INT(col_ingest_join(bs, 2, &j), 1);
    if (j && rb) {
        CHECK_EQ_INT(j->info.flags, rb->info.flags | (flags & HM_INFO_F_FRACTIONAL_TS));
        same(j, rb, shift);
    }
    hm_batch_free(j);
    hm_batch_free(rb);
    hm_batch_free(bs[0]);
    hm_batch_free(bs[1]);
}

/* What rank 0 must read back itself: not joined here. */
static void refused(void)
{
    struct hm_batch *bs[2] = {file(BASE, 0, 0, 0), file(BASE, 9000, 2, 0)}, *j = NULL;

    bs[1]->steps.v[0].source = HM_STEP_INFERRED; /* found again over the whole rank */
    CHECK_EQ_INT(col_ingest_join(bs, 2, &j), 0);
    bs[1]->steps.v[0].source = HM_STEP_PROFILER;
    bs[0]->info.base_time_ns = bs[1]->info.base_time_ns = HM_NONE; /* fractional, no base */
    bs[0]->info.flags = HM_INFO_F_FRACTIONAL_TS;
    CHECK_EQ_INT(col_ingest_join(bs, 2, &j), 0);
    bs[0]->info.flags = 0; /* integer times without a base: aligned, joined */
    CHECK_EQ_INT(col_ingest_join(bs, 2, &j), 1);
    hm_batch_free(j);
    CHECK_EQ_INT(col_ingest_join(bs, 1, &j), 0);
    hm_batch_free(bs[0]);
    hm_batch_free(bs[1]);
}

int main(void)
{
    /* fractional times, one base: the analyses see the files' own clock */
    joined(BASE, HM_INFO_F_FRACTIONAL_TS, "ingest_join_frac.db", BASE);
    /* integer times, two bases: aligned, each file by its own base */
    joined(BASE + 250000000, 0, "ingest_join_bases.db", 0);
    refused();
    return hm_test_done();
}
