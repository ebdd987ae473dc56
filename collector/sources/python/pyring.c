/* libhtamerge-py.so: a tiny C API over the shared-memory ring for the
 * Python hooks (ctypes). The bootstrap attaches once, defines each string
 * once and then writes completed ranges, collectives and trace-file paths.
 * Times come in as CLOCK_REALTIME ns (time.time_ns()); the clock test hook
 * (HTAMERGE_CLOCK_SKEW_NS, ...) is applied here, as the injection library
 * applies it to its own times.
 *
 * String ids: the injection library (same process) takes the upper 15 bits
 * values 0..32748 (collector/sources/inject/inject.c); this library takes
 * 32749..32767, one of those 19 blocks per process by pid, so the two never
 * collide and two Python processes of one rank rarely do. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/capture_plan.h"
#include "common/clockhook.h"
#include "common/shm_ring.h"

#define HMPY_API __attribute__((visibility("default")))
#define HMPY_DOMAIN "htamerge"   /* the hooks' NVTX domain (_DOMAIN in _htamerge_hooks.py) */

static struct hm_ring *g_ring;
static struct hm_clockhook g_hook;
static uint32_t g_block;
static atomic_uint g_next = 1;

/* 0 when attached to $HTAMERGE_RING (again: no-op), -1 when there is none. */
HMPY_API int hmpy_attach(void)
{
    const char *name = getenv("HTAMERGE_RING");
    struct hm_err err;

    if (g_ring)
        return 0;
    if (!name || !*name)
        return -1;
    if (hm_clockhook_load(&g_hook) != 0)
        memset(&g_hook, 0, sizeof g_hook);
    hm_err_clear(&err);
    g_block = 32749u + (uint32_t)getpid() % 19u;
    g_ring = hm_ring_attach(name, &err);
    return g_ring ? 0 : -1;
}

/* CLOCK_REALTIME as this rank's (possibly hooked) clock reads it. */
HMPY_API int64_t hmpy_now(void)
{
    return hm_clock_now(&g_hook);
}

/* Defines text as a new string id and returns it; 0 when not attached or
 * the ring refused it. */
HMPY_API uint32_t hmpy_string(const char *text, uint32_t len)
{
    struct hm_ring_string h;
    uint32_t low;

    if (!g_ring || !text)
        return 0;
    if (len > HM_RING_MAX_PAYLOAD - 64)
        len = HM_RING_MAX_PAYLOAD - 64;
    low = atomic_fetch_add(&g_next, 1) & 0x1ffffu;
    if (!low)
        low = atomic_fetch_add(&g_next, 1) & 0x1ffffu;
    h.id = g_block << 17 | low;
    h.len = len;
    if (hm_ring_write2(g_ring, HM_RING_STRING, &h, sizeof h, text, len) != 0)
        return 0;
    return h.id;
}

/* A completed range [ts, ts + dur) (real ns) on thread tid of pid, as an
 * NVTX range of domain `domain` at nesting depth `depth`. 0 or -1. */
HMPY_API int hmpy_range(int64_t ts, int64_t dur, int64_t tid, int32_t pid, uint32_t name,
                        uint32_t domain, uint32_t args, int32_t depth)
{
    struct hm_ring_nvtx r = {.ts = hm_clockhook_apply(&g_hook, ts), .dur = dur > 0 ? dur : 0,
                             .tid = tid, .pid = pid, .name = name, .domain = domain,
                             .depth = (uint16_t)(depth > 0 ? depth : 0), .args = args};

    return g_ring ? hm_ring_write(g_ring, HM_RING_NVTX, &r, sizeof r) : -1;
}

/* A collective timed on the calling thread (struct hm_ring_cpu_coll). */
HMPY_API int hmpy_cpu_coll(int64_t ts, int64_t dur, int64_t tid, int32_t pid, int64_t seq,
                           int64_t bytes, int64_t nelems, uint32_t slice_name, uint32_t op,
                           uint32_t pg_name, uint32_t pg_ranks, uint32_t dtype, int32_t group_rank,
                           int32_t group_size, uint32_t pg_desc)
{
    struct hm_ring_cpu_coll r = {.ts = hm_clockhook_apply(&g_hook, ts), .dur = dur > 0 ? dur : 0,
                                 .seq = seq, .bytes = bytes, .nelems = nelems, .tid = tid,
                                 .pid = pid, .slice_name = slice_name, .op = op,
                                 .pg_name = pg_name, .pg_ranks = pg_ranks, .dtype = dtype,
                                 .group_rank = group_rank, .group_size = group_size, .pg_desc = pg_desc};

    return g_ring ? hm_ring_write(g_ring, HM_RING_CPU_COLL, &r, sizeof r) : -1;
}

/* One sampled value of counter `name` (a string id) on GPU `device` (-1:
 * the host) at ts (real ns): the hooks' memory samples. 0 or -1. */
HMPY_API int hmpy_counter(int64_t ts, double value, uint32_t name, int32_t device)
{
    struct hm_ring_counter r = {.ts = hm_clockhook_apply(&g_hook, ts), .value = value, .name = name,
                                .device = device};

    return g_ring ? hm_ring_write(g_ring, HM_RING_COUNTER, &r, sizeof r) : -1;
}

/* A trace file the program finished writing (absolute path). */
HMPY_API int hmpy_trace_file(const char *path, uint32_t len)
{
    struct hm_ring_trace_file h = {.len = len};

    if (!g_ring || !path || !len || len > HM_RING_MAX_PAYLOAD - 64)
        return -1;
    return hm_ring_write2(g_ring, HM_RING_TRACE_FILE, &h, sizeof h, path, len);
}

/* Where the capture plan's generation word lies in this process, for the
 * hooks to read it at each step boundary without a call (0: not attached). */
HMPY_API uintptr_t hmpy_plan_gen_addr(void)
{
    return g_ring ? (uintptr_t)hm_capture_plan_gen_word(hm_ring_control_area(g_ring)) : 0;
}

/* The capture plan's generation (changes with each new plan), 0 when not
 * attached: polled at each step boundary, so only a change costs a copy. */
HMPY_API uint64_t hmpy_plan_gen(void)
{
    return g_ring ? hm_capture_plan_gen(hm_ring_control_area(g_ring)) : 0;
}

/* A copy of the capture plan (struct hm_capture_plan, mirrored by the
 * hooks); returns its generation, 0 when not attached. */
HMPY_API uint64_t hmpy_plan(struct hm_capture_plan *out)
{
    if (!g_ring || !out)
        return 0;
    return hm_capture_plan_get(hm_ring_control_area(g_ring), out);
}

/* Whether step is recorded in full under plan p: HM_CAPTURE_F_* bits
 * (hm_capture_step), so that the hooks keep no copy of the formula. */
HMPY_API int hmpy_capture_step(const struct hm_capture_plan *p, int64_t step)
{
    return p ? hm_capture_step(p, step) : 0;
}

/* The first step after `step` where hmpy_capture_step's answer changes
 * (searched at most 2^20 steps ahead). */
HMPY_API int64_t hmpy_capture_next_change(const struct hm_capture_plan *p, int64_t step)
{
    return p ? hm_capture_next_change(p, step, 1 << 20) : step + 1;
}

/* The hooks' progress: step `step_now` (0-based) began; the last one took
 * step_ns. The collector reads it to place a plan's steps ahead of all. */
static void step_begun(int64_t step_now, int64_t step_ns)
{
    if (g_ring)
        hm_capture_progress_step(hm_ring_control_area(g_ring), step_now, step_ns);
}

/* A completed CPU range [ts, ts + dur) on thread tid of pid, of category
 * cat (enum hm_cat): the ops of a requested capture's profiler. 0 or -1. */
HMPY_API int hmpy_slice(int64_t ts, int64_t dur, int64_t tid, int32_t pid, uint32_t name, uint32_t cat,
                        uint32_t args)
{
    struct hm_ring_slice r = {.ts = hm_clockhook_apply(&g_hook, ts), .dur = dur > 0 ? dur : 0,
                              .correlation = -1, .bytes = -1, .tid = tid, .pid = pid, .name = name,
                              .args = args, .kind = 0 /* HM_TRACK_CPU_THREAD */, .cat = (uint16_t)cat};

    return g_ring ? hm_ring_write(g_ring, HM_RING_SLICE, &r, sizeof r) : -1;
}

/* The hooks' A/B medians: recent steps with CUPTI attached and detached
 * (struct hm_capture_progress), for rank 0's cost estimate. */
HMPY_API void hmpy_step_ab(int64_t on_ns, int64_t on_n, int64_t off_ns, int64_t off_n, int64_t win_excess_ns,
                          int64_t win_n, int64_t hooks_ns, int64_t hooks_n)
{
    struct hm_capture_measured m = {on_ns, on_n, off_ns, off_n, win_excess_ns, win_n, hooks_ns, hooks_n};
    if (g_ring)
        hm_capture_progress_measured(hm_ring_control_area(g_ring), &m);
}

/* Step `step` ended: its range [ts, end) at depth 0, its args
 * {"domain":"<domain>","step":N} defined here, and the progress word the
 * collector reads (step + 1 begun, this one took end - ts). 0 or -1.
 * Called by _htamerge_steps (steps.c) through its address. */
HMPY_API int hmpy_step(int64_t step, int64_t ts, int64_t end, int64_t tid, int32_t pid, uint32_t name,
                       uint32_t domain)
{
    char args[96];
    int n = snprintf(args, sizeof args, "{\"domain\":\"" HMPY_DOMAIN "\",\"step\":%lld}", (long long)step);
    uint32_t a = n > 0 && (size_t)n < sizeof args ? hmpy_string(args, (uint32_t)n) : 0;
    int rc = hmpy_range(ts, end - ts, tid, pid, name, domain, a, 0);

    step_begun(step + 1, end - ts);
    return rc;
}
