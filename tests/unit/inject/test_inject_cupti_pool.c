/* Injection library, the CUPTI buffer pool (cupti_pool.c): buffers come out
 * zeroed, used ones go back zeroed and are reused, an empty pool allocates
 * and counts a miss, writes past `valid` are caught, the pool keeps at most
 * twice its spare count, and concurrent requesters (training threads) and a
 * refiller (the drain thread) never see a dirty buffer. cupti.c itself is
 * not driven here: it needs a real CUPTI (tests/gpu/). */
#include <pthread.h>

#include "test.h"

#include "collector/sources/inject/cupti_pool.c"

enum { BYTES = 3 * 4096 + 100, SPARE = 3 };

static int all_zero(struct inj_cbuf *b, size_t bytes)
{
    const uint8_t *d = inj_cbuf_data(b);
    for (size_t i = 0; i < bytes; i++)
        if (d[i])
            return 0;
    return 1;
}

static void test_get_reuse_miss(void)
{
    struct inj_cbuf_pool p;
    struct inj_cbuf *b[SPARE + 1], *again;

    CHECK_EQ_INT(inj_cbuf_pool_init(&p, BYTES, SPARE), 0);
    CHECK_EQ_INT(p.nfree, SPARE);
    for (int i = 0; i < SPARE; i++) {
        b[i] = inj_cbuf_pool_get(&p);
        CHECK(b[i] && all_zero(b[i], BYTES));
    }
    CHECK_EQ_INT(p.nfree, 0);
    CHECK_EQ_INT(atomic_load(&p.misses), 0);
    b[SPARE] = inj_cbuf_pool_get(&p);   /* empty: allocates */
    CHECK(b[SPARE] && all_zero(b[SPARE], BYTES));
    CHECK_EQ_INT(atomic_load(&p.misses), 1);

    /* A used buffer comes back zeroed and is the next one handed out. */
    memset(inj_cbuf_data(b[0]), 0xab, 1000);
    inj_cbuf_pool_put(&p, b[0], 1000);
    CHECK_EQ_INT(p.nfree, 1);
    again = inj_cbuf_pool_get(&p);
    CHECK(again == b[0]);
    CHECK(all_zero(again, BYTES));
    CHECK_EQ_INT(atomic_load(&p.misses), 1);
    CHECK_EQ_INT(atomic_load(&p.dirty), 0);

    /* Fully used: `used` == bytes, and more than bytes is clamped. */
    memset(inj_cbuf_data(again), 0x5a, BYTES);
    inj_cbuf_pool_put(&p, again, BYTES + 50);
    again = inj_cbuf_pool_get(&p);
    CHECK(all_zero(again, BYTES));
    CHECK_EQ_INT(atomic_load(&p.dirty), 0);

    /* Refill tops up to SPARE, counting nothing. */
    inj_cbuf_pool_refill(&p);
    CHECK_EQ_INT(p.nfree, SPARE);
    CHECK_EQ_INT(atomic_load(&p.misses), 1);

    /* The pool keeps at most 2 * SPARE; the rest is freed (ASan: no leak). */
    inj_cbuf_pool_put(&p, again, 0);
    for (int i = 1; i <= SPARE; i++)
        inj_cbuf_pool_put(&p, b[i], 10);
    CHECK_EQ_INT(p.nfree, 2 * SPARE);
    inj_cbuf_pool_put(&p, NULL, 10);   /* nothing */
    CHECK_EQ_INT(p.nfree, 2 * SPARE);
    again = inj_cbuf_pool_get(&p);
    inj_cbuf_pool_put(&p, again, 0);
    inj_cbuf_pool_put(&p, inj_cbuf_pool_get(&p), 0);
    CHECK_EQ_INT(p.nfree, 2 * SPARE);
    struct inj_cbuf *extra = calloc(1, sizeof *extra + BYTES);
    inj_cbuf_pool_put(&p, extra, 0);   /* full: freed */
    CHECK_EQ_INT(p.nfree, 2 * SPARE);

    /* After drop_all the pool is empty but usable: a get allocates. */
    inj_cbuf_pool_drop_all(&p);
    CHECK_EQ_INT(p.nfree, 0);
    again = inj_cbuf_pool_get(&p);
    CHECK(again && all_zero(again, BYTES));
    CHECK_EQ_INT(atomic_load(&p.misses), 2);
    inj_cbuf_pool_put(&p, again, 0);
    inj_cbuf_pool_drop_all(&p);
}

/* CUPTI documents `valid` as what it wrote; a write past it is cleared and
 * counted, not handed out again as a dirty "zeroed" buffer. */
static void test_dirty_tail(void)
{
    struct inj_cbuf_pool p;
    struct inj_cbuf *b;

    CHECK_EQ_INT(inj_cbuf_pool_init(&p, BYTES, 1), 0);
    b = inj_cbuf_pool_get(&p);
    memset(inj_cbuf_data(b), 1, 600);
    inj_cbuf_data(b)[BYTES - 1] = 7;   /* far past: outside the checked page... */
    inj_cbuf_data(b)[512 + 100] = 7;   /* ...but this one is in it */
    inj_cbuf_pool_put(&p, b, 512);
    CHECK_EQ_INT(atomic_load(&p.dirty), 1);
    b = inj_cbuf_pool_get(&p);
    CHECK(all_zero(b, BYTES));
    inj_cbuf_pool_put(&p, b, 0);
    CHECK_EQ_INT(atomic_load(&p.dirty), 1);
    inj_cbuf_pool_drop_all(&p);
}

/* Requesters write a pattern over what they got and give it back; a
 * refiller tops up meanwhile. Every buffer handed out must be zero. */
enum { THREADS = 4, ROUNDS = 300 };
struct race {
    struct inj_cbuf_pool *p;
    _Atomic int dirty_seen, done;
};

static void *requester(void *arg)
{
    struct race *r = arg;
    for (int i = 0; i < ROUNDS; i++) {
        struct inj_cbuf *b = inj_cbuf_pool_get(r->p);
        size_t used = (size_t)(i * 37 + 1) % BYTES;
        if (!b || !all_zero(b, BYTES))
            atomic_fetch_add(&r->dirty_seen, 1);
        if (!b)
            continue;
        memset(inj_cbuf_data(b), 0xff, used);
        inj_cbuf_pool_put(r->p, b, used);
    }
    return NULL;
}

static void *refiller(void *arg)
{
    struct race *r = arg;
    while (!atomic_load(&r->done))
        inj_cbuf_pool_refill(r->p);
    return NULL;
}

static void test_threads(void)
{
    struct inj_cbuf_pool p;
    struct race r = {.p = &p};
    pthread_t t[THREADS], f;

    CHECK_EQ_INT(inj_cbuf_pool_init(&p, BYTES, 2), 0);
    CHECK_EQ_INT(pthread_create(&f, NULL, refiller, &r), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ_INT(pthread_create(&t[i], NULL, requester, &r), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    atomic_store(&r.done, 1);
    pthread_join(f, NULL);
    CHECK_EQ_INT(atomic_load(&r.dirty_seen), 0);
    CHECK_EQ_INT(atomic_load(&p.dirty), 0);
    CHECK(p.nfree >= 2 && p.nfree <= 4);
    inj_cbuf_pool_drop_all(&p);
}

int main(void)
{
    test_get_reuse_miss();
    test_dirty_tail();
    test_threads();
    return hm_test_done();
}
