/* The monotonic clock, for durations and timeouts (never for event times:
 * those are CLOCK_REALTIME, see clockhook.h). */
#ifndef HM_MONOTIME_H
#define HM_MONOTIME_H

#include <stdint.h>

/* CLOCK_MONOTONIC in ns. */
int64_t hm_mono_ns(void);

/* The same in seconds, for rates and progress lines. */
double hm_mono_s(void);

#endif
