/* Parity with Holistic Trace Analysis on real traces: every number HTA 0.6
 * computes on tests/fixtures/hta (targets in ../shared/data/README.md),
 * to the microsecond. */
#include "test.h"

#include "analysis/hta.h"
#include "collector/sources/kineto_json/kineto_json.h"

static struct hm_batch *load(const char *rel)
{
    struct src_kineto_opts o = {.keep_args = 0};
    struct hm_batch *b = NULL;
    struct hm_err err;
    char line[1200];

    hm_err_clear(&err);
    if (src_kineto_read(hm_fixture(rel), &o, &b, &err) != 0) {
        fprintf(stderr, "cannot read %s: %s\n", rel, hm_err_line(&err, line, sizeof line));
        return NULL;
    }
    return b;
}

static int run(struct hm_batch *b, int all_steps, struct an_rank_result *r)
{
    struct an_options o = {.all_steps = all_steps};
    struct hm_err err;
    hm_err_clear(&err);
    return an_hta_run(b, &o, r, &err);
}

static const struct an_idle *stream_of(const struct an_rank_result *r, int64_t stream)
{
    for (size_t i = 0; i < r->idle.n; i++)
        if (r->idle.v[i].stream == stream)
            return &r->idle.v[i];
    return NULL;
}

static void check_idle(const struct an_rank_result *r, int64_t stream, int64_t host, int64_t kern,
                       int64_t other)
{
    const struct an_idle *d = stream_of(r, stream);
    CHECK(d != NULL);
    if (!d)
        return;
    CHECK_EQ_INT(d->host_wait_us, host);
    CHECK_EQ_INT(d->kernel_wait_us, kern);
    CHECK_EQ_INT(d->other_us, other);
}

static void check_temporal(const struct an_rank_result *r, int64_t idle, int64_t comp, int64_t noncomp,
                           int64_t kernel, double ip, double cp, double np, double overlap)
{
    CHECK_EQ_INT(r->temporal.idle_us, idle);
    CHECK_EQ_INT(r->temporal.compute_us, comp);
    CHECK_EQ_INT(r->temporal.non_compute_us, noncomp);
    CHECK_EQ_INT(r->temporal.kernel_us, kernel);
    CHECK_NEAR(r->temporal.idle_pct, ip, 1e-9);
    CHECK_NEAR(r->temporal.compute_pct, cp, 1e-9);
    CHECK_NEAR(r->temporal.non_compute_pct, np, 1e-9);
    CHECK_NEAR(r->overlap.overlap_pct, overlap, 1e-9);
}

static void trace_filter(void)
{
    struct hm_batch *b0 = load("hta/trace_filter/sampled_rank-0.json.gz");
    struct hm_batch *b1 = load("hta/trace_filter/sampled_rank-1.json.gz");
    struct an_rank_result r0, r1;
    int64_t labels[8];

    CHECK(b0 && b1);
    if (!b0 || !b1)
        return;
    CHECK_EQ_INT(run(b0, 0, &r0), 0);
    CHECK_EQ_INT(run(b1, 0, &r1), 0);
    check_temporal(&r0, 321378, 106252, 172428, 600058, 53.56, 17.71, 28.74, 11.81);
    check_temporal(&r1, 328671, 135548, 136455, 600674, 54.72, 22.57, 22.72, 20.05);
    check_idle(&r0, 7, 213825, 1985, 261740);
    check_idle(&r0, 23, 596037, 70, 34);
    check_idle(&r0, 25, 0, 9, 47865);
    check_idle(&r0, 84, 148934, 6, 0);
    /* HTA lists every stream, even one whose single kernel leaves no gap. */
    check_idle(&r0, 203, 0, 0, 0);
    CHECK_EQ_INT(r0.idle.n, 5);
    check_idle(&r1, 7, 156827, 1816, 281064);
    check_idle(&r1, 84, 251860, 0, 23247);
    CHECK_EQ_INT(r1.idle.n, 5);
    for (int m = 0; m < 8; m++)
        labels[m] = r0.label_us[m] + r1.label_us[m];
    CHECK_EQ_INT(labels[AN_LABEL_COMM], 305584);
    CHECK_EQ_INT(labels[AN_LABEL_COMP], 185023);
    CHECK_EQ_INT(labels[AN_LABEL_COMP | AN_LABEL_COMM], 56747);
    CHECK_EQ_INT(labels[AN_LABEL_MEMORY], 2288);
    /* Only ProfilerStep#551 survives the last-step rule. */
    CHECK_EQ_INT(r0.steps.n, 2);
    if (r0.steps.n == 2) {
        CHECK_EQ_INT(r0.steps.v[0].number, 551);
        CHECK_EQ_INT(r0.steps.v[0].dropped, 0);
        CHECK_EQ_INT(r0.steps.v[1].dropped, 1);
    }
    an_rank_result_clear(&r0);
    an_rank_result_clear(&r1);

    /* --all-steps keeps step 552: the GPU span can only grow. */
    CHECK_EQ_INT(run(b0, 1, &r0), 0);
    CHECK(r0.temporal.kernel_us > 600058);
    an_rank_result_clear(&r0);
    hm_batch_free(b0);
    hm_batch_free(b1);
}

static void nccl_parser_config(void)
{
    struct hm_batch *b = load("hta/nccl_parser_config/nccl_data.json.gz");
    struct an_rank_result r;

    CHECK(b != NULL);
    if (!b)
        return;
    CHECK_EQ_INT(run(b, 0, &r), 0);
    check_temporal(&r, 338781, 75169, 21636, 435586, 77.78, 17.26, 4.97, 14.31);
    an_rank_result_clear(&r);
    hm_batch_free(b);
}

static void no_gpu(void)
{
    struct hm_batch *b = load("hta/rank_non_gpu/rank_non_gpu.json.gz");
    struct an_rank_result r;

    CHECK(b != NULL);
    if (!b)
        return;
    CHECK_EQ_INT(run(b, 0, &r), 0);
    CHECK_EQ_INT(r.has_gpu, 0);
    CHECK_EQ_INT(r.idle.n, 0);
    an_rank_result_clear(&r);
    hm_batch_free(b);
}

int main(void)
{
    trace_filter();
    nccl_parser_config();
    no_gpu();
    return hm_test_done();
}
