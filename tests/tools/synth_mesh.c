/* The process groups of the allreduces (synth.h, syn_group_of). */
#include "synth.h"

void syn_group_of(const struct syn_cfg *c, int rank, int bucket, struct syn_group *g)
{
    if (c->tp < 2) {
        *g = (struct syn_group){0, "default_pg", 0, 1, c->world};
    } else if (bucket == 0) {
        int tg = rank / c->tp;
        *g = (struct syn_group){1 + tg, "mesh_tp", tg * c->tp, 1, c->tp};
    } else {
        int dg = rank % c->tp;
        *g = (struct syn_group){1 + c->world / c->tp + dg, "mesh_dp", dg, c->tp, c->world / c->tp};
    }
}
