/* CUPTI capture: activity records for kernels (concurrent), memcpy, memset,
 * synchronisation and the runtime/driver calls that launch, copy, set or
 * wait, each with its correlation id, as HM_RING_SLICE records. CUPTI is
 * loaded with dlopen (the library must load where CUPTI is missing, and in a
 * PyTorch process it must share the libcupti PyTorch already loaded).
 *
 * On CUDA 13 only one CUPTI client may exist. We claim it with cuptiSubscribe
 * from InitializeInjection; when that is refused (torch.profiler/Kineto or
 * an NVIDIA tool holds CUPTI) we say so once, record the counter
 * "htamerge/cupti unavailable" = 1, and leave CUPTI alone: NVTX and NCCL
 * capture go on, and the collector reads Kineto's files.
 *
 * Threads: CUPTI asks for a buffer (buf_request) on whichever thread filled
 * the last one, often a training thread mid-launch: it gets one from the
 * pool (inj_cbuf_pool, cupti_pool.c), already zeroed and faulted in, and we
 * tell CUPTI so (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER) so that it
 * does not zero 4 MiB there itself. CUPTI hands completed buffers to
 * buf_complete (its worker thread, or whoever flushes); they are queued for
 * our drain thread, which turns them into records, zeroes them back into
 * the pool and tops the pool up, flushes CUPTI every FLUSH_MS so records
 * stream while the job runs, and stamps the ring heartbeat. No training
 * thread parses, zeroes or (unless the pool ran dry: a counted miss)
 * allocates a buffer. At exit inj_cupti_stop forces a last flush, drains
 * and frees the pool. */
#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/capture_plan.h"
#include "inject_int.h"

#ifndef INJ_CUPTI_SONAME
#define INJ_CUPTI_SONAME "libcupti.so"
#endif

enum { BUF_BYTES = 4 << 20, FLUSH_MS = 500, WAKE_MS = 100, NAME_CACHE = 8192, MAX_CTX = 128 };
enum { SPARE_BUFS = 4 };       /* pool refill target: requests between two drain wakes */

/* CUPTI functions we call, resolved from the loaded library. */
#define CUPTI_FNS(X)                                                                                   \
    X(cuptiSubscribe) X(cuptiUnsubscribe) X(cuptiGetResultString) X(cuptiActivityRegisterCallbacks)    \
    X(cuptiActivityEnable) X(cuptiActivityFlushAll) X(cuptiActivityGetNextRecord)                      \
    X(cuptiActivityGetNumDroppedRecords) X(cuptiGetCallbackName) X(cuptiSetThreadIdType)               \
    X(cuptiGetStreamIdEx) X(cuptiActivityDisable) X(cuptiEnableCallback) X(cuptiFinalize) X(cuptiEnableDomain)

enum { MAX_OUT = 256 };        /* buffers handed to CUPTI and not yet completed */
enum { MAX_KINDS = 8, MAX_APIS = 128 };

struct name_slot {
    const char *key;           /* CUPTI's kernel name pointer (stable per function) */
    uint32_t id;
};

struct inj_cupti {
    void *lib;                 /* dlopen handle */
#define X(f) __typeof__(&f) f;
    CUPTI_FNS(X)
#undef X
    __typeof__(&cuptiSubscribe_v2) subscribe_v2;   /* NULL on older CUPTI */
    __typeof__(&cuptiActivityEnableRuntimeApi) enable_rt_api;   /* per-call tracing, */
    __typeof__(&cuptiActivityEnableDriverApi) enable_drv_api;   /* NULL before CUPTI 12.6 */
    __typeof__(&cuptiActivitySetAttribute) set_attr;             /* NULL: not exported */
    __typeof__(&cuptiGetGraphNodeId) graph_node_id;              /* NULL: no graph ids */
    __typeof__(&cuptiGetGraphId) graph_id;
    __typeof__(&cuptiGetGraphExecId) graph_exec_id;
    CUpti_SubscriberHandle sub;
    /* What enable_all turned on, so that a capture range (cupti-range:
     * cudaProfilerStart/Stop) can turn exactly that off and on again. */
    CUpti_ActivityKind kinds[MAX_KINDS];
    size_t nkinds;
    uint32_t rt_apis[MAX_APIS], drv_apis[MAX_APIS];   /* per-call API tracing */
    size_t nrt, ndrv;
    pthread_mutex_t rec_mu;    /* guards recording: the profiler calls may race */
    int recording;             /* activity records on (1) or paused by cudaProfilerStop (0) */
    int lean;                  /* cupti-lean: launches from kernels' queued time, no launch API records */
    int graph_launches;        /* cudaGraphLaunch is recorded (also under lean): a graph's
                                  kernels need no launch rebuilt from their queued time */
    int64_t win_on_ms, win_period_ms;   /* HTAMERGE_CUPTI_WINDOW; period 0: always on */
    int64_t win_start_ms;      /* mono_ms() when the windows began */
    _Atomic int wstate;        /* enum win_state */
    pthread_mutex_t win_mu;    /* window_tick against a hand-over (program thread) */
    int handovers;             /* times CUPTI went to torch.profiler and came back */
    /* The capture plan (common/capture_plan.h), read by the drain thread,
     * and the Python hooks' word for steps (htamerge_cupti_record). */
    struct hm_capture_plan plan;
    uint64_t plan_gen;
    _Atomic int hook_want;     /* STEPS plans: 1 attach, 0 detach; else 1 forces on */
    int no_detach;             /* torch.profiler kept the subscriber: windows impossible */
    _Atomic int64_t att_since_ns, att_total_ns;   /* attached time (mono), for the budget */
    _Atomic int64_t nrecords;  /* activity records parsed, for the budget */
    int handed_in_pause;       /* the last hand-over came during a window's pause */
    int sync;                  /* cupti-sync, to enable the same kinds again */
    uint32_t epoch;            /* attaches so far - 1: correlation ids restart at each */
    int64_t corr_base;         /* drain thread: epoch << 32 of the buffer being parsed */
    uint64_t held_at_detach;   /* buffers a detach left with CUPTI (drain thread) */
    uint32_t launch_name;      /* string id of "cudaLaunchKernel" (lean) */
    pthread_t thread;
    int thread_started;
    pthread_mutex_t mu;        /* guards head, tail, out, stop */
    pthread_cond_t cv;
    struct inj_cbuf_pool pool; /* free buffers; its own lock, never taken with mu */
    int zeroed;                /* CUPTI accepted ZEROED_OUT_ACTIVITY_BUFFER = 1 */
    struct inj_cbuf *head, *tail;  /* completed buffers, oldest first; owned */
    uint8_t *out[MAX_OUT];     /* buffers CUPTI holds: a completed buffer not found
                                  here is someone else's (another CUPTI client
                                  replaced the callbacks) and is left alone */
    int stop;
    int32_t pid;               /* the process that started CUPTI (not a forked child) */
    /* drain thread (or the exit path after it stopped) only: */
    struct name_slot names[NAME_CACHE];
    uint32_t rt_name[CUPTI_RUNTIME_TRACE_CBID_SIZE], drv_name[CUPTI_DRIVER_TRACE_CBID_SIZE];
    uint8_t rt_keep[CUPTI_RUNTIME_TRACE_CBID_SIZE], drv_keep[CUPTI_DRIVER_TRACE_CBID_SIZE]; /* 0 ?, 1 keep, 2 drop */
    uint32_t ctx_id[MAX_CTX], ctx_dev[MAX_CTX];
    int nctx;
    int64_t incomplete, incomplete_said;  /* records without times (below) */
};

/* Between windows CUPTI is detached (cuptiFinalize), not just disabled:
 * measured on the H200, a CUPTI with every activity kind disabled still
 * cost a launch-bound step 13 % (bench/RESULTS.md). NVIDIA's way to detach
 * is from a callback at an API call's exit, so the drain thread asks and
 * the next CUDA call of the program does it. */
enum win_state { WIN_ATTACHED = 0, WIN_DETACH_ASKED, WIN_DETACHING, WIN_DETACHED, WIN_HANDED_OVER };

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t mono_ms(void)
{
    return mono_ns() / 1000000;
}

static const char *result_text(struct inj_cupti *c, CUptiResult r)
{
    const char *s = NULL;
    if (c->cuptiGetResultString)
        c->cuptiGetResultString(r, &s);
    return s ? s : "unknown CUPTI error";
}

/* ---- names ----------------------------------------------------------------- */

/* A kernel's ring string id, cached by CUPTI's name pointer. Names go out
 * as CUPTI gives them (mangled): the collector demangles them, outside the
 * profiled process (collector/ring_source.c). */
static uint32_t kernel_name(struct inj *g, struct inj_cupti *c, const char *mangled)
{
    uint32_t h = (uint32_t)(((uintptr_t)mangled >> 3) * 2654435761u);
    uint32_t id;

    if (!mangled)
        return inj_cstr(g, "(unnamed kernel)");
    for (uint32_t i = 0; i < 16; i++) {
        struct name_slot *s = &c->names[(h + i) % NAME_CACHE];
        if (s->key == mangled)
            return s->id;
        if (s->key)
            continue;
        id = inj_cstr(g, mangled);
        if (id) {
            s->key = mangled;
            s->id = id;
        }
        return id;
    }
    return inj_cstr(g, mangled);
}

/* "cudaLaunchKernel_v7000" -> "cudaLaunchKernel", "..._ptsz" dropped too. */
static size_t api_base_len(const char *name)
{
    size_t n = strlen(name);
    for (int pass = 0; pass < 2; pass++) {
        size_t i = n;
        while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
            i--;
        if (i > 2 && i < n && name[i - 1] == 'v' && name[i - 2] == '_')
            n = i - 2;
        if (n > 5 && (!strncmp(name + n - 5, "_ptsz", 5) || !strncmp(name + n - 5, "_ptds", 5)))
            n -= 5;
    }
    return n;
}

/* Which API calls become slices: those that launch, copy, set, allocate or
 * wait (runtime), and launches (driver; a runtime call's own driver calls
 * would only repeat it). cupti-lean keeps all but the launches: they are
 * hundreds a step and most of CUPTI's cost, while copies, waits and
 * allocations are few and say why a GPU sat idle. */
static int api_wanted(const char *name, int driver, int lean)
{
    static const char *const rt[] = {"Launch", "Memcpy", "Memset", "Synchronize", "StreamWaitEvent",
                                     "EventRecord", "Malloc", "Free"};
    if (driver)
        return !lean && (!strncmp(name, "cuLaunch", 8) || !strncmp(name, "cuGraphLaunch", 13));
    /* A graph launch is one call per replay, not one per kernel: cheap, and
     * the only record of the thread and time that replayed the graph. */
    if (lean && strstr(name, "Launch") && !strstr(name, "GraphLaunch"))
        return 0;
    for (size_t i = 0; i < sizeof rt / sizeof rt[0]; i++)
        if (strstr(name, rt[i]))
            return 1;
    return 0;
}

/* The name id of an API call, 0 when it is not wanted. */
static uint32_t api_name(struct inj *g, struct inj_cupti *c, int driver, uint32_t cbid)
{
    uint32_t size = driver ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE;
    uint32_t *ids = driver ? c->drv_name : c->rt_name;
    uint8_t *keep = driver ? c->drv_keep : c->rt_keep;
    const char *name = NULL;

    if (cbid < size && keep[cbid])
        return keep[cbid] == 1 ? ids[cbid] : 0;
    c->cuptiGetCallbackName(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name);
    if (!name || !api_wanted(name, driver, c->lean)) {
        if (cbid < size)
            keep[cbid] = 2;
        return 0;
    }
    uint32_t id = inj_str(g, name, api_base_len(name));
    if (cbid < size && id) {
        ids[cbid] = id;
        keep[cbid] = 1;
    }
    return id;
}

static const char *memcpy_kind(unsigned k)
{
    static const char *const s[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                    "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
    return k < sizeof s / sizeof s[0] ? s[k] : "Unknown";
}

static const char *memory_kind(unsigned k)
{
    static const char *const s[] = {"Unknown", "Pageable", "Pinned", "Device",
                                    "Array",   "Managed",  "Device Static", "Managed Static"};
    return k < sizeof s / sizeof s[0] ? s[k] : "Unknown";
}

static uint32_t ctx_device(struct inj_cupti *c, uint32_t ctx)
{
    for (int i = 0; i < c->nctx; i++)
        if (c->ctx_id[i] == ctx)
            return c->ctx_dev[i];
    return 0;
}

/* ---- records ----------------------------------------------------------------- */

/* A flush that CUPTI is forced to make (at each detach between windows,
 * and at exit) returns the records of work still in flight without their
 * times: start 0. Stored, they sat at 1970 and stretched the run over 56
 * years (seen on the H200 under the budget's windows). They are left out
 * and counted ("htamerge/cupti incomplete records"). */
static int incomplete(struct inj_cupti *c, uint64_t start, uint64_t end)
{
    if (start != 0 && end >= start)
        return 0;
    c->incomplete++;
    return 1;
}

static void gpu_slice(struct inj *g, struct hm_ring_slice *s, uint64_t start, uint64_t end)
{
    s->ts = inj_time(g, (int64_t)start);
    s->dur = end > start ? inj_time(g, (int64_t)end) - s->ts : 0;
    s->kind = HM_TRACK_GPU_STREAM;
    inj_emit(g, HM_RING_SLICE, s, sizeof *s);
}

/* cupti-lean: no launch API records (their interception is most of CUPTI's
 * cost on a launch-bound step, bench/RESULTS.md), so the launch that the
 * analyses join to the kernel by correlation id (NVTX GPU projection,
 * launch delays) is rebuilt from the kernel's queued time: a zero-length
 * "cudaLaunchKernel" at the moment the launch put the kernel in the command
 * buffer, which on the H200 fell inside the real launch call for every one
 * of 8 458 kernels checked. The launching thread is unknown: these sit on
 * thread 0 (no real thread has id 0), which the NVTX projection treats
 * like any thread without ranges: its launches count for the ranges open
 * on the program's main annotated thread. */
static void queued_launch(struct inj *g, struct inj_cupti *c, const CUpti_ActivityKernel10 *k)
{
    struct hm_ring_slice s = {.correlation = c->corr_base + k->correlationId, .bytes = HM_NONE, .tid = 0,
                              .pid = (int32_t)c->pid, .kind = HM_TRACK_CPU_THREAD,
                              .cat = HM_CAT_CUDA_RUNTIME, .name = c->launch_name};

    s.ts = inj_time(g, (int64_t)k->queued);
    inj_emit(g, HM_RING_SLICE, &s, sizeof s);
}

static void on_kernel(struct inj *g, struct inj_cupti *c, const CUpti_ActivityKernel10 *k)
{
    if (incomplete(c, k->start, k->end))
        return;
    char args[320];
    int n = snprintf(args, sizeof args,
                     "{\"grid\":[%d,%d,%d],\"block\":[%d,%d,%d],\"registers per thread\":%u,"
                     "\"shared memory\":%d",
                     k->gridX, k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ,
                     (unsigned)k->registersPerThread, k->staticSharedMemory + k->dynamicSharedMemory);
    /* A CUDA graph's kernel: which graph and node ran it (its correlation
     * id is the graph launch's), for grouping a replay's kernels. */
    if (n > 0 && n < (int)sizeof args && k->graphId)
        n += snprintf(args + n, sizeof args - (size_t)n, ",\"graph id\":%u,\"graph node id\":%llu",
                      (unsigned)k->graphId, (unsigned long long)k->graphNodeId);
    if (n > 0 && n + 1 < (int)sizeof args) {
        args[n++] = '}';
        args[n] = 0;
    }
    if (c->lean && !(k->graphId && c->graph_launches) && k->queued && k->queued != CUPTI_TIMESTAMP_UNKNOWN &&
        k->queued <= k->start)
        queued_launch(g, c, k);
    struct hm_ring_slice s = {.correlation = c->corr_base + k->correlationId, .bytes = HM_NONE, .tid = k->streamId,
                              .pid = (int32_t)k->deviceId, .cat = HM_CAT_KERNEL,
                              .flags = HM_SLICE_F_STREAM_ARG};

    s.name = kernel_name(g, c, k->name);
    s.args = n > 0 && n < (int)sizeof args && args[n - 1] == '}' ? inj_str(g, args, (size_t)n) : 0;
    gpu_slice(g, &s, k->start, k->end);
}

static void on_memcpy(struct inj *g, struct inj_cupti *c, const CUpti_ActivityMemcpy6 *m)
{
    if (incomplete(c, m->start, m->end))
        return;
    char name[96];
    int n = snprintf(name, sizeof name, "Memcpy %s (%s -> %s)", memcpy_kind(m->copyKind),
                     memory_kind(m->srcKind), memory_kind(m->dstKind));
    struct hm_ring_slice s = {.correlation = c->corr_base + m->correlationId, .bytes = (int64_t)m->bytes,
                              .tid = m->streamId, .pid = (int32_t)m->deviceId,
                              .cat = HM_CAT_GPU_MEMCPY, .flags = HM_SLICE_F_STREAM_ARG};
    s.name = inj_str(g, name, (size_t)n);
    gpu_slice(g, &s, m->start, m->end);
}

static void on_memset(struct inj *g, struct inj_cupti *c, const CUpti_ActivityMemset4 *m)
{
    if (incomplete(c, m->start, m->end))
        return;
    char name[64];
    int n = snprintf(name, sizeof name, "Memset (%s)", memory_kind(m->memoryKind));
    struct hm_ring_slice s = {.correlation = c->corr_base + m->correlationId, .bytes = (int64_t)m->bytes,
                              .tid = m->streamId, .pid = (int32_t)m->deviceId,
                              .cat = HM_CAT_GPU_MEMSET, .flags = HM_SLICE_F_STREAM_ARG};
    s.name = inj_str(g, name, (size_t)n);
    gpu_slice(g, &s, m->start, m->end);
}

static void on_sync(struct inj *g, struct inj_cupti *c, const CUpti_ActivitySynchronization2 *y)
{
    if (incomplete(c, y->start, y->end))
        return;
    static const char *const names[] = {"Unknown Sync", "Event Sync", "Stream Wait Event", "Stream Sync",
                                        "Context Sync"};
    unsigned t = (unsigned)y->type < 5 ? (unsigned)y->type : 0;
    int has_stream = y->streamId != CUPTI_SYNCHRONIZATION_INVALID_VALUE;
    struct hm_ring_slice s = {.correlation = c->corr_base + y->correlationId, .bytes = HM_NONE,
                              .tid = has_stream ? (int64_t)y->streamId : -1,
                              .pid = (int32_t)ctx_device(c, y->contextId), .cat = HM_CAT_CUDA_SYNC,
                              .flags = has_stream ? HM_SLICE_F_STREAM_ARG : 0};
    s.name = inj_cstr(g, names[t]);
    gpu_slice(g, &s, y->start, y->end);
}

static void on_api(struct inj *g, struct inj_cupti *c, const CUpti_ActivityAPI *a, int driver)
{
    if (incomplete(c, a->start, a->end))
        return;
    struct hm_ring_slice s = {.correlation = c->corr_base + a->correlationId, .bytes = HM_NONE, .tid = a->threadId,
                              .pid = (int32_t)a->processId, .kind = HM_TRACK_CPU_THREAD,
                              .cat = driver ? HM_CAT_CUDA_DRIVER : HM_CAT_CUDA_RUNTIME};

    s.name = api_name(g, c, driver, a->cbid);
    if (!s.name)
        return;
    s.ts = inj_time(g, (int64_t)a->start);
    s.dur = a->end > a->start ? inj_time(g, (int64_t)a->end) - s.ts : 0;
    inj_emit(g, HM_RING_SLICE, &s, sizeof s);
}

static void on_context(struct inj_cupti *c, const CUpti_ActivityContext3 *x)
{
    if (c->nctx < MAX_CTX) {
        c->ctx_id[c->nctx] = x->contextId;
        c->ctx_dev[c->nctx++] = x->deviceId;
    }
}

static void on_record(struct inj *g, struct inj_cupti *c, CUpti_Activity *r)
{
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: on_kernel(g, c, (const void *)r); break;
    case CUPTI_ACTIVITY_KIND_MEMCPY: on_memcpy(g, c, (const void *)r); break;
    case CUPTI_ACTIVITY_KIND_MEMSET: on_memset(g, c, (const void *)r); break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: on_sync(g, c, (const void *)r); break;
    case CUPTI_ACTIVITY_KIND_RUNTIME: on_api(g, c, (const void *)r, 0); break;
    case CUPTI_ACTIVITY_KIND_DRIVER: on_api(g, c, (const void *)r, 1); break;
    case CUPTI_ACTIVITY_KIND_CONTEXT: on_context(c, (const void *)r); break;
    default: break;
    }
}

/* Turns one completed buffer into records and gives it back to the pool. */
static void parse_buffer(struct inj *g, struct inj_cupti *c, struct inj_cbuf *b)
{
    uint8_t *data = inj_cbuf_data(b);
    CUpti_Activity *r = NULL;

    int64_t n = 0;

    c->corr_base = (int64_t)b->epoch << 32;

    while (c->cuptiActivityGetNextRecord(data, b->valid, &r) == CUPTI_SUCCESS) {
        on_record(g, c, r);
        n++;
    }
    atomic_fetch_add(&c->nrecords, n);
    inj_cbuf_pool_put(&c->pool, b, b->valid);
    if (c->incomplete != c->incomplete_said) {
        c->incomplete_said = c->incomplete;
        inj_counter(g, "htamerge/cupti incomplete records", (double)c->incomplete, -1);
    }
}

/* ---- buffers and the drain thread ------------------------------------------------ */

/* Records p as handed out (add) or takes it back (!add); returns 1 when
 * done (taking back: p was ours). Caller holds mu. */
static int track_out(struct inj_cupti *c, uint8_t *want, uint8_t *put)
{
    for (int i = 0; i < MAX_OUT; i++)
        if (c->out[i] == want) {
            c->out[i] = put;
            return 1;
        }
    return 0;
}

/* On the thread that filled the last buffer (often a training thread
 * inside a launch): a pop from the pool, two short locks. NULL when no
 * buffer can be had (CUPTI then drops records and counts them). */
static void CUPTIAPI buf_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
    struct inj_cupti *c = inj_get()->cupti;
    struct inj_cbuf *b = c ? inj_cbuf_pool_get(&c->pool) : NULL;
    int ok = 0;

    if (b) {
        pthread_mutex_lock(&c->mu);
        ok = track_out(c, NULL, inj_cbuf_data(b));
        pthread_mutex_unlock(&c->mu);
        if (!ok) {
            inj_cbuf_pool_put(&c->pool, b, 0);   /* still zero */
            b = NULL;
        }
    }
    *buffer = b ? inj_cbuf_data(b) : NULL;
    *size = b ? BUF_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buf_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
    struct inj_cupti *c = inj_get()->cupti;
    struct inj_cbuf *b = buffer ? inj_cbuf_of(buffer) : NULL;

    (void)ctx, (void)stream, (void)size;
    if (!b || !c)
        return;
    pthread_mutex_lock(&c->mu);
    if (!track_out(c, buffer, NULL)) {
        pthread_mutex_unlock(&c->mu);
        return;
    }
    b->valid = valid;
    b->epoch = c->epoch;
    b->next = NULL;
    if (c->tail)
        c->tail->next = b;
    else
        c->head = b;
    c->tail = b;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Takes the queued buffers (caller holds mu). */
static struct inj_cbuf *take_all(struct inj_cupti *c)
{
    struct inj_cbuf *b = c->head;
    c->head = c->tail = NULL;
    return b;
}

static void parse_list(struct inj *g, struct inj_cupti *c, struct inj_cbuf *b)
{
    while (b) {
        struct inj_cbuf *next = b->next;
        parse_buffer(g, c, b);
        b = next;
    }
}

static CUptiResult subscribe(struct inj_cupti *c, char *why, size_t len);
static void set_recording(struct inj *g, struct inj_cupti *c, int on);
static void switch_recording(struct inj *g, struct inj_cupti *c, int on, int say);
static int enable_all(struct inj *g, struct inj_cupti *c, int sync, char *why, size_t len);
static void graph_callbacks(struct inj *g, struct inj_cupti *c);

/* Recording windows (HTAMERGE_CUPTI_WINDOW=ON_MS/PERIOD_MS): CUPTI is
 * attached for the first ON_MS of every PERIOD_MS and detached in between
 * (enum win_state), so a long job pays CUPTI's cost ON/PERIOD of the time
 * while NVTX and the NCCL plugin (no such cost) record everything. Checked
 * on the drain thread's wake-ups, so a window's edges move by up to
 * WAKE_MS, and a detach waits for the program's next CUDA call; each
 * change is the counter "htamerge/cupti recording" when it took effect. */
/* Buffers a finalized CUPTI still held (it was flushed just before the
 * detach was asked, so only what it took in between): back to the pool,
 * so that MAX_OUT never fills over many windows; their count is said. */
static void reclaim_held(struct inj *g, struct inj_cupti *c)
{
    uint8_t *held[MAX_OUT];
    int n = 0;

    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < MAX_OUT; i++)
        if (c->out[i]) {
            held[n++] = c->out[i];
            c->out[i] = NULL;
        }
    pthread_mutex_unlock(&c->mu);
    for (int i = 0; i < n; i++)
        inj_cbuf_pool_put(&c->pool, inj_cbuf_of(held[i]), c->pool.bytes);
    c->held_at_detach += (uint64_t)n;
    if (n)
        inj_counter(g, "htamerge/cupti buffers lost at detach", (double)c->held_at_detach, -1);
}

/* Attached time, for the budget's records-per-attached-second. */
static void mark_attached(struct inj_cupti *c, int on)
{
    int64_t now = mono_ns(), since = atomic_exchange(&c->att_since_ns, on ? now : 0);
    if (since)
        atomic_fetch_add(&c->att_total_ns, now - since);
    if (on && since)
        atomic_store(&c->att_since_ns, since);   /* already attached: keep counting from then */
}

/* The budget's view: records so far, attached time so far, into the ring's
 * control area (drain thread). */
static void publish_progress(struct inj *g, struct inj_cupti *c)
{
    int64_t since = atomic_load(&c->att_since_ns), total = atomic_load(&c->att_total_ns);
    if (since)
        total += mono_ns() - since;
    hm_capture_progress_cupti(hm_ring_control_area(g->ring), atomic_load(&c->nrecords), total);
}

/* Attaches CUPTI again; the counter "htamerge/cupti recording" goes to 1
 * when say_recording (a window begins, or a hand-over made during a
 * window's pause ends). */
static void reattach(struct inj *g, struct inj_cupti *c, int say_recording)
{
    char why[256] = "";
    int64_t t0 = mono_ns();

    reclaim_held(g, c);
    c->nkinds = c->nrt = c->ndrv = 0;
    c->epoch++;
    c->sub = NULL;
    if (subscribe(c, why, sizeof why) != CUPTI_SUCCESS)
        c->sub = NULL;
    if (!c->sub && !c->handovers) {
        fprintf(stderr, "htamerge: CUPTI did not attach again for a recording window (%s); "
                        "no more CUDA activity from process %d\n", why, (int)c->pid);
        c->win_period_ms = 0;
        c->no_detach = 1;
        return;
    }
    if (!c->sub && !c->no_detach) {
        /* torch.profiler kept the one subscriber: activity records need
         * none, but a window's detach does (a callback at an API exit). */
        fprintf(stderr, "htamerge: torch.profiler keeps CUPTI's subscriber (%s); CUPTI records "
                        "from now on without recording windows in process %d\n", why, (int)c->pid);
        c->win_period_ms = 0;
        c->no_detach = 1;
    }
    if (enable_all(g, c, c->sync, why, sizeof why) != 0) {
        fprintf(stderr, "htamerge: CUPTI did not attach again for a recording window (%s); "
                        "no more CUDA activity from process %d\n", why, (int)c->pid);
        c->win_period_ms = 0;
        c->no_detach = 1;
        return;
    }
    graph_callbacks(g, c);
    atomic_store(&c->wstate, WIN_ATTACHED);
    mark_attached(c, 1);
    hm_capture_progress_switch(hm_ring_control_area(g->ring), mono_ns() - t0);
    if (say_recording)
        inj_counter(g, "htamerge/cupti recording", 1, -1);
}

/* Moves CUPTI towards `want` (1 attached, 0 detached): an attach now, a
 * detach asked of the program's next CUDA call (caller holds win_mu). */
static void apply_want(struct inj *g, struct inj_cupti *c, int want)
{
    int st = atomic_load(&c->wstate), asked = WIN_DETACH_ASKED;

    if (want && st == WIN_DETACHED) {
        reattach(g, c, 1);
    } else if (want && st == WIN_DETACH_ASKED &&
               atomic_compare_exchange_strong(&c->wstate, &asked, WIN_ATTACHED)) {
        /* No CUDA call came to detach on during the pause: stay. */
        c->cuptiEnableDomain(0, c->sub, CUPTI_CB_DOMAIN_RUNTIME_API);
        c->cuptiEnableDomain(0, c->sub, CUPTI_CB_DOMAIN_DRIVER_API);
    } else if (!want && st == WIN_ATTACHED && c->sub && !c->no_detach) {
        c->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        if (c->cuptiEnableDomain(1, c->sub, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS &&
            c->cuptiEnableDomain(1, c->sub, CUPTI_CB_DOMAIN_DRIVER_API) == CUPTI_SUCCESS)
            atomic_store(&c->wstate, WIN_DETACH_ASKED);
    }
}

/* What the plan wants now (drain thread, win_mu held); -1: leave as is. */
static int plan_want(struct inj *g, struct inj_cupti *c)
{
    void *area = hm_ring_control_area(g->ring);
    uint64_t gen = area ? hm_capture_plan_gen(area) : 0;
    int64_t now = inj_now(g);   /* rank 0's epochs are on this clock, hooked alike */
    int force = atomic_load(&c->hook_want) == 1, base;

    if (gen != c->plan_gen)
        c->plan_gen = hm_capture_plan_get(area, &c->plan);
    switch (c->plan.mode) {
    case HM_CAPTURE_ALL:
        return 1;
    case HM_CAPTURE_STEPS:
        return -1;   /* the hooks attach and detach at step boundaries */
    case HM_CAPTURE_TIME:
        return hm_capture_time(&c->plan, now) != 0 || force;
    default:
        if (c->win_period_ms)   /* --cupti-window */
            base = (mono_ms() - c->win_start_ms) % c->win_period_ms < c->win_on_ms;
        else
            base = 1;
        return base || force || (hm_capture_time(&c->plan, now) & HM_CAPTURE_F_REQUEST);
    }
}

static void window_tick(struct inj *g, struct inj_cupti *c)
{
    int want = plan_want(g, c);
    if (want >= 0)
        apply_want(g, c, want);
}

/* The Python hooks, at a step boundary (htamerge_cupti_record): under a
 * plan of steps, on = attach for the coming step, 0 = detach; under other
 * plans, on forces CUPTI on (a requested step) until 0. On the program's
 * thread, so the switch lands on the step's edge. */
int inj_cupti_record(struct inj *g, int on)
{
    struct inj_cupti *c = g->cupti;

    if (!c || c->pid != g->pid)
        return 1;
    atomic_store(&c->hook_want, on ? 1 : 0);
    pthread_mutex_lock(&c->win_mu);
    if (atomic_load(&c->wstate) != WIN_HANDED_OVER) {
        int want = plan_want(g, c);   /* first: it takes a new plan in */
        if (c->plan.mode == HM_CAPTURE_STEPS)
            want = on;
        if (want >= 0)
            apply_want(g, c, want);
    }
    pthread_mutex_unlock(&c->win_mu);
    return 0;
}

/* On a program thread, at the exit of a CUDA call: the detach the drain
 * thread asked for. Only the thread that wins the exchange finalizes; no
 * lock is held, since cuptiFinalize waits for the other threads' callbacks. */
static int detach_here(struct inj *g, struct inj_cupti *c, const CUpti_CallbackData *cd)
{
    int asked = WIN_DETACH_ASKED;

    if (atomic_load(&c->wstate) != WIN_DETACH_ASKED)
        return 0;
    if (cd->callbackSite == CUPTI_API_EXIT &&
        atomic_compare_exchange_strong(&c->wstate, &asked, WIN_DETACHING)) {
        int64_t t0 = mono_ns();
        c->cuptiFinalize();
        mark_attached(c, 0);
        hm_capture_progress_switch(hm_ring_control_area(g->ring), mono_ns() - t0);
        inj_counter(g, "htamerge/cupti recording", 0, -1);
        atomic_store(&c->wstate, WIN_DETACHED);
    }
    return 1;
}

/* ---- hand-over to torch.profiler ------------------------------------------------ */

/* CUPTI takes one subscriber and one pair of buffer callbacks per process,
 * so while htamerge holds it, torch.profiler's Kineto records no GPU
 * activity. The Python hooks call these around each profiler session that
 * records CUDA (from its warm-up to its stop): htamerge's records pause,
 * Kineto's trace keeps every kernel, and the merger takes the window's
 * kernels from that trace, so each kernel is stored once. The counter
 * "htamerge/cupti handed to torch.profiler" marks the gap (1 at the
 * hand-over, 0 back); "htamerge/cupti recording" does not move, since the
 * GPU is recorded all along (an analysis leaves recording pauses out of
 * idle time). Both run on a program thread between CUDA calls. */

/* Returns 1 when no CUPTI buffer is left with CUPTI (caller holds mu). */
static int none_out(struct inj_cupti *c)
{
    for (int i = 0; i < MAX_OUT; i++)
        if (c->out[i])
            return 0;
    return 1;
}

/* Returns 0 when CUPTI is free for another client, 1 when htamerge did not
 * hold it (nothing to do), -1 when it could not let go: a buffer of ours
 * is still with CUPTI, and another client would be handed it to free. */
int inj_cupti_hand_over(struct inj *g)
{
    struct inj_cupti *c = g->cupti;
    int asked = WIN_DETACH_ASKED, empty, rc = 1;

    if (!c || c->pid != g->pid)
        return 1;
    pthread_mutex_lock(&c->win_mu);
    if (atomic_compare_exchange_strong(&c->wstate, &asked, WIN_ATTACHED) && c->sub) {
        c->cuptiEnableDomain(0, c->sub, CUPTI_CB_DOMAIN_RUNTIME_API);
        c->cuptiEnableDomain(0, c->sub, CUPTI_CB_DOMAIN_DRIVER_API);
    }
    for (int i = 0; i < 2000 && atomic_load(&c->wstate) == WIN_DETACHING; i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    switch (atomic_load(&c->wstate)) {
    case WIN_DETACHED:   /* a window pause: CUPTI is already free */
        atomic_store(&c->wstate, WIN_HANDED_OVER);
        c->handed_in_pause = 1;
        inj_counter(g, "htamerge/cupti handed to torch.profiler", 1, -1);
        rc = 0;
        break;
    case WIN_ATTACHED:
        switch_recording(g, c, 0, 0);
        c->cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONTEXT);
        c->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        pthread_mutex_lock(&c->mu);
        empty = none_out(c);
        pthread_mutex_unlock(&c->mu);
        if (!empty) {
            c->cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONTEXT);
            switch_recording(g, c, 1, 0);
            fprintf(stderr, "htamerge: CUPTI kept a buffer after a flush; it stays with htamerge, and "
                            "torch.profiler's trace of process %d has no GPU activity\n", (int)c->pid);
            rc = -1;
            break;
        }
        if (c->sub)
            c->cuptiUnsubscribe(c->sub);
        c->sub = NULL;
        atomic_store(&c->wstate, WIN_HANDED_OVER);
        mark_attached(c, 0);
        c->handed_in_pause = 0;
        inj_counter(g, "htamerge/cupti handed to torch.profiler", 1, -1);
        inj_debug(g, "CUPTI handed to torch.profiler");
        rc = 0;
        break;
    default:   /* already handed over */
        rc = 1;
    }
    pthread_mutex_unlock(&c->win_mu);
    return rc;
}

/* After the profiler stopped. Kineto keeps its subscriber (unless
 * TEARDOWN_CUPTI=1), so htamerge records on without one: activity records
 * need none. Returns 0 when recording again, 1 when it was not handed over,
 * -1 when CUPTI refused (said on stderr; no more GPU activity). */
int inj_cupti_take_back(struct inj *g)
{
    struct inj_cupti *c = g->cupti;
    int rc = 1;

    if (!c || c->pid != g->pid)
        return 1;
    pthread_mutex_lock(&c->win_mu);
    if (atomic_load(&c->wstate) == WIN_HANDED_OVER) {
        c->handovers++;
        reattach(g, c, c->handed_in_pause);
        rc = atomic_load(&c->wstate) == WIN_ATTACHED ? 0 : -1;
        inj_counter(g, "htamerge/cupti handed to torch.profiler", 0, -1);
        if (rc != 0 && !c->handed_in_pause)   /* nothing records the GPU from here */
            inj_counter(g, "htamerge/cupti recording", 0, -1);
        if (rc == 0 && c->win_period_ms)
            c->win_start_ms = mono_ms();   /* a window begins now */
        inj_debug(g, "CUPTI back from torch.profiler (%s)", rc == 0 ? "recording" : "refused");
    }
    pthread_mutex_unlock(&c->win_mu);
    return rc;
}

static void *drain_main(void *arg)
{
    struct inj *g = arg;
    struct inj_cupti *c = g->cupti;
    int64_t flushed = mono_ms(), said = flushed, flush_ms = 0;

    pthread_mutex_lock(&c->mu);
    while (!c->stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += WAKE_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        if (!c->head)
            pthread_cond_timedwait(&c->cv, &c->mu, &until);
        struct inj_cbuf *list = take_all(c);
        pthread_mutex_unlock(&c->mu);
        parse_list(g, c, list);
        inj_cbuf_pool_refill(&c->pool);
        hm_ring_heartbeat(g->ring);
        pthread_mutex_lock(&c->win_mu);
        if (atomic_load(&c->wstate) != WIN_HANDED_OVER && !c->no_detach)
            window_tick(g, c);
        pthread_mutex_unlock(&c->win_mu);
        publish_progress(g, c);
        if (mono_ms() - flushed >= FLUSH_MS && atomic_load(&c->wstate) == WIN_ATTACHED) {
            int64_t t0 = mono_ms();
            c->cuptiActivityFlushAll(0);   /* completes buffers on this thread: mu not held */
            flushed = mono_ms();
            flush_ms = flushed - t0;
        }
        if (g->debug && mono_ms() - said >= 1000) {
            /* Once a second: what a stalled program would want to know. */
            int out = 0;
            size_t pooled;
            pthread_mutex_lock(&c->mu);
            for (int i = 0; i < MAX_OUT; i++)
                out += c->out[i] != NULL;
            pthread_mutex_unlock(&c->mu);
            pthread_mutex_lock(&c->pool.mu);
            pooled = c->pool.nfree;
            pthread_mutex_unlock(&c->pool.mu);
            inj_debug(g, "CUPTI: %d buffers with CUPTI, %zu pooled, %llu pool misses, %lld records, state %d, "
                         "last flush %lld ms", out, pooled, (unsigned long long)atomic_load(&c->pool.misses),
                      (long long)atomic_load(&c->nrecords), atomic_load(&c->wstate), (long long)flush_ms);
            said = mono_ms();
        }
        pthread_mutex_lock(&c->mu);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* ---- start / stop ---------------------------------------------------------------- */

static int load(struct inj_cupti *c, char *why, size_t len)
{
    static const char *const names[] = {INJ_CUPTI_SONAME, "libcupti.so",
                                        "/usr/local/cuda/extras/CUPTI/lib64/" INJ_CUPTI_SONAME,
                                        "/usr/local/cuda/lib64/" INJ_CUPTI_SONAME};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !c->lib; i++)
        c->lib = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
    if (!c->lib) {
        snprintf(why, len, "cannot load %s: %s", INJ_CUPTI_SONAME, dlerror());
        return -1;
    }
#define X(f)                                                                   \
    if (!(*(void **)&c->f = dlsym(c->lib, #f))) {                              \
        snprintf(why, len, "%s has no %s", INJ_CUPTI_SONAME, #f);              \
        return -1;                                                             \
    }
    CUPTI_FNS(X)
#undef X
    *(void **)&c->subscribe_v2 = dlsym(c->lib, "cuptiSubscribe_v2");
    *(void **)&c->enable_rt_api = dlsym(c->lib, "cuptiActivityEnableRuntimeApi");
    *(void **)&c->enable_drv_api = dlsym(c->lib, "cuptiActivityEnableDriverApi");
    *(void **)&c->set_attr = dlsym(c->lib, "cuptiActivitySetAttribute");
    *(void **)&c->graph_node_id = dlsym(c->lib, "cuptiGetGraphNodeId");
    *(void **)&c->graph_id = dlsym(c->lib, "cuptiGetGraphId");
    *(void **)&c->graph_exec_id = dlsym(c->lib, "cuptiGetGraphExecId");
    return 0;
}

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data);

/* Claims CUPTI. Returns 0, or the refusal with its text in why. */
static CUptiResult subscribe(struct inj_cupti *c, char *why, size_t len)
{
    char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = "";
    CUptiResult r;

    if (c->subscribe_v2) {
        CUpti_SubscriberParams p = {.structSize = CUpti_SubscriberParams_STRUCT_SIZE,
                                    .subscriberName = "htamerge", .oldSubscriberName = holder,
                                    .oldSubscriberSize = CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN};
        r = c->subscribe_v2(&c->sub, on_callback, NULL, &p);
    } else {
        r = c->cuptiSubscribe(&c->sub, on_callback, NULL);
    }
    if (r != CUPTI_SUCCESS)
        snprintf(why, len, "%s%s%s", result_text(c, r), holder[0] ? "; held by " : "", holder);
    return r;
}

/* Traces only the API calls api_wanted keeps, one callback id at a time:
 * CUPTI then records nothing for the thousands of other calls a training
 * step makes (tracing all of them cost ~25 % of a launch-bound PyTorch
 * step on the H200). Returns 0, or -1 when this CUPTI cannot. */
static int enable_some_apis(struct inj_cupti *c)
{
    const char *name;

    if (!c->enable_rt_api || !c->enable_drv_api)
        return -1;
    for (uint32_t id = 1; id < CUPTI_RUNTIME_TRACE_CBID_SIZE; id++) {
        name = NULL;
        c->cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, id, &name);
        if (!name || !api_wanted(name, 0, c->lean))
            continue;
        if (c->nrt == MAX_APIS || c->enable_rt_api(id, 1) != CUPTI_SUCCESS)
            return -1;
        c->rt_apis[c->nrt++] = id;
        c->graph_launches |= strstr(name, "GraphLaunch") != NULL;
    }
    for (uint32_t id = 1; id < CUPTI_DRIVER_TRACE_CBID_SIZE; id++) {
        name = NULL;
        c->cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, id, &name);
        if (!name || !api_wanted(name, 1, c->lean))
            continue;
        if (c->ndrv == MAX_APIS || c->enable_drv_api(id, 1) != CUPTI_SUCCESS)
            return -1;
        c->drv_apis[c->ndrv++] = id;
    }
    return 0;
}

/* Undoes a partial enable_some_apis. */
static void forget_apis(struct inj_cupti *c)
{
    for (size_t i = 0; i < c->nrt; i++)
        c->enable_rt_api(c->rt_apis[i], 0);
    for (size_t i = 0; i < c->ndrv; i++)
        c->enable_drv_api(c->drv_apis[i], 0);
    c->nrt = c->ndrv = 0;
    c->graph_launches = 0;
}

/* HTAMERGE_CUPTI_KINDS (a diagnostic for the overhead benchmark): which
 * activity kinds to enable, e.g. "kernel,memcpy,sync,api"; unset means all
 * but sync, which comes with HTAMERGE_CAPTURE's cupti-sync. */
static int kind_wanted(const char *list, int sync, CUpti_ActivityKind k)
{
    static const struct { CUpti_ActivityKind kind; const char *name; } names[] = {
        {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernel"}, {CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy"},
        {CUPTI_ACTIVITY_KIND_MEMSET, "memset"}, {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "sync"},
        {CUPTI_ACTIVITY_KIND_RUNTIME, "api"}, {CUPTI_ACTIVITY_KIND_DRIVER, "api"}};
    if (!list)
        return k != CUPTI_ACTIVITY_KIND_SYNCHRONIZATION || sync;
    if (k == CUPTI_ACTIVITY_KIND_CONTEXT)
        return 1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].kind == k)
            return strstr(list, names[i].name) != NULL;
    return 1;
}

/* Tells CUPTI our buffers come zeroed, so it skips zeroing each on the
 * requesting thread. Returns 1 when accepted; 0 (CUPTI zeroes them itself,
 * as before) when this CUPTI lacks the call or refuses the attribute. */
static int say_buffers_zeroed(struct inj_cupti *c)
{
    uint8_t on = 1;
    size_t size = sizeof on;

    return c->set_attr && c->set_attr(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &on) ==
                              CUPTI_SUCCESS;
}

static int enable_all(struct inj *g, struct inj_cupti *c, int sync, char *why, size_t len)
{
    static const CUpti_ActivityKind kinds[] = {
        CUPTI_ACTIVITY_KIND_CONTEXT, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMSET,  CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,    CUPTI_ACTIVITY_KIND_RUNTIME,
        CUPTI_ACTIVITY_KIND_DRIVER};
    const char *only = getenv("HTAMERGE_CUPTI_KINDS");
    size_t nkinds = sizeof kinds / sizeof kinds[0];
    CUptiResult r;

    c->cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);  /* tids as NVTX sees them */
    if (c->lean) {   /* kernels' queued time stands in for their launch (queued_launch) */
        __typeof__(&cuptiActivityEnableLatencyTimestamps) lat;
        *(void **)&lat = dlsym(c->lib, "cuptiActivityEnableLatencyTimestamps");
        if (!lat || lat(1) != CUPTI_SUCCESS) {
            /* Without queued times the launches must come from their API
             * records: costlier, but no kernel loses its launch. */
            inj_say_once(g, INJ_SAY_LAUNCHES, "htamerge/cupti launches recorded",
                         "this CUPTI %s latency timestamps; recording the launch calls instead (cupti-launches)",
                         lat ? "refuses" : "lacks");
            c->lean = 0;
        }
    }
    c->zeroed = say_buffers_zeroed(c);
    r = c->cuptiActivityRegisterCallbacks(buf_request, buf_complete);
    if (r != CUPTI_SUCCESS) {
        snprintf(why, len, "cuptiActivityRegisterCallbacks: %s", result_text(c, r));
        return -1;
    }
    if (!kind_wanted(only, sync, CUPTI_ACTIVITY_KIND_RUNTIME))
        nkinds -= 2;
    else if (c->lean) {
        /* Never every call: that is the cost lean is for. Without per-call
         * tracing (CUPTI < 12.6) lean records no API call at all. */
        if (enable_some_apis(c) != 0)
            forget_apis(c);
        nkinds -= 2;
    } else if (!getenv("HTAMERGE_CUPTI_ALL_APIS") && enable_some_apis(c) == 0)
        nkinds -= 2;   /* not RUNTIME and DRIVER: they would turn every call on again */
    for (size_t i = 0; i < nkinds; i++) {
        if (!kind_wanted(only, sync, kinds[i]))
            continue;
        r = c->cuptiActivityEnable(kinds[i]);
        if (r != CUPTI_SUCCESS && kinds[i] != CUPTI_ACTIVITY_KIND_CONTEXT) {
            snprintf(why, len, "cuptiActivityEnable(%d): %s", (int)kinds[i], result_text(c, r));
            return -1;
        }
        if (kinds[i] != CUPTI_ACTIVITY_KIND_CONTEXT && c->nkinds < MAX_KINDS)
            c->kinds[c->nkinds++] = kinds[i];
    }
    c->recording = 1;
    return 0;
}

/* ---- capture range (cupti-range) ------------------------------------------------ */

/* Turns the activity records enable_all chose off or on (contexts stay on,
 * so streams are still named), and records the change as the counter
 * "htamerge/cupti recording" (1 on, 0 off) at the moment it happens. */
static void switch_recording(struct inj *g, struct inj_cupti *c, int on, int say)
{
    pthread_mutex_lock(&c->rec_mu);
    if (c->recording != on) {
        for (size_t i = 0; i < c->nkinds; i++)
            (on ? c->cuptiActivityEnable : c->cuptiActivityDisable)(c->kinds[i]);
        for (size_t i = 0; i < c->nrt; i++)
            c->enable_rt_api(c->rt_apis[i], (uint8_t)on);
        for (size_t i = 0; i < c->ndrv; i++)
            c->enable_drv_api(c->drv_apis[i], (uint8_t)on);
        c->recording = on;
        if (say)
            inj_counter(g, "htamerge/cupti recording", on, -1);
        inj_debug(g, "CUPTI records %s", on ? "on" : "off");
    }
    pthread_mutex_unlock(&c->rec_mu);
}

static void set_recording(struct inj *g, struct inj_cupti *c, int on)
{
    switch_recording(g, c, on, 1);
}

/* ---- CUDA graphs ------------------------------------------------------------------ */

/* A graph node made (by stream capture, inside the captured call, or by
 * explicit creation), a node cloned (when a graph is instantiated or
 * cloned), or an executable graph made: an instant slice of category
 * cuda_graph on the calling thread, args holding CUPTI's ids. A replayed
 * kernel's record names the node of the executable graph, a clone: the
 * merger follows "original graph node id" back to the node made at
 * capture, and takes the ranges open on this thread at that moment as
 * the kernel's capture context (analysis/cross_rank/graph_kernels.c).
 * Runs on the program's thread, a few hundred times per graph built. */
static void graph_made(struct inj *g, struct inj_cupti *c, CUpti_CallbackId cbid, const CUpti_ResourceData *rd)
{
    const CUpti_GraphData *d = rd->resourceDescriptor;
    uint64_t node = 0, orig = 0;
    uint32_t graph = 0, ograph = 0, exec = 0;
    const char *what;
    char args[224];
    int n;

    if (!d || !c->graph_node_id || !c->graph_id || c->pid != g->pid)
        return;
    if (d->graph)
        c->graph_id(d->graph, &graph);
    switch (cbid) {
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED:
        if (!d->node || c->graph_node_id(d->node, &node) != CUPTI_SUCCESS)
            return;
        what = "graph node created";
        n = snprintf(args, sizeof args, "{\"graph id\":%u,\"graph node id\":%llu,\"node type\":%d}", graph,
                     (unsigned long long)node, (int)d->nodeType);
        break;
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED:
        if (!d->node || !d->originalNode || c->graph_node_id(d->node, &node) != CUPTI_SUCCESS ||
            c->graph_node_id(d->originalNode, &orig) != CUPTI_SUCCESS)
            return;
        if (d->originalGraph)
            c->graph_id(d->originalGraph, &ograph);
        what = "graph node cloned";
        n = snprintf(args, sizeof args,
                     "{\"graph id\":%u,\"graph node id\":%llu,\"original graph id\":%u,"
                     "\"original graph node id\":%llu,\"node type\":%d}",
                     graph, (unsigned long long)node, ograph, (unsigned long long)orig, (int)d->nodeType);
        break;
    case CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED:
        if (!d->graphExec || !c->graph_exec_id || c->graph_exec_id(d->graphExec, &exec) != CUPTI_SUCCESS)
            return;
        what = "graph instantiated";
        n = snprintf(args, sizeof args, "{\"graph id\":%u,\"graph exec id\":%u}", graph, exec);
        break;
    default:
        return;
    }
    struct hm_ring_slice s = {.ts = inj_now(g), .correlation = HM_NONE, .bytes = HM_NONE, .tid = inj_tid(),
                              .pid = (int32_t)c->pid, .kind = HM_TRACK_CPU_THREAD, .cat = HM_CAT_CUDA_GRAPH};
    s.name = inj_cstr(g, what);
    s.args = n > 0 && n < (int)sizeof args ? inj_str_fresh(g, args, (size_t)n) : 0;
    inj_emit(g, HM_RING_SLICE, &s, sizeof s);
}

/* Asks for graph_made's callbacks on the subscriber (at each attach: a
 * detach drops them). Without them kernels still carry their graph and
 * node ids, only not where the node was made. */
static void graph_callbacks(struct inj *g, struct inj_cupti *c)
{
    static const CUpti_CallbackId ids[] = {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
                                           CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
                                           CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED};
    int ok = c->sub && c->graph_node_id && c->graph_id;

    for (size_t i = 0; ok && i < sizeof ids / sizeof ids[0]; i++)
        ok = c->cuptiEnableCallback(1, c->sub, CUPTI_CB_DOMAIN_RESOURCE, ids[i]) == CUPTI_SUCCESS;
    inj_debug(g, "CUPTI graph node callbacks %s", ok ? "on" : "unavailable");
}

/* cudaProfilerStart / cuProfilerStart (after the call) and their Stop
 * (before it): the capture range, as nsys --capture-range=cudaProfilerApi.
 * The runtime call goes through the driver's, so either may fire first;
 * set_recording ignores a repeat. */
static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data)
{
    const CUpti_CallbackData *cd = data;
    struct inj *g = inj_get();
    int start, stop;

    (void)userdata;
    if (g->cupti && data && domain == CUPTI_CB_DOMAIN_RESOURCE) {
        graph_made(g, g->cupti, cbid, data);
        return;
    }
    if (!g->cupti || !cd || (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API))
        return;
    if (detach_here(g, g->cupti, cd))
        return;
    start = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000
                                                  : cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart;
    stop = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000
                                                 : cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop;
    if (start && cd->callbackSite == CUPTI_API_EXIT)
        set_recording(g, g->cupti, 1);
    else if (stop && cd->callbackSite == CUPTI_API_ENTER)
        set_recording(g, g->cupti, 0);
}

/* Watches the four profiler calls and pauses the records until the first
 * cudaProfilerStart. Returns 0, or -1 with why. */
static int range_start(struct inj *g, struct inj_cupti *c, char *why, size_t len)
{
    static const struct { CUpti_CallbackDomain d; CUpti_CallbackId id; } calls[] = {
        {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000},
        {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop}};

    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        CUptiResult r = c->cuptiEnableCallback(1, c->sub, calls[i].d, calls[i].id);
        if (r != CUPTI_SUCCESS) {
            snprintf(why, len, "cuptiEnableCallback(profiler calls): %s", result_text(c, r));
            return -1;
        }
    }
    set_recording(g, c, 0);
    return 0;
}

/* HTAMERGE_CUPTI_WINDOW, "ON_MS/PERIOD_MS" with 0 < ON_MS < PERIOD_MS
 * (htamerge run --cupti-window checks it; a bad value set by hand is said
 * once and leaves CUPTI recording all the time). */
static void window_setup(struct inj *g, struct inj_cupti *c)
{
    const char *v = getenv("HTAMERGE_CUPTI_WINDOW");
    long long on, period;
    int used = 0;

    if (!v || !*v)
        return;
    if (sscanf(v, "%lld/%lld%n", &on, &period, &used) != 2 || v[used] != '\0' || on <= 0 ||
        period <= on) {
        fprintf(stderr, "htamerge: HTAMERGE_CUPTI_WINDOW='%s' is not ON_MS/PERIOD_MS with 0 < ON_MS < "
                        "PERIOD_MS; CUPTI records all the time\n", v);
        return;
    }
    c->win_on_ms = on;
    c->win_period_ms = period;
    c->win_start_ms = mono_ms();
    inj_counter(g, "htamerge/cupti recording", 1, -1);
    inj_debug(g, "CUPTI records %lld ms of every %lld ms", on, period);
}

/* Device buffers for kernel timestamps that CUPTI allocates per context
 * up front: 32 (about 100 MiB of device memory) instead of CUPTI's 3.
 * Once those are in use CUPTI allocates another on the launching thread,
 * under the driver's lock, and on the H200 that deadlocked against
 * CUPTI's worker and the drain thread's flush after some seconds of
 * continuous capture of a launch-bound loop (bench/RESULTS.md,
 * 2026-12-02: the same loop ran to its end with 32).
 * HTAMERGE_CUPTI_DEVICE_BUFFERS=N sets another count; 0 leaves CUPTI's. */
enum { DEVICE_BUFFERS = 32 };

static void device_buffers(struct inj *g, struct inj_cupti *c)
{
    const char *v = getenv("HTAMERGE_CUPTI_DEVICE_BUFFERS");
    size_t n = v && *v ? (size_t)atol(v) : DEVICE_BUFFERS, size = sizeof n;

    if (n == 0 || !c->set_attr)
        return;
    CUptiResult r = c->set_attr(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE, &size, &n);
    inj_debug(g, "CUPTI device buffers pre-allocated: %zu (%s)", n, r == CUPTI_SUCCESS ? "set" : "refused");
}

int inj_cupti_start(struct inj *g)
{
    struct inj_cupti *c;
    char why[256] = "";

    if (g->cupti)
        return 0;
    c = calloc(1, sizeof *c);
    if (!c)
        return -1;
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->rec_mu, NULL);
    pthread_mutex_init(&c->win_mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    if (load(c, why, sizeof why) != 0 || subscribe(c, why, sizeof why) != CUPTI_SUCCESS)
        goto off;
    c->pid = g->pid;
    c->lean = (g->capture & INJ_CAP_CUPTI_LEAN) != 0;
    c->sync = (g->capture & INJ_CAP_CUPTI_SYNC) != 0;
    c->launch_name = c->lean ? inj_str(g, "cudaLaunchKernel", 16) : 0;
    device_buffers(g, c);
    if (inj_cbuf_pool_init(&c->pool, BUF_BYTES, SPARE_BUFS) != 0)
        inj_debug(g, "CUPTI buffer pool short of memory; requests will allocate");
    g->cupti = c;   /* buf_request and buf_complete look here */
    if (enable_all(g, c, c->sync, why, sizeof why) != 0)
        goto off_subscribed;
    graph_callbacks(g, c);
    if ((g->capture & INJ_CAP_CUPTI_RANGE) && range_start(g, c, why, sizeof why) != 0)
        goto off_subscribed;
    if (!(g->capture & INJ_CAP_CUPTI_RANGE))
        window_setup(g, c);
    else
        c->no_detach = 1;   /* the program's cudaProfilerStart/Stop decide */
    atomic_store(&c->hook_want, -1);
    mark_attached(c, 1);
    if (pthread_create(&c->thread, NULL, drain_main, g) == 0)
        c->thread_started = 1;
    inj_debug(g, "CUPTI capture on (buffers zeroed by %s)", c->zeroed ? "htamerge" : "CUPTI");
    return 0;
off_subscribed:
    g->cupti = NULL;
    c->cuptiUnsubscribe(c->sub);
    inj_cbuf_pool_drop_all(&c->pool);
off:
    inj_say_once(g, INJ_SAY_CUPTI, "htamerge/cupti unavailable",
                 "CUPTI capture off (%s); NVTX and NCCL capture go on, and GPU activity comes only from "
                 "torch.profiler trace files, if the program writes them", why);
    /* c (and the library handle) stay: nothing may call into a closed CUPTI. */
    return -1;
}

/* At exit: 1 when CUPTI is attached (a pending detach is called off), 0
 * when a window pause detached it: any CUPTI call would attach it again. */
static int settle_window(struct inj_cupti *c)
{
    int asked = WIN_DETACH_ASKED;

    if (atomic_compare_exchange_strong(&c->wstate, &asked, WIN_ATTACHED))
        return 1;
    for (int i = 0; i < 2000 && atomic_load(&c->wstate) == WIN_DETACHING; i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    return atomic_load(&c->wstate) == WIN_ATTACHED;
}

void inj_cupti_stop(struct inj *g)
{
    struct inj_cupti *c = g->cupti;
    struct inj_cbuf *rest;
    size_t dropped = 0;
    int attached;

    if (!c || c->pid != g->pid)
        return;   /* none, or a forked child: CUPTI belongs to the parent */
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (c->thread_started)
        pthread_join(c->thread, NULL);   /* first: it changes windows */
    c->thread_started = 0;
    attached = settle_window(c);
    if (attached)
        c->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);   /* queues the rest */
    pthread_mutex_lock(&c->mu);
    rest = take_all(c);
    pthread_mutex_unlock(&c->mu);
    parse_list(g, c, rest);
    inj_cbuf_pool_drop_all(&c->pool);   /* a later request (exit handlers) allocates */
    if (attached && c->cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped)
        inj_counter(g, "htamerge/cupti dropped records", (double)dropped, -1);
    /* Always written: 0 is the proof no training thread allocated a buffer. */
    inj_counter(g, "htamerge/cupti buffer pool misses", (double)atomic_load(&c->pool.misses), -1);
    if (atomic_load(&c->pool.dirty))
        inj_counter(g, "htamerge/cupti buffers written past valid", (double)atomic_load(&c->pool.dirty), -1);
}

int64_t inj_cupti_stream_id(struct inj *g, void *stream)
{
    struct inj_cupti *c = g->cupti;
    uint32_t id = 0;

    if (!c || !stream || c->cuptiGetStreamIdEx(NULL, stream, 0, &id) != CUPTI_SUCCESS)
        return HM_NONE;
    return id;
}
