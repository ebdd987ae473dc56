/* Rank 0's capture planner: keeps live capture within a cost budget and
 * places on-demand requests. It turns rank 0's own sources' progress (the
 * step in progress, CUPTI's records and attached time; every rank runs the
 * same program, so rank 0 stands for all in cost, while the other ranks'
 * reported steps place each plan ahead of all of them) into a capture plan
 * (common/capture_plan.h) that rank 0 sends to every collector.
 *
 * The cost of CUPTI while attached is estimated as records per attached
 * second times a calibrated cost per record (per-kernel instrumentation is
 * what CUPTI costs on Hopper) until it can be measured: once windows of
 * steps run, the Python hooks report the median step with CUPTI attached
 * and detached, and their ratio replaces the estimate. The program time
 * each attach and detach took, as the injection library measured it, is
 * counted too. Best of all, once a few windows ran, the hooks measure
 * what a whole window cost (its steps, switches included, over as many
 * detached steps), and the period follows from that directly. The plan
 * records everything
 * when that fits the budget, else windows of whole steps (or of time, when
 * no steps are known) at the duty cycle that does. No MPI, no clock reads:
 * the caller passes the time. */
#ifndef HM_CAPTURE_BUDGET_H
#define HM_CAPTURE_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "common/capture_plan.h"

struct cap_budget_opts {
    double budget_pct;        /* e.g. 2.0; <= 0 with capture_all */
    int capture_all;          /* --capture-all: one plan, ALL */
    int64_t record_ns;        /* calibrated CUPTI cost per activity record */
    int64_t switch_ns;        /* assumed cost of one attach or detach until measured */
    double windows_share;     /* the part of the budget windows aim at (the rest is the
                                 hooks', NVTX's and the estimate's error); 0: 0.5 */
    int64_t repay_ns;         /* what the start-up spent over the budget is paid back by
                                 sparser windows over this long; 0: 30 s, < 0: never */
};

/* HTAMERGE_CUPTI_RECORD_NS, else the calibration from the H200 (bench/RESULTS.md). */
int64_t cap_budget_default_record_ns(void);

struct cap_budget {
    struct cap_budget_opts o;
    struct hm_capture_plan plan;      /* the current plan (id 0: none sent yet) */
    struct hm_capture_progress last;  /* at the last rate sample */
    int64_t last_ns, started_ns, decided_ns;
    double rate;                      /* CUPTI records per attached second; < 0 unknown */
    double cost;                      /* estimated cost while attached, fraction */
    double ab;                        /* measured: attached steps' median / detached's - 1; < 0 none */
    double win_ns;                    /* measured: program time one window of the current
                                         plan's length cost; < 0 none */
    double hooks;                     /* measured: the Python hooks' share of a step (with
                                         HOOKS_FACTOR for what their own clock misses); 0 none */
    int hooks_pending;                /* steps are known, the hooks' share not yet */
    int planned_blind;                /* the current plan was made while hooks_pending */
    int have_last;
    int64_t peers_min_step, peers_max_step;  /* the other ranks' steps (cap_budget_peers); -1 none */
    int64_t repay_from_ns;            /* when the first windows were planned */
    double startup_busy_ns;           /* the start-up's attached time at the training's rate */
    double startup_allowed_ns;        /* what the budget allowed over the start-up */
    double decided_rate;              /* the record rate at the last decision */
    int ranks;                        /* ranks sending to rank 0's writer (cap_budget_writer) */
    double writer_rows_s;             /* what that writer stores per second; <= 0 unknown */
};

void cap_budget_init(struct cap_budget *b, const struct cap_budget_opts *o, int64_t now_ns);

/* The steps the other ranks are in, as they last reported them: the
 * slowest as reported, the fastest projected to now; -1 when none
 * reported lately. A plan of steps then begins ahead of the fastest rank,
 * and a plan is not replaced while its base step lies between the slowest
 * and the fastest (each rank would take a different schedule before the
 * new base). */
void cap_budget_peers(struct cap_budget *b, int64_t min_step, int64_t max_step);
/* The rows per second rank 0's writer stores (measured, else
 * cap_budget_default_writer_rows_s) and how many ranks send to it. One
 * writer stores ~1 M rows/s: past ~100 ranks of a launch-heavy loop,
 * windows the cost budget allows would still send it more than that, the
 * senders would stall and their rings drop records, unevenly across
 * ranks. So windows are also kept within what it stores (with a margin):
 * fewer windows, the same steps on every rank, nothing dropped. Not for
 * --capture-all or requests, which the user asked for. */
void cap_budget_writer(struct cap_budget *b, int ranks, double rows_per_s);
/* HTAMERGE_WRITER_ROWS_S, else what one live writer measured (bench/RESULTS.md). */
double cap_budget_default_writer_rows_s(void);

/* Takes rank 0's progress at now_ns (call it a few times a second).
 * Returns 1 when b->plan changed and must be sent to every rank. */
int cap_budget_tick(struct cap_budget *b, const struct hm_capture_progress *pr, int64_t now_ns);

/* An on-demand request: the next `steps` steps in full (steps > 0), or, when
 * no steps are known, `seconds` from shortly after now. Places it ahead of
 * every rank (lead time for the plan to arrive), writes what will be
 * recorded (or why not) into msg and returns 0 (b->plan changed: send it)
 * or -1. */
int cap_budget_request(struct cap_budget *b, const struct hm_capture_progress *pr, int64_t steps,
                       double seconds, int64_t now_ns, char *msg, size_t len);

/* 1 once the current request's steps (or time) are past on rank 0. */
int cap_budget_request_done(const struct cap_budget *b, const struct hm_capture_progress *pr,
                            int64_t now_ns);

/* What the start-up cost above the budget, to pay back by sparser
 * windows: its attached time at the training's record rate, at today's
 * estimate of CUPTI's cost while attached, less what the budget allowed
 * over it. 0 before the first plan of windows. */
double cap_budget_debt_ns(const struct cap_budget *b);

/* One line on the plan for the job's log ("CUPTI in windows of 3 steps in
 * 40 (est. 14 % while attached, budget 2 %)"). */
void cap_budget_describe(const struct cap_budget *b, char *buf, size_t len);

#endif
