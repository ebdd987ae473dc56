/* Growable arrays: the one growth routine behind HM_VEC_PUSH, and the
 * int64_t comparator their sorts share. */
#include "vec.h"
#include "err.h"

#include <stdint.h>
#include <stdlib.h>

int hm_vec_reserve(void **data, size_t *cap, size_t need, size_t elem)
{
    size_t ncap;
    void *p;

    if (need <= *cap)
        return 0;
    ncap = *cap ? *cap : 16;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / elem)
            return HM_ENOMEM;
        ncap *= 2;
    }
    p = realloc(*data, ncap * elem);
    if (!p)
        return HM_ENOMEM;
    *data = p;
    *cap = ncap;
    return 0;
}

int hm_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}
