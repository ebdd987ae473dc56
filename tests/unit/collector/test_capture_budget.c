/* Rank 0's capture planner: everything when CUPTI's estimated cost fits
 * the budget, windows of whole steps (or of time) that keep it there when
 * not, a move from time to steps when steps appear, and requests placed
 * ahead of every rank. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "collector/capture_budget.h"
#include "test.h"

#define S 1000000000LL
/* Windows at the whole budget and no start-up to pay back: the plans'
 * arithmetic in round numbers. */
#define WHOLE_BUDGET .windows_share = 1, .repay_ns = -1

/* Feeds up to secs seconds of attached time at `rate` records/s, steps of
 * step_ns (none when 0; no CUPTI at all when rate < 0), until a new plan. */
static int feed(struct cap_budget *b, struct hm_capture_progress *pr, int64_t *now, double secs, double rate,
                int64_t step_ns)
{
    int changed = 0;
    for (int i = 0; i < (int)(secs * 10); i++) {
        *now += S / 10;
        if (rate >= 0) {
            pr->cupti_attached_ns += S / 10;
            pr->cupti_records += (int64_t)(rate / 10);
        }
        if (step_ns > 0) {
            pr->steps_seen += 1;
            pr->step_now += 1;
            pr->step_ns = step_ns;
            /* the hooks publish their own time with the steps: nil here,
             * unless a test says otherwise */
            if (!pr->measured.hooks_n)
                pr->measured.hooks_n = 64;
        }
        if ((changed = cap_budget_tick(b, pr, *now)))
            break;
    }
    return changed;
}

/* The cost the plan's windows add up to, as a fraction. */
static double plan_cost(const struct cap_budget *b, double step_s, double switch_s)
{
    const struct hm_capture_plan *p = &b->plan;
    if (p->mode == HM_CAPTURE_ALL)
        return b->cost;
    if (p->mode == HM_CAPTURE_STEPS)
        return ((double)p->on_steps * step_s * b->cost + 2 * switch_s) / ((double)p->period_steps * step_s);
    return ((double)p->on_ms / 1000 * b->cost + 2 * switch_s) / ((double)p->period_ms / 1000);
}

static void test_cheap_records_all(void)
{
    struct cap_budget b;
    struct cap_budget_opts o = {.budget_pct = 2, .record_ns = 3000};
    struct hm_capture_progress pr = {.step_now = -1};
    int64_t now = 0;

    cap_budget_init(&b, &o, now);
    CHECK_EQ_INT(feed(&b, &pr, &now, 0.2, 2000, 0), 0);   /* still measuring */
    CHECK_EQ_INT(feed(&b, &pr, &now, 1.0, 2000, 0), 1);   /* 2000/s x 3 us = 0.6 % */
    CHECK_EQ_INT(b.plan.mode, HM_CAPTURE_ALL);
    CHECK_NEAR(b.cost, 0.006, 0.0005);
}

/* A program that loads its data with CUDA up (a few records a second:
 * everything) and then trains at 15 % while attached: windows within a
 * rate sample or two, not at the next re-plan. */
static void test_cheap_start_then_costly(void)
{
    struct cap_budget b;
    struct cap_budget_opts o = {.budget_pct = 2, .record_ns = 3000, .switch_ns = 2000000};
    struct hm_capture_progress pr = {.step_now = -1};
    int64_t now = 0;

    cap_budget_init(&b, &o, now);
    CHECK_EQ_INT(feed(&b, &pr, &now, 3, 20, 0), 1);
    CHECK_EQ_INT(b.plan.mode, HM_CAPTURE_ALL);
    int64_t t0 = now;
    CHECK_EQ_INT(feed(&b, &pr, &now, 3, 50000, 25000000), 1);
    CHECK_EQ_INT(b.plan.mode, HM_CAPTURE_STEPS);
    CHECK(now - t0 <= S * 7 / 10);   /* was: the 2 s re-plan, then a rate averaged upwards */
    CHECK(plan_cost(&b, 0.025, 0.002) <= 0.0101);
}

static void test_costly_steps_windows(void)
{
    struct cap_budget b;
    struct cap_budget_opts o = {.budget_pct = 2, .record_ns = 3000, .switch_ns = 2000000};
    struct hm_capture_progress pr = {.step_now = -1};
    int64_t now = 0;

    cap_budget_init(&b, &o, now);
    /* 50 000 records/s x 3 us = 15 % while attached; 25 ms steps */
    CHECK_EQ_INT(feed(&b, &pr, &now, 1.5, 50000, 25000000), 1);
    CHECK_EQ_INT(b.plan.mode, HM_CAPTURE_STEPS);
    CHECK_NEAR(b.cost, 0.15, 0.01);
    CHECK_EQ_INT(b.plan.on_steps, 20);              /* 0.5 s of 25 ms steps */
    CHECK(b.plan.base_step > pr.step_now);          /* ahead of every rank */
    CHECK(b.plan.base_step - pr.step_now >= 12);    /* 0.3 s of 25 ms steps */
    /* Aimed at half the budget, less what the start-up cost above it,
     * paid back over 30 s */
    CHECK(plan_cost(&b, 0.025, 0.002) <= 0.0101);
    CHECK(cap_budget_debt_ns(&b) > 0);
    CHECK(plan_cost(&b, 0.025, 0.002) >= 0.010 - cap_budget_debt_ns(&b) / 30e9 - 0.001);   /* not needlessly less */
    /* The same cost a while later: no new plan. */
    CHECK_EQ_INT(feed(&b, &pr, &now, 6, 50000, 25000000), 0);
    /* Twice the records: a new plan with windows further apart. */
    int64_t old = b.plan.period_steps;
    CHECK_EQ_INT(feed(&b, &pr, &now, 6, 100000, 25000000), 1);
    CHECK(b.plan.period_steps > old);
    CHECK(plan_cost(&b, 0.025, 0.002) <= 0.0201);
}

/* The A/B medians replace the estimate: a cheaper CUPTI than modelled
 * widens the windows, a dearer one narrows them. */
/* A 2 % budget over steps of 25 ms whose CUPTI the model puts at 15 %,
 * with A/B medians that say 5 %. */
static void start_windows(struct cap_budget *b, struct hm_capture_progress *pr, int64_t *now)
{
    struct cap_budget_opts o = {.budget_pct = 2, .record_ns = 3000, .switch_ns = 2000000, WHOLE_BUDGET};

    memset(pr, 0, sizeof *pr);
    pr->step_now = -1;
    *now = 0;
    cap_budget_init(b, &o, *now);
    CHECK_EQ_INT(feed(b, pr, now, 1.5, 50000, 25000000), 1);   /* est. 15 % */
    pr->measured = (struct hm_capture_measured){.on_ns = 26250000, .on_n = 20, .off_ns = 25000000, .off_n = 40};
}

/* start_windows, then windows measured at 100 ms each over detached
 * steps: a plan of 20 steps in every 200. */
static void start_measured_windows(struct cap_budget *b, struct hm_capture_progress *pr, int64_t *now)
{
    start_windows(b, pr, now);
    pr->measured.win_excess_ns = 100000000, pr->measured.win_n = 3;
    CHECK_EQ_INT(feed(b, pr, now, 6, 50000, 25000000), 1);
    CHECK_EQ_INT(b->plan.period_steps, 200);
}

static void test_measured_cost(void)
{
    struct cap_budget b;
    struct hm_capture_progress pr;
    int64_t now;

    start_windows(&b, &pr, &now);
    int64_t period = b.plan.period_steps;
    CHECK_EQ_INT(feed(&b, &pr, &now, 6, 50000, 25000000), 1);
    CHECK_NEAR(b.ab, 0.05, 1e-9);
    CHECK_NEAR(b.cost, 0.05, 1e-9);
    CHECK(b.plan.period_steps < period);
    CHECK(plan_cost(&b, 0.025, 0.002) <= 0.0201);
    char line[300];
    cap_budget_describe(&b, line, sizeof line);
    CHECK_CONTAINS(line, "measured on steps with and without it");
    pr.measured.on_n = 10;   /* too few: the model again */
    CHECK_EQ_INT(feed(&b, &pr, &now, 6, 50000, 25000000), 1);
    CHECK_NEAR(b.cost, 0.15, 0.01);
}

/* Measured windows decide the period: what one window cost over as many
 * detached steps, at the budget, gives the steps between windows; a
 * window dearer than the A/B medians say (switches, re-instrumentation
 * after each attach) stretches it. Cheap windows: everything. */
static void test_window_cost(void)
{
    struct cap_budget b;
    struct hm_capture_progress pr;
    int64_t now;

    start_windows(&b, &pr, &now);
    int64_t on = b.plan.on_steps;
    CHECK_EQ_INT(on, 20);
    pr.measured.win_excess_ns = 100000000, pr.measured.win_n = 1;   /* one window: not yet believed */
    feed(&b, &pr, &now, 6, 50000, 25000000);
    CHECK(b.win_ns < 0);
    pr.measured.win_n = 3;   /* 100 ms a window at 2 % of 25 ms steps: 200 steps */
    CHECK_EQ_INT(feed(&b, &pr, &now, 6, 50000, 25000000), 1);
    CHECK_NEAR(b.win_ns, 1e8, 1);
    CHECK_EQ_INT(b.plan.on_steps, on);
    CHECK_EQ_INT(b.plan.period_steps, 200);
    CHECK_NEAR(b.cost, 0.2, 1e-9);   /* 100 ms over 20 steps of 25 ms */
    char line[300];
    cap_budget_describe(&b, line, sizeof line);
    CHECK_CONTAINS(line, "a window costs 100.0 ms over detached steps");
    pr.measured.win_excess_ns = 5000000;   /* 5 ms a window: 1 % while attached */
    struct hm_capture_plan windows = b.plan;
    pr.step_now = windows.base_step + 1;     /* the windows are in force */
    CHECK_EQ_INT(feed(&b, &pr, &now, 6, 50000, 25000000), 1);
    /* Everything, from a step ahead of every rank; until then the windows;
     * and it begins where their next window would have. */
    CHECK(hm_capture_plan_all(&b.plan));
    CHECK_EQ_INT(b.plan.mode, HM_CAPTURE_STEPS);
    CHECK(b.plan.base_step > pr.step_now);
    CHECK_EQ_INT(b.plan.prev_base_step, windows.base_step);
    CHECK_EQ_INT(b.plan.prev_on_steps, windows.on_steps);
    CHECK_EQ_INT(b.plan.prev_period_steps, windows.period_steps);
    CHECK_EQ_INT((b.plan.base_step - windows.base_step) % windows.period_steps, 0);
    cap_budget_describe(&b, line, sizeof line);
    CHECK_CONTAINS(line, "everything from step");
}

/* Two processes sharing one GPU: their A/B medians said attached steps
 * were faster than detached ones, and the planner took that as free and
 * recorded everything to the end (H200, 2026-12-02). A negative A/B is
 * noise; and windows give way to everything only on measured windows. */
static void test_no_everything_on_noise(void)
{
    struct cap_budget b;
    struct hm_capture_progress pr;
    int64_t now;

    start_windows(&b, &pr, &now);
    struct hm_capture_plan windows = b.plan;
    pr.measured.on_ns = 24000000;   /* attached 4 % faster */
    feed(&b, &pr, &now, 6, 50000, 25000000);
    CHECK(b.ab < 0);
    CHECK_EQ_INT(b.plan.mode, HM_CAPTURE_STEPS);
    CHECK(!hm_capture_plan_all(&b.plan));
    CHECK(b.plan.period_steps >= windows.period_steps * 3 / 4);   /* the model's 15 % still */
    pr.measured.on_ns = 25100000;   /* 0.4 %: cheap, but measured on a few steps only */
    feed(&b, &pr, &now, 6, 50000, 25000000);
    CHECK(!hm_capture_plan_all(&b.plan));
}

/* A window measured cheap (by chance, or for good) brings the next ones
 * at most twice as close per re-plan. */
static void test_windows_closer_by_halves(void)
{
    struct cap_budget b;
    struct hm_capture_progress pr;
    int64_t now;

    start_measured_windows(&b, &pr, &now);
    pr.measured.win_excess_ns = 20000000;   /* 20 ms a window: 40 steps would do */
    CHECK_EQ_INT(feed(&b, &pr, &now, 6, 50000, 25000000), 1);
    CHECK_EQ_INT(b.plan.period_steps, 100);
    CHECK_EQ_INT(feed(&b, &pr, &now, 6, 50000, 25000000), 1);
    CHECK_EQ_INT(b.plan.period_steps, 50);
    CHECK_EQ_INT(feed(&b, &pr, &now, 6, 50000, 25000000), 0);   /* 40 is within a quarter */
}

static void test_time_then_steps(void)
{
    struct cap_budget b;
    struct cap_budget_opts o = {.budget_pct = 2, .record_ns = 3000, .switch_ns = 2000000, WHOLE_BUDGET};
    struct hm_capture_progress pr = {.step_now = -1};
    int64_t now = 0;

    cap_budget_init(&b, &o, now);
    CHECK_EQ_INT(feed(&b, &pr, &now, 1.5, 40000, 0), 1);
    CHECK_EQ_INT(b.plan.mode, HM_CAPTURE_TIME);
    CHECK_EQ_INT(b.plan.on_ms, 500);
    CHECK(plan_cost(&b, 0, 0.002) <= 0.0201);
    CHECK(b.plan.epoch_ns > now);
    int64_t id = b.plan.id;
    CHECK_EQ_INT(feed(&b, &pr, &now, 6, 40000, 100000000), 1);   /* steps of 100 ms appear */
    CHECK_EQ_INT(b.plan.mode, HM_CAPTURE_STEPS);
    CHECK(b.plan.id > id);
    CHECK_EQ_INT(b.plan.on_steps, 5);
}

static void test_no_cupti(void)
{
    struct cap_budget b;
    struct cap_budget_opts o = {.budget_pct = 2};
    struct hm_capture_progress pr = {.step_now = -1};
    int64_t now = 0;

    cap_budget_init(&b, &o, now);
    CHECK_EQ_INT(feed(&b, &pr, &now, 4.5, -1, 0), 0);
    CHECK_EQ_INT(feed(&b, &pr, &now, 1, -1, 0), 1);   /* 5 s without CUPTI: nothing to budget */
    CHECK_EQ_INT(b.plan.mode, HM_CAPTURE_ALL);
    /* CUPTI attached, no records (a CPU-bound phase): it costs nothing. */
    cap_budget_init(&b, &o, now);
    CHECK_EQ_INT(feed(&b, &pr, &now, 2, 0, 0), 1);
    CHECK_EQ_INT(b.plan.mode, HM_CAPTURE_ALL);
}

static void test_capture_all(void)
{
    struct cap_budget b;
    struct cap_budget_opts o = {.capture_all = 1};
    struct hm_capture_progress pr = {.step_now = -1};

    cap_budget_init(&b, &o, 0);
    CHECK_EQ_INT(cap_budget_tick(&b, &pr, 1), 1);
    CHECK_EQ_INT(b.plan.mode, HM_CAPTURE_ALL);
    CHECK_EQ_INT(cap_budget_tick(&b, &pr, 2), 0);
}

static void test_requests(void)
{
    struct cap_budget b;
    struct cap_budget_opts o = {.budget_pct = 2};
    struct hm_capture_progress pr = {.step_now = -1};
    char msg[300];

    cap_budget_init(&b, &o, 0);
    CHECK_EQ_INT(cap_budget_request(&b, &pr, 5, 0, 0, msg, sizeof msg), -1);
    CHECK_CONTAINS(msg, "no steps");
    pr.step_now = 40, pr.step_ns = 10000000, pr.steps_seen = 40;   /* 10 ms steps: 30 ahead */
    CHECK_EQ_INT(cap_budget_request(&b, &pr, 5, 0, 0, msg, sizeof msg), 0);
    CHECK_EQ_INT(b.plan.req_id, 1);
    CHECK_EQ_INT(b.plan.req_from_step, 70);
    CHECK_EQ_INT(b.plan.req_steps, 5);
    CHECK_CONTAINS(msg, "steps 70 to 74");
    CHECK_EQ_INT(cap_budget_request_done(&b, &pr, 0), 0);
    pr.step_now = 74;
    CHECK_EQ_INT(cap_budget_request_done(&b, &pr, 0), 0);
    pr.step_now = 75;
    CHECK_EQ_INT(cap_budget_request_done(&b, &pr, 0), 1);
    CHECK_EQ_INT(cap_budget_request(&b, &pr, 0, 2.0, 10 * S, msg, sizeof msg), 0);
    CHECK_EQ_INT(b.plan.req_id, 2);
    CHECK_EQ_INT(b.plan.req_t1_ns - b.plan.req_t0_ns, 2 * S);
    CHECK(b.plan.req_t0_ns > 10 * S);
    CHECK_EQ_INT(cap_budget_request_done(&b, &pr, b.plan.req_t1_ns - 1), 0);
    CHECK_EQ_INT(cap_budget_request_done(&b, &pr, b.plan.req_t1_ns), 1);
    CHECK_EQ_INT(cap_budget_request(&b, &pr, 0, 0, 0, msg, sizeof msg), -1);
}

/* Ranks that share no collective drift apart (two processes on one GPU
 * measured 180 steps apart): plans and requests begin ahead of the rank
 * furthest ahead, and a plan whose base lies between the slowest and the
 * fastest rank is not replaced until the slowest passed it (the new plan
 * carries one schedule for the steps before its base). */
static void test_peers_ahead(void)
{
    struct cap_budget b;
    struct cap_budget_opts o = {.budget_pct = 2, .record_ns = 3000, .switch_ns = 2000000, WHOLE_BUDGET};
    struct hm_capture_progress pr = {.step_now = -1};
    int64_t now = 0;
    char msg[300];

    cap_budget_init(&b, &o, now);
    cap_budget_peers(&b, 5, 200);   /* another rank 185 steps ahead of rank 0 */
    CHECK_EQ_INT(feed(&b, &pr, &now, 1.5, 50000, 25000000), 1);
    CHECK_EQ_INT(b.plan.mode, HM_CAPTURE_STEPS);
    CHECK(b.plan.base_step > 200);            /* ahead of the fastest rank */
    CHECK(b.plan.base_step - 200 >= 12);      /* with the lead time */
    int64_t base = b.plan.base_step;
    /* Twice the records later on: the plan would change, but the fastest
     * rank already follows it and the slowest does not yet. */
    cap_budget_peers(&b, base - 10, base + 5);
    pr.step_now = base - 20;
    CHECK_EQ_INT(feed(&b, &pr, &now, 3, 200000, 25000000), 0);
    /* Every rank past the base: the new plan comes, ahead of the fastest,
     * with the one before it as the schedule up to its own base. */
    int64_t id = b.plan.id;
    cap_budget_peers(&b, base + 1, base + 90);
    pr.step_now = base + 2;
    CHECK_EQ_INT(feed(&b, &pr, &now, 3, 200000, 25000000), 1);
    CHECK(b.plan.id > id);
    CHECK(b.plan.base_step > base + 90);
    CHECK_EQ_INT(b.plan.prev_base_step, base);
    /* Requests too begin ahead of the fastest rank. */
    cap_budget_peers(&b, pr.step_now, pr.step_now + 300);
    CHECK_EQ_INT(cap_budget_request(&b, &pr, 5, 0, now, msg, sizeof msg), 0);
    CHECK(b.plan.req_from_step > pr.step_now + 300);
    /* Ranks behind rank 0 change nothing. */
    cap_budget_peers(&b, 0, 1);
    CHECK_EQ_INT(cap_budget_request(&b, &pr, 5, 0, now, msg, sizeof msg), 0);
    CHECK(b.plan.req_from_step > pr.step_now && b.plan.req_from_step <= pr.step_now + 20);
}

/* A new plan of windows begins where the old one's next window would
 * have: each re-plan once added a window of its own at once (a launch-
 * bound LSTM had 19 windows in 5 112 steps under plans of one in 355 to
 * 711, re-planned 8 times). */
static void test_replan_keeps_phase(void)
{
    struct cap_budget b;
    struct hm_capture_progress pr;
    int64_t now;

    start_measured_windows(&b, &pr, &now);
    struct hm_capture_plan old = b.plan;
    pr.step_now = old.base_step + 30;         /* inside the old plan, past a window */
    pr.measured.win_excess_ns = 200000000;   /* twice the cost: windows twice as far apart */
    CHECK_EQ_INT(feed(&b, &pr, &now, 6, 50000, 25000000), 1);
    CHECK_EQ_INT(b.plan.period_steps, 400);
    CHECK_EQ_INT(b.plan.base_step, old.base_step + old.period_steps);
    CHECK_EQ_INT(b.plan.prev_base_step, old.base_step);
    /* No step from the old plan's first window to the new base is in a
     * window that neither plan would have had. */
    int in_windows = 0;
    for (int64_t st = old.base_step; st < b.plan.base_step + b.plan.period_steps; st++)
        in_windows += hm_capture_step(&b.plan, st) != 0;
    CHECK_EQ_INT(in_windows, 2 * old.on_steps);
}

/* The start-up runs attached (the rate is measured, then the first
 * windows' base step is ahead of every rank): what it cost above the
 * budget thins the windows until it is paid back, then they come back to
 * the budget's aim. A busy loop of known steps is measured in 0.1 s. */
static void test_startup_paid_back(void)
{
    struct cap_budget b;
    struct cap_budget_opts o = {.budget_pct = 2, .record_ns = 3000, .switch_ns = 2000000, .repay_ns = 5 * S};
    struct hm_capture_progress pr = {.step_now = -1};
    int64_t now = 0;

    cap_budget_init(&b, &o, now);
    CHECK_EQ_INT(feed(&b, &pr, &now, 3, 20, 0), 1);   /* loading data: everything */
    CHECK_EQ_INT(b.plan.mode, HM_CAPTURE_ALL);
    pr.steps_seen = 2, pr.step_now = 1;
    int64_t t0 = now;
    /* 100 000 records/s x 3 us: 30 % while attached */
    CHECK_EQ_INT(feed(&b, &pr, &now, 3, 100000, 5000000), 1);
    CHECK(now - t0 <= S * 3 / 10);   /* one quick sample, not 0.3 s of them */
    CHECK_EQ_INT(b.plan.mode, HM_CAPTURE_STEPS);
    CHECK(cap_budget_debt_ns(&b) > 0.3 * 0.3e9 - 1e6);   /* at least the 0.3 s of lead at 30 % */
    /* and the 3 s of loading at 20 records/s cost nothing to speak of */
    CHECK(cap_budget_debt_ns(&b) < 0.6 * 0.3e9);
    /* the debt over 5 s is more than the aim: a quarter of it */
    CHECK_NEAR(plan_cost(&b, 0.005, 0.002), 0.010 / 4, 0.001);
    int64_t thin = b.plan.period_steps;
    pr.step_now = b.plan.base_step + 1;
    feed(&b, &pr, &now, 2.5, 100000, 5000000);
    CHECK_EQ_INT(b.plan.period_steps, thin);   /* still paying back */
    pr.step_now = b.plan.base_step + 1;
    CHECK_EQ_INT(feed(&b, &pr, &now, 6, 100000, 5000000), 1);
    CHECK(b.plan.period_steps < thin);         /* paid: closer, by halves */
    for (int i = 0; i < 4; i++) {
        pr.step_now = b.plan.base_step + 1;
        feed(&b, &pr, &now, 6, 100000, 5000000);
    }
    CHECK_NEAR(plan_cost(&b, 0.005, 0.002), 0.010, 0.003);
}

/* Windows planned on the first sample of a loop still warming up (7 500
 * records/s), then the training's rate (100 000): a new plan within a
 * sample or two, not at the 2 s re-plan. */
static void test_rate_rise_replans_windows(void)
{
    struct cap_budget b;
    struct cap_budget_opts o = {.budget_pct = 2, .record_ns = 3000, .switch_ns = 2000000, WHOLE_BUDGET};
    struct hm_capture_progress pr = {.step_now = -1};
    int64_t now = 0;

    cap_budget_init(&b, &o, now);
    CHECK_EQ_INT(feed(&b, &pr, &now, 1.5, 7500, 5000000), 1);   /* 2.25 %: windows close together */
    CHECK_EQ_INT(b.plan.mode, HM_CAPTURE_STEPS);
    int64_t close = b.plan.period_steps;
    pr.step_now = b.plan.base_step + 1;
    int64_t t0 = now;
    CHECK_EQ_INT(feed(&b, &pr, &now, 3, 100000, 5000000), 1);
    CHECK(now - t0 <= S * 4 / 10);
    CHECK(b.plan.period_steps > 5 * close);
}

/* The start-up's debt follows the estimate of CUPTI's cost: the model's
 * 3 us a record put it at 90 %, steps with and without it measured 30 %. */
static void test_debt_follows_measured_cost(void)
{
    struct cap_budget b;
    struct cap_budget_opts o = {.budget_pct = 2, .record_ns = 3000, .switch_ns = 2000000};
    struct hm_capture_progress pr = {.step_now = -1};
    int64_t now = 0;

    cap_budget_init(&b, &o, now);
    CHECK_EQ_INT(feed(&b, &pr, &now, 1.5, 300000, 5000000), 1);
    double modelled = cap_budget_debt_ns(&b);
    CHECK(modelled > 0);
    pr.step_now = b.plan.base_step + 1;
    pr.measured = (struct hm_capture_measured){.on_ns = 6500000, .on_n = 20, .off_ns = 5000000, .off_n = 40};
    feed(&b, &pr, &now, 3, 300000, 5000000);
    CHECK_NEAR(b.cost, 0.3, 0.01);
    CHECK(cap_budget_debt_ns(&b) < modelled / 2);
}

/* Windows that come closer begin one new period after the old
 * schedule's last window (or a lead ahead of every rank, if later), not
 * at the old schedule's next one, which may lie past the end of the run. */
static void test_replan_closer_sooner(void)
{
    struct cap_budget b;
    struct hm_capture_progress pr;
    int64_t now;

    start_measured_windows(&b, &pr, &now);   /* 20 steps in every 200 */
    struct hm_capture_plan old = b.plan;
    pr.step_now = old.base_step + 30;
    pr.measured.win_excess_ns = 50000000;    /* half the cost: every 100 */
    CHECK_EQ_INT(feed(&b, &pr, &now, 6, 50000, 25000000), 1);
    CHECK_EQ_INT(b.plan.period_steps, 100);
    CHECK_EQ_INT(b.plan.base_step, old.base_step + 100);
    /* before that base (a re-plan comes within 2 s, 20 steps here): the
     * schedule every rank is in is still the old one, and the lead decides */
    pr.step_now = b.plan.base_step - 40;
    pr.measured.win_excess_ns = 25000000;
    CHECK_EQ_INT(feed(&b, &pr, &now, 6, 50000, 25000000), 1);
    CHECK_EQ_INT(b.plan.period_steps, 50);
    CHECK_EQ_INT(b.plan.prev_base_step, old.base_step);
    CHECK_EQ_INT(b.plan.base_step, pr.step_now + 12);
    CHECK(b.plan.base_step < old.base_step + old.period_steps);
}

/* The hooks' own time per step comes out of the windows' aim: at half the
 * budget (with HOOKS_FACTOR) windows are half as frequent; at the whole
 * budget next to none are left. Too few steps measured: not believed. */
static void test_hooks_take_their_share(void)
{
    struct cap_budget b;
    struct hm_capture_progress pr;
    int64_t now;

    start_measured_windows(&b, &pr, &now);   /* 20 steps in every 200, at 2 % */
    int64_t period = b.plan.period_steps;
    /* 2 x 125,000 ns of 25 ms: 1 % */
    pr.measured.hooks_ns = 125000, pr.measured.hooks_n = 64;
    CHECK_EQ_INT(feed(&b, &pr, &now, 6, 50000, 25000000), 1);
    CHECK_NEAR(b.hooks, 0.01, 1e-4);
    CHECK(b.plan.period_steps >= 2 * period && b.plan.period_steps <= 2 * period + 1);
    char line[400];
    cap_budget_describe(&b, line, sizeof line);
    CHECK_CONTAINS(line, "the Python hooks take 1 % of a step");
    pr.measured.hooks_ns = 300000;   /* 2.4 %: more than the budget */
    CHECK_EQ_INT(feed(&b, &pr, &now, 6, 50000, 25000000), 1);
    CHECK(b.plan.period_steps >= 100 * period);   /* the aim's floor, 0.01 % */
}

/* Steps known before the hooks have timed themselves: the first plan
 * leaves next to nothing for windows; once their share is known the
 * windows come at the period it allows at once, not by halves. */
static void test_windows_wait_for_hooks(void)
{
    struct cap_budget b;
    struct cap_budget_opts o = {.budget_pct = 2, .record_ns = 3000, .switch_ns = 2000000};
    struct hm_capture_progress pr = {.step_now = -1};
    int64_t now = 0;

    cap_budget_init(&b, &o, now);
    pr.measured.hooks_n = 1;   /* too few steps to believe */
    CHECK_EQ_INT(feed(&b, &pr, &now, 3, 300000, 5000000), 1);
    CHECK_EQ_INT(b.plan.mode, HM_CAPTURE_STEPS);
    int64_t blind = b.plan.period_steps;
    CHECK(blind > 10000);
    pr.measured.hooks_n = 64, pr.measured.hooks_ns = 0;
    CHECK_EQ_INT(feed(&b, &pr, &now, 3, 300000, 5000000), 1);
    CHECK(b.plan.period_steps < blind / 50);
    CHECK(b.plan.base_step <= pr.step_now + b.plan.period_steps);
}

/* A fresh planner at now 0 for `ranks` ranks into one writer of 1 M rows/s. */
static void writer_start(struct cap_budget *b, const struct cap_budget_opts *o, struct hm_capture_progress *pr,
                         int64_t *now, int ranks)
{
    memset(pr, 0, sizeof *pr);
    pr->step_now = -1;
    *now = 0;
    cap_budget_init(b, o, 0);
    cap_budget_writer(b, ranks, 1e6);
}

/* A record rate the budget allows in full (40 000 records/s at 0.1 us:
 * 0.4 %), from 8 ranks, is everything; from 1,024 ranks it is 41 M rows/s
 * into one writer of 1 M/s: windows, spaced so that all ranks together
 * send at most 0.8 M rows/s, and the plan line says why. */
static void test_writer_spaces_windows(void)
{
    struct cap_budget b;
    struct cap_budget_opts o = {.budget_pct = 2, .record_ns = 100, .switch_ns = 2000000, WHOLE_BUDGET};
    struct cap_budget_opts all = {.capture_all = 1, .record_ns = 100};
    struct hm_capture_progress pr;
    int64_t now, t0;
    char line[512];

    writer_start(&b, &o, &pr, &now, 8);
    CHECK_EQ_INT(feed(&b, &pr, &now, 1.5, 40000, 25000000), 1);
    CHECK(hm_capture_plan_all(&b.plan));

    writer_start(&b, &o, &pr, &now, 1024);
    CHECK_EQ_INT(feed(&b, &pr, &now, 1.5, 40000, 25000000), 1);
    CHECK_EQ_INT(b.plan.mode, HM_CAPTURE_STEPS);
    CHECK(!hm_capture_plan_all(&b.plan));
    CHECK_EQ_INT(b.plan.on_steps, 20);
    /* 1,024 ranks x 40 000 records/s x on / period <= 0.8 M rows/s, and not needlessly sparse */
    CHECK(1024.0 * 40000 * (double)b.plan.on_steps / (double)b.plan.period_steps <= 0.8e6 + 1);
    CHECK(1024.0 * 40000 * (double)b.plan.on_steps / (double)b.plan.period_steps >= 0.75e6);
    cap_budget_describe(&b, line, sizeof line);
    CHECK(strstr(line, "at most 1 step in 52 for rank 0's writer (1 M rows/s for 1024 ranks)") != NULL);

    /* A plan of everything made while the rate was low (loading data):
     * re-planned at once when the writer could not keep up with it. */
    writer_start(&b, &o, &pr, &now, 1024);
    CHECK_EQ_INT(feed(&b, &pr, &now, 3, 20, 0), 1);
    CHECK_EQ_INT(b.plan.mode, HM_CAPTURE_ALL);
    t0 = now;
    CHECK_EQ_INT(feed(&b, &pr, &now, 3, 40000, 25000000), 1);
    CHECK(!hm_capture_plan_all(&b.plan));
    CHECK(now - t0 <= S * 7 / 10);

    /* --capture-all is what the user asked for: everything, whatever the writer. */
    writer_start(&b, &all, &pr, &now, 1024);
    CHECK_EQ_INT(feed(&b, &pr, &now, 1, 40000, 25000000), 1);
    CHECK_EQ_INT(b.plan.mode, HM_CAPTURE_ALL);
}

int main(void)
{
    test_cheap_records_all();
    test_cheap_start_then_costly();
    test_costly_steps_windows();
    test_measured_cost();
    test_window_cost();
    test_no_everything_on_noise();
    test_windows_closer_by_halves();
    test_time_then_steps();
    test_no_cupti();
    test_capture_all();
    test_requests();
    test_peers_ahead();
    test_replan_keeps_phase();
    test_startup_paid_back();
    test_rate_rise_replans_windows();
    test_debt_follows_measured_cost();
    test_replan_closer_sooner();
    test_writer_spaces_windows();
    test_hooks_take_their_share();
    test_windows_wait_for_hooks();
    return hm_test_done();
}
