/* The per-rank analyses' results through bytes (analysis/hta_codec.h), as a
 * reader of `mpirun ... htamerge ingest` sends them to rank 0: every field
 * back exactly (a NaN overlap too), and a cut or altered message refused
 * without reading outside it. */
#include "test.h"

#include <math.h>
#include <stdlib.h>

#include "analysis/hta.h"
#include "analysis/hta_codec.h"
#include "collector/sources/kineto_json/kineto_json.h"

static int analyse(const char *rel, struct an_rank_result res[2])
{
    struct src_kineto_opts o = {.keep_args = 0};
    struct an_options modes[2] = {{.all_steps = 0}, {.all_steps = 1}};
    struct hm_batch *b = NULL;
    struct hm_err err;
    int rc;

    hm_err_clear(&err);
    rc = src_kineto_read(hm_fixture(rel), &o, &b, &err);
    if (rc == 0)
        rc = an_hta_run_modes(b, modes, 2, res, &err);
    hm_batch_free(b);
    return rc;
}

static int same_f64(double a, double b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

static void check_same(const struct an_rank_result *a, const struct an_rank_result *b)
{
    CHECK_EQ_INT(b->rank, a->rank);
    CHECK_EQ_INT(b->has_gpu, a->has_gpu);
    CHECK(memcmp(&b->temporal, &a->temporal, sizeof a->temporal) == 0);
    CHECK_EQ_INT(b->overlap.comm_us, a->overlap.comm_us);
    CHECK_EQ_INT(b->overlap.overlap_us, a->overlap.overlap_us);
    CHECK(same_f64(b->overlap.overlap_pct, a->overlap.overlap_pct));
    CHECK(memcmp(b->kclass_us, a->kclass_us, sizeof a->kclass_us) == 0);
    CHECK_EQ_INT(b->comp_overlap_comm_us, a->comp_overlap_comm_us);
    CHECK(memcmp(b->label_us, a->label_us, sizeof a->label_us) == 0);
    CHECK_EQ_INT(b->idle.n, a->idle.n);
    for (size_t i = 0; i < a->idle.n && i < b->idle.n; i++)
        CHECK(memcmp(&b->idle.v[i], &a->idle.v[i], sizeof a->idle.v[i]) == 0);
    CHECK_EQ_INT(b->kernels.n, a->kernels.n);
    for (size_t i = 0; i < a->kernels.n && i < b->kernels.n; i++) {
        const struct an_kernel *x = &a->kernels.v[i], *y = &b->kernels.v[i];
        CHECK_STR(y->name, x->name);
        CHECK(y->kclass == x->kclass && y->count == x->count && y->sum_us == x->sum_us &&
              y->min_us == x->min_us && y->max_us == x->max_us);
        CHECK(same_f64(y->mean_us, x->mean_us) && same_f64(y->std_us, x->std_us));
    }
    CHECK_EQ_INT(b->steps.n, a->steps.n);
    for (size_t i = 0; i < a->steps.n && i < b->steps.n; i++) {
        const struct an_step *x = &a->steps.v[i], *y = &b->steps.v[i];
        CHECK(y->number == x->number && y->ts_ns == x->ts_ns && y->dur_ns == x->dur_ns &&
              y->gpu_busy_us == x->gpu_busy_us && y->kernel_count == x->kernel_count &&
              y->dropped == x->dropped && y->source == x->source);
    }
}

/* A real rank's results (GPU, kernels, idle streams, steps) come back whole. */
static void round_trip(const char *rel)
{
    struct an_rank_result res[2], back[2];
    uint8_t *buf = NULL;
    size_t len = 0;
    struct hm_err err;

    hm_err_clear(&err);
    CHECK_EQ_INT(analyse(rel, res), 0);
    res[0].rank = res[1].rank = 7;
    CHECK_EQ_INT(an_results_encode(res, 2, &buf, &len), 0);
    CHECK_EQ_INT(an_results_decode(buf, len, back, 2, &err), 0);
    check_same(&res[0], &back[0]);
    check_same(&res[1], &back[1]);
    CHECK(res[0].kernels.n > 0 || !res[0].has_gpu);
    for (int i = 0; i < 2; i++) {
        an_rank_result_clear(&res[i]);
        an_rank_result_clear(&back[i]);
    }
    free(buf);
}

/* No GPU: overlap_pct is NaN, the vectors empty. */
static void empty_result(void)
{
    struct an_rank_result r = {.rank = 3, .overlap = {.overlap_pct = NAN}}, back;
    uint8_t *buf = NULL;
    size_t len = 0;
    struct hm_err err;

    hm_err_clear(&err);
    CHECK_EQ_INT(an_results_encode(&r, 1, &buf, &len), 0);
    CHECK_EQ_INT(an_results_decode(buf, len, &back, 1, &err), 0);
    check_same(&r, &back);
    an_rank_result_clear(&back);
    free(buf);
}

/* Every cut of a message, a wrong count, a huge vector count and trailing
 * bytes are errors, and leave nothing to free (ASan checks both). */
static void broken(void)
{
    struct an_rank_result res[2], back[2];
    uint8_t *buf = NULL, *cut;
    size_t len = 0;
    struct hm_err err;

    CHECK_EQ_INT(analyse("hta/trace_filter/sampled_rank-0.json.gz", res), 0);
    CHECK_EQ_INT(an_results_encode(res, 2, &buf, &len), 0);
    for (size_t n = 0; n < len; n += n < 64 ? 1 : 97) {
        cut = malloc(n ? n : 1);
        memcpy(cut, buf, n);
        hm_err_clear(&err);
        CHECK_EQ_INT(an_results_decode(cut, n, back, 2, &err), HM_EFORMAT);
        free(cut);
    }
    hm_err_clear(&err);
    CHECK_EQ_INT(an_results_decode(buf, len, back, 1, &err), HM_EFORMAT);   /* 2 sent, 1 expected */
    cut = malloc(len + 1);
    memcpy(cut, buf, len);
    cut[len] = 0;
    CHECK_EQ_INT(an_results_decode(cut, len + 1, back, 2, &err), HM_EFORMAT); /* a byte too many */
    /* The idle count of the first result (after 4 + 8 header bytes and 24
     * fixed 8-byte fields) set to 2^40: refused, nothing allocated for it. */
    memset(cut + 4 + 8 + 24 * 8, 0, 8);
    cut[4 + 8 + 24 * 8 + 5] = 1;
    CHECK_EQ_INT(an_results_decode(cut, len, back, 2, &err), HM_EFORMAT);
    cut[3] = 99; /* another version */
    CHECK_EQ_INT(an_results_decode(cut, len, back, 2, &err), HM_EFORMAT);
    free(cut);
    free(buf);
    an_rank_result_clear(&res[0]);
    an_rank_result_clear(&res[1]);
}

int main(void)
{
    round_trip("hta/trace_filter/sampled_rank-0.json.gz");
    round_trip("hta/nccl_parser_config/nccl_data.json.gz");
    round_trip("hta/rank_non_gpu/rank_non_gpu.json.gz");
    empty_result();
    broken();
    return hm_test_done();
}
