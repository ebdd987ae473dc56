/* Tests for common/batch.c and common/vec.c (and the small tables of
 * common/record.c): defaults, track dedup, string shorthands, growth. */
#include "test.h"

#include <stdint.h>

#include "common/batch.h"
#include "common/err.h"
#include "common/record.h"
#include "common/vec.h"

static void test_new(void)
{
    struct hm_batch *b = hm_batch_new();

    CHECK(b != NULL);
    CHECK_EQ_INT(b->info.rank, HM_NONE);
    CHECK_EQ_INT(b->info.world_size, HM_NONE);
    CHECK_EQ_INT(b->info.base_time_ns, HM_NONE);
    CHECK_EQ_INT(b->info.pid, HM_NONE);
    CHECK_EQ_INT(b->slices.n, 0);
    CHECK_EQ_INT(hm_strtab_count(b->strings), 1);
    CHECK(hm_batch_bytes(b) >= sizeof *b);
    hm_batch_free(b);
    hm_batch_free(NULL);
}

static void test_tracks(void)
{
    struct hm_batch *b = hm_batch_new();

    CHECK_EQ_INT(hm_batch_track(b, HM_TRACK_CPU_THREAD, 100, 7), 0);
    CHECK_EQ_INT(hm_batch_track(b, HM_TRACK_GPU_STREAM, 100, 7), 1); /* kind differs */
    CHECK_EQ_INT(hm_batch_track(b, HM_TRACK_CPU_THREAD, 100, 8), 2); /* tid differs */
    CHECK_EQ_INT(hm_batch_track(b, HM_TRACK_CPU_THREAD, 101, 7), 3); /* pid differs */
    CHECK_EQ_INT(hm_batch_track(b, HM_TRACK_CPU_THREAD, 100, 7), 0);
    CHECK_EQ_INT(hm_batch_track(b, HM_TRACK_GPU_STREAM, 100, 7), 1);
    CHECK_EQ_INT(hm_batch_track(b, HM_TRACK_CPU_THREAD, INT64_MIN, -1), 4);
    CHECK_EQ_INT(hm_batch_track(b, HM_TRACK_CPU_THREAD, INT64_MIN, -1), 4);
    CHECK_EQ_INT(b->tracks.n, 5);
    CHECK_EQ_INT(b->tracks.v[1].kind, HM_TRACK_GPU_STREAM);
    CHECK_EQ_INT(b->tracks.v[2].tid, 8);
    CHECK_EQ_INT(b->tracks.v[3].pid, 101);
    CHECK_EQ_INT(b->tracks.v[0].name, 0);

    /* Many tracks: dedup still holds after the vec has grown. */
    for (int i = 0; i < 300; i++)
        CHECK_EQ_INT(hm_batch_track(b, HM_TRACK_GPU_STREAM, 0, i), 5 + i);
    for (int i = 0; i < 300; i++)
        CHECK_EQ_INT(hm_batch_track(b, HM_TRACK_GPU_STREAM, 0, i), 5 + i);
    CHECK_EQ_INT(b->tracks.n, 305);
    hm_batch_free(b);
}

static void test_strings(void)
{
    struct hm_batch *b = hm_batch_new();
    hm_strid a = hm_batch_intern(b, "ncclKernel", 10);

    CHECK_EQ_INT(a, 1);
    CHECK_EQ_INT(hm_batch_intern(b, "ncclKernel_x", 10), a);
    CHECK_EQ_INT(hm_batch_intern(b, "", 0), 0);
    CHECK_STR(hm_batch_str(b, a), "ncclKernel");
    CHECK_STR(hm_batch_str(b, 0), "");
    CHECK_STR(hm_batch_str(b, 12345), "");
    hm_batch_free(b);
}

static void test_vec(void)
{
    HM_VEC(int64_t) v = { 0 };
    HM_VEC(struct hm_slice) s = { 0 };
    void *p = NULL;
    size_t cap = 0;
    int bad = 0;

    for (int64_t i = 0; i < 10000; i++) {
        int64_t *x = HM_VEC_PUSH(v);
        if (!x || *x != 0)
            bad++;
        else
            *x = i * 3;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(v.n, 10000);
    CHECK(v.cap >= v.n);
    for (size_t i = 0; i < v.n; i++)
        if (v.v[i] != (int64_t)i * 3)
            bad++;
    CHECK_EQ_INT(bad, 0);
    HM_VEC_FREE(v);
    CHECK(v.v == NULL);
    CHECK_EQ_INT(v.n + v.cap, 0);

    /* A pushed struct slot is zeroed even when the memory is reused. */
    for (int round = 0; round < 2; round++) {
        struct hm_slice *sl = HM_VEC_PUSH(s);
        CHECK(sl != NULL && sl->ts == 0 && sl->name == 0 && sl->iteration == 0);
        if (sl)
            memset(sl, 0xff, sizeof *sl);
        s.n = 0;
    }
    HM_VEC_FREE(s);

    /* A size that would overflow is refused without touching the array. */
    CHECK_EQ_INT(hm_vec_reserve(&p, &cap, SIZE_MAX / 4, 64), HM_ENOMEM);
    CHECK(p == NULL);
    CHECK_EQ_INT(cap, 0);
    CHECK_EQ_INT(hm_vec_reserve(&p, &cap, 5, 8), 0);
    CHECK(cap >= 5);
    free(p);
}

static void test_record_tables(void)
{
    for (int c = 0; c < HM_CAT__COUNT; c++) {
        const char *name = hm_cat_name((enum hm_cat)c);
        if (c != HM_CAT_OTHER)
            CHECK_EQ_INT(hm_cat_parse(name, (unsigned)strlen(name)), c);
    }
    CHECK_EQ_INT(hm_cat_parse("Kernel", 6), HM_CAT_KERNEL);
    CHECK_EQ_INT(hm_cat_parse("kernelx", 7), HM_CAT_OTHER);
    CHECK_EQ_INT(hm_cat_parse("kern", 4), HM_CAT_OTHER);
    CHECK_STR(hm_cat_name(HM_CAT__COUNT), "other");
    CHECK(hm_cat_is_gpu(HM_CAT_KERNEL));
    CHECK(!hm_cat_is_gpu(HM_CAT_CPU_OP));
    CHECK_STR(hm_skip_name(HM_SKIP_NEGATIVE_DUR), "negative_dur");
    CHECK_STR(hm_skip_name(HM_SKIP__COUNT), "unknown");
}

int main(void)
{
    test_new();
    test_tracks();
    test_strings();
    test_vec();
    test_record_tables();
    return hm_test_done();
}
