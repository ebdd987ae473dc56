/* The monotonic clock. */
#include "monotime.h"

#include <time.h>

int64_t hm_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

double hm_mono_s(void)
{
    return (double)hm_mono_ns() * 1e-9;
}
