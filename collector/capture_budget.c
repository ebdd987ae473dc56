/* Rank 0's capture planner (capture_budget.h). */
#include "capture_budget.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CALIBRATE_NS_MIN RATE_SAMPLE_MIN_NS   /* attached time before a first estimate: one rate sample */
#define NO_CUPTI_NS 5000000000LL       /* no records by then: nothing to budget */
#define REPLAN_NS 2000000000LL         /* re-estimates at most this often */
#define AB_MIN 16                      /* steps of each kind before A/B is believed */
#define WIN_MIN 2                      /* windows measured before their cost is believed */
#define RATE_SAMPLE_NS 300000000LL     /* attached time one rate sample needs */
#define RATE_SAMPLE_MIN_NS 100000000LL /* or this, when it holds RATE_SAMPLE_RECORDS */
#define RATE_SAMPLE_RECORDS 5000
#define WINDOWS_SHARE 0.5
#define REPAY_NS 30000000000LL
#define WINDOW_S 0.5     /* a window's length: enough steps to look at */
#define LEAD_S 0.3       /* a plan reaches every rank well within this */
#define LEAD_STEPS 2     /* and never fewer steps ahead than this */
#define MAX_ON_STEPS 20
/* The hooks time themselves; what that misses (their calls into torch's
 * hook dispatch, the caches they cool for the program) was up to 0.4x more
 * in-process on the H200 and 0.9x more on a 1.5 ms CPU loop
 * (bench/inprocess_ab.py, bench/RESULTS.md). */
#define HOOKS_FACTOR 2.0
#define HOOKS_MIN_STEPS 8
#define MIN_AIM 1e-4     /* windows' aim when the hooks take the whole budget: next to none */
#define WRITER_MARGIN 0.8   /* of the writer's rate, for the rows that are not CUPTI's */
#define WRITER_ROWS_S 1.0e6 /* the live merger: 0.94-1.2 M rows per busy second (bench/live.sh) */

/* What one record costs, from CUPTI's per-kernel instrumentation on the
 * H200 (bench/RESULTS.md: a launch-bound step, attached against detached
 * in one process). */
enum { RECORD_NS_H200 = 3000 };

int64_t cap_budget_default_record_ns(void)
{
    const char *v = getenv("HTAMERGE_CUPTI_RECORD_NS");
    long long n = v && *v ? atoll(v) : 0;
    return n > 0 ? (int64_t)n : RECORD_NS_H200;
}

void cap_budget_init(struct cap_budget *b, const struct cap_budget_opts *o, int64_t now_ns)
{
    memset(b, 0, sizeof *b);
    b->o = *o;
    if (b->o.record_ns <= 0)
        b->o.record_ns = RECORD_NS_H200;
    if (b->o.switch_ns <= 0)
        b->o.switch_ns = 2000000;
    if (b->o.windows_share <= 0 || b->o.windows_share > 1)
        b->o.windows_share = WINDOWS_SHARE;
    if (b->o.repay_ns == 0)
        b->o.repay_ns = REPAY_NS;
    b->started_ns = b->last_ns = now_ns;
    b->rate = -1;
    b->ab = -1;
    b->win_ns = -1;
    b->plan.budget_pct = o->capture_all ? 0 : o->budget_pct;
    b->plan.mode = HM_CAPTURE_UNSET;
    b->peers_min_step = b->peers_max_step = -1;
}

static double aim(const struct cap_budget *b);

double cap_budget_default_writer_rows_s(void)
{
    const char *v = getenv("HTAMERGE_WRITER_ROWS_S");
    double n = v && *v ? atof(v) : 0;
    return n > 0 ? n : WRITER_ROWS_S;
}

void cap_budget_writer(struct cap_budget *b, int ranks, double rows_per_s)
{
    b->ranks = ranks;
    b->writer_rows_s = rows_per_s;
}

/* The share of the time (of steps) CUPTI may be attached so that every
 * rank's records, at rank 0's rate while attached, stay within the
 * writer's; 1 when it keeps up with everything, or nothing is known. */
static double writer_share(const struct cap_budget *b)
{
    double d;
    if (b->ranks <= 0 || b->writer_rows_s <= 0 || b->rate <= 0)
        return 1;
    d = WRITER_MARGIN * b->writer_rows_s / ((double)b->ranks * b->rate);
    return d < 1 ? d : 1;
}

/* Windows are needed: for the cost, or for the writer. */
static int must_window(const struct cap_budget *b)
{
    return b->cost > aim(b) || writer_share(b) < 1;
}

void cap_budget_peers(struct cap_budget *b, int64_t min_step, int64_t max_step)
{
    b->peers_min_step = min_step;
    b->peers_max_step = max_step;
}

/* The step of the rank furthest ahead (rank 0 included), and of the one
 * furthest behind. */
static int64_t fastest_step(const struct cap_budget *b, const struct hm_capture_progress *pr)
{
    return b->peers_max_step > pr->step_now ? b->peers_max_step : pr->step_now;
}

static int64_t slowest_step(const struct cap_budget *b, const struct hm_capture_progress *pr)
{
    return b->peers_min_step >= 0 && b->peers_min_step < pr->step_now ? b->peers_min_step : pr->step_now;
}

static void new_plan(struct cap_budget *b, int64_t mode)
{
    int64_t id = b->plan.id + 1;
    struct hm_capture_plan keep = b->plan;

    memset(&b->plan, 0, sizeof b->plan);
    b->plan.id = id;
    b->plan.mode = mode;
    b->plan.budget_pct = keep.budget_pct;
    b->plan.est_cost_pct = b->cost * 100.0;
    /* a request in progress survives a re-plan */
    b->plan.req_id = keep.req_id;
    b->plan.req_from_step = keep.req_from_step;
    b->plan.req_steps = keep.req_steps;
    b->plan.req_t0_ns = keep.req_t0_ns;
    b->plan.req_t1_ns = keep.req_t1_ns;
}

static int64_t lead_steps(const struct hm_capture_progress *pr)
{
    int64_t n = pr->step_ns > 0 ? (int64_t)ceil(LEAD_S * 1e9 / (double)pr->step_ns) : 0;
    return n > LEAD_STEPS ? n : LEAD_STEPS;
}

/* A plan of steps from base_step; the steps before it keep the schedule
 * of the plan it replaces (everything, after a plan of everything), so
 * that every rank switches at the same step. */
static void steps_plan(struct cap_budget *b, const struct hm_capture_progress *pr, int64_t on, int64_t period)
{
    struct hm_capture_plan keep = b->plan;
    int64_t pb = 0, pon = 0, pperiod = 0;

    if (keep.mode == HM_CAPTURE_STEPS && slowest_step(b, pr) < keep.base_step)
        pb = keep.prev_base_step, pon = keep.prev_on_steps, pperiod = keep.prev_period_steps;
    else if (keep.mode == HM_CAPTURE_STEPS)
        pb = keep.base_step, pon = keep.on_steps, pperiod = keep.period_steps;
    else if (keep.mode != HM_CAPTURE_TIME)
        pon = pperiod = 1;
    /* A plan that replaces windows begins where the old schedule's next
     * window would: a re-plan at once would add a window each time (on a
     * launch-bound LSTM, 19 windows in 5 112 steps under plans of one in
     * 355 to 711, re-planned 8 times). Or sooner, one new period after
     * the old schedule's last window, when the windows come closer: a
     * first plan of one window in 7 633 steps (a start-up estimate three
     * times too high) otherwise kept a 3-epoch run of 5 112 steps from
     * recording anything after its start. */
    int64_t ahead = fastest_step(b, pr) + lead_steps(pr), base = ahead;
    if (pperiod > pon && pon > 0 && ahead > pb) {
        int64_t next_old = pb + (ahead - pb + pperiod - 1) / pperiod * pperiod;
        int64_t next_new = next_old - pperiod + period;
        base = period > on && next_new < next_old ? (next_new > ahead ? next_new : ahead) : next_old;
    }
    new_plan(b, HM_CAPTURE_STEPS);
    b->plan.on_steps = on;
    b->plan.period_steps = period;
    b->plan.base_step = base;
    b->plan.prev_base_step = pb;
    b->plan.prev_on_steps = pon;
    b->plan.prev_period_steps = pperiod;
}


/* Samples the record rate over the attached time since the last sample. */
static void sample_rate(struct cap_budget *b, const struct hm_capture_progress *pr, int64_t now_ns)
{
    if (!b->have_last) {
        b->last = *pr;
        b->last_ns = now_ns;
        b->have_last = 1;
        return;
    }
    int64_t dt = pr->cupti_attached_ns - b->last.cupti_attached_ns;
    int64_t n = pr->cupti_records - b->last.cupti_records;
    /* A busy loop of known steps gives a believable rate sooner: every
     * 0.1 s attached at +30 % while calibrating is 0.03 s of the program's
     * time. Before steps are known a short sample would only plan windows
     * of time, soon replaced. */
    int quick = pr->steps_seen >= 2 && dt >= RATE_SAMPLE_MIN_NS && n >= RATE_SAMPLE_RECORDS;
    if (dt < RATE_SAMPLE_NS && !quick)
        return;
    double r = (double)n * 1e9 / (double)dt;
    /* Follows a change (warm-up to training) within a few samples, and a
     * rise at once: recording everything while it costs more than the
     * budget is what the budget is there to stop. */
    b->rate = b->rate < 0 || r > b->rate ? r : 0.5 * b->rate + 0.5 * r;
    b->last = *pr;
    b->last_ns = now_ns;
}

static double switch_ns(const struct cap_budget *b, const struct hm_capture_progress *pr)
{
    return pr->cupti_switches >= 2 ? (double)pr->cupti_switch_ns / (double)pr->cupti_switches
                                   : (double)b->o.switch_ns;
}

/* What CUPTI may cost: the budget less a share kept for the hooks, NVTX
 * and the estimate's error. A plan aimed at the whole budget met it only
 * on average (an LSTM's windows measured 1.6 and 3.9 % of two runs
 * planned at 2 %), and one aimed at three quarters of it cost a GPU-heavy
 * loop 1.8 % in all, pooled over four runs, one of them 3.4 %
 * (bench/RESULTS.md, seventeenth session). */
static double aim(const struct cap_budget *b)
{
    /* Until the hooks' share is known, none is left for windows: a first
     * plan's windows on a launch-bound LSTM, planned at 3/4 of the budget,
     * cost more than the budget on their own there (bench/RESULTS.md). */
    if (b->hooks_pending)
        return MIN_AIM;
    double budget = b->o.budget_pct / 100.0, a = budget * b->o.windows_share, left = budget - b->hooks;
    return left < a ? (left > MIN_AIM ? left : MIN_AIM) : a;
}

/* The aim for windows: less, for a while, by what the start-up cost above
 * the budget (CUPTI stays attached while its rate is measured and until
 * the first windows' base step; on a launch-bound loop ~0.5 s at +30 %,
 * 1.5 % of a 10 s run). Never below a quarter, so windows keep coming. */
static double windows_aim(const struct cap_budget *b, int64_t now_ns)
{
    double a = aim(b), debt = cap_budget_debt_ns(b);
    if (debt > 0 && b->o.repay_ns > 0 && now_ns < b->repay_from_ns + b->o.repay_ns) {
        double paid = a - debt / (double)b->o.repay_ns;
        a = paid > a / 4 ? paid : a / 4;
    }
    return a;
}

/* Before the first plan of windows: how long recording everything ran at
 * the training's record rate until now, and will until the plan's base
 * step (a lead ahead of every rank), and what the budget allowed over that
 * time. By records, not attached time: loading data with CUDA up is
 * attached for seconds at almost no records, and costs almost nothing. */
static void note_startup(struct cap_budget *b, const struct hm_capture_progress *pr, int64_t now_ns)
{
    double lead_ns = pr->steps_seen >= 2 && pr->step_ns > 0 ? (double)(lead_steps(pr) * pr->step_ns) : LEAD_S * 1e9;
    b->repay_from_ns = now_ns > 0 ? now_ns : 1;
    b->startup_busy_ns = (b->rate > 0 ? (double)pr->cupti_records * 1e9 / b->rate : 0) + lead_ns;
    b->startup_allowed_ns = ((double)(now_ns - b->started_ns) + lead_ns) * aim(b);
}

/* At today's estimate of the cost while attached: the first estimate,
 * from the model, was three times the measured one on a launch-bound LSTM. */
double cap_budget_debt_ns(const struct cap_budget *b)
{
    double spent = b->startup_busy_ns * b->cost;
    return spent > b->startup_allowed_ns ? spent - b->startup_allowed_ns : 0;
}

/* The plan that keeps cost within the budget; 1 when it differs enough
 * from the current one to be worth sending. */
static int plan_windows(struct cap_budget *b, const struct hm_capture_progress *pr, int64_t now_ns)
{
    double budget = aim(b), cost = b->cost;
    /* one attach and one detach per window, unless measured with it */
    double sw = b->win_ns >= 0 ? 0 : 2.0 * switch_ns(b, pr);
    int have_steps = pr->steps_seen >= 2 && pr->step_ns > 0 && pr->step_now >= 0;

    double share = writer_share(b);

    if (cost <= budget && share >= 1) {
        if (hm_capture_plan_all(&b->plan) || (b->plan.mode != HM_CAPTURE_UNSET && cost > 0.8 * budget))
            return 0;
        /* Windows give way to everything only on what whole windows cost:
         * medians of a few steps mislead (two processes sharing one GPU
         * measured attached steps as fast as detached ones, and a plan of
         * everything measures nothing more). */
        if (b->plan.mode == HM_CAPTURE_STEPS && b->win_ns < 0)
            return 0;
        if (have_steps)
            steps_plan(b, pr, 1, 1);
        else
            new_plan(b, HM_CAPTURE_ALL);
        return 1;
    }
    budget = windows_aim(b, now_ns);
    if (have_steps) {
        /* A measured window's cost is per detached step. */
        double step = b->win_ns >= 0 ? (double)pr->measured.off_ns : (double)pr->step_ns;
        int64_t on = (int64_t)ceil(WINDOW_S * 1e9 / step);
        if (on < 1)
            on = 1;
        if (on > MAX_ON_STEPS)
            on = MAX_ON_STEPS;
        int64_t period = (int64_t)ceil(((double)on * step * cost + sw) / (budget * step));
        if (period < (int64_t)ceil((double)on / share))
            period = (int64_t)ceil((double)on / share);
        if (period <= on)
            period = on + 1;
        /* Windows come at most twice as close per re-plan: one low
         * measurement moves them a little, a lasting one soon all the way. */
        if (b->plan.mode == HM_CAPTURE_STEPS && !hm_capture_plan_all(&b->plan) && b->plan.on_steps == on &&
            period < b->plan.period_steps / 2 && !b->planned_blind)
            period = b->plan.period_steps / 2 > on ? b->plan.period_steps / 2 : on + 1;
        if (b->plan.mode == HM_CAPTURE_STEPS && b->plan.on_steps == on &&
            fabs((double)(period - b->plan.period_steps)) <= 0.25 * (double)b->plan.period_steps)
            return 0;
        steps_plan(b, pr, on, period);
        b->planned_blind = b->hooks_pending;
        return 1;
    }
    int64_t on_ms = (int64_t)(WINDOW_S * 1000);
    int64_t period_ms = (int64_t)ceil(((double)on_ms * 1e6 * cost + sw) / (budget * 1e6));
    if (period_ms < (int64_t)ceil((double)on_ms / share))
        period_ms = (int64_t)ceil((double)on_ms / share);
    if (period_ms <= on_ms)
        period_ms = on_ms + 1;
    if (b->plan.mode == HM_CAPTURE_TIME &&
        fabs((double)(period_ms - b->plan.period_ms)) <= 0.25 * (double)b->plan.period_ms)
        return 0;
    new_plan(b, HM_CAPTURE_TIME);
    b->plan.on_ms = on_ms;
    b->plan.period_ms = period_ms;
    b->plan.epoch_ns = now_ns + (int64_t)(LEAD_S * 1e9);
    return 1;
}

/* A plan of everything made while the program was cheap (loading data
 * before its first step, say) that the record rate now says costs more
 * than the budget: re-planned at once, not at the next re-plan. On a
 * launch-bound loop, two seconds attached at +40 % were +8 % on a run of
 * 10 s (bench/RESULTS.md, 2026-12-02). */
static int over_budget_all(const struct cap_budget *b)
{
    return hm_capture_plan_all(&b->plan) && !b->o.capture_all &&
           (b->rate * (double)b->o.record_ns / 1e9 > aim(b) || writer_share(b) < 1);
}

/* Windows planned on a rate that has since more than doubled (a first
 * sample taken as the training warmed up: windows of 20 steps in every 75
 * ran for 450 steps of an LSTM before the 2 s re-plan): re-planned at once. */
static int rate_doubled(const struct cap_budget *b)
{
    return b->decided_rate > 0 && b->rate > 2 * b->decided_rate;
}

int cap_budget_tick(struct cap_budget *b, const struct hm_capture_progress *pr, int64_t now_ns)
{
    if (b->o.capture_all) {
        if (b->plan.id)
            return 0;
        new_plan(b, HM_CAPTURE_ALL);
        return 1;
    }
    sample_rate(b, pr, now_ns);
    if (b->plan.mode == HM_CAPTURE_UNSET) {
        if (pr->cupti_records == 0 && now_ns - b->started_ns >= NO_CUPTI_NS) {
            new_plan(b, HM_CAPTURE_ALL);   /* no CUPTI here: NVTX, NCCL, hooks cost ~nothing */
            b->decided_ns = now_ns;
            return 1;
        }
        if (pr->cupti_attached_ns < CALIBRATE_NS_MIN || b->rate < 0)
            return 0;
    } else if (b->rate < 0 || (now_ns - b->decided_ns < REPLAN_NS && !over_budget_all(b) && !rate_doubled(b))) {
        return 0;
    }
    /* Some ranks already follow the plan from its base, others still the
     * schedule before it; a new plan carries one schedule for the steps
     * before its own base, so it waits until the slowest rank got there. */
    if (b->plan.mode == HM_CAPTURE_STEPS && slowest_step(b, pr) < b->plan.base_step &&
        fastest_step(b, pr) >= b->plan.base_step)
        return 0;
    b->decided_ns = now_ns;
    b->decided_rate = b->rate;
    b->cost = b->rate * (double)b->o.record_ns / 1e9;
    /* Measured beats modelled: steps of the same run with CUPTI attached
     * against detached (the hooks' medians, switches left out). */
    b->ab = -1;
    const struct hm_capture_measured *m = &pr->measured;
    if (m->on_n >= AB_MIN && m->off_n >= AB_MIN && m->off_ns > 0) {
        b->ab = (double)m->on_ns / (double)m->off_ns - 1.0;
        if (b->ab < 0)
            b->ab = -1;   /* faster attached than not: noise, not a measured zero */
        else
            b->cost = b->ab > 0.001 ? b->ab : 0.001;
    }
    /* Better still: what whole windows of this plan cost, switches and
     * all, over as many detached steps. As a cost while attached it is
     * per window step; the plan's period follows from it directly. */
    b->win_ns = -1;
    if (m->win_n >= WIN_MIN && m->off_n >= AB_MIN && m->off_ns > 0 && b->plan.mode == HM_CAPTURE_STEPS &&
        b->plan.on_steps > 0 && !hm_capture_plan_all(&b->plan)) {
        b->win_ns = m->win_excess_ns > 0 ? (double)m->win_excess_ns : 0;
        double per_step = b->win_ns / ((double)b->plan.on_steps * (double)m->off_ns);
        b->cost = per_step > 0.001 ? per_step : 0.001;
    }
    /* What recording steps costs comes out of the windows' share: the
     * hooks' own time per step, over a detached step. */
    double step_ns = m->off_n >= AB_MIN && m->off_ns > 0 ? (double)m->off_ns : (double)pr->step_ns;
    b->hooks = m->hooks_n >= HOOKS_MIN_STEPS && step_ns > 0 ? HOOKS_FACTOR * (double)m->hooks_ns / step_ns : 0;
    b->hooks_pending = pr->steps_seen >= 2 && pr->step_ns > 0 && m->hooks_n < HOOKS_MIN_STEPS;
    /* Steps became known after a plan in time: windows move to steps. */
    int want_steps = pr->steps_seen >= 2 && pr->step_ns > 0;
    if (b->plan.mode == HM_CAPTURE_TIME && want_steps && must_window(b))
        b->plan.mode = HM_CAPTURE_UNSET;   /* forces a new plan below */
    if (!b->repay_from_ns && b->cost > aim(b))
        note_startup(b, pr, now_ns);
    int changed = plan_windows(b, pr, now_ns);
    if (changed)
        b->plan.est_cost_pct = b->cost * 100.0;
    return changed;
}

int cap_budget_request(struct cap_budget *b, const struct hm_capture_progress *pr, int64_t steps,
                       double seconds, int64_t now_ns, char *msg, size_t len)
{
    int64_t id = b->plan.req_id + 1;

    if (steps > 0) {
        if (pr->step_now < 0) {
            snprintf(msg, len, "no steps are known in this job yet (the Python hooks found none); "
                               "ask for time instead: --seconds S");
            return -1;
        }
        int64_t from = fastest_step(b, pr) + lead_steps(pr);
        struct hm_capture_plan keep = b->plan;
        b->plan.id = keep.id + 1;
        b->plan.req_id = id;
        b->plan.req_from_step = from;
        b->plan.req_steps = steps;
        b->plan.req_t0_ns = b->plan.req_t1_ns = 0;
        if (!keep.id)
            b->plan.mode = HM_CAPTURE_UNSET;
        snprintf(msg, len, "request %lld: every rank records steps %lld to %lld in full",
                 (long long)id, (long long)from, (long long)(from + steps - 1));
        return 0;
    }
    if (seconds <= 0 || seconds > 3600) {
        snprintf(msg, len, "ask for 1 or more steps, or 0 < seconds <= 3600");
        return -1;
    }
    b->plan.id++;
    b->plan.req_id = id;
    b->plan.req_from_step = b->plan.req_steps = 0;
    b->plan.req_t0_ns = now_ns + (int64_t)(LEAD_S * 1e9);
    b->plan.req_t1_ns = b->plan.req_t0_ns + (int64_t)(seconds * 1e9);
    snprintf(msg, len, "request %lld: every rank records %.3g s in full from %.1f s from now", (long long)id,
             seconds, LEAD_S);
    return 0;
}

int cap_budget_request_done(const struct cap_budget *b, const struct hm_capture_progress *pr, int64_t now_ns)
{
    const struct hm_capture_plan *p = &b->plan;
    if (!p->req_id)
        return 1;
    if (p->req_steps > 0)
        return pr->step_now >= p->req_from_step + p->req_steps;
    return now_ns >= p->req_t1_ns;
}

static const char *repaying(const struct cap_budget *b)
{
    return windows_aim(b, b->decided_ns) < aim(b) ? " while the start-up is paid back" : "";
}

/* "; and 1 step in 47 at most for rank 0's writer (...)" when the writer
 * spaces the windows, else "". */
static void writer_note(const struct cap_budget *b, char *buf, size_t len)
{
    double share = writer_share(b);
    buf[0] = 0;
    if (share < 1)
        snprintf(buf, len, b->plan.mode == HM_CAPTURE_TIME
                               ? "; at most 1/%.0f of the time for rank 0's writer (%.2g M rows/s for %d ranks)"
                               : "; at most 1 step in %.0f for rank 0's writer (%.2g M rows/s for %d ranks)",
                 ceil(1 / share), b->writer_rows_s / 1e6, b->ranks);
}

void cap_budget_describe(const struct cap_budget *b, char *buf, size_t len)
{
    const struct hm_capture_plan *p = &b->plan;
    char est[160] = "", wr[200];

    writer_note(b, wr, sizeof wr);
    if (b->hooks > 0) {
        size_t n = strlen(wr);
        snprintf(wr + n, sizeof wr - n, "; the Python hooks take %.2g %% of a step", b->hooks * 100.0);
    }

    if (b->rate >= 0 && b->win_ns >= 0)
        snprintf(est, sizeof est, " (a window costs %.1f ms over detached steps, measured; %.0f records/s; "
                 "budget %.3g %%)", b->win_ns / 1e6, b->rate, b->o.budget_pct);
    else if (b->rate >= 0 && b->ab >= 0)
        snprintf(est, sizeof est, " (CUPTI %.1f %% while attached, measured on steps with and without it; "
                 "%.0f records/s; budget %.3g %%)", b->ab * 100.0, b->rate, b->o.budget_pct);
    else if (b->rate >= 0)
        snprintf(est, sizeof est, " (CUPTI est. %.1f %% while attached, %.0f records/s; budget %.3g %%)",
                 b->cost * 100.0, b->rate, b->o.budget_pct);
    switch (p->mode) {
    case HM_CAPTURE_ALL:
        snprintf(buf, len, "capture plan %lld: everything%s", (long long)p->id,
                 b->o.capture_all ? " (--capture-all)" : est);
        break;
    case HM_CAPTURE_STEPS:
        if (hm_capture_plan_all(p)) {
            snprintf(buf, len, "capture plan %lld: everything from step %lld%s", (long long)p->id,
                     (long long)p->base_step, est);
            break;
        }
        snprintf(buf, len, "capture plan %lld: CUPTI for %lld steps in every %lld from step %lld%s; aimed at %.2g %%%s%s",
                 (long long)p->id, (long long)p->on_steps, (long long)p->period_steps,
                 (long long)p->base_step, est, windows_aim(b, b->decided_ns) * 100.0, repaying(b), wr);
        break;
    case HM_CAPTURE_TIME:
        snprintf(buf, len, "capture plan %lld: CUPTI for %lld ms in every %lld ms%s; aimed at %.2g %%%s%s",
                 (long long)p->id, (long long)p->on_ms, (long long)p->period_ms, est,
                 windows_aim(b, b->decided_ns) * 100.0, repaying(b), wr);
        break;
    default:
        snprintf(buf, len, "capture plan %lld: start-up (CUPTI attached while its cost is measured)",
                 (long long)p->id);
    }
}
