/* GPU %globaltimer -> this process's CPU clock, from one-way observations
 * (see struct inj_gpuclock). Lock-free: samples come from NCCL's proxy
 * threads. */
#include <limits.h>

#include "inject_int.h"

#define WINDOW_NS 1000000000ll

void inj_gpuclock_init(struct inj_gpuclock *c)
{
    atomic_store(&c->cur, INT64_MAX);
    atomic_store(&c->prev, INT64_MAX);
    atomic_store(&c->window, 0);
}

static void store_min(_Atomic int64_t *v, int64_t x)
{
    int64_t old = atomic_load_explicit(v, memory_order_relaxed);
    while (x < old && !atomic_compare_exchange_weak(v, &old, x))
        ;
}

void inj_gpuclock_sample(struct inj_gpuclock *c, int64_t cpu_ns, uint64_t gpu_ns)
{
    int64_t d = cpu_ns - (int64_t)gpu_ns;
    int64_t w = atomic_load_explicit(&c->window, memory_order_relaxed);

    if (!gpu_ns)
        return;
    if (w == 0 || cpu_ns - w > WINDOW_NS) {
        /* One thread rotates the window; the others just add their sample. */
        if (atomic_compare_exchange_strong(&c->window, &w, cpu_ns)) {
            atomic_store(&c->prev, atomic_load(&c->cur));
            atomic_store(&c->cur, d);
            return;
        }
    }
    store_min(&c->cur, d);
}

int inj_gpuclock_map(struct inj_gpuclock *c, uint64_t gpu_ns, int64_t *cpu_ns)
{
    int64_t a = atomic_load(&c->cur), b = atomic_load(&c->prev);
    int64_t off = a < b ? a : b;

    if (off == INT64_MAX || !gpu_ns)
        return -1;
    *cpu_ns = (int64_t)gpu_ns + off;
    return 0;
}
