/* Period of an event stream and where its steps start (step_infer.h). */
#include "step_infer.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"

#define HASH_BASE 0x9e3779b97f4a7c15ull

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

struct occ {
    uint64_t sym;
    size_t pos;
};

struct blk {
    uint64_t hash;
    size_t len, pos;
};

static int cmp_occ(const void *a, const void *b)
{
    const struct occ *x = a, *y = b;
    if (x->sym != y->sym)
        return x->sym < y->sym ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int cmp_blk(const void *a, const void *b)
{
    const struct blk *x = a, *y = b;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    if (x->hash != y->hash)
        return x->hash < y->hash ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

struct hashes {
    uint64_t *pre, *pw; /* prefix hashes and powers of the base, n + 1 each */
};

/* Hash of sym[a..b). */
static uint64_t range_hash(const struct hashes *h, size_t a, size_t b)
{
    return h->pre[b] - h->pre[a] * h->pw[b - a];
}

struct best {
    size_t len, support, first; /* first: start of the first repeated block */
    uint64_t hash;
    size_t cover;
    uint64_t sym;
    int found;
};

/* Scores the anchor whose occurrences are o[0..c). */
static void score_anchor(const struct hashes *h, const struct occ *o, size_t c, size_t n, struct blk *tmp,
                         struct best *bst)
{
    size_t k = 0, i, j;

    for (i = 0; i < c; i++) {
        size_t a = o[i].pos, e = i + 1 < c ? o[i + 1].pos : n;
        tmp[k++] = (struct blk){range_hash(h, a, e), e - a, a};
    }
    qsort(tmp, k, sizeof *tmp, cmp_blk);
    for (i = 0; i < k; i = j) {
        size_t cover;
        for (j = i; j < k && tmp[j].len == tmp[i].len && tmp[j].hash == tmp[i].hash; j++)
            ;
        if (j - i < 2)
            continue;
        cover = (j - i) * tmp[i].len;
        /* tmp[i].pos is the earliest block of the group (sorted by pos last). */
        if (!bst->found || cover > bst->cover || (cover == bst->cover && tmp[i].pos < bst->first)) {
            *bst = (struct best){tmp[i].len, j - i, tmp[i].pos, tmp[i].hash, cover, o[0].sym, 1};
        }
    }
}

/* The rotation r in [0, len) of the cut within the block. */
static size_t pick_rotation(const struct hashes *h, const struct best *bst, const size_t *anch, size_t na,
                            const int64_t *ts, const int64_t *end, size_t n)
{
    size_t best_r = 0, best_first = SIZE_MAX;
    int64_t best_gap = INT64_MIN;

    for (size_t r = 0; r < bst->len; r++) {
        int64_t gap = 0;
        size_t first = bst->first + r;
        /* The block ending at the rotated first cut is a step too when it
         * equals the rotated block. */
        if (r > 0 && first >= bst->len && first + bst->len <= n &&
            range_hash(h, first - bst->len, first) == range_hash(h, first, first + bst->len))
            first -= bst->len;
        if (ts && end) {
            for (size_t i = 0; i < na; i++) {
                size_t p = anch[i] + r;
                if (p > 0 && p < n)
                    gap += ts[p] - end[p - 1] > 0 ? ts[p] - end[p - 1] : 0;
            }
        }
        if (gap > best_gap || (gap == best_gap && first < best_first)) {
            best_gap = gap;
            best_first = first;
            best_r = r;
        }
    }
    return best_r;
}

int an_infer_period(const uint64_t *sym, const int64_t *ts, const int64_t *end, size_t n,
                    struct an_period *out)
{
    struct hashes h = {0};
    struct occ *o = NULL;
    struct blk *tmp = NULL;
    size_t *anch = NULL, na = 0;
    struct best bst = {0};
    int rc = HM_ENOMEM;

    memset(out, 0, sizeof *out);
    if (n < 2)
        return 0;
    h.pre = malloc((n + 1) * sizeof *h.pre);
    h.pw = malloc((n + 1) * sizeof *h.pw);
    o = malloc(n * sizeof *o);
    tmp = malloc(n * sizeof *tmp);
    anch = malloc(n * sizeof *anch);
    if (!h.pre || !h.pw || !o || !tmp || !anch)
        goto out;
    h.pre[0] = 0;
    h.pw[0] = 1;
    for (size_t i = 0; i < n; i++) {
        h.pre[i + 1] = h.pre[i] * HASH_BASE + mix(sym[i]);
        h.pw[i + 1] = h.pw[i] * HASH_BASE;
        o[i] = (struct occ){sym[i], i};
    }
    qsort(o, n, sizeof *o, cmp_occ);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i; j < n && o[j].sym == o[i].sym; j++)
            ;
        if (j - i >= 2)
            score_anchor(&h, o + i, j - i, n, tmp, &bst);
    }
    rc = 0;
    if (!bst.found || 2 * bst.cover < n - bst.first)
        goto out;
    /* The anchor's occurrences from the first repeated block on, less those
     * closer than half a block to the previous one (noise). */
    for (size_t i = 0; i < n; i++) {
        if (o[i].sym != bst.sym || o[i].pos < bst.first)
            continue;
        if (na && 2 * (o[i].pos - anch[na - 1]) < bst.len)
            continue;
        anch[na++] = o[i].pos;
    }
    {
        size_t r = pick_rotation(&h, &bst, anch, na, ts, end, n), k = 0;
        out->cuts = malloc((na + 1) * sizeof *out->cuts);
        if (!out->cuts) {
            rc = HM_ENOMEM;
            goto out;
        }
        if (r > 0 && bst.first + r >= bst.len && bst.first + r + bst.len <= n &&
            range_hash(&h, bst.first + r - bst.len, bst.first + r) ==
                range_hash(&h, bst.first + r, bst.first + r + bst.len))
            out->cuts[k++] = bst.first + r - bst.len;
        for (size_t i = 0; i < na; i++)
            if (anch[i] + r < n)
                out->cuts[k++] = anch[i] + r;
        out->ncuts = k;
        out->block = bst.len;
        out->support = bst.support;
        if (k < 2)
            an_period_free(out);
    }
out:
    free(h.pre);
    free(h.pw);
    free(o);
    free(tmp);
    free(anch);
    return rc;
}

void an_period_free(struct an_period *p)
{
    free(p->cuts);
    memset(p, 0, sizeof *p);
}
