/* NCCL capture: the profiler plugin (ncclProfiler_v5, ncclProfiler_v4).
 * One context per communicator. A Coll or P2p event ("task") opens on the
 * enqueueing thread and stops when NCCL has enqueued it; its GPU time comes
 * from the KernelCh events NCCL's proxy thread reports per channel (GPU
 * globaltimer start/stop, mapped to the CPU clock by gpuclock.c). The task
 * becomes one HM_RING_NCCL_COLL record once it stopped and all its channels
 * reported, or, failing that, when its slot is reused, its communicator is
 * finalised or the process exits (then with CPU enqueue times).
 *
 * Task state machine (slot.state, changed by CAS so exactly one thread
 * emits):   FREE -start-> OPEN -stop-> STOPPED -last channel-> EMITTED
 *           OPEN/STOPPED -slot reuse, finalize, exit-> EMITTED
 * Slots are never freed while the communicator lives: NCCL hands a task's
 * handle to KernelCh events after the task stopped.
 *
 * v5 also reports API calls (CollApi, P2pApi) on the calling thread: each
 * becomes a CPU slice "nccl:<Func>", and NCCL's stream pointer names the
 * stream of the communicator's next tasks. A one-rank communicator never
 * creates tasks (NCCL copies locally), so there the API call itself becomes
 * the collective, numbered by our own per-function sequence. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject_int.h"
#include "nccl_abi.h"

enum { EV_TASK = 0x7461736b, EV_KCH = 0x6b636800, EV_API = 0x61706900 };
enum { T_FREE = 0, T_OPEN, T_STOPPED, T_EMITTED };
enum { N_TASKS = 512, N_CHANNELS = 64, N_APIS = 64, N_SEQ = 16 };

struct task;
struct kch {                       /* handle of one KernelCh event */
    uint32_t kind;                 /* EV_KCH */
    struct task *task;             /* owner */
    uint64_t gpu_start, gpu_stop;  /* globaltimer ns, 0 = not reported */
};

struct task {                      /* handle of a Coll or P2p event */
    uint32_t kind;                 /* EV_TASK */
    struct inj_nccl_ctx *ctx;
    _Atomic int state;
    _Atomic int kch_open, kch_done;
    _Atomic int64_t gpu_min, gpu_max;  /* mapped CPU ns of the channels' start/stop */
    int64_t cpu_start, cpu_stop;
    int64_t seq, count, stream;
    uint32_t func, dtype, algo, proto;
    int nchannels;
    struct kch kch[N_CHANNELS];
};

struct api {                       /* handle of a CollApi / P2pApi event */
    uint32_t kind;                 /* EV_API */
    struct inj_nccl_ctx *ctx;
    int64_t cpu_start, tid, stream, count;
    uint32_t func, dtype;
    const char *func_text;         /* NCCL's static string */
};

struct inj_nccl_ctx {
    struct inj_nccl_ctx *next;     /* in inj.nccl.ctxs */
    uint64_t comm_id;
    int nranks, rank, device;
    void *stream_ptr;              /* last API event's stream and its id */
    int64_t stream;
    _Atomic uint32_t next_task, next_api;
    _Atomic int debug_events;      /* HTAMERGE_INJECT_DEBUG lines so far */
    const char *seq_func[N_SEQ];   /* one-rank communicators: our own seqNumber */
    int64_t seq_next[N_SEQ];
    struct task tasks[N_TASKS];
    struct api apis[N_APIS];
};

static struct inj *nccl_live(void)
{
    struct inj *g = inj_get();
    return g->active && (g->capture & INJ_CAP_NCCL) ? g : NULL;
}

/* "nccl:<func>": NCCL kernel names start with "nccl", so analyses class the
 * slice as communication. */
static uint32_t func_id(struct inj *g, const char *func)
{
    char buf[96];
    int n = snprintf(buf, sizeof buf, "nccl:%s", func ? func : "?");
    return inj_str(g, buf, n < (int)sizeof buf ? (size_t)n : sizeof buf - 1);
}

static struct inj_gpuclock *clock_of(struct inj *g, const struct inj_nccl_ctx *c)
{
    return &g->nccl.clock[(unsigned)c->device % INJ_MAX_DEVICES];
}

/* ---- emitting ------------------------------------------------------------ */

static void emit_task(struct inj *g, struct task *t)
{
    struct inj_nccl_ctx *c = t->ctx;
    int64_t lo = atomic_load(&t->gpu_min), hi = atomic_load(&t->gpu_max);
    struct hm_ring_nccl_coll r = {.seq = t->seq, .count = t->count, .comm_id = c->comm_id,
                                  .stream = t->stream, .device = c->device, .rank = c->rank,
                                  .nranks = c->nranks, .func = t->func, .dtype = t->dtype,
                                  .algo = t->algo, .proto = t->proto, .nchannels = (uint32_t)t->nchannels};

    if (lo != INT64_MAX && hi >= lo) {
        r.ts = lo;
        r.dur = hi - lo;
    } else {
        r.ts = t->cpu_start;
        r.dur = t->cpu_stop > t->cpu_start ? t->cpu_stop - t->cpu_start : 0;
    }
    inj_emit(g, HM_RING_NCCL_COLL, &r, sizeof r);
}

/* Emits t if it is in state `from` (exactly once across threads). */
static void emit_if(struct inj *g, struct task *t, int from)
{
    if (atomic_compare_exchange_strong(&t->state, &from, T_EMITTED))
        emit_task(g, t);
}

static void try_complete(struct inj *g, struct task *t)
{
    if (atomic_load(&t->state) == T_STOPPED && atomic_load(&t->kch_open) == 0 &&
        atomic_load(&t->kch_done) >= t->nchannels)
        emit_if(g, t, T_STOPPED);
}

static void flush_task(struct inj *g, struct task *t)
{
    emit_if(g, t, T_OPEN);
    emit_if(g, t, T_STOPPED);
}

static void flush_ctx(struct inj *g, struct inj_nccl_ctx *c)
{
    for (int i = 0; i < N_TASKS; i++)
        flush_task(g, &c->tasks[i]);
}

void inj_nccl_flush_all(struct inj *g)
{
    pthread_mutex_lock(&g->nccl.mu);
    for (struct inj_nccl_ctx *c = g->nccl.ctxs; c; c = c->next)
        flush_ctx(g, c);
    pthread_mutex_unlock(&g->nccl.mu);
}

/* ---- events ---------------------------------------------------------------- */

static struct task *task_open(struct inj *g, struct inj_nccl_ctx *c)
{
    uint32_t i = atomic_fetch_add(&c->next_task, 1) % N_TASKS;
    struct task *t = &c->tasks[i];

    flush_task(g, t);   /* a task never completed: emit what it has before reuse */
    t->kind = EV_TASK;
    t->ctx = c;
    atomic_store(&t->kch_open, 0);
    atomic_store(&t->kch_done, 0);
    atomic_store(&t->gpu_min, INT64_MAX);
    atomic_store(&t->gpu_max, INT64_MIN);
    t->cpu_start = inj_now(g);
    t->cpu_stop = 0;
    t->stream = c->stream;
    t->algo = t->proto = 0;
    atomic_store(&t->state, T_OPEN);
    return t;
}

static void *start_coll(struct inj *g, struct inj_nccl_ctx *c, const inj_nccl_descr_v5 *d)
{
    struct task *t = task_open(g, c);
    t->seq = (int64_t)d->coll.seqNumber;
    t->count = (int64_t)d->coll.count;
    t->func = func_id(g, d->coll.func);
    t->dtype = inj_cstr(g, d->coll.datatype);
    t->algo = inj_cstr(g, d->coll.algo);
    t->proto = inj_cstr(g, d->coll.proto);
    t->nchannels = d->coll.nChannels;
    return t;
}

static void *start_p2p(struct inj *g, struct inj_nccl_ctx *c, const inj_nccl_descr_v5 *d)
{
    struct task *t = task_open(g, c);
    t->seq = HM_NONE;
    t->count = (int64_t)d->p2p.count;
    t->func = func_id(g, d->p2p.func);
    t->dtype = inj_cstr(g, d->p2p.datatype);
    t->nchannels = d->p2p.nChannels;
    return t;
}

static void *start_kch(struct inj *g, struct inj_nccl_ctx *c, const inj_nccl_descr_v5 *d)
{
    struct task *t = d->parentObj;
    struct kch *k;

    if (!t || t->kind != EV_TASK || d->kernelCh.channelId >= N_CHANNELS) {
        atomic_fetch_add(&g->nccl.dropped, 1);
        return NULL;
    }
    k = &t->kch[d->kernelCh.channelId];
    k->kind = EV_KCH;
    k->task = t;
    k->gpu_start = d->kernelCh.pTimer;
    k->gpu_stop = 0;
    inj_gpuclock_sample(clock_of(g, c), inj_now(g), k->gpu_start);
    atomic_fetch_add(&t->kch_open, 1);
    return k;
}

static void task_min(_Atomic int64_t *v, int64_t x)
{
    int64_t old = atomic_load(v);
    while (x < old && !atomic_compare_exchange_weak(v, &old, x))
        ;
}

static void task_max(_Atomic int64_t *v, int64_t x)
{
    int64_t old = atomic_load(v);
    while (x > old && !atomic_compare_exchange_weak(v, &old, x))
        ;
}

static void stop_kch(struct inj *g, struct kch *k)
{
    struct task *t = k->task;
    struct inj_gpuclock *clk = clock_of(g, t->ctx);
    int64_t a, b;

    if (k->gpu_start && k->gpu_stop >= k->gpu_start && inj_gpuclock_map(clk, k->gpu_start, &a) == 0 &&
        inj_gpuclock_map(clk, k->gpu_stop, &b) == 0) {
        task_min(&t->gpu_min, a);
        task_max(&t->gpu_max, b);
    }
    atomic_fetch_add(&t->kch_done, 1);
    atomic_fetch_sub(&t->kch_open, 1);
    try_complete(g, t);
}

/* The CUPTI id of NCCL's stream pointer, cached per communicator. */
static int64_t stream_of(struct inj *g, struct inj_nccl_ctx *c, void *stream)
{
    if (stream != c->stream_ptr || c->stream == HM_NONE) {
        c->stream_ptr = stream;
        c->stream = inj_cupti_stream_id(g, stream);
    }
    return c->stream;
}

static void *start_api(struct inj *g, struct inj_nccl_ctx *c, const inj_nccl_descr_v5 *d)
{
    struct api *a = &c->apis[atomic_fetch_add(&c->next_api, 1) % N_APIS];
    int coll = d->type == INJ_NCCL_COLL_API;

    a->kind = EV_API;
    a->ctx = c;
    a->cpu_start = inj_now(g);
    a->tid = inj_tid();
    a->func_text = coll ? d->collApi.func : d->p2pApi.func;
    a->func = func_id(g, a->func_text);
    a->dtype = inj_cstr(g, coll ? d->collApi.datatype : d->p2pApi.datatype);
    a->count = (int64_t)(coll ? d->collApi.count : d->p2pApi.count);
    a->stream = stream_of(g, c, coll ? d->collApi.stream : d->p2pApi.stream);
    return a;
}

/* Per-function sequence numbers of a one-rank communicator. */
static int64_t own_seq(struct inj_nccl_ctx *c, const char *func)
{
    for (int i = 0; i < N_SEQ; i++) {
        if (!c->seq_func[i])
            c->seq_func[i] = func;
        if (c->seq_func[i] == func || (func && strcmp(c->seq_func[i], func) == 0))
            return c->seq_next[i]++;
    }
    return HM_NONE;
}

static void stop_api(struct inj *g, struct api *a)
{
    int64_t end = inj_now(g);
    struct inj_nccl_ctx *c = a->ctx;
    struct hm_ring_slice s = {.ts = a->cpu_start, .dur = end - a->cpu_start, .correlation = HM_NONE,
                              .bytes = HM_NONE, .tid = a->tid, .pid = g->pid, .name = a->func,
                              .kind = HM_TRACK_CPU_THREAD, .cat = HM_CAT_COLLECTIVE_COMM};

    inj_emit(g, HM_RING_SLICE, &s, sizeof s);
    if (c->nranks == 1) {
        struct hm_ring_nccl_coll r = {.ts = s.ts, .dur = s.dur, .seq = own_seq(c, a->func_text),
                                      .count = a->count, .comm_id = c->comm_id, .stream = a->stream,
                                      .device = c->device, .rank = c->rank, .nranks = 1,
                                      .func = a->func, .dtype = a->dtype};
        inj_emit(g, HM_RING_NCCL_COLL, &r, sizeof r);
    }
}

/* ---- plugin functions (shared by v5 and v4) -------------------------------- */

static struct inj_nccl_ctx *ctx_new(struct inj *g, uint64_t comm_id, int nranks, int rank)
{
    struct inj_nccl_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        inj_say_once(g, INJ_SAY_NCCL, NULL, "NCCL capture off for a communicator: out of memory");
        return NULL;
    }
    c->comm_id = comm_id;
    c->nranks = nranks;
    c->rank = rank;
    c->device = inj_cuda_device();
    if (c->device < 0)
        c->device = 0;
    c->stream = HM_NONE;
    pthread_mutex_lock(&g->nccl.mu);
    c->next = g->nccl.ctxs;
    g->nccl.ctxs = c;
    pthread_mutex_unlock(&g->nccl.mu);
    return c;
}

static inj_nccl_result init_common(void **context, int *mask, uint64_t comm_id, int nranks, int rank,
                                   int api_events)
{
    struct inj *g = nccl_live();

    *context = NULL;
    if (mask)
        *mask = 0;
    if (!g || !mask)
        return 0;
    *context = ctx_new(g, comm_id, nranks, rank);
    if (*context)
        *mask = INJ_NCCL_COLL | INJ_NCCL_P2P | INJ_NCCL_KERNEL_CH |
                (api_events ? INJ_NCCL_COLL_API | INJ_NCCL_P2P_API : 0);
    inj_debug(g, "nccl init comm %#llx rank %d/%d mask %#x", (unsigned long long)comm_id, rank, nranks, *mask);
    return 0;
}

static inj_nccl_result start_event(void *context, void **handle, inj_nccl_descr_v5 *d)
{
    struct inj *g = nccl_live();
    struct inj_nccl_ctx *c = context;

    *handle = NULL;
    if (!g || !c || !d)
        return 0;
    if (g->debug && atomic_fetch_add(&c->debug_events, 1) < 40)
        inj_debug(g, "nccl start type %#llx parent %p", (unsigned long long)d->type, d->parentObj);
    switch (d->type) {
    case INJ_NCCL_COLL: *handle = start_coll(g, c, d); break;
    case INJ_NCCL_P2P: *handle = start_p2p(g, c, d); break;
    case INJ_NCCL_KERNEL_CH: *handle = start_kch(g, c, d); break;
    case INJ_NCCL_COLL_API:
    case INJ_NCCL_P2P_API: *handle = start_api(g, c, d); break;
    default: break;
    }
    return 0;
}

static inj_nccl_result stop_event(void *handle)
{
    struct inj *g = nccl_live();
    uint32_t kind = handle ? *(uint32_t *)handle : 0;

    if (!g)
        return 0;
    if (kind == EV_KCH) {
        stop_kch(g, handle);
    } else if (kind == EV_TASK) {
        struct task *t = handle;
        int open = T_OPEN;
        t->cpu_stop = inj_now(g);
        if (atomic_compare_exchange_strong(&t->state, &open, T_STOPPED))
            try_complete(g, t);
    } else if (kind == EV_API) {
        stop_api(g, handle);
    }
    return 0;
}

static inj_nccl_result record_state(void *handle, int state, inj_nccl_state_args *args)
{
    struct inj *g = nccl_live();
    struct kch *k = handle;

    if (!g || !k || k->kind != EV_KCH || state != INJ_NCCL_STATE_KERNEL_CH_STOP || !args)
        return 0;
    k->gpu_stop = args->kernelCh.pTimer;
    inj_gpuclock_sample(clock_of(g, k->task->ctx), inj_now(g), k->gpu_stop);
    return 0;
}

static inj_nccl_result finalize(void *context)
{
    struct inj *g = inj_get();
    struct inj_nccl_ctx *c = context, **p;

    if (!c)
        return 0;
    flush_ctx(g, c);
    pthread_mutex_lock(&g->nccl.mu);
    for (p = &g->nccl.ctxs; *p && *p != c; p = &(*p)->next)
        ;
    if (*p)
        *p = c->next;
    pthread_mutex_unlock(&g->nccl.mu);
    free(c);
    return 0;
}

/* ---- v5 ----------------------------------------------------------------------- */

static inj_nccl_result init_v5(void **context, uint64_t comm_id, int *mask, const char *name, int nnodes,
                               int nranks, int rank, inj_nccl_logger log)
{
    (void)name, (void)nnodes, (void)log;
    return init_common(context, mask, comm_id, nranks, rank, 1);
}

const inj_nccl_profiler_v5 ncclProfiler_v5 = {
    "htamerge", init_v5, start_event, stop_event, record_state, finalize,
};

/* ---- v4 ----------------------------------------------------------------------- */

static inj_nccl_result init_v4(void **context, int *mask, const char *name, uint64_t comm_hash, int nnodes,
                               int nranks, int rank, inj_nccl_logger log)
{
    (void)name, (void)nnodes, (void)log;
    return init_common(context, mask, comm_hash, nranks, rank, 0);
}

/* A v4 descriptor differs from v5 only in its type's width and in lacking
 * the API events and v5's trailing parentGroup members. */
static inj_nccl_result start_event_v4(void *context, void **handle, inj_nccl_descr_v4 *d4)
{
    inj_nccl_descr_v5 d;

    *handle = NULL;
    if (!d4)
        return 0;
    memset(&d, 0, sizeof d);
    d.type = d4->type;
    d.parentObj = d4->parentObj;
    d.rank = d4->rank;
    memcpy(&d.coll, &d4->coll, sizeof *d4 - offsetof(inj_nccl_descr_v4, coll));
    return start_event(context, handle, &d);
}

const inj_nccl_profiler_v4 ncclProfiler_v4 = {
    "htamerge", init_v4, start_event_v4, stop_event, record_state, finalize,
};
