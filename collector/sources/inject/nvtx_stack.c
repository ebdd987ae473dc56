/* NVTX range bookkeeping, free of NVTX types so it can be tested alone:
 * per-thread push/pop stacks (pops of a domain take that domain's innermost
 * range) and the table of ranges opened by nvtxRangeStart, which any thread
 * may end. Emitting records is nvtx.c's job. */
#include <string.h>

#include "inject_int.h"

int inj_nvtx_push(struct inj_nvtx_stack *s, const struct inj_nvtx_frame *f)
{
    if (s->depth < INJ_NVTX_DEPTH && !s->hidden) {
        s->f[s->depth] = *f;
        return (int)s->depth++;
    }
    s->hidden++;
    return (int)(s->depth + s->hidden - 1);
}

int inj_nvtx_pop(struct inj_nvtx_stack *s, uint32_t domain, int any, struct inj_nvtx_frame *f,
                 uint32_t *depth)
{
    if (s->hidden) {
        s->hidden--;
        return 0;
    }
    for (uint32_t i = s->depth; i-- > 0;) {
        if (!any && s->f[i].domain != domain)
            continue;
        *f = s->f[i];
        *depth = i;
        memmove(&s->f[i], &s->f[i + 1], (s->depth - i - 1) * sizeof s->f[0]);
        s->depth--;
        return 1;
    }
    return 0;
}

uint64_t inj_nvtx_start(struct inj_nvtx *n, const struct inj_nvtx_frame *f, int64_t tid)
{
    uint64_t id = atomic_fetch_add_explicit(&n->next_range, 1, memory_order_relaxed) + 1;
    struct inj_nvtx_open *o = &n->open[id % INJ_NVTX_OPEN];
    uint64_t free_ = 0;

    if (!atomic_compare_exchange_strong(&o->id, &free_, UINT64_MAX)) {
        atomic_fetch_add_explicit(&n->lost, 1, memory_order_relaxed);
        return id;
    }
    o->f = *f;
    o->tid = tid;
    atomic_store_explicit(&o->id, id, memory_order_release);
    return id;
}

int inj_nvtx_end(struct inj_nvtx *n, uint64_t id, struct inj_nvtx_frame *f, int64_t *tid)
{
    struct inj_nvtx_open *o = &n->open[id % INJ_NVTX_OPEN];
    uint64_t want = id;

    if (!id || atomic_load_explicit(&o->id, memory_order_acquire) != id)
        return 0;
    *f = o->f;
    *tid = o->tid;
    /* Only the thread whose CAS wins owns the range (two ends of one id). */
    return atomic_compare_exchange_strong(&o->id, &want, 0) ? 1 : 0;
}
