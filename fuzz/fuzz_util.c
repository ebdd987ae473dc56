/* The shared invariants of fuzz_util.h. */
#include "fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/wire.h"

void fuzz_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "%s:%d: invariant failed: %s\n", file, line, what);
    abort();
}

void fuzz_check_batch(const struct hm_batch *b)
{
    uint8_t *m1 = NULL, *m2 = NULL;
    size_t n1 = 0, n2 = 0;
    struct hm_batch *back = NULL;
    struct hm_err err;
    int rc;

    hm_err_clear(&err);
    rc = hm_wire_encode(b, &m1, &n1, &err);
    if (rc != 0)
        fprintf(stderr, "encode: %s\n", err.msg);
    FUZZ_ASSERT(rc == 0);
    rc = hm_wire_decode(m1, n1, &back, &err);
    if (rc != 0)
        fprintf(stderr, "decode of an encoded batch: offset %lld: %s\n", (long long)err.offset,
                err.msg);
    FUZZ_ASSERT(rc == 0);
    FUZZ_ASSERT(hm_wire_encode(back, &m2, &n2, &err) == 0);
    FUZZ_ASSERT(n1 == n2 && memcmp(m1, m2, n1) == 0);
    hm_batch_free(back);
    free(m1);
    free(m2);
}
