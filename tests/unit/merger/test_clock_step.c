/* The clock model's repair of a step (merger/clock.c): a peer whose clock
 * drifts a few ppm and is stepped back by 50 ms (as NTP does) between two
 * of its sync rounds. Rounds are built from a known truth: the peer reads
 * real time t as t - true_offset(t), and each round's best sample has a
 * round trip of 20 us, symmetric. The repaired model must give the drift
 * of the pieces (not the step spread over an interval), the step, a small
 * uncertainty; map every time with the clock it was read on, where the
 * rounds say so, where a collective or a sequence says so, and where
 * nothing does; and end an interval across the step no earlier than it
 * started; the same for a step ahead. Also: a model without a step is
 * left exactly as it was, a small offset change within drift and jitter
 * is no step, a sequence that contradicts the rounds pins nothing, and of
 * two steps the larger is repaired and both are counted. */
#include "test.h"

#include "common/err.h"
#include "merger/clock.h"

#define MS 1000000LL
#define T0 1700000000000000000LL /* real time of the first round */
#define DRIFT_PPM 3.0
#define RTT 20000LL

/* The peer's clock: ahead by 7 ms plus a drift, stepped back by step_ns
 * (negative) from real time step_at on. Its reading of real t. */
struct truth {
    int64_t step_ns, step_at;
};

static int64_t peer_reading(const struct truth *tr, int64_t real)
{
    int64_t r = real + 7 * MS + (int64_t)(DRIFT_PPM * 1e-6 * (double)(real - T0));
    return real >= tr->step_at ? r + tr->step_ns : r;
}

/* One round at real time t: a symmetric sample (the peer reads the
 * midpoint), its best of three. */
static void add_round(struct mrg_clock_model *m, const struct truth *tr, int64_t real)
{
    struct mrg_clock_sample s[3];
    for (int i = 0; i < 3; i++) {
        int64_t rtt = RTT * (i + 1);
        s[i] = (struct mrg_clock_sample){real - rtt / 2, peer_reading(tr, real), real + rtt / 2};
    }
    CHECK_EQ_INT(mrg_clock_add_round(m, s, 3), 0);
}

/* Rounds every 300 ms for 3 s. */
static void build(struct mrg_clock_model *m, const struct truth *tr)
{
    for (int i = 0; i <= 10; i++)
        add_round(m, tr, T0 + i * 300 * MS);
}

static int64_t abs64(int64_t v)
{
    return v < 0 ? -v : v;
}

/* The aligned time of a real moment read by row (-1: none). */
static int64_t aligned(const struct mrg_clock_model *m, const struct truth *tr, int64_t row, int64_t real)
{
    int64_t raw = peer_reading(tr, real);
    return raw + mrg_clock_offset_of(m, row, raw);
}

static void test_no_step_unchanged(void)
{
    struct truth tr = {0, INT64_MAX};
    struct mrg_clock_model m = {0};
    int64_t off, ref, unc, before[5];
    double drift;

    build(&m, &tr);
    for (int i = 0; i < 5; i++)
        before[i] = mrg_clock_offset_at(&m, peer_reading(&tr, T0 + i * 700 * MS));
    CHECK_EQ_INT(mrg_clock_split(&m), 0);
    CHECK_EQ_INT(m.split, 0);
    for (int i = 0; i < 5; i++)
        CHECK_EQ_INT(mrg_clock_offset_at(&m, peer_reading(&tr, T0 + i * 700 * MS)), before[i]);
    mrg_clock_summary(&m, &off, &drift, &ref, &unc);
    CHECK_NEAR(drift, -DRIFT_PPM, 0.01);
    CHECK_EQ_INT(unc, RTT / 2);
    mrg_clock_free(&m);
}

/* A step back between rounds 4 and 5 (real 1.2 s and 1.5 s). */
static void test_step_back(void)
{
    struct truth tr = {-50 * MS, T0 + 1350 * MS};
    struct mrg_clock_model m = {0};
    int64_t off, ref, unc, at = 0, clamped = 0;
    double drift;

    build(&m, &tr);
    /* Unrepaired, the step is a drift of thousands of ppm. */
    mrg_clock_summary(&m, &off, &drift, &ref, &unc);
    CHECK(drift > 10000);
    CHECK(abs64(mrg_clock_step(&m, &at) - 50 * MS) < 2000);
    CHECK_EQ_INT(at, peer_reading(&tr, T0 + 1500 * MS));

    CHECK_EQ_INT(mrg_clock_split(&m), 1);
    CHECK_EQ_INT(m.split, 5);
    CHECK(abs64(m.step_ns + 50 * MS) < 1000);
    CHECK_EQ_INT(m.step_lo_ns, T0 + 1200 * MS);
    CHECK(abs64(m.step_hi_ns - (T0 + 1500 * MS)) < 1000);
    mrg_clock_summary(&m, &off, &drift, &ref, &unc);
    CHECK_NEAR(drift, -DRIFT_PPM, 0.05);
    CHECK_EQ_INT(unc, RTT / 2);
    /* The step is still there to be said. */
    CHECK(abs64(mrg_clock_step(&m, &at) - 50 * MS) < 2000);

    /* Where the rounds decide: well before and well after, and beyond the
     * rounds on both ends. */
    for (int64_t real = T0 - 100 * MS; real < T0 + 3200 * MS; real += 50 * MS)
        if (real < T0 + 1200 * MS || real > T0 + 1500 * MS)
            CHECK(abs64(aligned(&m, &tr, -1, real) - real) < 1000);

    /* A collective read twice over: 30 ms before the step (raw the same as
     * 20 ms after it) and 20 ms after it; the reference rank's exits say
     * which. Placing also narrows the moment. */
    int64_t pre_enter = T0 + 1310 * MS, pre_exit = T0 + 1320 * MS;
    int64_t post_enter = T0 + 1360 * MS, post_exit = T0 + 1370 * MS;
    CHECK_EQ_INT(mrg_clock_place(&m, 100, peer_reading(&tr, pre_enter), peer_reading(&tr, pre_exit), pre_exit), 0);
    CHECK_EQ_INT(mrg_clock_place(&m, 101, peer_reading(&tr, post_enter), peer_reading(&tr, post_exit), post_exit),
                 0);
    CHECK(abs64(m.step_lo_ns - pre_exit) < 1000);
    CHECK(abs64(m.step_hi_ns - post_enter) < 1000);
    CHECK(abs64(aligned(&m, &tr, 100, pre_enter) - pre_enter) < 1000);
    CHECK(abs64(aligned(&m, &tr, 100, pre_exit) - pre_exit) < 1000);
    CHECK(abs64(aligned(&m, &tr, 101, post_enter) - post_enter) < 1000);
    CHECK(abs64(aligned(&m, &tr, 101, post_exit) - post_exit) < 1000);

    /* A sequence of one track, every 4 ms across the step (rows 200...):
     * its raw starts go back at the step, so each row keeps its side, those
     * whose readings collide with another row's too. */
    int64_t rows[60], starts[60];
    for (int i = 0; i < 60; i++) {
        rows[i] = 200 + i;
        starts[i] = peer_reading(&tr, T0 + 1250 * MS + i * 4 * MS);
    }
    CHECK_EQ_INT(mrg_clock_place_sequence(&m, rows, starts, 60), 0);
    for (int i = 0; i < 60; i++) {
        int64_t real = T0 + 1250 * MS + i * 4 * MS;
        CHECK(abs64(aligned(&m, &tr, rows[i], real) - real) < 1000);
    }
    /* Intervals of that sequence end where the next starts: the end of
     * the one across the step (real 1346..1350 ms, raw dur -46 ms) is read
     * on the later clock, and one ending before the step stays on it. */
    for (int i = 0; i + 1 < 60; i++) {
        int64_t a = aligned(&m, &tr, rows[i], T0 + 1250 * MS + i * 4 * MS);
        int64_t e = starts[i + 1] + mrg_clock_end_offset_of(&m, rows[i], starts[i], starts[i + 1], &clamped);
        CHECK(abs64(e - a - 4 * MS) < 1000);
    }
    CHECK_EQ_INT(clamped, 0);

    /* Where nothing says (no pin at that ns): a time read twice goes to
     * the side whose reading is nearer the moment (1340 ms, the middle of
     * 1320..1360 the collectives left), right for these two. An interval
     * that would end before its start ends at it, counted. */
    CHECK(abs64(m.step_lo_ns + (m.step_hi_ns - m.step_lo_ns) / 2 - (T0 + 1340 * MS)) < 1000);
    CHECK(abs64(aligned(&m, &tr, -1, T0 + 1331 * MS) - (T0 + 1331 * MS)) < 1000);
    CHECK(abs64(aligned(&m, &tr, -1, T0 + 1355 * MS) - (T0 + 1355 * MS)) < 1000);
    int64_t s = peer_reading(&tr, T0 + 1330 * MS), e = s - 60 * MS;
    int64_t as = s + mrg_clock_offset_at(&m, s);
    CHECK_EQ_INT(e + mrg_clock_end_offset_of(&m, -1, s, e, &clamped), as);
    CHECK_EQ_INT(clamped, 1);
    mrg_clock_free(&m);
}

/* A step ahead (+50 ms at 1.35 s): nothing is read twice, so once a
 * collective on each side narrows the moment, times map by their own
 * reading, and an interval across the step ends on the later clock. */
static void test_step_ahead(void)
{
    struct truth tr = {50 * MS, T0 + 1350 * MS};
    struct mrg_clock_model m = {0};
    int64_t clamped = 0;

    build(&m, &tr);
    CHECK_EQ_INT(mrg_clock_split(&m), 1);
    CHECK(abs64(m.step_ns - 50 * MS) < 1000);
    CHECK_EQ_INT(mrg_clock_place(&m, 1, peer_reading(&tr, T0 + 1330 * MS), peer_reading(&tr, T0 + 1340 * MS),
                                 T0 + 1340 * MS), 0);
    CHECK_EQ_INT(mrg_clock_place(&m, 2, peer_reading(&tr, T0 + 1360 * MS), peer_reading(&tr, T0 + 1370 * MS),
                                 T0 + 1370 * MS), 0);
    for (int64_t real = T0 + 1200 * MS; real < T0 + 1500 * MS; real += 3 * MS)
        CHECK(abs64(aligned(&m, &tr, -1, real) - real) < 1000);
    /* Real 1343..1357 ms: raw duration 64 ms. */
    int64_t s = peer_reading(&tr, T0 + 1343 * MS), e = peer_reading(&tr, T0 + 1357 * MS);
    int64_t as = s + mrg_clock_offset_at(&m, s);
    CHECK(abs64(e + mrg_clock_end_offset_of(&m, -1, s, e, &clamped) - as - 14 * MS) < 1000);
    CHECK_EQ_INT(clamped, 0);
    /* The sequence tells nothing of a step ahead. */
    int64_t rows[2] = {3, 4}, starts[2] = {s, e};
    size_t pins = m.npins;
    CHECK_EQ_INT(mrg_clock_place_sequence(&m, rows, starts, 2), 0);
    CHECK_EQ_INT(m.npins, pins);
    mrg_clock_free(&m);
}

/* A sequence that does not follow its raw times where the rounds are sure
 * is no witness: nothing is pinned. */
static void test_sequence_not_a_witness(void)
{
    struct truth tr = {-50 * MS, T0 + 1350 * MS};
    struct mrg_clock_model m = {0};
    int64_t rows[4] = {1, 2, 3, 4};
    int64_t starts[4];

    build(&m, &tr);
    CHECK_EQ_INT(mrg_clock_split(&m), 1);
    /* Well after the step, then well before it, then around it. */
    starts[0] = peer_reading(&tr, T0 + 2000 * MS);
    starts[1] = peer_reading(&tr, T0 + 500 * MS);
    starts[2] = peer_reading(&tr, T0 + 1340 * MS);
    starts[3] = peer_reading(&tr, T0 + 1360 * MS);
    CHECK_EQ_INT(mrg_clock_place_sequence(&m, rows, starts, 4), 0);
    CHECK_EQ_INT(m.npins, 0);
    mrg_clock_free(&m);
}

static void test_small_change_is_no_step(void)
{
    struct truth tr = {-50000, T0 + 1350 * MS}; /* 50 us: within the slack */
    struct mrg_clock_model m = {0};
    int64_t at = 0;

    build(&m, &tr);
    CHECK_EQ_INT(mrg_clock_step(&m, &at), 0);
    CHECK_EQ_INT(mrg_clock_split(&m), 0);
    mrg_clock_free(&m);
}

/* Two steps: -20 ms at 0.7 s, -50 ms at 2.2 s; the larger is repaired. */
static void test_two_steps(void)
{
    struct truth tr = {-50 * MS, T0 + 2250 * MS};
    struct mrg_clock_model m = {0};

    for (int i = 0; i <= 10; i++) {
        int64_t real = T0 + i * 300 * MS;
        struct mrg_clock_sample s = {real - RTT / 2, peer_reading(&tr, real) - (real >= T0 + 700 * MS ? 20 * MS : 0),
                                     real + RTT / 2};
        CHECK_EQ_INT(mrg_clock_add_round(&m, &s, 1), 0);
    }
    CHECK_EQ_INT(mrg_clock_split(&m), 2);
    CHECK(abs64(m.step_ns + 50 * MS) < 1000);
    CHECK_EQ_INT(m.split, 8);
    mrg_clock_free(&m);
}

int main(void)
{
    test_no_step_unchanged();
    test_step_back();
    test_step_ahead();
    test_sequence_not_a_witness();
    test_small_change_is_no_step();
    test_two_steps();
    return hm_test_done();
}
