/* The CUPTI buffer pool (struct inj_cbuf_pool): zeroed, faulted-in host
 * buffers, so that the training thread CUPTI asks from only pops a list.
 * Zeroing and allocation happen on the drain thread, outside the lock; the
 * lock covers list operations only. Knows nothing of CUPTI (cupti.c hands
 * the buffers out and parses them). */
#include <stdlib.h>
#include <string.h>

#include "inject_int.h"

enum { PAGE = 4096, TAIL_CHECK = 4096 };

/* A zeroed buffer with every page already written, so first use by CUPTI
 * takes no page fault (a large calloc is fresh mmap memory: zero, but not
 * yet backed). */
static struct inj_cbuf *buf_new(size_t bytes)
{
    struct inj_cbuf *b = calloc(1, sizeof *b + bytes);
    volatile uint8_t *d;

    if (!b)
        return NULL;
    d = inj_cbuf_data(b);
    for (size_t i = 0; i < bytes; i += PAGE)
        d[i] = 0;
    return b;
}

int inj_cbuf_pool_init(struct inj_cbuf_pool *p, size_t bytes, size_t spare)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    p->bytes = bytes;
    p->spare = spare;
    inj_cbuf_pool_refill(p);
    return p->nfree == spare ? 0 : -1;
}

struct inj_cbuf *inj_cbuf_pool_get(struct inj_cbuf_pool *p)
{
    struct inj_cbuf *b;

    pthread_mutex_lock(&p->mu);
    b = p->free;
    if (b) {
        p->free = b->next;
        p->nfree--;
    }
    pthread_mutex_unlock(&p->mu);
    if (b) {
        b->next = NULL;
        b->valid = 0;
        return b;
    }
    atomic_fetch_add(&p->misses, 1);
    return buf_new(p->bytes);
}

/* 1 when data[from, from + TAIL_CHECK) holds a non-zero byte. */
static int tail_written(const uint8_t *data, size_t from, size_t bytes)
{
    size_t end = bytes - from > TAIL_CHECK ? from + TAIL_CHECK : bytes;
    for (size_t i = from; i < end; i++)
        if (data[i])
            return 1;
    return 0;
}

/* Zeroes what CUPTI wrote. CUPTI documents `valid` as the bytes it filled;
 * should it ever write past that, the check below sees it (at the next page)
 * and the whole rest is cleared, counted in `dirty`. */
void inj_cbuf_pool_put(struct inj_cbuf_pool *p, struct inj_cbuf *b, size_t used)
{
    uint8_t *data;
    int keep;

    if (!b)
        return;
    data = inj_cbuf_data(b);
    used = used < p->bytes ? used : p->bytes;
    memset(data, 0, used);
    if (used < p->bytes && tail_written(data, used, p->bytes)) {
        memset(data + used, 0, p->bytes - used);
        atomic_fetch_add(&p->dirty, 1);
    }
    pthread_mutex_lock(&p->mu);
    keep = p->nfree < 2 * p->spare;
    if (keep) {
        b->next = p->free;
        p->free = b;
        p->nfree++;
    }
    pthread_mutex_unlock(&p->mu);
    if (!keep)
        free(b);
}

void inj_cbuf_pool_refill(struct inj_cbuf_pool *p)
{
    for (;;) {
        struct inj_cbuf *b;
        pthread_mutex_lock(&p->mu);
        int full = p->nfree >= p->spare;
        pthread_mutex_unlock(&p->mu);
        if (full || !(b = buf_new(p->bytes)))
            return;
        pthread_mutex_lock(&p->mu);
        b->next = p->free;
        p->free = b;
        p->nfree++;
        pthread_mutex_unlock(&p->mu);
    }
}

void inj_cbuf_pool_drop_all(struct inj_cbuf_pool *p)
{
    struct inj_cbuf *b;

    pthread_mutex_lock(&p->mu);
    b = p->free;
    p->free = NULL;
    p->nfree = 0;
    pthread_mutex_unlock(&p->mu);
    while (b) {
        struct inj_cbuf *next = b->next;
        free(b);
        b = next;
    }
}
