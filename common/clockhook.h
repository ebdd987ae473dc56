/* The clock test hook (docs/CONTRIBUTING.md, "Testing clocks"): a rank started with
 * HTAMERGE_CLOCK_SKEW_NS=X and optionally HTAMERGE_CLOCK_DRIFT_PPM=P
 * behaves as if its host clock ran X ns ahead and drifted P ppm: every
 * timestamp it takes or reads is moved by X + P * 1e-6 * (t - ref), where
 * ref is the moment the hook was loaded. The merger must undo it.
 *
 * A step, for fault tests: HTAMERGE_CLOCK_JUMP_NS=J (negative: backwards,
 * as when NTP steps a fast clock back) with HTAMERGE_CLOCK_JUMP_AFTER_MS=A
 * (default 1000) adds J to every timestamp at or after ref + A ms, so the
 * rank's clock reads some moments twice. */
#ifndef HM_CLOCKHOOK_H
#define HM_CLOCKHOOK_H

#include <stdint.h>

#include "batch.h"

struct hm_clockhook {
    int active;
    int64_t skew_ns;
    double drift_ppm;
    int64_t ref_ns;     /* real CLOCK_REALTIME ns when loaded */
    int64_t jump_ns;    /* step added from jump_at_ns on; 0 = none */
    int64_t jump_at_ns; /* real CLOCK_REALTIME ns of the step */
};

/* Reads the environment (the variables above). Returns 0, or HM_EINVAL
 * for malformed values. */
int hm_clockhook_load(struct hm_clockhook *h);

/* CLOCK_REALTIME in ns, as this rank's (possibly skewed) clock reads it. */
int64_t hm_clock_now(const struct hm_clockhook *h);

/* Moves one real Unix ns timestamp as the hook says. */
int64_t hm_clockhook_apply(const struct hm_clockhook *h, int64_t real_ns);

/* Moves every timestamp of a batch whose times are base_time_ns + ts. A
 * batch without base_time_ns is left as is (its clock is unknown). */
void hm_clockhook_apply_batch(const struct hm_clockhook *h, struct hm_batch *b);

#endif
