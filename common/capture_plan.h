/* The capture plan: what every rank records in full (CUPTI attached on a
 * GPU; torch.profiler's CPU ops for requested steps on the CPU), decided by
 * rank 0 and carried out by each rank's live sources. The collector (one
 * writer) puts the plan in its ring's control area (hm_ring_control_area);
 * the injection library and the Python hooks inside the training process
 * read it, and report their progress (the step they are in, CUPTI's record
 * count and attached time) in the same area for the collector to read.
 *
 * A plan is a formula, not a list of windows, so that rank 0 sends one only
 * when it changes: steps [base, base + on) of every `period` steps from
 * `base` (or, when no steps are known, the first on_ms of every period_ms
 * from epoch_ns on the Unix clock), plus at most one on-demand request. */
#ifndef HM_CAPTURE_PLAN_H
#define HM_CAPTURE_PLAN_H

#include <stddef.h>
#include <stdint.h>

enum hm_capture_mode {
    HM_CAPTURE_UNSET = 0,   /* no plan yet: the sources keep their start-up state */
    HM_CAPTURE_ALL = 1,     /* record everything (--capture-all, or the budget allows it) */
    HM_CAPTURE_TIME = 2,    /* windows in time: no steps are known */
    HM_CAPTURE_STEPS = 3,   /* windows of whole steps */
};

/* hm_capture_step / hm_capture_time results (bits) */
#define HM_CAPTURE_F_WINDOW 0x1   /* a budget window (or ALL) */
#define HM_CAPTURE_F_REQUEST 0x2  /* an on-demand request (`htamerge capture`) */

/* Every field is 8 bytes, so that the Python hooks mirror it with ctypes.
 * Zero means absent. */
struct hm_capture_plan {
    int64_t id;              /* rank 0's plan number, > 0 */
    int64_t mode;            /* enum hm_capture_mode */
    int64_t on_ms, period_ms, epoch_ns;          /* HM_CAPTURE_TIME */
    int64_t base_step, on_steps, period_steps;   /* HM_CAPTURE_STEPS */
    int64_t req_id;          /* on-demand request number, 0: none */
    int64_t req_from_step, req_steps;            /* steps [from, from + steps) in full */
    int64_t req_t0_ns, req_t1_ns;                /* or, without steps, [t0, t1) Unix ns */
    double budget_pct;       /* the cost budget the plan keeps to (0: none) */
    double est_cost_pct;     /* rank 0's estimate of CUPTI's cost while attached */
    /* HM_CAPTURE_STEPS: the schedule of the steps before base_step, the
     * plan this one replaces, so that a window in progress ends at the
     * same step on every rank, whenever each rank learns of the new plan.
     * on == period: every step. */
    int64_t prev_base_step, prev_on_steps, prev_period_steps;
};

/* What the Python hooks measure of CUPTI's cost under a plan of steps. */
struct hm_capture_measured {
    /* Median duration of recent whole steps with CUPTI attached and
     * detached (steps with a switch left out), and how many steps each
     * median is of: the A/B cost. */
    int64_t on_ns, on_n, off_ns, off_n;
    /* What one whole window cost the program over the detached median:
     * its steps from the attach through the step after the detach, so
     * that the switches and whatever CUPTI does lazily after an attach
     * (instrumenting each kernel again) count. Median of the last
     * windows, and how many windows it is of. */
    int64_t win_excess_ns, win_n;
    /* The Python hooks' own time per step (mean of recent steps, ns),
     * and how many steps it is of: what recording steps costs, which the
     * windows' aim leaves room for. */
    int64_t hooks_ns, hooks_n;
};

/* What the sources report back (each field has one writer). */
struct hm_capture_progress {
    int64_t step_now;        /* the Python hooks: the step in progress (0-based), -1 none yet */
    int64_t step_ns;         /* the hooks: the last step's duration */
    int64_t steps_seen;      /* the hooks: steps finished */
    int64_t cupti_records;   /* the injection library: CUPTI activity records so far */
    int64_t cupti_attached_ns; /* the injection library: time CUPTI was attached so far */
    int64_t cupti_switches;  /* the injection library: attaches and detaches for windows */
    int64_t cupti_switch_ns; /* the injection library: program time they took */
    struct hm_capture_measured measured;   /* the hooks', published together */
};

/* Bytes of control area the plan and progress need (hm_ring_control_area
 * gives at least this much). */
#define HM_CAPTURE_AREA_BYTES 512

/* Collector: publishes p (seqlock; one writer). */
void hm_capture_plan_put(void *area, const struct hm_capture_plan *p);
/* Readers: the plan's generation, which changes whenever a new plan was
 * put (cheap to poll). */
uint64_t hm_capture_plan_gen(const void *area);
/* The generation's word itself, for a reader that polls it by address
 * (the Python hooks, where a call costs more than the read); a changed
 * value is then confirmed by hm_capture_plan_get. */
const volatile uint64_t *hm_capture_plan_gen_word(const void *area);
/* Readers: a consistent copy of the plan; returns its generation. */
uint64_t hm_capture_plan_get(const void *area, struct hm_capture_plan *p);

/* Progress: the writers' stores and the collector's read. */
void hm_capture_progress_step(void *area, int64_t step_now, int64_t step_ns);
void hm_capture_progress_cupti(void *area, int64_t records, int64_t attached_ns);
void hm_capture_progress_measured(void *area, const struct hm_capture_measured *m);
/* One attach or detach for a window took ns of the program's time. */
void hm_capture_progress_switch(void *area, int64_t ns);
void hm_capture_progress_get(const void *area, struct hm_capture_progress *pr);

/* Whether p records every step: ALL, or steps from base_step with no
 * pause between windows (how the budget says "everything" once steps are
 * known, so that every rank starts at the same step). */
int hm_capture_plan_all(const struct hm_capture_plan *p);

/* Whether step s is to be recorded in full under p: HM_CAPTURE_F_* bits,
 * 0 when not. A plan that is UNSET or ALL records every step (WINDOW). */
int hm_capture_step(const struct hm_capture_plan *p, int64_t step);
/* The first step after `step` whose hm_capture_step differs from step's
 * (at most step + limit): the hooks ask once per change, not once a step. */
int64_t hm_capture_next_change(const struct hm_capture_plan *p, int64_t step, int64_t limit);
/* The same for the moment t_ns (Unix ns), for sources that know no steps:
 * TIME windows, ALL, and a request by time. STEPS plans answer WINDOW
 * (the hooks decide at step boundaries). */
int hm_capture_time(const struct hm_capture_plan *p, int64_t t_ns);

#endif
