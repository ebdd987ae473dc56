/* Internals of the injection library (libhtamerge-inject.so), shared by its
 * files: the one state struct, the producer helpers every capture uses
 * (string ids, timestamps, ring records, once-only notices), and the pure
 * pieces the unit tests drive directly (NVTX stacks, open start/end ranges,
 * the GPU-timer-to-CPU-clock map, CUPTI's buffer pool). Nothing here needs
 * a CUDA header; the CUPTI part lives in cupti.c behind three functions.
 *
 * Flow: CUDA / NVTX / NCCL call the entry points (inject.c, nvtx.c, nccl.c,
 * cupti.c) -> records -> the shared-memory ring (common/shm_ring.h) -> the
 * collector (collector/ring_source.c). */
#ifndef INJ_INJECT_INT_H
#define INJ_INJECT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/clockhook.h"
#include "common/shm_ring.h"

/* What to capture: HTAMERGE_CAPTURE="cupti,nvtx,nccl" (default those three).
 * cupti-sync adds CUPTI's synchronization records (cudaStreamSynchronize,
 * event and stream waits), opt-in as in Kineto: they cost ~5 % of a
 * launch-bound step on the H200 (bench/RESULTS.md). cupti-range records
 * CUPTI activity only between cudaProfilerStart and cudaProfilerStop.
 * Launches are rebuilt from the kernels' queued time (cupti.c
 * queued_launch), not recorded as API calls, unless cupti-launches asks for
 * their records (the launching thread and the call's duration, at several
 * times the cost: bench/RESULTS.md); cupti-lean, once needed for this, is
 * the default and still accepted. */
enum {
    INJ_CAP_CUPTI = 1, INJ_CAP_NVTX = 2, INJ_CAP_NCCL = 4, INJ_CAP_CUPTI_SYNC = 8, INJ_CAP_CUPTI_RANGE = 16,
    INJ_CAP_CUPTI_LEAN = 32
};

/* Once-only notices (stderr line + a counter in the database). */
enum { INJ_SAY_CUPTI = 0, INJ_SAY_NCCL, INJ_SAY_LAUNCHES, INJ_SAY__COUNT };

/* ---- string ids ---------------------------------------------------------
 * Texts get ring string ids, defined by an HM_RING_STRING record before
 * first use. Interned texts keep their id for the life of the process; when
 * the table is full a text gets a fresh id each time. Ids are
 * ((pid mod 32749 + block * 7919) mod 32749) << 17 | n, so processes sharing
 * the ring (forked workers) use different ids. */
#define INJ_STR_SLOTS 65536u    /* power of two */
struct inj_str_slot {
    _Atomic uint64_t key;       /* text hash, 0 = empty */
    _Atomic uint32_t id;        /* 0 until the definition is written */
    uint32_t len;
    char *text;                 /* owned copy, set before id */
};
struct inj_strings {
    struct inj_str_slot *slots; /* owned, INJ_STR_SLOTS entries; NULL: no interning */
    _Atomic uint32_t used;
    _Atomic uint32_t next;      /* ids handed out in this process */
    uint32_t pid_mod;           /* pid % 32749, reset in a forked child */
};

/* ---- NVTX ---------------------------------------------------------------- */
struct inj_nvtx_frame {
    int64_t ts;                 /* ns, hooked CLOCK_REALTIME */
    uint32_t name, domain;      /* string ids; domain 0 = default */
    uint32_t category, color;
};

/* One thread's push/pop stack (thread-local; see inject.c). Pushes past
 * INJ_NVTX_DEPTH are counted in `hidden` so their pops still match. */
#define INJ_NVTX_DEPTH 128
struct inj_nvtx_stack {
    uint32_t depth;             /* frames stored */
    uint32_t hidden;            /* pushes above the stored frames */
    struct inj_nvtx_frame f[INJ_NVTX_DEPTH];
};

/* Ranges opened by nvtxRangeStart and not yet ended (any thread may end
 * one). Slot = id % INJ_NVTX_OPEN; a busy slot loses the new range. */
#define INJ_NVTX_OPEN 4096
struct inj_nvtx_open {
    _Atomic uint64_t id;        /* 0 free, UINT64_MAX being filled, else the range id */
    int64_t tid;
    struct inj_nvtx_frame f;
};
struct inj_nvtx {
    _Atomic uint64_t next_range;
    _Atomic uint64_t unmatched; /* pops/ends with nothing open */
    _Atomic uint64_t lost;      /* starts that found their slot busy */
    struct inj_nvtx_open open[INJ_NVTX_OPEN];
};

/* Pushes f; returns the 0-based depth of the new range. */
int inj_nvtx_push(struct inj_nvtx_stack *s, const struct inj_nvtx_frame *f);
/* Pops the innermost range of `domain` (or any domain when any != 0) into
 * *f and its depth into *depth; returns 1, or 0 when nothing stored was
 * popped (empty stack, or a pop of a range deeper than the stored ones). */
int inj_nvtx_pop(struct inj_nvtx_stack *s, uint32_t domain, int any, struct inj_nvtx_frame *f,
                 uint32_t *depth);
/* Opens a start/end range and returns its id (never 0). */
uint64_t inj_nvtx_start(struct inj_nvtx *n, const struct inj_nvtx_frame *f, int64_t tid);
/* Closes range id: returns 1 with its frame and thread, or 0 if unknown. */
int inj_nvtx_end(struct inj_nvtx *n, uint64_t id, struct inj_nvtx_frame *f, int64_t *tid);

/* ---- GPU timer -> CPU clock ---------------------------------------------
 * NCCL reports kernel channel start/stop as GPU %globaltimer values. Each
 * arrives on a CPU thread after it happened, so cpu_seen - gpu is an upper
 * bound of the offset; the map uses the smallest bound seen in the current
 * and the previous one-second window (a few us above the truth, and free to
 * follow drift). */
struct inj_gpuclock {
    _Atomic int64_t cur, prev;  /* window minima of cpu - gpu; INT64_MAX none */
    _Atomic int64_t window;     /* cpu ns the current window began, 0 = never */
};
void inj_gpuclock_init(struct inj_gpuclock *c);
void inj_gpuclock_sample(struct inj_gpuclock *c, int64_t cpu_ns, uint64_t gpu_ns);
/* Maps gpu_ns to CPU ns; returns 0 with *cpu_ns, or -1 before any sample. */
int inj_gpuclock_map(struct inj_gpuclock *c, uint64_t gpu_ns, int64_t *cpu_ns);

/* ---- NCCL ---------------------------------------------------------------- */
#define INJ_MAX_DEVICES 64
struct inj_nccl_ctx;
struct inj_nccl {
    pthread_mutex_t mu;             /* guards ctxs */
    struct inj_nccl_ctx *ctxs;      /* owned list of live communicators */
    _Atomic uint64_t dropped;       /* events we could not track */
    struct inj_gpuclock clock[INJ_MAX_DEVICES];
};

/* ---- CUPTI buffer pool ---------------------------------------------------
 * Host buffers for CUPTI activity records, kept zeroed and faulted in. CUPTI
 * asks for a buffer on the launching (training) thread when one fills; from
 * the pool that costs a pop instead of a 4 MiB allocation, CUPTI's own
 * zeroing and the page faults of first touch. The drain thread gives used
 * buffers back (zeroing only what CUPTI wrote) and tops the pool up to
 * `spare`; a request that finds it empty allocates (a "miss"). No CUDA
 * header needed: cupti.c and the unit test share it (cupti_pool.c). */
struct inj_cbuf {
    struct inj_cbuf *next;          /* pool or completed-queue link */
    size_t valid;                   /* bytes CUPTI filled, set at completion */
    uint32_t epoch;                 /* CUPTI attach it was filled in (cupti.c: windows) */
};                                  /* the data (pool->bytes) follows */
struct inj_cbuf_pool {
    pthread_mutex_t mu;             /* guards free, nfree; held for list ops only */
    struct inj_cbuf *free;          /* owned, zeroed and touched; NULL when empty */
    size_t nfree;
    size_t bytes;                   /* data bytes per buffer */
    size_t spare;                   /* refill target; put keeps at most 2 * spare */
    _Atomic uint64_t misses;        /* gets that found the pool empty */
    _Atomic uint64_t dirty;         /* puts that found bytes past `valid` written */
};
/* Sets up p and allocates `spare` buffers; returns 0, or -1 (p stays usable,
 * empty) when memory ran out. */
int inj_cbuf_pool_init(struct inj_cbuf_pool *p, size_t bytes, size_t spare);
/* A zeroed buffer, owned by the caller: from the pool, else allocated (a
 * miss); NULL when memory ran out. Never waits for zeroing or refilling. */
struct inj_cbuf *inj_cbuf_pool_get(struct inj_cbuf_pool *p);
/* Takes b back (owned by the pool from here, or freed when the pool is
 * full), zeroing its first `used` bytes first. NULL does nothing. */
void inj_cbuf_pool_put(struct inj_cbuf_pool *p, struct inj_cbuf *b, size_t used);
/* Allocates until the pool holds `spare` buffers (drain thread). */
void inj_cbuf_pool_refill(struct inj_cbuf_pool *p);
/* Frees the pooled buffers. p stays usable (empty): a late get allocates. */
void inj_cbuf_pool_drop_all(struct inj_cbuf_pool *p);
/* Data of a buffer, and the buffer of a data pointer. */
static inline uint8_t *inj_cbuf_data(struct inj_cbuf *b) { return (uint8_t *)(b + 1); }
static inline struct inj_cbuf *inj_cbuf_of(uint8_t *data) { return (struct inj_cbuf *)data - 1; }

/* ---- the state ----------------------------------------------------------- */
struct inj_cupti;                   /* cupti.c */

struct inj {
    int active;                     /* 1 when the ring is attached */
    int debug;                      /* HTAMERGE_INJECT_DEBUG: trace calls on stderr */
    unsigned capture;               /* INJ_CAP_* */
    struct hm_ring *ring;           /* owned; NULL: inert */
    struct hm_clockhook hook;
    int32_t pid;
    struct inj_strings strings;
    _Atomic int said[INJ_SAY__COUNT];
    struct inj_nvtx nvtx;
    struct inj_nccl nccl;
    struct inj_cupti *cupti;        /* owned by cupti.c; NULL without CUPTI */
};

/* The process's state, initialised on first use from the environment
 * (HTAMERGE_RING, HTAMERGE_CAPTURE, the clock hook). Never NULL; check
 * ->active. */
struct inj *inj_get(void);

/* The calling thread's NVTX stack. */
struct inj_nvtx_stack *inj_nvtx_tls(void);

/* Current thread id (gettid), cached per thread. */
int64_t inj_tid(void);

/* Hooked CLOCK_REALTIME now, and a real Unix ns time moved by the hook. */
int64_t inj_now(const struct inj *g);
int64_t inj_time(const struct inj *g, int64_t real_ns);

/* String id of text[0..len) (interned), or 0 when inert or dropped. */
uint32_t inj_str(struct inj *g, const char *text, size_t len);
uint32_t inj_cstr(struct inj *g, const char *text);
/* A string id for a text used once: not interned. 0 when inert or dropped. */
uint32_t inj_str_fresh(struct inj *g, const char *text, size_t len);

/* Writes one ring record; never blocks (drops are counted by the ring). */
void inj_emit(struct inj *g, uint16_t type, const void *payload, uint32_t len);

/* A counter record at now (device -1: the host). */
void inj_counter(struct inj *g, const char *name, double value, int device);

/* Says msg once per `which` on stderr ("htamerge: msg") and records the
 * counter `counter` = 1 (NULL: none). */
void inj_say_once(struct inj *g, int which, const char *counter, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A line on stderr when HTAMERGE_INJECT_DEBUG is set. */
void inj_debug(const struct inj *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The CUDA device current on this thread (driver API via dlsym), or -1. */
int inj_cuda_device(void);

/* Flushes what is pending (NCCL colls, CUPTI buffers); called at exit. */
void inj_nccl_flush_all(struct inj *g);

/* CUPTI (cupti.c, or cupti_none.c when CUPTI is not built). */
int inj_cupti_start(struct inj *g);     /* 0 capturing, <0 not */
void inj_cupti_stop(struct inj *g);     /* flush and drain; at exit */
int64_t inj_cupti_stream_id(struct inj *g, void *stream);  /* HM_NONE if unknown */
int inj_cupti_hand_over(struct inj *g);  /* to torch.profiler: 0 done, 1 not held, -1 refused */
int inj_cupti_take_back(struct inj *g);  /* after it: 0 recording, 1 not handed, -1 refused */
int inj_cupti_record(struct inj *g, int on); /* the hooks at a step edge: 0 done, 1 no CUPTI */

/* Writes text of a wide string as UTF-8 into buf (NUL-terminated, cut to
 * fit); returns the length. */
size_t inj_wide_to_utf8(const wchar_t *w, char *buf, size_t cap);

#endif
