/* Building batches by hand in unit tests: an interned string, and a slice
 * with the fields the analyses read (the rest HM_NONE). */
#ifndef HM_TEST_BATCH_BUILD_H
#define HM_TEST_BATCH_BUILD_H

#include <string.h>

#include "common/batch.h"

static inline hm_strid tb_str(struct hm_batch *b, const char *s)
{
    return hm_batch_intern(b, s, strlen(s));
}

static inline struct hm_slice *tb_slice(struct hm_batch *b, uint32_t track, const char *name, enum hm_cat cat,
                                        int64_t ts, int64_t dur, int64_t corr, uint16_t flags)
{
    struct hm_slice *s = HM_VEC_PUSH(b->slices);
    s->ts = ts;
    s->dur = dur;
    s->track = track;
    s->name = tb_str(b, name);
    s->cat = (uint16_t)cat;
    s->cat_name = tb_str(b, hm_cat_name(cat));
    s->correlation = corr;
    s->external_id = s->bytes = HM_NONE;
    s->iteration = HM_NONE;
    s->flags = flags;
    return s;
}

#endif
