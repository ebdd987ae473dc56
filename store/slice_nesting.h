/* Slice nesting: the storage order of one batch's slices and each slice's
 * depth and parent, from start times and durations alone. Pure (no SQLite,
 * no writer state), so it is tested on its own (tests/unit/store/
 * test_slice_nesting.c), like Perfetto's SliceTracker. The writer
 * (store/rows.c) stores slices in this order and turns parent positions
 * into slices.id. */
#ifndef HM_STORE_SLICE_NESTING_H
#define HM_STORE_SLICE_NESTING_H

#include <stddef.h>
#include <stdint.h>

#include "common/record.h"

/* Adds without signed-overflow UB: corrupt input must not crash the writer. */
static inline int64_t hm_add_wrap(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

struct hm_nest_key {
    int64_t ts, end;
    uint32_t idx;            /* the slice's index in the input */
};

/* Results of hm_nesting_compute (valid until the next call) and its
 * scratch, reused across calls. Zero-initialise; hm_nesting_free. */
struct hm_nesting {
    struct hm_nest_key *keys; /* storage order: by track, start, longer first, input order */
    uint32_t *depth;         /* by input index: 0 = top level */
    uint32_t *parent;        /* by input index: the parent's keys position + 1, 0 = none */
    uint32_t *pos;           /* by input index: its keys position */
    uint32_t *stack;         /* keys positions of the open slices */
    size_t keys_cap;
    size_t *seg;             /* per track: end of its segment in keys */
    size_t seg_cap;
};

/* Orders slices[0..n) (whose track fields are < ntracks; n < UINT32_MAX)
 * and nests them per track. Returns 0 or HM_ENOMEM. */
int hm_nesting_compute(struct hm_nesting *nest, const struct hm_slice *slices, size_t n,
                       size_t ntracks);

void hm_nesting_free(struct hm_nesting *nest);

#endif
