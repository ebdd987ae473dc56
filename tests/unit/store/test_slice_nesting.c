/* Tests of slice nesting (store/slice_nesting.c) without a database:
 * storage order by track and time, depth and parent on one track, slices
 * that share a start or an end, zero-length slices, partial overlaps, and
 * reuse of the scratch across calls. */
#include "test.h"

#include "store/slice_nesting.h"

static struct hm_slice sl(uint32_t track, int64_t ts, int64_t dur)
{
    return (struct hm_slice){.ts = ts, .dur = dur, .track = track};
}

/* The parent of input slice i as an input index, -1 for none. */
static int parent_of(const struct hm_nesting *n, uint32_t i)
{
    uint32_t p = n->parent[i];
    return p ? (int)n->keys[p - 1].idx : -1;
}

/* One track: a parent, two children (the first starts with the parent),
 * a grandchild, and a slice after them all. */
static void test_one_track(void)
{
    struct hm_nesting n = {0};
    struct hm_slice s[] = {
        sl(0, 20, 10),   /* 0: child b of 1 */
        sl(0, 0, 100),   /* 1: top */
        sl(0, 0, 10),    /* 2: child a of 1, starts with it */
        sl(0, 22, 3),    /* 3: grandchild, in 0 */
        sl(0, 100, 5),   /* 4: top, starts where 1 ends */
    };

    CHECK_EQ_INT(hm_nesting_compute(&n, s, 5, 1), 0);
    /* Storage order: by start, the longer first. */
    CHECK_EQ_INT(n.keys[0].idx, 1);
    CHECK_EQ_INT(n.keys[1].idx, 2);
    CHECK_EQ_INT(n.keys[2].idx, 0);
    CHECK_EQ_INT(n.keys[3].idx, 3);
    CHECK_EQ_INT(n.keys[4].idx, 4);
    CHECK_EQ_INT(n.depth[1], 0);
    CHECK_EQ_INT(n.depth[2], 1);
    CHECK_EQ_INT(n.depth[0], 1);
    CHECK_EQ_INT(n.depth[3], 2);
    CHECK_EQ_INT(n.depth[4], 0);
    CHECK_EQ_INT(parent_of(&n, 1), -1);
    CHECK_EQ_INT(parent_of(&n, 2), 1);
    CHECK_EQ_INT(parent_of(&n, 0), 1);
    CHECK_EQ_INT(parent_of(&n, 3), 0);
    CHECK_EQ_INT(parent_of(&n, 4), -1);
    for (uint32_t i = 0; i < 5; i++)
        CHECK_EQ_INT(n.keys[n.pos[i]].idx, i);
    hm_nesting_free(&n);
}

/* A slice that overlaps the top one but ends after it does not nest; a
 * zero-length slice never has children; equal slices nest in input order. */
static void test_edges(void)
{
    struct hm_nesting n = {0};
    struct hm_slice s[] = {
        sl(0, 0, 10),    /* 0 */
        sl(0, 5, 10),    /* 1: starts in 0, ends after: top level */
        sl(0, 30, 0),    /* 2: zero length */
        sl(0, 30, 0),    /* 3: same instant: not a child of 2 */
        sl(0, 40, 5),    /* 4 */
        sl(0, 40, 5),    /* 5: equal to 4: nests in it */
    };

    CHECK_EQ_INT(hm_nesting_compute(&n, s, 6, 1), 0);
    CHECK_EQ_INT(n.depth[1], 0);
    CHECK_EQ_INT(parent_of(&n, 1), -1);
    CHECK_EQ_INT(n.depth[3], 0);
    CHECK_EQ_INT(parent_of(&n, 3), -1);
    CHECK_EQ_INT(n.pos[2] < n.pos[3], 1);
    CHECK_EQ_INT(parent_of(&n, 5), 4);
    CHECK_EQ_INT(n.depth[5], 1);
    hm_nesting_free(&n);
}

/* Slices of interleaved tracks are grouped by track (stable), nested per
 * track only; the scratch is reused by a second, larger call. */
static void test_tracks_and_reuse(void)
{
    struct hm_nesting n = {0};
    struct hm_slice a[] = {sl(1, 0, 50), sl(0, 10, 5), sl(1, 10, 5), sl(0, 0, 50)};
    struct hm_slice b[64];

    CHECK_EQ_INT(hm_nesting_compute(&n, a, 4, 2), 0);
    CHECK_EQ_INT(n.keys[0].idx, 3);   /* track 0, by time */
    CHECK_EQ_INT(n.keys[1].idx, 1);
    CHECK_EQ_INT(n.keys[2].idx, 0);   /* then track 1 */
    CHECK_EQ_INT(n.keys[3].idx, 2);
    CHECK_EQ_INT(parent_of(&n, 1), 3);
    CHECK_EQ_INT(parent_of(&n, 2), 0);
    CHECK_EQ_INT(n.parent[3], 0);
    CHECK_EQ_INT(n.parent[0], 0);

    /* 64 slices on 4 tracks, each track a chain nested 16 deep. */
    for (uint32_t i = 0; i < 64; i++)
        b[i] = sl(i % 4, (int64_t)(i / 4), 1000 - 2 * (int64_t)(i / 4));
    CHECK_EQ_INT(hm_nesting_compute(&n, b, 64, 4), 0);
    for (uint32_t i = 0; i < 64; i++) {
        CHECK_EQ_INT(n.depth[i], i / 4);
        CHECK_EQ_INT(parent_of(&n, i), i < 4 ? -1 : (int)i - 4);
        CHECK_EQ_INT(n.pos[i], (i % 4) * 16 + i / 4);
    }
    hm_nesting_free(&n);
}

/* Times near INT64_MAX wrap instead of overflowing (corrupt input). */
static void test_wrap(void)
{
    struct hm_nesting n = {0};
    struct hm_slice s[] = {sl(0, INT64_MAX - 1, 10), sl(0, 0, 0)};

    CHECK_EQ_INT(hm_nesting_compute(&n, s, 2, 1), 0);
    CHECK_EQ_INT(n.keys[0].idx, 1);
    hm_nesting_free(&n);
    CHECK_EQ_INT(hm_nesting_compute(&n, s, 0, 0), 0);
    hm_nesting_free(&n);
}

int main(void)
{
    test_one_track();
    test_edges();
    test_tracks_and_reuse();
    test_wrap();
    return hm_test_done();
}
