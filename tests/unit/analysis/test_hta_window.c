/* The analysis window of a live capture: HTA's rules over the steps, so
 * the start-up before the first step and the teardown after the last are
 * left out, and steps not from the profiler lose their first (the warm-up)
 * as HTA's lose their last. A trace file keeps HTA's own rule (the last
 * step dropped, nothing before the first cut) whatever its steps' source,
 * for parity.
 *
 * One stream; each kernel launched 5 us before it starts (us):
 *   start-up  [0,1000)         launched before step 1
 *   step 1    [2000,3000): kernel [2100,2400)   (the warm-up)
 *   step 2    [3000,4000): kernel [3100,3600)
 *   step 3    [4000,5000): kernel [4100,4300)
 *   step 4    [5000,6000): kernel [5100,5500)   (HTA drops the last)
 *   teardown  [7000,7500)      launched after step 4 */
#include "test.h"

#include <stdio.h>

#include "analysis/hta.h"
#include "test_batch_build.h"

#define US INT64_C(1000)

static struct hm_batch *make(enum hm_step_source source, uint32_t flags)
{
    static const int64_t kern[][2] = {{0, 1000},   {2100, 2400}, {3100, 3600},
                                      {4100, 4300}, {5100, 5500}, {7000, 7500}};
    struct hm_batch *b = hm_batch_new();
    uint32_t cpu = (uint32_t)hm_batch_track(b, HM_TRACK_CPU_THREAD, 100, 1);
    uint32_t gpu = (uint32_t)hm_batch_track(b, HM_TRACK_GPU_STREAM, 0, 7);

    b->info.rank = 0;
    b->info.world_size = 1;
    b->info.base_time_ns = 0;
    b->info.pid = 100;
    b->info.flags = flags;
    for (int k = 0; k < 4; k++) {
        struct hm_step *st = HM_VEC_PUSH(b->steps);
        char name[32];
        snprintf(name, sizeof name, source == HM_STEP_PROFILER ? "ProfilerStep#%d" : "step", k + 1);
        tb_slice(b, cpu, name, source == HM_STEP_PROFILER ? HM_CAT_USER_ANNOTATION : HM_CAT_NVTX,
                  (2000 + 1000 * k) * US, 1000 * US, HM_NONE, 0);
        *st = (struct hm_step){.number = k + 1, .ts = (2000 + 1000 * k) * US, .dur = 1000 * US,
                               .slice = (uint32_t)(b->slices.n - 1), .source = (uint8_t)source};
    }
    for (int k = 0; k < 6; k++) {
        tb_slice(b, cpu, "cudaLaunchKernel", HM_CAT_CUDA_RUNTIME, (kern[k][0] - 5) * US, 2 * US, k + 1, 0);
        tb_slice(b, gpu, "gemm", HM_CAT_KERNEL, kern[k][0] * US, (kern[k][1] - kern[k][0]) * US, k + 1,
                  HM_SLICE_F_STREAM_ARG);
    }
    return b;
}

static void run(struct hm_batch *b, int all_steps, struct an_rank_result *r)
{
    struct an_options o = {.all_steps = all_steps};
    struct hm_err err;
    hm_err_clear(&err);
    CHECK_EQ_INT(an_hta_run(b, &o, r, &err), 0);
}

/* Hooks steps of a live run: steps 2 and 3 (the warm-up and the last
 * left out, and marked dropped): kernels [3100,3600) and [4100,4300); span
 * 1200, busy 700. With all steps, 1 to 4: span 3400, busy 1400. Never the
 * start-up or teardown. */
static void test_live_hooks(void)
{
    struct an_rank_result r;
    struct hm_batch *b = make(HM_STEP_HOOKS, HM_INFO_F_LIVE);

    run(b, 0, &r);
    CHECK_EQ_INT(r.temporal.kernel_us, 1200);
    CHECK_EQ_INT(r.temporal.compute_us, 700);
    CHECK_EQ_INT(r.temporal.idle_us, 500);
    CHECK_EQ_INT(r.steps.n, 4);
    if (r.steps.n == 4) {
        CHECK_EQ_INT(r.steps.v[0].dropped, 1);
        CHECK_EQ_INT(r.steps.v[1].dropped, 0);
        CHECK_EQ_INT(r.steps.v[2].dropped, 0);
        CHECK_EQ_INT(r.steps.v[3].dropped, 1);
    }
    an_rank_result_clear(&r);
    run(b, 1, &r);
    CHECK_EQ_INT(r.temporal.kernel_us, 3400);
    CHECK_EQ_INT(r.temporal.compute_us, 1400);
    CHECK_EQ_INT(r.steps.v[0].dropped, 0);
    an_rank_result_clear(&r);
    hm_batch_free(b);
}

/* ProfilerSteps of a live run (its profiler's trace joined a capture that
 * holds the whole run): bounded by the steps, the last dropped; the first
 * kept (the profiler's schedule has its own warm-up): steps 1 to 3, span
 * [2100,4300), busy 1000. */
static void test_live_profiler(void)
{
    struct an_rank_result r;
    struct hm_batch *b = make(HM_STEP_PROFILER, HM_INFO_F_LIVE);

    run(b, 0, &r);
    CHECK_EQ_INT(r.temporal.kernel_us, 2200);
    CHECK_EQ_INT(r.temporal.compute_us, 1000);
    an_rank_result_clear(&r);
    hm_batch_free(b);
}

/* A Kineto trace (not live) with ProfilerSteps: HTA's rule alone, so the
 * kernel launched before the first step stays: span [0,4300), busy 2000. */
static void test_kineto_parity(void)
{
    struct an_rank_result r;
    struct hm_batch *b = make(HM_STEP_PROFILER, 0);

    run(b, 0, &r);
    CHECK_EQ_INT(r.temporal.kernel_us, 4300);
    CHECK_EQ_INT(r.temporal.compute_us, 2000);
    an_rank_result_clear(&r);
    hm_batch_free(b);
}

/* NVTX steps in a trace file (not live): HTA's rule alone, like
 * ProfilerSteps of a trace. */
static void test_file_nvtx(void)
{
    struct an_rank_result r;
    struct hm_batch *b = make(HM_STEP_NVTX, 0);

    run(b, 0, &r);
    CHECK_EQ_INT(r.temporal.kernel_us, 4300);
    CHECK_EQ_INT(r.temporal.compute_us, 2000);
    CHECK_EQ_INT(r.steps.v[0].dropped, 0);
    an_rank_result_clear(&r);
    hm_batch_free(b);
}

int main(void)
{
    test_file_nvtx();
    test_live_hooks();
    test_live_profiler();
    test_kineto_parity();
    return hm_test_done();
}
