/* Tests of the collectives' exported slices a sharded export's parts hand
 * to its last part (query/export_ends.c): parts add in their shards'
 * order, not the ranks', and a part may add after a look-up. */
#include "test.h"

#include "query/export_ends.h"

static void add(struct qry_export_ends *e, int rank, int64_t ord, int64_t slice)
{
    struct qry_export_end x = {rank, ord, 100 + rank, 1000 + rank, slice, slice * 10};
    CHECK_EQ_INT(qry_export_ends_add(e, &x), 0);
}

int main(void)
{
    struct qry_export_ends *e = qry_export_ends_new();
    const struct qry_export_end *f;

    CHECK(e != NULL);
    CHECK(qry_export_ends_find(e, 0, 0) == NULL);   /* empty */
    /* shard b (ranks 2, 3), then shard a (ranks 0, 5): the ranks out of order */
    for (int64_t k = 0; k < 50; k++)
        add(e, 3, k, 300 + k), add(e, 2, k, 200 + k);
    add(e, 5, 0, 500);
    add(e, 0, 1, 1);
    add(e, 0, 0, 0);
    f = qry_export_ends_find(e, 3, 49);
    CHECK(f && f->slice == 349 && f->pid == 103 && f->tid == 1003 && f->ts == 3490);
    f = qry_export_ends_find(e, 0, 0);
    CHECK(f && f->slice == 0);
    CHECK(qry_export_ends_find(e, 2, 50) == NULL);   /* not exported */
    CHECK(qry_export_ends_find(e, 4, 0) == NULL);    /* a rank not exported */
    /* a later part's: found after the earlier look-ups */
    add(e, 1, 7, 107);
    f = qry_export_ends_find(e, 1, 7);
    CHECK(f && f->slice == 107 && f->rank == 1 && f->ord == 7);
    f = qry_export_ends_find(e, 5, 0);
    CHECK(f && f->slice == 500);
    qry_export_ends_free(e);
    qry_export_ends_free(NULL);
    return hm_test_done();
}
