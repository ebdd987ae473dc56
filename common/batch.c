/* Batch container: allocation, track lookup and accounting. */
#include "batch.h"

#include <stdlib.h>
#include <string.h>

struct hm_batch *hm_batch_new(void)
{
    struct hm_batch *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->strings = hm_strtab_new();
    if (!b->strings) {
        free(b);
        return NULL;
    }
    b->info.rank = HM_NONE;
    b->info.world_size = HM_NONE;
    b->info.base_time_ns = HM_NONE;
    b->info.pid = HM_NONE;
    return b;
}

void hm_batch_free(struct hm_batch *b)
{
    if (!b)
        return;
    hm_strtab_free(b->strings);
    HM_VEC_FREE(b->tracks);
    HM_VEC_FREE(b->slices);
    HM_VEC_FREE(b->collectives);
    HM_VEC_FREE(b->counters);
    HM_VEC_FREE(b->steps);
    free(b);
}

int64_t hm_batch_track(struct hm_batch *b, uint32_t kind, int64_t pid, int64_t tid)
{
    struct hm_track *t;

    for (size_t i = 0; i < b->tracks.n; i++) {
        t = &b->tracks.v[i];
        if (t->kind == kind && t->pid == pid && t->tid == tid)
            return (int64_t)i;
    }
    t = HM_VEC_PUSH(b->tracks);
    if (!t)
        return -1;
    t->kind = kind;
    t->pid = pid;
    t->tid = tid;
    return (int64_t)(b->tracks.n - 1);
}

hm_strid hm_batch_intern(struct hm_batch *b, const char *s, size_t len)
{
    return hm_strtab_intern(b->strings, s, len);
}

const char *hm_batch_str(const struct hm_batch *b, hm_strid id)
{
    return hm_strtab_get(b->strings, id, NULL);
}

size_t hm_batch_bytes(const struct hm_batch *b)
{
    return sizeof *b + hm_strtab_bytes(b->strings) +
           b->tracks.cap * sizeof *b->tracks.v + b->slices.cap * sizeof *b->slices.v +
           b->collectives.cap * sizeof *b->collectives.v +
           b->counters.cap * sizeof *b->counters.v + b->steps.cap * sizeof *b->steps.v;
}
