/* The one schedule every rank follows. Each rank computes the plan of every
 * rank from the same inputs (run start, period, straggler delays, seeded
 * jitter), so the ranks agree on cross-rank timing without talking.
 *
 * Step k on rank r, phases as per-mille of the period plus up to 0.5% jitter:
 *   start = max(t0 + k*period, end of step k-1's work + 20 us)
 *   load 4% | forward 24% (+ delay[r]) | backward part 1 18%
 *   -> allreduce bucket 0: issued at the end of part 1, kernel enters 25 us
 *      later, exits at max over ranks of enter + transfer (3%); the CPU
 *      waits for it (cudaStreamSynchronize) and resumes 8 us after the exit
 *   -> backward part 2 18% (+ delay[r]) -> allreduce bucket 1 (transfer 2%)
 *   -> optimizer 7%.
 * (synth_emit.c lets each backward part's last kernel run on for 1.5% of
 * the period, so each allreduce overlaps some computation.)
 * So a straggler enters every allreduce delay[r] later than the others, the
 * others wait inside the kernel (their allreduce kernels are the long ones),
 * and every rank leaves each allreduce at the same instant. With --tp each
 * allreduce joins only the rank's group (synth_mesh.c): a straggler holds
 * up its own groups, and the rest of the job only through them. Without a
 * straggler a step uses about 78% of its period and steps start on time;
 * with one, steps stretch and later steps start late on every rank. */
#include "synth.h"

#include <stdlib.h>
#include <string.h>

enum { PH_LOAD, PH_FWD, PH_BWD1, PH_BWD2, PH_OPT, PH__COUNT };

static const int64_t phase_pm[PH__COUNT] = {40, 240, 180, 180, 70};
static const int64_t xfer_pm[SYN_NCOLL] = {30, 20};
#define STEP_GAP_NS (20 * SYN_NS_PER_US)

struct syn_sched {
    const struct syn_cfg *cfg;  /* borrowed */
    int64_t *next_start;        /* owned: start of the next step, per rank */
    struct syn_plan *plan;      /* owned: the current step, per rank */
};

/* splitmix64 finaliser over the packed key: cheap and well mixed. */
uint64_t syn_rand(int rank, int step, int phase, int index)
{
    uint64_t z = 0x243F6A8885A308D3ull;

    z ^= (uint64_t)(uint32_t)rank * 0x9E3779B97F4A7C15ull;
    z ^= (uint64_t)(uint32_t)step * 0xC2B2AE3D27D4EB4Full;
    z ^= (uint64_t)(uint32_t)phase << 48 ^ (uint64_t)(uint32_t)index << 32;
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

struct syn_sched *syn_sched_new(const struct syn_cfg *cfg)
{
    struct syn_sched *s = calloc(1, sizeof *s);

    if (!s)
        return NULL;
    s->cfg = cfg;
    s->next_start = calloc((size_t)cfg->world, sizeof *s->next_start);
    s->plan = calloc((size_t)cfg->world, sizeof *s->plan);
    if (!s->next_start || !s->plan) {
        syn_sched_free(s);
        return NULL;
    }
    for (int r = 0; r < cfg->world; r++)
        s->next_start[r] = cfg->t0_ns;
    return s;
}

void syn_sched_free(struct syn_sched *s)
{
    if (!s)
        return;
    free(s->next_start);
    free(s->plan);
    free(s);
}

/* Length of one phase of rank r in step k: its share of the period plus
 * jitter of up to 0.5% of the period. */
static int64_t phase_len(const struct syn_cfg *c, int r, int k, int ph)
{
    int64_t jitter_max = c->period_ns / 200 + 1;

    return c->period_ns * phase_pm[ph] / 1000 + (int64_t)(syn_rand(r, k, ph, 0) % (uint64_t)jitter_max);
}

/* Sets every rank's exit of allreduce b from the issue times already
 * planned: its group's last enter plus the transfer. */
static void plan_collective(struct syn_sched *s, int b)
{
    for (int r = 0; r < s->cfg->world; r++)
        s->plan[r].enter[b] = s->plan[r].issue[b] + SYN_ISSUE_TO_KERNEL_NS;
    for (int r = 0; r < s->cfg->world; r++) {
        struct syn_group g;
        int64_t last = INT64_MIN;
        syn_group_of(s->cfg, r, b, &g);
        for (int k = 0; k < g.size; k++)
            if (s->plan[g.start + k * g.stride].enter[b] > last)
                last = s->plan[g.start + k * g.stride].enter[b];
        s->plan[r].exit[b] = last + s->cfg->period_ns * xfer_pm[b] / 1000;
    }
}

void syn_sched_step(struct syn_sched *s, int k, struct syn_plan *mine)
{
    const struct syn_cfg *c = s->cfg;
    int64_t nominal_next = c->t0_ns + (int64_t)(k + 1) * c->period_ns;

    for (int r = 0; r < c->world; r++) {
        struct syn_plan *p = &s->plan[r];
        memset(p, 0, sizeof *p);
        p->start = s->next_start[r];
        p->fwd = p->start + phase_len(c, r, k, PH_LOAD);
        p->fwd_dur = phase_len(c, r, k, PH_FWD) + c->delay_ns[r];
        p->bwd1 = p->fwd + p->fwd_dur;
        p->bwd1_dur = phase_len(c, r, k, PH_BWD1);
        p->issue[0] = p->bwd1 + p->bwd1_dur;
    }
    plan_collective(s, 0);
    for (int r = 0; r < c->world; r++) {
        struct syn_plan *p = &s->plan[r];
        p->bwd2 = p->exit[0] + SYN_SYNC_RETURN_NS;
        p->bwd2_dur = phase_len(c, r, k, PH_BWD2) + c->delay_ns[r];
        p->issue[1] = p->bwd2 + p->bwd2_dur;
    }
    plan_collective(s, 1);
    for (int r = 0; r < c->world; r++) {
        struct syn_plan *p = &s->plan[r];
        int64_t work_end;
        p->opt = p->exit[1] + SYN_SYNC_RETURN_NS;
        p->opt_dur = phase_len(c, r, k, PH_OPT);
        work_end = p->opt + p->opt_dur + STEP_GAP_NS;
        p->end = work_end > nominal_next ? work_end : nominal_next;
        s->next_start[r] = p->end;
    }
    *mine = s->plan[c->rank];
}
