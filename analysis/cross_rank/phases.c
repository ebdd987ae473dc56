/* A rank's phase annotations (phases.h). */
#include "phases.h"

#include <stdlib.h>

static int cmp_phase(const void *pa, const void *pb)
{
    const struct xr_phase *a = pa, *b = pb;
    return a->ts < b->ts ? -1 : a->ts > b->ts;
}

int xr_phases_of(struct xr_ctx *x, const struct xr_rank *k, struct xr_phases *p)
{
    p->n = 0;
    p->v = malloc((k->annots.n ? k->annots.n : 1) * sizeof *p->v);
    if (!p->v)
        return HM_ENOMEM;
    for (size_t i = 0; i < k->annots.n; i++) {
        unsigned f = xr_str_aflags(x, k->annots.v[i].name);
        int kind = f & XR_A_FWD ? XR_PH_FWD : f & XR_A_BWD ? XR_PH_BWD : f & XR_A_OPT ? XR_PH_OPT : -1;
        if (kind >= 0 && k->annots.v[i].end > k->annots.v[i].ts)
            p->v[p->n++] = (struct xr_phase){k->annots.v[i].ts, k->annots.v[i].end, 0, kind};
    }
    xr_sort(p->v, p->n, sizeof *p->v, cmp_phase);
    for (size_t i = 0; i < p->n; i++)
        p->v[i].max_end = i && p->v[i - 1].max_end > p->v[i].end ? p->v[i - 1].max_end : p->v[i].end;
    return 0;
}

void xr_phases_free(struct xr_phases *p)
{
    free(p->v);
    p->v = NULL;
    p->n = 0;
}

int xr_phase_at(const struct xr_phases *p, int64_t t)
{
    int64_t start;

    return xr_phase_find(p, t, &start);
}

int xr_phase_find(const struct xr_phases *p, int64_t t, int64_t *start)
{
    size_t lo = 0, hi = p->n;

    while (lo < hi) {   /* first phase starting after t */
        size_t m = (lo + hi) / 2;
        if (p->v[m].ts <= t)
            lo = m + 1;
        else
            hi = m;
    }
    *start = INT64_MIN;
    for (size_t i = lo; i > 0 && p->v[i - 1].max_end > t; i--)
        if (p->v[i - 1].end > t) {
            *start = p->v[i - 1].ts;
            return p->v[i - 1].kind;
        }
    return XR_PH_OTHER;
}

const char *xr_phase_name(int kind)
{
    static const char *const names[] = {[XR_PH_FWD] = "forward", [XR_PH_BWD] = "backward",
                                        [XR_PH_OPT] = "optimizer", [XR_PH_OTHER] = "other"};
    return kind >= XR_PH_FWD && kind <= XR_PH_OTHER ? names[kind] : "other";
}
