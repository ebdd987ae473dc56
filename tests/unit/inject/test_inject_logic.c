/* Injection library, pure parts: per-thread NVTX stacks (domains, depth
 * overflow), the start/end range table, and the GPU-timer map. */
#include <limits.h>

#include "test.h"

#include "collector/sources/inject/gpuclock.c"
#include "collector/sources/inject/nvtx_stack.c"

static struct inj_nvtx_frame frame(int64_t ts, uint32_t name, uint32_t domain)
{
    struct inj_nvtx_frame f = {.ts = ts, .name = name, .domain = domain};
    return f;
}

static void test_stack(void)
{
    static struct inj_nvtx_stack s;
    struct inj_nvtx_frame f = frame(1, 10, 0), out;
    uint32_t depth = 99;

    CHECK_EQ_INT(inj_nvtx_push(&s, &f), 0);
    f = frame(2, 11, 7);
    CHECK_EQ_INT(inj_nvtx_push(&s, &f), 1);
    f = frame(3, 12, 0);
    CHECK_EQ_INT(inj_nvtx_push(&s, &f), 2);
    /* Popping domain 7 takes its innermost range even under a default one. */
    CHECK_EQ_INT(inj_nvtx_pop(&s, 7, 0, &out, &depth), 1);
    CHECK_EQ_INT(out.name, 11);
    CHECK_EQ_INT(depth, 1);
    CHECK_EQ_INT(inj_nvtx_pop(&s, 7, 0, &out, &depth), 0);
    CHECK_EQ_INT(inj_nvtx_pop(&s, 0, 0, &out, &depth), 1);
    CHECK_EQ_INT(out.name, 12);
    CHECK_EQ_INT(depth, 1);
    CHECK_EQ_INT(inj_nvtx_pop(&s, 0, 0, &out, &depth), 1);
    CHECK_EQ_INT(out.ts, 1);
    CHECK_EQ_INT(depth, 0);
    CHECK_EQ_INT(inj_nvtx_pop(&s, 0, 0, &out, &depth), 0);
}

static void test_overflow(void)
{
    static struct inj_nvtx_stack s;
    struct inj_nvtx_frame f, out = {0};
    uint32_t depth;
    int n = INJ_NVTX_DEPTH + 5, got = 0;

    for (int i = 0; i < n; i++) {
        f = frame(i, (uint32_t)i + 1, 0);
        CHECK_EQ_INT(inj_nvtx_push(&s, &f), i);
    }
    CHECK_EQ_INT(s.hidden, 5);
    for (int i = 0; i < n; i++)
        got += inj_nvtx_pop(&s, 0, 0, &out, &depth);
    /* The 5 hidden pops match the 5 hidden pushes; the stored ones come back. */
    CHECK_EQ_INT(got, INJ_NVTX_DEPTH);
    CHECK_EQ_INT(out.name, 1);
    CHECK_EQ_INT(s.depth + s.hidden, 0);
}

static void test_start_end(void)
{
    static struct inj_nvtx n;
    struct inj_nvtx_frame f = frame(5, 3, 0), out;
    int64_t tid = 0;
    uint64_t a = inj_nvtx_start(&n, &f, 42), b;

    CHECK(a != 0);
    CHECK_EQ_INT(inj_nvtx_end(&n, a, &out, &tid), 1);
    CHECK_EQ_INT(tid, 42);
    CHECK_EQ_INT(out.ts, 5);
    CHECK_EQ_INT(inj_nvtx_end(&n, a, &out, &tid), 0);   /* ended twice */
    CHECK_EQ_INT(inj_nvtx_end(&n, 0, &out, &tid), 0);
    /* A range whose slot is still held by an older open one is lost, not
     * mixed up with it. */
    a = inj_nvtx_start(&n, &f, 1);
    for (int i = 1; i < INJ_NVTX_OPEN; i++) {
        b = inj_nvtx_start(&n, &f, 2);
        inj_nvtx_end(&n, b, &out, &tid);
    }
    b = inj_nvtx_start(&n, &f, 3);
    CHECK_EQ_INT(b % INJ_NVTX_OPEN, a % INJ_NVTX_OPEN);
    CHECK_EQ_INT(atomic_load(&n.lost), 1);
    CHECK_EQ_INT(inj_nvtx_end(&n, b, &out, &tid), 0);
    CHECK_EQ_INT(inj_nvtx_end(&n, a, &out, &tid), 1);
    CHECK_EQ_INT(tid, 1);
}

static void test_gpuclock(void)
{
    struct inj_gpuclock c;
    int64_t cpu = 0;
    const int64_t off = 1700000000000000000ll;   /* gpu + off = cpu */

    inj_gpuclock_init(&c);
    CHECK_EQ_INT(inj_gpuclock_map(&c, 1000, &cpu), -1);
    /* Observations arrive late by 30, 5 and 12 us: the smallest bound wins. */
    inj_gpuclock_sample(&c, off + 1000000 + 30000, 1000000);
    inj_gpuclock_sample(&c, off + 2000000 + 5000, 2000000);
    inj_gpuclock_sample(&c, off + 3000000 + 12000, 3000000);
    CHECK_EQ_INT(inj_gpuclock_map(&c, 5000000, &cpu), 0);
    CHECK_EQ_INT(cpu, off + 5000000 + 5000);
    /* Two windows later the old minimum is forgotten (drift is followed). */
    inj_gpuclock_sample(&c, off + 1500000000 + 9000, 1500000000);
    inj_gpuclock_sample(&c, off + 3000000000ll + 8000, 3000000000ll);
    CHECK_EQ_INT(inj_gpuclock_map(&c, 3000000000ll, &cpu), 0);
    CHECK_EQ_INT(cpu, off + 3000000000ll + 8000);
    CHECK_EQ_INT(inj_gpuclock_map(&c, 0, &cpu), -1);
}

int main(void)
{
    test_stack();
    test_overflow();
    test_start_end();
    test_gpuclock();
    return hm_test_done();
}
