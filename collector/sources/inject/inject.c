/* The injection library's state and its producer helpers. The library is
 * loaded into the training process by the CUDA driver, NVTX and NCCL, whose
 * callbacks carry no user pointer; so, as the one exception to the style
 * guide, its state is a single global struct, here, reached through
 * inj_get(). This file also owns the process-level life cycle: attach to the
 * ring on first use (inert without HTAMERGE_RING), give forked children
 * their own string ids, flush what is pending at exit. It does not capture
 * anything itself: cupti.c, nvtx.c and nccl.c do. */
#include "inject_int.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "inject.h"

static struct inj g_inj;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Thread_local struct inj_nvtx_stack t_nvtx;   /* per-thread NVTX stack */
static _Thread_local int64_t t_tid;

struct inj_nvtx_stack *inj_nvtx_tls(void)
{
    return &t_nvtx;
}

int64_t inj_tid(void)
{
    if (!t_tid)
        t_tid = (int64_t)syscall(SYS_gettid);
    return t_tid;
}

int64_t inj_time(const struct inj *g, int64_t real_ns)
{
    return hm_clockhook_apply(&g->hook, real_ns);
}

int64_t inj_now(const struct inj *g)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return inj_time(g, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
}

void inj_emit(struct inj *g, uint16_t type, const void *payload, uint32_t len)
{
    if (g->ring)
        hm_ring_write(g->ring, type, payload, len);
}

/* ---- string ids ---------------------------------------------------------- */

static uint64_t hash_text(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h ? h : 1;
}

static uint32_t new_id(struct inj_strings *st)
{
    for (;;) {
        uint32_t c = atomic_fetch_add_explicit(&st->next, 1, memory_order_relaxed);
        uint32_t low = c & 0x1ffffu, block = c >> 17;
        if (low)
            return ((st->pid_mod + block * 7919u) % 32749u) << 17 | low;
    }
}

static uint32_t define(struct inj *g, uint32_t id, const char *text, size_t len)
{
    struct hm_ring_string h = {.id = id, .len = (uint32_t)len};
    if (!g->ring || hm_ring_write2(g->ring, HM_RING_STRING, &h, sizeof h, text, (uint32_t)len) != 0)
        return 0;
    return id;
}

/* Looks text up; inserts it when absent. Lock-free: a slot is claimed by
 * CAS on its key, and its id is published last. */
uint32_t inj_str(struct inj *g, const char *text, size_t len)
{
    struct inj_strings *st = &g->strings;
    uint64_t h = hash_text(text, len);

    if (!g->ring)
        return 0;
    if (len > HM_RING_MAX_PAYLOAD - 64)
        len = HM_RING_MAX_PAYLOAD - 64;
    for (uint32_t i = 0; st->slots && i < 64; i++) {
        struct inj_str_slot *s = &st->slots[(h + i) & (INJ_STR_SLOTS - 1)];
        uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == 0 && atomic_load_explicit(&st->used, memory_order_relaxed) < INJ_STR_SLOTS / 2 &&
            atomic_compare_exchange_strong(&s->key, &k, h)) {
            uint32_t id = new_id(st);
            char *copy = malloc(len + 1);
            if (!copy || !define(g, id, text, len)) {
                free(copy);
                return 0;   /* the slot stays claimed without an id: later lookups define afresh */
            }
            memcpy(copy, text, len);
            copy[len] = 0;
            s->text = copy;
            s->len = (uint32_t)len;
            atomic_fetch_add_explicit(&st->used, 1, memory_order_relaxed);
            atomic_store_explicit(&s->id, id, memory_order_release);
            return id;
        }
        if (k != h)
            continue;
        uint32_t id = atomic_load_explicit(&s->id, memory_order_acquire);
        if (!id)
            break;          /* being inserted by another thread: don't wait */
        if (s->len == len && memcmp(s->text, text, len) == 0)
            return id;
    }
    return define(g, new_id(st), text, len);
}

/* Texts that never repeat (a graph node's ids) would only fill the
 * interning table: each gets a fresh id, defined once. */
uint32_t inj_str_fresh(struct inj *g, const char *text, size_t len)
{
    if (!g->ring || len > HM_RING_MAX_PAYLOAD - 64)
        return 0;
    return define(g, new_id(&g->strings), text, len);
}

uint32_t inj_cstr(struct inj *g, const char *text)
{
    return text ? inj_str(g, text, strlen(text)) : 0;
}

size_t inj_wide_to_utf8(const wchar_t *w, char *buf, size_t cap)
{
    size_t n = 0;
    for (; w && *w && n + 5 < cap; w++) {
        uint32_t c = (uint32_t)*w;
        if (c < 0x80) {
            buf[n++] = (char)c;
        } else if (c < 0x800) {
            buf[n++] = (char)(0xc0 | c >> 6);
            buf[n++] = (char)(0x80 | (c & 0x3f));
        } else if (c < 0x10000) {
            buf[n++] = (char)(0xe0 | c >> 12);
            buf[n++] = (char)(0x80 | (c >> 6 & 0x3f));
            buf[n++] = (char)(0x80 | (c & 0x3f));
        } else {
            buf[n++] = (char)(0xf0 | (c >> 18 & 0x07));
            buf[n++] = (char)(0x80 | (c >> 12 & 0x3f));
            buf[n++] = (char)(0x80 | (c >> 6 & 0x3f));
            buf[n++] = (char)(0x80 | (c & 0x3f));
        }
    }
    if (cap)
        buf[n] = 0;
    return n;
}

/* ---- counters and notices ------------------------------------------------ */

void inj_counter(struct inj *g, const char *name, double value, int device)
{
    struct hm_ring_counter c = {.ts = inj_now(g), .value = value, .device = device};
    c.name = inj_cstr(g, name);
    if (c.name)
        inj_emit(g, HM_RING_COUNTER, &c, sizeof c);
}

void inj_say_once(struct inj *g, int which, const char *counter, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    int zero = 0;

    if (which < 0 || which >= INJ_SAY__COUNT || !atomic_compare_exchange_strong(&g->said[which], &zero, 1))
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "htamerge: pid %d: %s\n", (int)getpid(), msg);
    if (counter)
        inj_counter(g, counter, 1, -1);
}

void inj_debug(const struct inj *g, const char *fmt, ...)
{
    va_list ap;
    if (!g->debug)
        return;
    fprintf(stderr, "htamerge-inject[%d]: ", (int)getpid());
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* ---- CUDA device --------------------------------------------------------- */

/* cuCtxGetDevice through the already-loaded driver (never linked: there may
 * be no libcuda at build time, and we must not load one ourselves). */
int inj_cuda_device(void)
{
    static int (*get)(int *) = NULL;
    static _Atomic int looked = 0;
    int dev = -1;

    if (!atomic_load(&looked)) {
        void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
        if (h)
            *(void **)&get = dlsym(h, "cuCtxGetDevice");
        atomic_store(&looked, 1);
    }
    if (!get || get(&dev) != 0)
        return -1;
    return dev;
}

/* ---- life cycle ---------------------------------------------------------- */

static unsigned parse_capture(const char *s)
{
    unsigned cap = 0;
    if (!s || !*s)
        return INJ_CAP_CUPTI | INJ_CAP_CUPTI_LEAN | INJ_CAP_NVTX | INJ_CAP_NCCL;
    if (strstr(s, "cupti"))
        cap |= INJ_CAP_CUPTI;
    if (!strstr(s, "cupti-launches"))
        cap |= INJ_CAP_CUPTI_LEAN;
    if (strstr(s, "cupti-sync"))
        cap |= INJ_CAP_CUPTI_SYNC;
    if (strstr(s, "cupti-range"))
        cap |= INJ_CAP_CUPTI_RANGE;
    if (strstr(s, "nvtx"))
        cap |= INJ_CAP_NVTX;
    if (strstr(s, "nccl"))
        cap |= INJ_CAP_NCCL;
    return cap;
}

static void at_exit(void)
{
    struct inj *g = &g_inj;
    if (!g->active)
        return;
    inj_debug(g, "exit: flushing CUPTI");
    inj_cupti_stop(g);
    inj_debug(g, "exit: flushing NCCL");
    inj_nccl_flush_all(g);
    if (atomic_load(&g->nvtx.unmatched))
        inj_counter(g, "htamerge/nvtx unmatched pops", (double)atomic_load(&g->nvtx.unmatched), -1);
    if (atomic_load(&g->nvtx.lost))
        inj_counter(g, "htamerge/nvtx lost ranges", (double)atomic_load(&g->nvtx.lost), -1);
    hm_ring_heartbeat(g->ring);
}

/* A forked child shares the ring (MAP_SHARED) and the parent's interned
 * ids, which stay valid; new ids come from the child's own block. */
static void at_fork_child(void)
{
    struct inj *g = &g_inj;
    g->pid = (int32_t)getpid();
    g->strings.pid_mod = (uint32_t)g->pid % 32749u;
    atomic_store(&g->strings.next, 1);
    t_tid = 0;
    /* The parent's communicators and their pending collectives are the
     * parent's to report. */
    pthread_mutex_init(&g->nccl.mu, NULL);
    g->nccl.ctxs = NULL;
}

static void init_once(void)
{
    struct inj *g = &g_inj;
    const char *name = getenv("HTAMERGE_RING");
    struct hm_err err;

    g->pid = (int32_t)getpid();
    g->strings.pid_mod = (uint32_t)g->pid % 32749u;
    atomic_store(&g->strings.next, 1);
    pthread_mutex_init(&g->nccl.mu, NULL);
    for (int i = 0; i < INJ_MAX_DEVICES; i++)
        inj_gpuclock_init(&g->nccl.clock[i]);
    g->capture = parse_capture(getenv("HTAMERGE_CAPTURE"));
    g->debug = getenv("HTAMERGE_INJECT_DEBUG") != NULL;
    if (!name || !*name)
        return;   /* not under htamerge: stay inert */
    if (hm_clockhook_load(&g->hook) != 0)
        g->hook.active = 0;
    hm_err_clear(&err);
    g->ring = hm_ring_attach(name, &err);
    if (!g->ring) {
        char line[1400];
        fprintf(stderr, "htamerge: pid %d: live capture off: %s\n", (int)g->pid,
                hm_err_line(&err, line, sizeof line));
        return;
    }
    g->strings.slots = calloc(INJ_STR_SLOTS, sizeof *g->strings.slots);
    g->active = 1;
    hm_ring_heartbeat(g->ring);
    atexit(at_exit);
    pthread_atfork(NULL, NULL, at_fork_child);
}

struct inj *inj_get(void)
{
    pthread_once(&g_once, init_once);
    return &g_inj;
}

int htamerge_cupti_handover(int to_profiler)
{
    struct inj *g = inj_get();
    if (!g->active)
        return 1;
    return to_profiler ? inj_cupti_hand_over(g) : inj_cupti_take_back(g);
}

int htamerge_cupti_record(int on)
{
    struct inj *g = inj_get();
    if (!g->active)
        return 1;
    return inj_cupti_record(g, on);
}

/* CUDA_INJECTION64_PATH: the driver calls this from cuInit. */
int InitializeInjection(void)
{
    struct inj *g = inj_get();
    if (g->active && (g->capture & INJ_CAP_CUPTI))
        inj_cupti_start(g);
    else if (g->active)
        inj_say_once(g, INJ_SAY_CUPTI, "htamerge/cupti unavailable",
                     "CUPTI capture off (HTAMERGE_CAPTURE=%s): CUPTI is left to torch.profiler or another "
                     "tool; NVTX and NCCL capture go on", getenv("HTAMERGE_CAPTURE"));
    return 1;   /* never fail the application's cuInit */
}
