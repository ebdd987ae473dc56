/* Growable arrays: a pointer, a length and a capacity, grown by doubling.
 * HM_VEC_PUSH returns a pointer to the new zeroed slot, or NULL when out of
 * memory (the array is then unchanged). */
#ifndef HM_VEC_H
#define HM_VEC_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Ensures room for `need` elements of size `elem`; returns 0 or HM_ENOMEM. */
int hm_vec_reserve(void **data, size_t *cap, size_t need, size_t elem);

/* qsort and bsearch of int64_t, ascending. */
int hm_cmp_i64(const void *a, const void *b);

#define HM_VEC(type) struct { type *v; size_t n, cap; }

#define HM_VEC_PUSH(vec) \
    (hm_vec_reserve((void **)&(vec).v, &(vec).cap, (vec).n + 1, sizeof *(vec).v) \
         ? NULL \
         : (void *)memset(&(vec).v[(vec).n++], 0, sizeof *(vec).v))

#define HM_VEC_FREE(vec) do { free((vec).v); (vec).v = NULL; (vec).n = (vec).cap = 0; } while (0)

#endif
