/* The capture plan in shared memory: the seqlock's copy, the progress
 * fields, and which steps and moments a plan records. */
#include <stdint.h>

#include "common/capture_plan.h"
#include "test.h"

static _Alignas(64) unsigned char area[HM_CAPTURE_AREA_BYTES];

static void test_put_get(void)
{
    struct hm_capture_plan p = {.id = 7, .mode = HM_CAPTURE_STEPS, .base_step = 100, .on_steps = 3,
                                .period_steps = 40, .req_id = 2, .req_from_step = 150, .req_steps = 5,
                                .budget_pct = 2.0, .est_cost_pct = 11.5}, q;
    uint64_t g0 = hm_capture_plan_gen(area);

    CHECK_EQ_INT(g0 % 2, 0);
    hm_capture_plan_put(area, &p);
    CHECK_EQ_INT(hm_capture_plan_gen(area), g0 + 2);
    CHECK_EQ_INT(hm_capture_plan_get(area, &q), g0 + 2);
    CHECK(memcmp(&p, &q, sizeof p) == 0);
    p.id = 8;
    hm_capture_plan_put(area, &p);
    hm_capture_plan_get(area, &q);
    CHECK_EQ_INT(q.id, 8);
}

static void test_progress(void)
{
    struct hm_capture_progress pr;
    unsigned char fresh[HM_CAPTURE_AREA_BYTES] = {0};

    hm_capture_progress_get(fresh, &pr);
    CHECK_EQ_INT(pr.step_now, -1);   /* zeroed shared memory: no step yet */
    hm_capture_progress_step(area, 0, 0);
    hm_capture_progress_step(area, 1, 25000000);
    hm_capture_progress_cupti(area, 1000, 500000000);
    hm_capture_progress_switch(area, 3000000);
    hm_capture_progress_switch(area, 1000000);
    hm_capture_progress_get(area, &pr);
    CHECK_EQ_INT(pr.step_now, 1);
    CHECK_EQ_INT(pr.step_ns, 25000000);
    CHECK_EQ_INT(pr.steps_seen, 2);
    CHECK_EQ_INT(pr.cupti_records, 1000);
    CHECK_EQ_INT(pr.cupti_attached_ns, 500000000);
    CHECK_EQ_INT(pr.cupti_switches, 2);
    CHECK_EQ_INT(pr.cupti_switch_ns, 4000000);
}

static void test_steps(void)
{
    struct hm_capture_plan p = {.id = 1, .mode = HM_CAPTURE_STEPS, .base_step = 10, .on_steps = 2,
                                .period_steps = 5};

    CHECK_EQ_INT(hm_capture_step(&p, 9), 0);        /* before the first window */
    CHECK_EQ_INT(hm_capture_step(&p, 10), HM_CAPTURE_F_WINDOW);
    CHECK_EQ_INT(hm_capture_step(&p, 11), HM_CAPTURE_F_WINDOW);
    CHECK_EQ_INT(hm_capture_step(&p, 12), 0);
    CHECK_EQ_INT(hm_capture_step(&p, 14), 0);
    CHECK_EQ_INT(hm_capture_step(&p, 15), HM_CAPTURE_F_WINDOW);
    p.req_id = 1, p.req_from_step = 13, p.req_steps = 2;
    CHECK_EQ_INT(hm_capture_step(&p, 12), 0);
    CHECK_EQ_INT(hm_capture_step(&p, 13), HM_CAPTURE_F_REQUEST);
    CHECK_EQ_INT(hm_capture_step(&p, 14), HM_CAPTURE_F_REQUEST);
    CHECK_EQ_INT(hm_capture_step(&p, 15), HM_CAPTURE_F_WINDOW);
    p.mode = HM_CAPTURE_ALL;
    CHECK_EQ_INT(hm_capture_step(&p, 13), HM_CAPTURE_F_WINDOW | HM_CAPTURE_F_REQUEST);
    p.mode = HM_CAPTURE_UNSET;
    CHECK_EQ_INT(hm_capture_step(&p, 2), HM_CAPTURE_F_WINDOW);   /* no plan: as before any */
}

/* A new plan from step 40; before it, the windows of the one it replaced
 * (steps 10-11, 15-16, ...), so a window open when a rank learns of the
 * new plan closes where it would have on every rank. */
static void test_steps_before_base(void)
{
    struct hm_capture_plan p = {.id = 2, .mode = HM_CAPTURE_STEPS, .base_step = 40, .on_steps = 1,
                                .period_steps = 1, .prev_base_step = 10, .prev_on_steps = 2,
                                .prev_period_steps = 5};

    CHECK(hm_capture_plan_all(&p));
    CHECK_EQ_INT(hm_capture_step(&p, 35), HM_CAPTURE_F_WINDOW);
    CHECK_EQ_INT(hm_capture_step(&p, 36), HM_CAPTURE_F_WINDOW);
    CHECK_EQ_INT(hm_capture_step(&p, 37), 0);
    CHECK_EQ_INT(hm_capture_step(&p, 39), 0);
    CHECK_EQ_INT(hm_capture_step(&p, 40), HM_CAPTURE_F_WINDOW);
    CHECK_EQ_INT(hm_capture_step(&p, 41), HM_CAPTURE_F_WINDOW);
    p.on_steps = 3, p.period_steps = 100;
    CHECK(!hm_capture_plan_all(&p));
    CHECK_EQ_INT(hm_capture_step(&p, 43), 0);
    p.prev_on_steps = p.prev_period_steps = 0;   /* after a plan in time: nothing before */
    CHECK_EQ_INT(hm_capture_step(&p, 35), 0);
}

static void test_time(void)
{
    int64_t e = 1000000000000;
    struct hm_capture_plan p = {.id = 1, .mode = HM_CAPTURE_TIME, .on_ms = 500, .period_ms = 5000,
                                .epoch_ns = e};

    CHECK_EQ_INT(hm_capture_time(&p, e - 1), 0);
    CHECK_EQ_INT(hm_capture_time(&p, e), HM_CAPTURE_F_WINDOW);
    CHECK_EQ_INT(hm_capture_time(&p, e + 499999999), HM_CAPTURE_F_WINDOW);
    CHECK_EQ_INT(hm_capture_time(&p, e + 500000000), 0);
    CHECK_EQ_INT(hm_capture_time(&p, e + 5000000000), HM_CAPTURE_F_WINDOW);
    p.req_id = 3, p.req_t0_ns = e + 1000000000, p.req_t1_ns = e + 2000000000;
    CHECK_EQ_INT(hm_capture_time(&p, e + 1500000000), HM_CAPTURE_F_REQUEST);
    CHECK_EQ_INT(hm_capture_time(&p, e + 2000000000), 0);
    p.mode = HM_CAPTURE_STEPS;   /* the hooks decide: never detach by time */
    CHECK_EQ_INT(hm_capture_time(&p, e + 2500000000) & HM_CAPTURE_F_WINDOW, HM_CAPTURE_F_WINDOW);
}

/* hm_capture_next_change against asking hm_capture_step step by step:
 * never past the first step whose answer differs, and never stopping short
 * by more than a window edge, on plans with a previous schedule, a
 * request, everything, and no plan of steps. */
static void test_next_change(void)
{
    const struct hm_capture_plan plans[] = {
        {.id = 2, .mode = HM_CAPTURE_STEPS, .base_step = 40, .on_steps = 3, .period_steps = 7,
         .prev_base_step = 10, .prev_on_steps = 2, .prev_period_steps = 5, .req_id = 1, .req_from_step = 30,
         .req_steps = 4},
        {.id = 3, .mode = HM_CAPTURE_STEPS, .base_step = 5, .on_steps = 20, .period_steps = 300000},
        {.id = 4, .mode = HM_CAPTURE_STEPS, .base_step = 5, .on_steps = 1, .period_steps = 1},
        {.id = 5, .mode = HM_CAPTURE_TIME, .on_ms = 500, .period_ms = 5000, .req_id = 1, .req_from_step = 12,
         .req_steps = 3},
        {.id = 6, .mode = HM_CAPTURE_ALL},
    };
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        const struct hm_capture_plan *p = &plans[i];
        int bad = 0, asked = 0;
        for (int64_t s = 0; s < 700000 && !bad; s = hm_capture_next_change(p, s, 1 << 20), asked++) {
            int64_t n = hm_capture_next_change(p, s, 1 << 20);
            int f = hm_capture_step(p, s);
            bad = n <= s;
            for (int64_t t = s + 1; t < n && t < s + 400000 && !bad; t++)
                bad = hm_capture_step(p, t) != f;
        }
        CHECK(!bad);
        if (i == 1 || i >= 3)   /* sparse windows, none, or all: a handful of questions */
            CHECK(asked < 20);
    }
}

int main(void)
{
    test_next_change();
    test_put_get();
    test_progress();
    test_steps();
    test_steps_before_base();
    test_time();
    return hm_test_done();
}
