/* Clock model of one rank against rank 0, from MPI ping-pong rounds.
 * A round is several ping-pongs; the one with the smallest round trip is
 * kept (offset = rank 0's midpoint - the peer's reading, uncertainty =
 * RTT/2). Between rounds the offset is linear in the peer's time, which
 * follows drift; before the first and after the last round the nearest
 * segment is extended. A step of the peer's clock splits the model in two
 * (mrg_clock_split). All arithmetic is int64 ns or exact in double. */
#ifndef HM_MERGER_CLOCK_H
#define HM_MERGER_CLOCK_H

#include <stddef.h>
#include <stdint.h>

/* One ping-pong: rank 0 sent at t0 and received the reply at t2 (rank 0's
 * clock); the peer read t1 on its clock in between. */
struct mrg_clock_sample {
    int64_t t0, t1, t2;
};

/* The best sample of one round. */
struct mrg_clock_round {
    int64_t peer_ns;      /* the peer's clock at the sample (t1) */
    int64_t offset_ns;    /* add to the peer's time to get rank 0's */
    int64_t rtt_ns;
};

/* A raw time of one row whose side of a repaired step is known from
 * outside the rounds (a collective matched with the reference rank, a
 * track's sequence numbers). By row: a clock stepped back can read the
 * same ns twice; each is also kept under row -1, for other rows that read
 * that ns (an interval that ends where a placed one starts), unless the
 * pins of that ns disagree. */
struct mrg_clock_pin {
    int64_t row;                     /* the caller's row id (a slice id), -1: none */
    int64_t peer_ns;
    int after;                       /* 1: after the step */
    int64_t order;                   /* sequence << 32 | position in it; -1: none */
};

struct mrg_clock_model {
    struct mrg_clock_round *rounds;  /* owned, sorted by peer_ns */
    size_t n, cap;
    /* A repaired step (mrg_clock_split): rounds[0, split) fit the clock
     * before it, rounds[split, n) after it; split = 0 when none. */
    size_t split;
    int64_t step_ns;                 /* change of the peer's reading at the step (< 0: back) */
    int64_t step_lo_ns, step_hi_ns;  /* the step's moment lies in [lo, hi], reference clock */
    struct mrg_clock_pin *pins;      /* owned, sorted by row, then peer_ns */
    size_t npins, pins_cap;
    int64_t runs;                    /* sequences placed */
};

/* Picks the minimum-RTT sample of a round and adds it. Returns 0, HM_EINVAL
 * when no sample is usable (t2 < t0), or HM_ENOMEM. */
int mrg_clock_add_round(struct mrg_clock_model *m, const struct mrg_clock_sample *s, size_t n);

/* Offset to add to a peer time t (0 when the model is empty). */
int64_t mrg_clock_offset_at(const struct mrg_clock_model *m, int64_t t);

/* The same for t read by row (-1: none), which may be pinned. */
int64_t mrg_clock_offset_of(const struct mrg_clock_model *m, int64_t row, int64_t t);

/* Summary for `ranks` and `report clocks`: the offset at the first round,
 * the drift in ppm over the whole run (0 with one round; with a repaired
 * step, that of the two pieces, the step left out), and the largest RTT/2
 * of the kept samples (HM_NONE if empty). */
void mrg_clock_summary(const struct mrg_clock_model *m, int64_t *offset_ns, double *drift_ppm,
                       int64_t *ref_ns, int64_t *uncertainty_ns);

/* A clock step (NTP stepping the peer's clock, a VM resumed): the largest
 * change of offset between consecutive rounds beyond what a drift of
 * MRG_CLOCK_MAX_DRIFT_PPM and the two rounds' uncertainties explain, if it
 * is at least MRG_CLOCK_MIN_STEP_NS; 0 when none. *at_peer_ns: the later
 * round's peer time. Unrepaired, the piecewise-linear model smears such a
 * step over one sync interval; mrg_clock_split repairs it. */
#define MRG_CLOCK_MAX_DRIFT_PPM 500
#define MRG_CLOCK_MIN_STEP_NS 100000
int64_t mrg_clock_step(const struct mrg_clock_model *m, int64_t *at_peer_ns);

/* Repairs the largest step (mrg_clock_step): the model becomes two
 * pieces, each interpolated and extended on its own rounds, so a time is
 * mapped with the clock it was read on. Returns the number of steps found
 * (0: the model is left as it was; more than 1: only the largest is
 * repaired). */
int mrg_clock_split(struct mrg_clock_model *m);

/* After mrg_clock_split: an event (row) read at raw [enter, exit] whose
 * reference-clock exit is ref_exit_ns (the same collective on the
 * reference rank). Where the step leaves its side in doubt (a clock that
 * steps back reads the moments around it twice), the side whose exit is
 * nearer ref_exit_ns is kept for both times, and the step's moment is
 * narrowed. Returns 0 or HM_ENOMEM. */
int mrg_clock_place(struct mrg_clock_model *m, int64_t row, int64_t enter_ns, int64_t exit_ns,
                    int64_t ref_exit_ns);

/* After mrg_clock_split: says that row's raw t was read after the step
 * (after 1) or before it (0). Returns 0 or HM_ENOMEM. */
int mrg_clock_pin(struct mrg_clock_model *m, int64_t row, int64_t t, int after);

/* After mrg_clock_split of a step back: the raw starts of n intervals
 * (rows) of one track in the order they happened (a sequence number such
 * as the CUPTI correlation id). Where they go back by more than half the
 * step is where the step fell: every start is pinned to the side that
 * says, with its place in the sequence (for ends, see below). Nothing when
 * the sequence shows no such place, or disagrees with the rounds where
 * they are sure. Returns 0 or HM_ENOMEM. */
int mrg_clock_place_sequence(struct mrg_clock_model *m, const int64_t *row, const int64_t *start, size_t n);

/* The end of row's interval that starts at raw start, as an offset to add
 * to the raw end: after a step ahead, on the side its own reading gives;
 * after a step back, on the start's side of the step, unless the next start
 * of its sequence read at that ns, a pin of its own, or the pins of other
 * rows at that ns say otherwise, or the start's side would end it before
 * its start; never before the aligned start (then *clamped is
 * incremented). */
int64_t mrg_clock_end_offset_of(const struct mrg_clock_model *m, int64_t row, int64_t start, int64_t end,
                                int64_t *clamped);

void mrg_clock_free(struct mrg_clock_model *m);

#endif
