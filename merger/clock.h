/* Clock model of one rank against rank 0, from MPI ping-pong rounds.
 * A round is several ping-pongs; the one with the smallest round trip is
 * kept (offset = rank 0's midpoint - the peer's reading, uncertainty =
 * RTT/2). Between rounds the offset is linear in the peer's time, which
 * follows drift; before the first and after the last round the nearest
 * segment is extended. All arithmetic is int64 ns or exact in double. */
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

struct mrg_clock_model {
    struct mrg_clock_round *rounds;  /* owned, sorted by peer_ns */
    size_t n, cap;
};

/* Picks the minimum-RTT sample of a round and adds it. Returns 0, HM_EINVAL
 * when no sample is usable (t2 < t0), or HM_ENOMEM. */
int mrg_clock_add_round(struct mrg_clock_model *m, const struct mrg_clock_sample *s, size_t n);

/* Offset to add to a peer time t (0 when the model is empty). */
int64_t mrg_clock_offset_at(const struct mrg_clock_model *m, int64_t t);

/* Summary for `ranks` and `report clocks`: the offset at the first round,
 * the drift in ppm over the whole run (0 with one round), and the largest
 * RTT/2 of the kept samples (HM_NONE if empty). */
void mrg_clock_summary(const struct mrg_clock_model *m, int64_t *offset_ns, double *drift_ppm,
                       int64_t *ref_ns, int64_t *uncertainty_ns);

/* A clock step (NTP stepping the peer's clock, a VM resumed): the largest
 * change of offset between consecutive rounds beyond what a drift of
 * MRG_CLOCK_MAX_DRIFT_PPM and the two rounds' uncertainties explain, if it
 * is at least MRG_CLOCK_MIN_STEP_NS; 0 when none. *at_peer_ns: the later
 * round's peer time. The piecewise-linear model smears such a step over
 * one sync interval, so alignment there is uncertain by about the step. */
#define MRG_CLOCK_MAX_DRIFT_PPM 500
#define MRG_CLOCK_MIN_STEP_NS 100000
int64_t mrg_clock_step(const struct mrg_clock_model *m, int64_t *at_peer_ns);

void mrg_clock_free(struct mrg_clock_model *m);

#endif
