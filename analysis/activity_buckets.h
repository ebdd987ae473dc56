/* A rank's activity in equal time buckets: the level-of-detail summary
 * that whole-run and coarse views draw (the viewer's heat map and its
 * collapsed rank rows), so that they need not read slices. One byte per
 * bucket holds the covered share of it, 0..255. Written when a run or an
 * ingest finishes (table rank_activity, analysis/cross_rank/rank_activity.c),
 * and computed the same way from slices for a file without it
 * (query/heatmap.c). */
#ifndef HM_ANALYSIS_ACTIVITY_BUCKETS_H
#define HM_ANALYSIS_ACTIVITY_BUCKETS_H

#include <stddef.h>
#include <stdint.h>

/* Buckets per rank: at 1,024 ranks two bytes each make 8 MiB, and 4,096
 * columns are finer than any whole-run view is drawn. */
#define AN_ACTIVITY_BUCKETS 4096

struct an_interval {
    int64_t a, b;   /* [a, b), ns */
};

/* A growing list of intervals (the HM_VEC layout). */
struct an_intervals {
    struct an_interval *v;   /* owned */
    size_t n, cap;
};

/* Appends [a, b) unless empty; 0, or -1 when out of memory. */
int an_intervals_push(struct an_intervals *l, int64_t a, int64_t b);

/* The bucket width that fits [lo, hi) into AN_ACTIVITY_BUCKETS (>= 1 ns). */
int64_t an_activity_bucket_ns(int64_t lo, int64_t hi);

/* Sets out[0..n) to the share of each bucket [origin + k w, origin + (k+1) w)
 * that the union of v covers, rounded to 0..255. Sorts v in place. */
void an_activity_cover(uint8_t *out, int n, int64_t origin, int64_t w, struct an_interval *v, size_t nv);

#endif
