/* Slice nesting (API in slice_nesting.h): a stable counting sort groups a
 * batch's slices by track, each track is sorted by time and walked with a
 * stack of open slices. Kept apart from the writer so that the rule for
 * what nests in what can be tested without a database. */
#include "store/slice_nesting.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/vec.h"

/* Order within a track: start ascending, then longer first (a parent
 * precedes the children that start with it), then input order. */
static int key_cmp(const void *pa, const void *pb)
{
    const struct hm_nest_key *a = pa, *b = pb;

    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    if (a->end != b->end)
        return a->end > b->end ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Sorts keys[lo, hi) unless already sorted (the common case for sources
 * that emit in time order). */
static void sort_segment(struct hm_nest_key *k, size_t lo, size_t hi)
{
    for (size_t i = lo + 1; i < hi; i++) {
        if (key_cmp(&k[i - 1], &k[i]) > 0) {
            qsort(k + lo, hi - lo, sizeof *k, key_cmp);
            return;
        }
    }
}

/* Assigns depth and parent along one track's sorted keys: a slice nests in
 * the top open one when it starts before the top ends and ends no later
 * (so zero-length slices never have children). */
static void nest_segment(struct hm_nesting *sc, size_t lo, size_t hi)
{
    uint32_t sp = 0;

    for (size_t k = lo; k < hi; k++) {
        const struct hm_nest_key *x = &sc->keys[k];
        while (sp) {
            const struct hm_nest_key *top = &sc->keys[sc->stack[sp - 1]];
            if (x->ts < top->end && x->end <= top->end)
                break;
            sp--;
        }
        sc->depth[x->idx] = sp;
        sc->parent[x->idx] = sp ? sc->stack[sp - 1] + 1 : 0;
        sc->pos[x->idx] = (uint32_t)k;
        sc->stack[sp++] = (uint32_t)k;
    }
}

static int nest_alloc(struct hm_nesting *sc, size_t n, size_t ntracks)
{
    struct hm_nest_key *k;
    uint32_t **u32[] = {&sc->depth, &sc->parent, &sc->pos, &sc->stack};

    if (hm_vec_reserve((void **)&sc->seg, &sc->seg_cap, ntracks + 1, sizeof *sc->seg))
        return HM_ENOMEM;
    if (n <= sc->keys_cap)
        return 0;
    k = realloc(sc->keys, n * sizeof *k);
    if (!k)
        return HM_ENOMEM;
    sc->keys = k;
    for (size_t i = 0; i < sizeof u32 / sizeof *u32; i++) {
        uint32_t *p = realloc(*u32[i], n * sizeof *p);
        if (!p)
            return HM_ENOMEM;
        *u32[i] = p;
    }
    sc->keys_cap = n;
    return 0;
}

/* The storage order groups a track's slices of one batch in time order:
 * building the (track, ts) index takes half the time, and a timeline
 * window reads neighbouring pages. */
int hm_nesting_compute(struct hm_nesting *sc, const struct hm_slice *slices, size_t n,
                       size_t nt)
{
    if (nest_alloc(sc, n, nt))
        return HM_ENOMEM;
    memset(sc->seg, 0, (nt + 1) * sizeof *sc->seg);
    for (size_t i = 0; i < n; i++)
        sc->seg[slices[i].track + 1]++;
    for (size_t t = 0; t < nt; t++)
        sc->seg[t + 1] += sc->seg[t];
    for (size_t i = 0; i < n; i++) {
        const struct hm_slice *s = &slices[i];
        sc->keys[sc->seg[s->track]++] =
            (struct hm_nest_key){s->ts, hm_add_wrap(s->ts, s->dur), (uint32_t)i};
    }
    /* seg[t] is now the end of track t's segment. */
    for (size_t t = 0, lo = 0; t < nt; lo = sc->seg[t++]) {
        sort_segment(sc->keys, lo, sc->seg[t]);
        nest_segment(sc, lo, sc->seg[t]);
    }
    return 0;
}

void hm_nesting_free(struct hm_nesting *sc)
{
    free(sc->keys);
    free(sc->depth);
    free(sc->parent);
    free(sc->pos);
    free(sc->stack);
    free(sc->seg);
    memset(sc, 0, sizeof *sc);
}
