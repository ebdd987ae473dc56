/* Step inference on constructed streams (analysis/step_infer.h) and the
 * step source priority on constructed batches (analysis/step_source.h). */
#include "test.h"
#include "test_batch_build.h"

#include "analysis/hta.h"
#include "analysis/step_infer.h"
#include "common/batch.h"
#include "common/wire.h"

static size_t build(uint64_t *v, const char *warm, const char *block, int reps, const char *tail)
{
    size_t n = 0;
    for (const char *p = warm; *p; p++)
        v[n++] = (uint64_t)*p;
    for (int r = 0; r < reps; r++)
        for (const char *p = block; *p; p++)
            v[n++] = (uint64_t)*p;
    for (const char *p = tail; *p; p++)
        v[n++] = (uint64_t)*p;
    return n;
}

static void check_cuts(const uint64_t *v, size_t n, size_t first, size_t block, size_t ncuts)
{
    struct an_period p;
    CHECK_EQ_INT(an_infer_period(v, NULL, NULL, n, &p), 0);
    CHECK_EQ_INT(p.block, block);
    CHECK_EQ_INT(p.ncuts, ncuts);
    for (size_t k = 0; k < p.ncuts && k < ncuts; k++)
        CHECK_EQ_INT(p.cuts[k], first + k * block);
    an_period_free(&p);
}

static void periods(void)
{
    uint64_t v[4096];
    size_t n;

    /* Period 5 repeated 10 times after a warm-up of 3. */
    n = build(v, "xyz", "abcde", 10, "");
    check_cuts(v, n, 3, 5, 10);
    /* A symbol twice per block: "abac" -> anchor b or c, the cut rotated
     * to where the first block starts earliest. */
    n = build(v, "", "abac", 8, "");
    check_cuts(v, n, 0, 4, 8);
    /* Only one symbol is unique per block ("aaab"): the cut rotates from
     * b to the step's first a. */
    n = build(v, "", "aaab", 6, "");
    check_cuts(v, n, 0, 4, 6);
    /* Period 1 (one allreduce per step). */
    n = build(v, "", "r", 7, "");
    check_cuts(v, n, 0, 1, 7);
    /* Warm-up that shares symbols with the block, and a tail. */
    n = build(v, "ab", "abcdef", 12, "zz");
    {
        struct an_period p;
        CHECK_EQ_INT(an_infer_period(v, NULL, NULL, n, &p), 0);
        CHECK_EQ_INT(p.block, 6);
        CHECK_EQ_INT(p.ncuts, 12);
        CHECK_EQ_INT(p.ncuts ? p.cuts[0] : 0, 2);
        an_period_free(&p);
    }
}

static void noise(void)
{
    uint64_t v[4096];
    size_t n = 0;
    struct an_period p;

    /* 20 blocks of 6 names, noise (a stray kernel, a repeated one) in 3. */
    for (int r = 0; r < 20; r++) {
        for (const char *q = "ABCDEF"; *q; q++) {
            v[n++] = (uint64_t)*q;
            if ((r == 4 && *q == 'C') || (r == 11 && *q == 'E'))
                v[n++] = 'N';
            if (r == 15 && *q == 'D')
                v[n++] = 'D';
        }
    }
    CHECK_EQ_INT(an_infer_period(v, NULL, NULL, n, &p), 0);
    CHECK_EQ_INT(p.block, 6);
    CHECK_EQ_INT(p.ncuts, 20);
    CHECK(p.support >= 17);
    an_period_free(&p);

    /* No structure: a linear congruential sequence over many symbols. */
    n = 0;
    for (uint64_t x = 7; n < 2000; n++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        v[n] = x >> 50;
    }
    CHECK_EQ_INT(an_infer_period(v, NULL, NULL, n, &p), 0);
    CHECK_EQ_INT(p.ncuts, 0);
    an_period_free(&p);
}

/* With times, the cut goes where the gap before it is largest. */
static void rotation_by_gap(void)
{
    uint64_t v[64];
    int64_t ts[64], end[64], t = 0;
    size_t n = 0;
    struct an_period p;

    /* Block "pqrs" x 5; the host gap (data loading) comes before r. */
    for (int r = 0; r < 5; r++)
        for (const char *q = "pqrs"; *q; q++) {
            t += *q == 'r' ? 1000 : 10;
            ts[n] = t;
            end[n] = t + 5;
            v[n++] = (uint64_t)*q;
        }
    CHECK_EQ_INT(an_infer_period(v, ts, end, n, &p), 0);
    CHECK_EQ_INT(p.block, 4);
    CHECK(p.ncuts >= 4);
    CHECK_EQ_INT(p.ncuts ? p.cuts[0] : 0, 2); /* at the first r */
    an_period_free(&p);
}

/* ---- sources on batches -------------------------------------------------- */

/* A rank of `steps` training steps, each: an annotation (if name), two
 * kernel launches, an allreduce (CPU collective). Times in ns. */
static struct hm_batch *make_rank(int steps, const char *ann, int hooks)
{
    struct hm_batch *b = hm_batch_new();
    uint32_t cpu = (uint32_t)hm_batch_track(b, HM_TRACK_CPU_THREAD, 1, 1);
    uint32_t gpu = (uint32_t)hm_batch_track(b, HM_TRACK_GPU_STREAM, 0, 7);
    int64_t corr = 1;

    b->info.rank = 0;
    b->info.base_time_ns = 0;
    for (int k = 0; k < steps; k++) {
        int64_t t0 = 1000000 + (int64_t)k * 100000;
        if (ann) {
            char name[32];
            snprintf(name, sizeof name, "%s", ann);
            tb_slice(b, cpu, name, HM_CAT_USER_ANNOTATION, t0, 90000, HM_NONE, 0);
        }
        if (hooks) {
            struct hm_slice *s = tb_slice(b, cpu, "step", HM_CAT_NVTX, t0, 95000, HM_NONE, 0);
            s->args = tb_str(b, "{\"domain\":\"htamerge\"}");
        }
        for (int j = 0; j < 2; j++, corr++) {
            tb_slice(b, cpu, "cudaLaunchKernel", HM_CAT_CUDA_RUNTIME, t0 + 1000 + j * 10000, 2000, corr, 0);
            tb_slice(b, gpu, j ? "gemm" : "relu", HM_CAT_KERNEL, t0 + 5000 + j * 10000, 8000, corr,
                HM_SLICE_F_STREAM_ARG);
        }
        tb_slice(b, cpu, "allreduce", HM_CAT_USER_ANNOTATION, t0 + 40000, 10000, HM_NONE, 0);
        struct hm_collective *c = HM_VEC_PUSH(b->collectives);
        c->slice = (uint32_t)b->slices.n - 1;
        c->op = tb_str(b, "allreduce");
        c->in_nelems = 1024;
        c->seq = c->out_nelems = c->group_size = HM_NONE;
    }
    return b;
}

static int run(struct hm_batch *b, struct an_rank_result *r)
{
    struct an_options o = {.all_steps = 0};
    struct hm_err err;
    return an_hta_run(b, &o, r, &err);
}

static void sources(void)
{
    struct an_rank_result r;
    struct hm_batch *b;

    /* Hooks win over step-like annotations; numbered 1.. */
    b = make_rank(5, "train_step", 1);
    CHECK_EQ_INT(run(b, &r), 0);
    CHECK_EQ_INT(b->steps.n, 5);
    CHECK_EQ_INT(b->steps.v[0].source, HM_STEP_HOOKS);
    CHECK_EQ_INT(b->steps.v[0].number, 1);
    CHECK_EQ_INT(r.steps.n, 5);
    CHECK_EQ_INT(r.steps.v[4].dropped, 1); /* HTA's last-step rule */
    CHECK_EQ_INT(r.steps.v[3].dropped, 0);
    CHECK_EQ_INT(r.steps.v[0].source, HM_STEP_HOOKS);
    CHECK_EQ_INT(r.steps.v[0].kernel_count, 2);
    an_rank_result_clear(&r);
    hm_batch_free(b);

    /* Step-like user annotations ("iteration") with their number. */
    b = make_rank(4, "Iteration 7", 0);
    CHECK_EQ_INT(run(b, &r), 0);
    CHECK_EQ_INT(b->steps.n, 4);
    CHECK_EQ_INT(b->steps.v[0].source, HM_STEP_NVTX);
    CHECK_EQ_INT(b->steps.v[0].number, 1); /* the same number each time: by order */
    an_rank_result_clear(&r);
    hm_batch_free(b);

    /* Nothing marks the steps: the collectives' period does. */
    b = make_rank(6, NULL, 0);
    CHECK_EQ_INT(run(b, &r), 0);
    CHECK_EQ_INT(b->steps.n, 6);
    CHECK_EQ_INT(b->steps.v[0].source, HM_STEP_INFERRED);
    CHECK_EQ_INT(b->steps.v[0].slice, HM_STEP_NO_SLICE);
    CHECK_EQ_INT(r.steps.v[5].dropped, 1);
    /* Steps begin at their collective (period 1: nothing to rotate). */
    CHECK_EQ_INT(b->steps.v[1].ts, 1000000 + 100000 + 40000);
    CHECK_EQ_INT(b->steps.v[1].dur, 100000);
    /* What starts at or after the last step's start is left out, as HTA
     * leaves out the last ProfilerStep: the kernels launched before the
     * last allreduce stay (12 of 12 here; a trace file, not a live
     * capture, so nothing before the first step is cut). */
    CHECK_EQ_INT(r.kernels.n, 2);
    CHECK_EQ_INT(r.kernels.v[0].count + r.kernels.v[1].count, 12);
    an_rank_result_clear(&r);
    /* The same rank from a live capture: the window starts at the second
     * step (the first is the warm-up): 8 of the 12 kernels. */
    b->info.flags |= HM_INFO_F_LIVE;
    CHECK_EQ_INT(run(b, &r), 0);
    CHECK_EQ_INT(r.kernels.v[0].count + r.kernels.v[1].count, 8);
    CHECK_EQ_INT(r.steps.v[0].dropped, 1);
    CHECK_EQ_INT(r.steps.v[1].dropped, 0);
    an_rank_result_clear(&r);
    hm_batch_free(b);

    /* ProfilerSteps win over everything; other sources' steps are dropped. */
    b = make_rank(3, "train_step", 1);
    {
        struct hm_step *st = HM_VEC_PUSH(b->steps);
        st->number = 42;
        st->ts = 1000000;
        st->dur = 300000;
        st->slice = 0;
        st = HM_VEC_PUSH(b->steps);
        st->number = 1;
        st->ts = 1000000;
        st->dur = 1000;
        st->slice = 0;
        st->source = HM_STEP_INFERRED;
    }
    CHECK_EQ_INT(run(b, &r), 0);
    CHECK_EQ_INT(b->steps.n, 1);
    CHECK_EQ_INT(b->steps.v[0].number, 42);
    CHECK_EQ_INT(b->steps.v[0].source, HM_STEP_PROFILER);
    an_rank_result_clear(&r);
    hm_batch_free(b);

    /* Two kernels only, no collectives: no steps, the whole run. */
    b = make_rank(1, NULL, 0);
    CHECK_EQ_INT(run(b, &r), 0);
    CHECK_EQ_INT(b->steps.n, 0);
    CHECK_EQ_INT(r.kernels.v[0].count + r.kernels.v[1].count, 2);
    an_rank_result_clear(&r);
    hm_batch_free(b);
}

/* hm_step.source crosses the wire; batches of ProfilerSteps only are as before. */
static void wire(void)
{
    struct hm_batch *b = make_rank(2, NULL, 1), *d = NULL;
    uint8_t *buf = NULL, *buf2 = NULL;
    size_t len = 0, len2 = 0;
    struct hm_err err;
    struct hm_step *st = HM_VEC_PUSH(b->steps);

    st->number = 3;
    st->slice = 1;
    st->source = HM_STEP_HOOKS;
    CHECK_EQ_INT(hm_wire_encode(b, &buf, &len, &err), 0);
    CHECK_EQ_INT(hm_wire_decode(buf, len, &d, &err), 0);
    CHECK(d && d->steps.n == 1 && d->steps.v[0].source == HM_STEP_HOOKS && d->steps.v[0].number == 3);
    hm_batch_free(d);
    d = NULL;
    b->steps.v[0].source = HM_STEP_PROFILER;
    CHECK_EQ_INT(hm_wire_encode(b, &buf2, &len2, &err), 0);
    CHECK(len2 < len); /* no step-sources section */
    CHECK_EQ_INT(hm_wire_decode(buf2, len2, &d, &err), 0);
    CHECK(d && d->steps.n == 1 && d->steps.v[0].source == HM_STEP_PROFILER);
    hm_batch_free(d);
    free(buf);
    free(buf2);
    hm_batch_free(b);
}

int main(void)
{
    periods();
    noise();
    rotation_by_gap();
    sources();
    wire();
    return hm_test_done();
}
