/* The collectives' exported slices of a sharded export (export_ends.h):
 * an array, sorted once by (rank, ord) and then searched. */
#include "export_ends.h"

#include <stdbool.h>
#include <stdlib.h>

#include "common/err.h"
#include "common/vec.h"

struct qry_export_ends {
    HM_VEC(struct qry_export_end) v;
    bool sorted;
};

struct qry_export_ends *qry_export_ends_new(void)
{
    return calloc(1, sizeof(struct qry_export_ends));
}

void qry_export_ends_free(struct qry_export_ends *e)
{
    if (!e)
        return;
    HM_VEC_FREE(e->v);
    free(e);
}

int qry_export_ends_add(struct qry_export_ends *e, const struct qry_export_end *end)
{
    struct qry_export_end *slot = HM_VEC_PUSH(e->v);

    if (!slot)
        return HM_ENOMEM;
    *slot = *end;
    e->sorted = false;
    return 0;
}

static int cmp_key(int rank, int64_t ord, const struct qry_export_end *b)
{
    if (rank != b->rank)
        return rank < b->rank ? -1 : 1;
    return ord < b->ord ? -1 : ord > b->ord;
}

static int cmp_end(const void *pa, const void *pb)
{
    const struct qry_export_end *a = pa;
    return cmp_key(a->rank, a->ord, pb);
}

const struct qry_export_end *qry_export_ends_find(struct qry_export_ends *e, int rank, int64_t ord)
{
    size_t lo = 0, hi = e->v.n;

    if (!e->sorted && e->v.n > 1)
        qsort(e->v.v, e->v.n, sizeof *e->v.v, cmp_end);
    e->sorted = true;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_key(rank, ord, &e->v.v[mid]);
        if (c == 0)
            return &e->v.v[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}
