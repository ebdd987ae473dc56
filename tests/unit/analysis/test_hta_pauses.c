/* Live capture that paused CUPTI: the "htamerge/cupti recording" samples
 * of a rank take the paused time out of the temporal breakdown's span and
 * idle, and out of the idle-time breakdown's gaps; without them the numbers
 * are the usual ones. Then the same batch through the writer: what
 * mrg_writer_load_rank gives back (the live merger's analyses) still holds
 * the pauses.
 *
 * One stream, kernels (us): [0,100) [150,250) [400,500) [510,600)
 * [1000,1100); gaps 50, 150, 10, 400. The last kernel is launched at 800,
 * after the one before ended: host wait. Unpaused: span 1100, busy 490,
 * idle 610 = host 400 + kernel wait 10 + other 200.
 * Pauses (us): [-500,-100) before the span; [110,135) covers 25 of the
 * first gap, leaving 25 < 30 us: kernel wait; [240,410) covers the second
 * gap wholly (and the kernels' ends, which stay busy), a second 0 at 300
 * inside it changes nothing; from 1050 to the end of the run, inside the
 * last kernel. Paused gap time 175: span 925, idle 435 = host 400 +
 * kernel wait 35 + other 0. */
#include "test.h"

#include <math.h>
#include <unistd.h>

#include "analysis/hta.h"
#include "store/writer.h"
#include "test_batch_build.h"

#define US INT64_C(1000)
#define BASE (INT64_C(1000000) * US) /* the kernels' time 0, in ns */

static void add_counter(struct hm_batch *b, const char *name, int64_t ts, double value)
{
    struct hm_counter *c = HM_VEC_PUSH(b->counters);
    c->ts = ts;
    c->value = value;
    c->name = tb_str(b, name);
    c->device = -1;
}

/* The kernels of the header and their launches; no counters yet. */
static struct hm_batch *make_kernels(void)
{
    static const int64_t kern_us[][2] = {{0, 100}, {150, 250}, {400, 500}, {510, 600}, {1000, 1100}};
    struct hm_batch *b = hm_batch_new();
    uint32_t cpu = (uint32_t)hm_batch_track(b, HM_TRACK_CPU_THREAD, 100, 1);
    uint32_t gpu = (uint32_t)hm_batch_track(b, HM_TRACK_GPU_STREAM, 0, 7);

    b->info.rank = 0;
    b->info.world_size = 1;
    b->info.base_time_ns = 0;
    b->info.pid = 100;
    b->info.hostname = tb_str(b, "node-a");
    for (int k = 0; k < 5; k++) {
        int64_t launch = k == 4 ? BASE + 800 * US : BASE - 1000 * US;
        tb_slice(b, cpu, "cudaLaunchKernel", HM_CAT_CUDA_RUNTIME, launch, 5 * US, k, 0);
        tb_slice(b, gpu, "gemm", HM_CAT_KERNEL, BASE + kern_us[k][0] * US,
                  (kern_us[k][1] - kern_us[k][0]) * US, k, HM_SLICE_F_STREAM_ARG);
    }
    return b;
}

/* Adds the header's pauses; the partial one is [p_start_ns, p_end_ns)
 * from the kernels' time 0. */
static void add_pauses(struct hm_batch *b, int64_t p_start_ns, int64_t p_end_ns)
{
    static const char rec[] = "htamerge/cupti recording";
    add_counter(b, rec, BASE - 600 * US, 1);
    add_counter(b, "Total Allocated", BASE + 120 * US, 0); /* a 0 of another counter */
    add_counter(b, rec, BASE - 500 * US, 0);
    add_counter(b, rec, BASE - 100 * US, 1);
    add_counter(b, rec, BASE + p_start_ns, 0);
    add_counter(b, rec, BASE + p_end_ns, 1);
    add_counter(b, rec, BASE + 300 * US, 0); /* out of order: the analysis sorts */
    add_counter(b, rec, BASE + 240 * US, 0);
    add_counter(b, rec, BASE + 410 * US, 1);
    add_counter(b, rec, BASE + 1050 * US, 0);
}

static int run(struct hm_batch *b, struct an_rank_result *r)
{
    struct an_options o = {.all_steps = 0};
    struct hm_err err;
    hm_err_clear(&err);
    return an_hta_run(b, &o, r, &err);
}

static void check_result(const struct an_rank_result *r, int64_t kernel, int64_t idle, double idle_pct,
                         double compute_pct, int64_t host, int64_t kwait, int64_t other)
{
    CHECK_EQ_INT(r->has_gpu, 1);
    CHECK_EQ_INT(r->temporal.kernel_us, kernel);
    CHECK_EQ_INT(r->temporal.idle_us, idle);
    CHECK_EQ_INT(r->temporal.compute_us, 490);
    CHECK_EQ_INT(r->temporal.non_compute_us, 0);
    CHECK_NEAR(r->temporal.idle_pct, idle_pct, 1e-9);
    CHECK_NEAR(r->temporal.compute_pct, compute_pct, 1e-9);
    CHECK_NEAR(r->temporal.non_compute_pct, 0.0, 1e-9);
    CHECK_EQ_INT(r->idle.n, 1);
    if (r->idle.n != 1)
        return;
    CHECK_EQ_INT(r->idle.v[0].stream, 7);
    CHECK_EQ_INT(r->idle.v[0].host_wait_us, host);
    CHECK_EQ_INT(r->idle.v[0].kernel_wait_us, kwait);
    CHECK_EQ_INT(r->idle.v[0].other_us, other);
}

/* Without recording samples: the unpaused numbers. */
static void test_unpaused(void)
{
    struct hm_batch *b = make_kernels();
    struct an_rank_result r;

    add_counter(b, "Total Allocated", BASE + 120 * US, 0);
    CHECK_EQ_INT(run(b, &r), 0);
    check_result(&r, 1100, 610, 55.45, 44.55, 400, 10, 200);
    an_rank_result_clear(&r);
    hm_batch_free(b);
}

static void test_paused(void)
{
    struct hm_batch *b = make_kernels();
    struct an_rank_result r;

    add_pauses(b, 110 * US, 135 * US);
    CHECK_EQ_INT(run(b, &r), 0);
    check_result(&r, 925, 435, 47.03, 52.97, 400, 35, 0);
    /* The busy-based figures do not move. */
    CHECK_EQ_INT(r.kclass_us[AN_KCLASS_COMP], 490);
    CHECK_EQ_INT(r.label_us[AN_LABEL_COMP], 490);
    an_rank_result_clear(&r);
    hm_batch_free(b);
}

/* In HTA's whole-us units a pause is rounded inward like an event:
 * [110.4, 135.6) us covers [111, 135), 24 us; the rest of the gap, 26 us,
 * is still kernel wait. */
static void test_paused_fractional(void)
{
    struct hm_batch *b = make_kernels();
    struct an_rank_result r;

    b->info.flags |= HM_INFO_F_FRACTIONAL_TS;
    add_pauses(b, 110 * US + 400, 135 * US + 600);
    CHECK_EQ_INT(run(b, &r), 0);
    check_result(&r, 926, 436, 47.08, 52.92, 400, 36, 0);
    an_rank_result_clear(&r);
    hm_batch_free(b);
}

/* A pause that never ends, from inside the last gap: only what lies
 * between the kernels counts, and what remains of that gap stays host
 * wait. */
static void test_open_pause(void)
{
    struct hm_batch *b = make_kernels();
    struct an_rank_result r;

    add_counter(b, "htamerge/cupti recording", BASE + 700 * US, 0);
    CHECK_EQ_INT(run(b, &r), 0);
    /* [700, end) covers 300 of the 400 us host wait before the last kernel. */
    check_result(&r, 800, 310, 38.75, 61.25, 100, 10, 200);
    an_rank_result_clear(&r);
    hm_batch_free(b);
}

/* Through the writer: the loaded batch carries the recording samples (and
 * no other counter), and its analysis equals the in-memory one. */
static void test_writer_round_trip(void)
{
    char path[4096];
    struct hm_err err;
    struct hm_batch *b = make_kernels(), *loaded = NULL;
    struct mrg_writer *w;
    struct an_rank_result r;

    snprintf(path, sizeof path, "%s", hm_tmpfile("hta_pauses.db"));
    unlink(path);
    add_pauses(b, 110 * US, 135 * US);
    hm_err_clear(&err);
    w = mrg_writer_open(path, &err);
    CHECK(w != NULL);
    if (!w) {
        hm_batch_free(b);
        return;
    }
    CHECK_EQ_INT(mrg_writer_add_batch(w, b, &err), 0);
    CHECK_EQ_INT(mrg_writer_build_indexes(w, &err), 0);
    CHECK_EQ_INT(mrg_writer_load_rank(w, 0, &loaded, &err), 0);
    CHECK(loaded != NULL);
    if (loaded) {
        CHECK_EQ_INT(loaded->counters.n, 9);
        for (size_t i = 0; i < loaded->counters.n; i++)
            CHECK_STR(hm_batch_str(loaded, loaded->counters.v[i].name), "htamerge/cupti recording");
        CHECK_EQ_INT(run(loaded, &r), 0);
        check_result(&r, 925, 435, 47.03, 52.97, 400, 35, 0);
        an_rank_result_clear(&r);
        CHECK_EQ_INT(mrg_writer_store_iterations(w, loaded, &err), 0);
    }
    hm_batch_free(loaded);
    CHECK_EQ_INT(mrg_writer_finish(w, &err), 0);
    unlink(path);
    hm_batch_free(b);
}

/* Two ranks' batches interleaved, as a live run stores them (rank 0, rank
 * 1, rank 0 again with earlier samples): each rank reads back its own
 * recording samples only, all of them, by time, and its analysis is the
 * one of its samples alone. */
static void test_writer_interleaved(void)
{
    static const char rec[] = "htamerge/cupti recording";
    char path[4096];
    struct hm_err err;
    struct hm_batch *a = make_kernels(), *b = make_kernels(), *c = hm_batch_new(), *l0 = NULL, *l1 = NULL;
    struct mrg_writer *w;
    struct an_rank_result r;

    snprintf(path, sizeof path, "%s", hm_tmpfile("hta_pauses2.db"));
    unlink(path);
    add_pauses(a, 110 * US, 135 * US);
    b->info.rank = 1;
    b->info.world_size = a->info.world_size = c->info.world_size = 2;
    add_counter(b, rec, BASE + 2000 * US, 0);
    add_counter(b, "Total Allocated", BASE + 10 * US, 5);
    c->info.rank = 0;
    c->info.base_time_ns = 0;
    add_counter(c, rec, BASE - 700 * US, 1);
    add_counter(c, rec, BASE - 650 * US, 1);
    hm_err_clear(&err);
    w = mrg_writer_open(path, &err);
    CHECK(w != NULL);
    if (!w)
        goto out;
    CHECK_EQ_INT(mrg_writer_add_batch(w, a, &err), 0);
    CHECK_EQ_INT(mrg_writer_add_batch(w, b, &err), 0);
    CHECK_EQ_INT(mrg_writer_add_batch(w, c, &err), 0);
    CHECK_EQ_INT(mrg_writer_load_rank(w, 0, &l0, &err), 0);
    if (l0) {
        CHECK_EQ_INT(l0->counters.n, 11);
        for (size_t i = 0; i < l0->counters.n; i++) {
            CHECK_STR(hm_batch_str(l0, l0->counters.v[i].name), rec);
            CHECK(i == 0 || l0->counters.v[i - 1].ts <= l0->counters.v[i].ts);
        }
        CHECK_EQ_INT(l0->counters.v[0].ts, BASE - 700 * US);
        CHECK_EQ_INT(run(l0, &r), 0);
        check_result(&r, 925, 435, 47.03, 52.97, 400, 35, 0);
        an_rank_result_clear(&r);
    }
    CHECK_EQ_INT(mrg_writer_load_rank(w, 1, &l1, &err), 0);
    if (l1) {
        CHECK_EQ_INT(l1->counters.n, 1);
        CHECK_EQ_INT(l1->counters.n ? l1->counters.v[0].ts : 0, BASE + 2000 * US);
    }
    CHECK_EQ_INT(mrg_writer_finish(w, &err), 0);
out:
    unlink(path);
    hm_batch_free(l0);
    hm_batch_free(l1);
    hm_batch_free(a);
    hm_batch_free(b);
    hm_batch_free(c);
}

int main(void)
{
    test_unpaused();
    test_paused();
    test_paused_fractional();
    test_open_pause();
    test_writer_round_trip();
    test_writer_interleaved();
    return hm_test_done();
}
