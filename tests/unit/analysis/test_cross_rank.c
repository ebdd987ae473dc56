/* Cross-rank analyses, pure parts: the robust clock fit, the straggler
 * verdict rule (analysis/cross_rank/stragglers.h), op names, and the clock condition
 * repair on a hand-built context. End-to-end checks on real and synthetic
 * traces are in tests/cli/test_cross_rank.sh. */
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/record.h"
#include "common/strtab.h"
#include "analysis/cross_rank/clock_refine.h"
#include "analysis/cross_rank/comm_groups.h"
#include "analysis/cross_rank/match.h"
#include "analysis/cross_rank/stragglers.h"

static void test_fit(void)
{
    double xs[40], ys[40], slope, off, sigma;

    /* 1 s of samples, 3 ms offset, 40 ppm, two wild outliers. */
    for (int i = 0; i < 40; i++) {
        xs[i] = i * 25e6;
        ys[i] = 3e6 + 40e-6 * xs[i] + ((i * 7) % 5 - 2) * 100.0;
    }
    ys[5] += 5e6;
    ys[30] -= 8e6;
    CHECK_EQ_INT(xr_robust_fit(xs, ys, 40, &slope, &off, &sigma), 0);
    CHECK_NEAR(slope * 1e6, 40.0, 0.5);
    CHECK_NEAR(off, 3e6, 500);
    CHECK(sigma < 1000);
    /* Under 50 ms of samples: no slope, the median offset. */
    for (int i = 0; i < 10; i++) {
        xs[i] = i * 1e6;
        ys[i] = -2e6 + 40e-6 * xs[i];
    }
    CHECK_EQ_INT(xr_robust_fit(xs, ys, 10, &slope, &off, &sigma), 0);
    CHECK_NEAR(slope, 0.0, 0);
    CHECK_NEAR(off, -2e6 + 40e-6 * 4.5e6, 200);
    /* Noise that hides a slope: the slope is dropped. */
    for (int i = 0; i < 12; i++) {
        xs[i] = i * 15e6;
        ys[i] = 1e5 + ((i * 5) % 7 - 3) * 1e5 + 20e-6 * xs[i];
    }
    CHECK_EQ_INT(xr_robust_fit(xs, ys, 12, &slope, &off, &sigma), 0);
    CHECK_NEAR(slope, 0.0, 0);
}

static void test_ops(void)
{
    char out[64];

    xr_op_normalise("all_reduce", out, sizeof out);
    CHECK_STR(out, "allreduce");
    xr_op_normalise("_allgather_base", out, sizeof out);
    CHECK_STR(out, "allgatherbase");
    xr_op_normalise("c10d::allreduce_", out, sizeof out);
    CHECK_STR(out, "allreduce");
    xr_op_normalise("AllReduce", out, sizeof out);
    CHECK_STR(out, "allreduce");
    CHECK(xr_op_is_p2p("send"));
    CHECK(!xr_op_is_p2p("allreduce"));
}

static void test_verdict(void)
{
    struct xr_blame b[4];
    struct xr_verdict v;

    /* Rank 2 last in 27 of 28, 20 ms late in 25 ms collectives. */
    memset(b, 0, sizeof b);
    for (int r = 0; r < 4; r++)
        b[r].instances = 28;
    b[2].late = 27;
    b[2].blame_ns = 27LL * 3 * 20000000;
    b[2].skew_late_ns = 27LL * 20000000;
    b[2].span_late_ns = 27LL * 25000000;
    b[1].late = 1;
    b[1].blame_ns = 3 * 50000;
    b[1].skew_late_ns = 50000;
    b[1].span_late_ns = 5000000;
    xr_straggler_verdict(b, 4, 28, NULL, "allreduces", &v);
    CHECK_EQ_INT(v.straggler, 2);
    CHECK_STR(v.evidence, "rank 2 entered last in 27 of 28 allreduces; the others waited 1.62 s for it");
    /* Late ranks spread out: nobody stands out (rule 2). */
    for (int r = 0; r < 4; r++) {
        b[r].late = 7;
        b[r].blame_ns = 7LL * 3 * 100000 + r;
        b[r].skew_late_ns = 7LL * 100000;
        b[r].span_late_ns = 7LL * 500000;
    }
    xr_straggler_verdict(b, 4, 28, NULL, "allreduces", &v);
    CHECK_EQ_INT(v.straggler, -1);
    CHECK_EQ_INT(v.candidate, 3);
    CHECK(strstr(v.evidence, "no rank stands out: the most blamed, rank 3, entered last in 7 of 28") != NULL);
    /* Always last, but by 30 us in 10 ms collectives: jitter (rule 4). */
    memset(b, 0, sizeof b);
    for (int r = 0; r < 4; r++)
        b[r].instances = 10;
    b[0].late = 10;
    b[0].blame_ns = 10LL * 3 * 30000;
    b[0].skew_late_ns = 10LL * 30000;
    b[0].span_late_ns = 10LL * 10000000;
    xr_straggler_verdict(b, 4, 10, NULL, "allreduces", &v);
    CHECK_EQ_INT(v.straggler, -1);
    CHECK(strstr(v.evidence, "but only 30 us late on average") != NULL);
    /* Two balanced ranks: one is last 55 of 100 times, by a real 2 ms in
     * 3 ms collectives. That is chance with two ranks (rule 2's 3 in 4). */
    memset(b, 0, sizeof b);
    b[0].instances = b[1].instances = 100;
    b[0].late = 55, b[1].late = 45;
    b[0].blame_ns = 55LL * 2000000, b[1].blame_ns = 45LL * 2000000;
    b[0].skew_late_ns = 55LL * 2000000, b[1].skew_late_ns = 45LL * 2000000;
    b[0].span_late_ns = 55LL * 3000000, b[1].span_late_ns = 45LL * 3000000;
    xr_straggler_verdict(b, 2, 100, NULL, "allreduces", &v);
    CHECK_EQ_INT(v.straggler, -1);
    CHECK_EQ_INT(v.candidate, 0);
    /* ... but last 80 of 100 times is a straggler, with two ranks too. */
    b[0].late = 80, b[1].late = 20;
    b[0].blame_ns = b[0].skew_late_ns = 80LL * 2000000;
    b[0].span_late_ns = 80LL * 3000000;
    b[1].blame_ns = b[1].skew_late_ns = 20LL * 2000000;
    xr_straggler_verdict(b, 2, 100, NULL, "allreduces", &v);
    CHECK_EQ_INT(v.straggler, 0);
    /* Too few instances (rule 1), and none at all. */
    memset(b, 0, sizeof b);
    for (int r = 0; r < 4; r++)
        b[r].instances = 10;
    b[0].late = 10;
    b[0].blame_ns = 10LL * 3 * 30000;
    b[0].skew_late_ns = 10LL * 30000;
    b[0].span_late_ns = 10LL * 10000000;
    xr_straggler_verdict(b, 4, 1, NULL, "allreduces", &v);
    CHECK_EQ_INT(v.straggler, -1);
    memset(b, 0, sizeof b);
    xr_straggler_verdict(b, 4, 5, NULL, "allreduces", &v);
    CHECK_EQ_INT(v.straggler, -1);
    CHECK(strstr(v.evidence, "together") != NULL);
}

/* Rules 2b and 5, with the numbers of the 2-GPU DDP fixtures (4 steps of
 * 22 bucketed allreduces). */
static void test_verdict_steps(void)
{
    struct xr_blame b[2];
    struct xr_verdict v;
    struct xr_step_totals st = {.steps = 4, .mean_step_ns = 113e6};

    /* Rank 1 sleeps 20 ms a step: last in only 54 of 88 (behind its late
     * bucket the rest queue up and arrive in any order), but it holds up
     * every step the longest, 26 ms a step. */
    memset(b, 0, sizeof b);
    b[0].instances = b[1].instances = 88;
    b[1].late = 54, b[0].late = 34;
    b[1].blame_ns = b[1].skew_late_ns = 204871610, b[0].blame_ns = b[0].skew_late_ns = 59959420;
    b[1].span_late_ns = 54LL * 4200000, b[0].span_late_ns = 34LL * 2000000;
    b[1].holdup_ns = 4LL * 26000000, b[0].holdup_ns = 4LL * 2500000;
    b[1].top_steps = 4;
    xr_straggler_verdict(b, 2, 88, &st, "allreduces", &v);
    CHECK_EQ_INT(v.straggler, 1);
    CHECK_STR(v.evidence, "rank 1 held the others up longest in 4 of 4 steps, by 26 ms a step (23% of "
                          "the 113 ms step); the others waited 205 ms for it");
    /* Without step times it is not enough (rule 2a alone). */
    xr_straggler_verdict(b, 2, 88, NULL, "allreduces", &v);
    CHECK_EQ_INT(v.straggler, -1);
    /* Top in only half the steps with two ranks: chance (2b's 3 in 4). */
    b[1].top_steps = 2, b[0].top_steps = 2;
    xr_straggler_verdict(b, 2, 88, &st, "allreduces", &v);
    CHECK_EQ_INT(v.straggler, -1);
    /* The clean run: rank 0 a millisecond or two behind for whole steps,
     * last in 59 of 88 and most of the blame, holding up a 78 ms step by
     * 2.7 ms: not a straggler (rule 5), and the evidence says by how little. */
    memset(b, 0, sizeof b);
    st.mean_step_ns = 78e6;
    b[0].instances = b[1].instances = 88;
    b[0].late = 59, b[1].late = 29;
    b[0].blame_ns = b[0].skew_late_ns = 85721540, b[1].blame_ns = b[1].skew_late_ns = 35737050;
    b[0].span_late_ns = 59LL * 1600000, b[1].span_late_ns = 29LL * 1400000;
    b[0].holdup_ns = 4LL * 2700000, b[1].holdup_ns = 4LL * 1000000;
    b[0].top_steps = 3, b[1].top_steps = 1;
    xr_straggler_verdict(b, 2, 88, &st, "allreduces", &v);
    CHECK_EQ_INT(v.straggler, -1);
    CHECK_EQ_INT(v.candidate, 0);
    CHECK_STR(v.evidence, "no rank stands out: rank 0 entered last in 59 of 88 allreduces, but held "
                          "the others up by only 2.7 ms a step (3.5% of the 78 ms step)");
    /* Rule 5 also guards 2a: last in 80 of 88 by the same little. */
    b[0].late = 80, b[1].late = 8;
    b[0].span_late_ns = 80LL * 1600000;
    xr_straggler_verdict(b, 2, 88, &st, "allreduces", &v);
    CHECK_EQ_INT(v.straggler, -1);
    /* ... and the same count with a 20 ms hold-up a step is a straggler,
     * told in 2a's words. */
    b[0].holdup_ns = 4LL * 20000000;
    xr_straggler_verdict(b, 2, 88, &st, "allreduces", &v);
    CHECK_EQ_INT(v.straggler, 0);
    CHECK(strncmp(v.evidence, "rank 0 entered last in 80 of 88 allreduces", 42) == 0);
    /* One step of 4 ranks (nccl4_straggler1, step 6): rank 0 is last in 19
     * of 22 by ~2 ms and gathers the most blame; rank 1, last twice, held
     * everyone up 23 ms once. With steps the candidate is the one with the
     * most hold-up, and rule 3 weighs hold-ups. */
    struct xr_blame q[4];
    struct xr_step_totals one = {.steps = 1, .mean_step_ns = 111e6};
    memset(q, 0, sizeof q);
    for (int r = 0; r < 4; r++)
        q[r].instances = 22;
    q[0].late = 19, q[1].late = 2, q[2].late = 1;
    q[0].blame_ns = 3LL * 40480000, q[1].blame_ns = 3LL * 25330000, q[2].blame_ns = 3LL * 2380000;
    q[0].skew_late_ns = 40480000, q[1].skew_late_ns = 25330000, q[2].skew_late_ns = 2380000;
    q[0].span_late_ns = 19LL * 2500000, q[1].span_late_ns = 2LL * 14000000, q[2].span_late_ns = 2600000;
    q[0].holdup_ns = 4880000, q[1].holdup_ns = 22610000, q[2].holdup_ns = 2380000;
    q[1].top_steps = 1;
    xr_straggler_verdict(q, 4, 22, &one, "allreduces", &v);
    CHECK_EQ_INT(v.straggler, 1);
    CHECK_EQ_INT(v.candidate, 1);
    CHECK(strncmp(v.evidence, "rank 1 held the others up longest, by 23 ms (20% of the 111 ms step)", 68) == 0);
    /* Without step times only counting is left, and it names rank 0 (last
     * in 19 of 22, most of the blame): what step times are there to fix. */
    xr_straggler_verdict(q, 4, 22, NULL, "allreduces", &v);
    CHECK_EQ_INT(v.candidate, 0);
    CHECK_EQ_INT(v.straggler, 0);
}

/* Two ranks, three allreduces; rank 1's clock reads 100 us early, so it
 * seems to leave instance 1 before rank 0 entered it. */
static void test_clock_condition(void)
{
    struct xr_ctx x = {0};
    struct hm_err err;
    struct xr_clock clk[2];
    int64_t t[3][2][2] = {{{1000000, 1200000}, {900000, 1100000}},
                          {{2000000, 2100000}, {1950000, 1990000}},
                          {{3000000, 3200000}, {2990000, 3190000}}};

    memset(clk, 0, sizeof clk);
    CHECK_EQ_INT(sqlite3_open(":memory:", &x.db), SQLITE_OK);
    sqlite3_exec(x.db, "CREATE TABLE ranks (rank INTEGER, clock_uncertainty_ns INTEGER);"
                       "INSERT INTO ranks VALUES (0, 0), (1, 100000);", NULL, NULL, NULL);
    x.names = hm_strtab_new();
    x.nranks = 2;
    x.clock = clk;
    for (int i = 0; i < 3; i++) {
        struct xr_inst *in = HM_VEC_PUSH(x.inst);
        in->op = xr_intern(&x, "allreduce");
        in->first = (size_t)(2 * i);
        in->n = 2;
        for (int r = 0; r < 2; r++) {
            struct xr_coll *c = HM_VEC_PUSH(x.coll);
            size_t *m = HM_VEC_PUSH(x.members);
            c->rank = r;
            c->enter = t[i][r][0];
            c->exit = t[i][r][1];
            *m = x.coll.n - 1;
        }
    }
    xr_match_summarise(&x);
    CHECK_EQ_INT(xr_clock_condition(&x, &err), 0);
    /* Instance 2: rank 1 left at 1.99 ms, rank 0 entered at 2.0 ms. */
    CHECK_EQ_INT(clk[1].violations, 1);
    CHECK_EQ_INT(clk[0].violations, 0);
    CHECK_EQ_INT(x.coll.v[3].exit, 2000000);
    CHECK_EQ_INT(x.coll.v[3].repair, 10000);
    /* The shift carries on, amortised by 1% of the 1 ms that passed. */
    CHECK_EQ_INT(x.coll.v[5].enter, 2990000 + 10000 - 10000);
    CHECK(x.coll.v[5].exit >= 3190000);
    hm_strtab_free(x.names);
    HM_VEC_FREE(x.inst);
    HM_VEC_FREE(x.coll);
    HM_VEC_FREE(x.members);
    sqlite3_close(x.db);
}

/* A process group's dimension from its name and description. */
static void test_pg_dimension(void)
{
    static const struct { const char *name, *desc, *dim; } cases[] = {
        {"1", "mesh_tp", "tp"},          {"2", "mesh_dp", "dp"},        {"dp_shard", NULL, "fsdp"},
        {"3", "mesh_dp_shard", "fsdp"},  {"4", "mesh_dp_replicate", "dp"}, {"tp_group", NULL, "tp"},
        {"5", "pipeline-stage", "pp"},   {"expert_parallel", NULL, "ep"}, {"6", "mesh_cp", "cp"},
        {"0", "default_pg", "world"},    {"0", NULL, "world"},          {"0", "", "world"},
        {"7", "custom", NULL},           {"comm:17958617839615818544", NULL, NULL},
        {"stp", "mytp", NULL},           {NULL, NULL, NULL},            {"TP", NULL, "tp"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = xr_pg_dimension(cases[i].name, cases[i].desc);
        CHECK_STR(got ? got : "(none)", cases[i].dim ? cases[i].dim : "(none)");
    }
}

int main(void)
{
    test_pg_dimension();
    test_fit();
    test_ops();
    test_verdict();
    test_verdict_steps();
    test_clock_condition();
    return hm_test_done();
}
