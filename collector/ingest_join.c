/* The batch rank 0 would read back for a rank of several files
 * (ingest_join.h). Each rule below mirrors one step of reading back
 * (store/readback.c) and of merger/rank_files.c's reanalyse; the parallel
 * ingest's tests compare the two databases row for row. */
#include "ingest_join.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "store/slice_nesting.h"

#define RECORDING_COUNTER "htamerge/cupti recording"

static int cmp_step(const void *a, const void *b)
{
    int64_t x = ((const struct hm_step *)a)->number, y = ((const struct hm_step *)b)->number;
    return x < y ? -1 : x > y;
}

static int64_t base_of(const struct hm_batch *b)
{
    return b->info.base_time_ns != HM_NONE ? b->info.base_time_ns : 0;
}

/* 1 when the files can be joined here (see the header), else 0. */
static int joinable(struct hm_batch *const *bs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct hm_batch *b = bs[i];
        if (b->steps.n == 0)
            return 0;
        for (size_t k = 0; k < b->steps.n; k++)
            if (b->steps.v[k].source != HM_STEP_PROFILER)
                return 0;
        for (size_t k = 0; k < b->counters.n; k++)
            if (!strcmp(hm_batch_str(b, b->counters.v[k].name), RECORDING_COUNTER))
                return 0;
    }
    return 1;
}

/* Reading back moves the times back to the files' own clock when they
 * are fractional and share a base time (rank_files.c, raw_shift): by the
 * stored minus the raw first start, which is the base (plus the clock
 * guess, which never cancels a real base). Returns 1 for that case, 0 for
 * aligned times, -1 when the shift could be 0 (no base): not joined here. */
static int on_file_clock(struct hm_batch *const *bs, size_t n)
{
    int frac = 0, same = 1;
    size_t slices = 0;

    for (size_t i = 0; i < n; i++) {
        frac |= (bs[i]->info.flags & HM_INFO_F_FRACTIONAL_TS) != 0;
        same &= bs[i]->info.base_time_ns == bs[0]->info.base_time_ns;
        slices += bs[i]->slices.n;
    }
    if (!frac || !same || slices == 0)
        return 0;
    return base_of(bs[0]) != 0 ? 1 : -1;
}

static const char *text(const struct hm_batch *b, hm_strid id, size_t *len)
{
    return hm_strtab_get(b->strings, id, len);
}

/* Appends one file's slices in storage order (nest) and its steps; first:
 * the joined slices before this file's. */
static int add_file(struct hm_batch *j, const struct hm_batch *b, const struct hm_nesting *nest,
                    int64_t shift)
{
    size_t first = j->slices.n, len;

    for (size_t k = 0; k < b->slices.n; k++) {
        const struct hm_slice *s = &b->slices.v[nest->keys[k].idx];
        const struct hm_track *t = &b->tracks.v[s->track];
        int64_t track = hm_batch_track(j, t->kind == HM_TRACK_GPU_STREAM ? HM_TRACK_GPU_STREAM : HM_TRACK_CPU_THREAD,
                                       t->pid, t->tid);
        struct hm_slice *o = HM_VEC_PUSH(j->slices);
        const char *str;
        if (track < 0 || !o)
            return HM_ENOMEM;
        memset(o, 0, sizeof *o);
        o->ts = hm_add_wrap(s->ts, shift);
        o->dur = s->dur;
        str = text(b, s->name, &len);
        o->name = s->name && len ? hm_batch_intern(j, str, len) : 0;
        o->cat = s->cat < HM_CAT__COUNT ? s->cat : HM_CAT_OTHER;
        o->correlation = s->correlation;
        o->external_id = s->external_id;
        o->bytes = s->bytes;
        o->flags = s->flags;
        o->track = (uint32_t)track;
        o->iteration = HM_NONE;
        str = text(b, s->args, &len);
        if (o->cat == HM_CAT_NVTX && s->args && len) /* reading back keeps NVTX args only */
            o->args = hm_batch_intern(j, str, len);
        if (o->name == UINT32_MAX || o->args == UINT32_MAX)
            return HM_ENOMEM;
    }
    for (size_t k = 0; k < b->steps.n; k++) {
        const struct hm_step *s = &b->steps.v[k];
        struct hm_step *o = HM_VEC_PUSH(j->steps);
        if (!o)
            return HM_ENOMEM;
        *o = (struct hm_step){.number = s->number, .ts = hm_add_wrap(s->ts, shift), .dur = s->dur,
                              .slice = s->slice < b->slices.n ? (uint32_t)(first + nest->pos[s->slice])
                                                              : HM_STEP_NO_SLICE,
                              .source = s->source};
    }
    return 0;
}

int col_ingest_join(struct hm_batch *const *bs, size_t n, struct hm_batch **out)
{
    struct hm_nesting nest;
    struct hm_batch *j;
    int clock = on_file_clock(bs, n), rc = 0;
    uint32_t flags = 0;

    *out = NULL;
    if (n < 2 || clock < 0 || !joinable(bs, n))
        return 0;
    if (!(j = hm_batch_new()))
        return HM_ENOMEM;
    memset(&nest, 0, sizeof nest);
    for (size_t i = 0; i < n && rc == 0; i++) {
        flags |= bs[i]->info.flags;
        rc = hm_nesting_compute(&nest, bs[i]->slices.v, bs[i]->slices.n, bs[i]->tracks.n);
        if (rc == 0) /* aligned: each file's base; on the files' clock: as parsed */
            rc = add_file(j, bs[i], &nest, clock ? 0 : base_of(bs[i]));
    }
    hm_nesting_free(&nest);
    if (rc) {
        hm_batch_free(j);
        return HM_ENOMEM;
    }
    qsort(j->steps.v, j->steps.n, sizeof *j->steps.v, cmp_step); /* read back by number */
    j->info.rank = bs[0]->info.rank;
    j->info.flags = (flags & ~HM_INFO_F_FRACTIONAL_TS) | (clock ? HM_INFO_F_FRACTIONAL_TS : 0);
    *out = j;
    return 1;
}
