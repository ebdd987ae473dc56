/* The shared-memory ring: a bounded queue of variable-length records from
 * the injection library inside the training process (producers, any number
 * of threads, possibly several processes) to the collector (one consumer).
 * A producer never blocks, sleeps, locks or allocates: when the ring is full
 * the record is dropped and counted, and the counts travel in the ring's
 * header for the consumer to store. It does not interpret records; the
 * collector turns them into hm_batch records (mapping below).
 *
 * Naming and size. The collector creates the ring before it starts the child
 * and passes its name in HTAMERGE_RING (e.g. "/htamerge-<jobid>-<rank>", see
 * hm_ring_format_name); HTAMERGE_RING_BYTES sets its size (default 64 MiB,
 * see hm_ring_default_bytes). The consumer owns the name and unlinks it when
 * it closes the ring.
 *
 * Record contract (producer and consumer agree on these; append only):
 * every record is a u32 payload length, a u16 type and the payload, which
 * starts 8-byte aligned. Payload structs only ever grow at the end: a
 * consumer reads min(len, sizeof struct) bytes and takes missing fields as
 * zero (so new fields must treat zero as "absent"); it skips types it does
 * not know. Times are int64 ns on CLOCK_REALTIME (Unix epoch), the clock of
 * Kineto's files, after the producer applied the HTAMERGE_CLOCK_SKEW_NS test
 * hook. String ids are chosen by the producer, nonzero, defined by an
 * HM_RING_STRING record before first use and unique within the ring
 * (producers in several processes must split the id space, e.g. pid in the
 * high bits); 0 means "none". */
#ifndef HM_SHM_RING_H
#define HM_SHM_RING_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Record types. Values are part of the producer/consumer contract. */
enum hm_ring_type {
    HM_RING_SLICE = 1,      /* struct hm_ring_slice: a complete timed range */
    HM_RING_STRING = 2,     /* struct hm_ring_string: defines id -> text */
    HM_RING_COUNTER = 3,    /* struct hm_ring_counter: one sampled value */
    HM_RING_NCCL_COLL = 4,  /* struct hm_ring_nccl_coll: one NCCL collective */
    HM_RING_NVTX = 5,       /* struct hm_ring_nvtx: an NVTX range or mark */
    HM_RING_CPU_COLL = 6,   /* struct hm_ring_cpu_coll: a collective timed on the CPU (gloo, ...) */
    HM_RING_TRACE_FILE = 7, /* struct hm_ring_trace_file: a completed trace file to read */
};

/* HM_RING_SLICE. Becomes one hm_slice on track (kind, pid, tid):
 * ts, dur, correlation, bytes and flags copy over, name is the text of the
 * string id, cat the enum hm_cat (cat_name = hm_cat_name(cat)), args the
 * text of the args string id (compact JSON object) or none. */
struct hm_ring_slice {
    int64_t ts;           /* start, ns, CLOCK_REALTIME */
    int64_t dur;          /* ns, >= 0 */
    int64_t correlation;  /* CUPTI correlation id, HM_NONE (-1) if none */
    int64_t bytes;        /* bytes moved/set by a memcpy/memset, HM_NONE if none */
    int64_t tid;          /* thread id (CPU) or stream id (GPU) */
    int32_t pid;          /* process id (CPU) or device index (GPU) */
    uint32_t name;        /* string id */
    uint32_t args;        /* string id of compact JSON args text, 0 if none */
    uint16_t kind;        /* enum hm_track_kind */
    uint16_t cat;         /* enum hm_cat */
    uint32_t flags;       /* HM_SLICE_F_* */
    uint32_t pad;         /* zero */
};

/* HM_RING_STRING. The text follows the struct (len bytes, no NUL). A later
 * definition of the same id replaces the earlier one. */
struct hm_ring_string {
    uint32_t id;          /* nonzero */
    uint32_t len;         /* bytes of text that follow */
    /* char text[len]; */
};

/* HM_RING_COUNTER. Becomes one hm_counter. */
struct hm_ring_counter {
    int64_t ts;           /* ns, CLOCK_REALTIME */
    double value;
    uint32_t name;        /* string id */
    int32_t device;       /* GPU index, -1 for the host */
};

/* HM_RING_NCCL_COLL. Becomes one slice on the GPU stream track (pid =
 * device, tid = stream) plus one hm_collective with op = func, pg_name =
 * comm_id as text, seq, in_nelems = count, group_size = nranks. */
struct hm_ring_nccl_coll {
    int64_t ts;           /* start on CLOCK_REALTIME (GPU timer already mapped) */
    int64_t dur;          /* ns */
    int64_t seq;          /* seqNumber within the communicator */
    int64_t count;        /* elements */
    uint64_t comm_id;     /* NCCL commId hash */
    int64_t stream;       /* stream id, HM_NONE if unknown */
    int32_t device;       /* GPU index */
    int32_t rank;         /* rank within the communicator */
    int32_t nranks;       /* communicator size */
    uint32_t func;        /* string id: "AllReduce", ... */
    uint32_t dtype;       /* string id */
    uint32_t algo;        /* string id, 0 if unknown */
    uint32_t proto;       /* string id, 0 if unknown */
    uint32_t nchannels;
};

/* hm_ring_nvtx.flags */
#define HM_RING_NVTX_F_MARK 0x1u  /* an instant (nvtxMark): dur is 0 */

/* HM_RING_NVTX. Push/pop and start/end pairs are matched by the producer,
 * which sends one record per completed range. Becomes one slice with
 * cat HM_CAT_NVTX on CPU thread (pid, tid). */
struct hm_ring_nvtx {
    int64_t ts;           /* ns, CLOCK_REALTIME */
    int64_t dur;          /* ns */
    int64_t tid;          /* thread that pushed (or started) it */
    int32_t pid;
    uint32_t name;        /* string id (message or registered string) */
    uint32_t domain;      /* string id of the domain name, 0 = default domain */
    uint16_t depth;       /* nesting depth on its thread's stack, 0 = outermost */
    uint16_t flags;       /* HM_RING_NVTX_F_* */
    uint32_t category;    /* NVTX category, 0 if none */
    uint32_t color;       /* ARGB, 0 if none */
    uint32_t args;        /* string id of compact JSON args for the slice, 0 if none
                             (the Python hooks: {"domain":"htamerge","step":N}) */
    uint32_t pad;         /* zero */
};

/* HM_RING_CPU_COLL. A collective call as the calling thread saw it, from
 * the call to its completion (the Python hooks' process-group wrapper, for
 * backends without the NCCL plugin). Becomes one slice on CPU thread
 * (pid, tid) with cat HM_CAT_COLLECTIVE_COMM, name the text of slice_name
 * (e.g. "gloo:all_reduce"), bytes copied over, plus one hm_collective with
 * op, pg_name, pg_desc, pg_ranks, dtype, seq, in_nelems = out_nelems =
 * nelems and group_size; matched across ranks by (pg_name, seq). */
struct hm_ring_cpu_coll {
    int64_t ts;           /* call, ns, CLOCK_REALTIME */
    int64_t dur;          /* until the work completed, ns */
    int64_t seq;          /* sequence number within the process group */
    int64_t bytes;        /* input bytes, HM_NONE if unknown */
    int64_t nelems;       /* input elements, HM_NONE if unknown */
    int64_t tid;          /* calling thread */
    int32_t pid;
    uint32_t slice_name;  /* string id: "gloo:all_reduce" */
    uint32_t op;          /* string id: "allreduce" (Kineto's "Collective name") */
    uint32_t pg_name;     /* string id: the process group's name ("0") */
    uint32_t pg_ranks;    /* string id: "[0, 1, 2, 3]", 0 if unknown */
    uint32_t dtype;       /* string id, 0 if unknown */
    int32_t group_rank;   /* rank within the group, -1 if unknown */
    int32_t group_size;   /* -1 if unknown */
    uint32_t pg_desc;     /* string id: the group's description ("mesh_tp"), 0 if none;
                             a record from before it is shorter and reads as 0 */
    uint32_t pad;         /* zero */
};

/* HM_RING_TRACE_FILE. A trace file the program finished writing (the
 * Python hooks see torch.profiler export it wherever the program puts it);
 * the collector reads it like the files of HTAMERGE_TRACE_DIR and never
 * changes or removes it. The path (absolute, len bytes, no NUL) follows. */
struct hm_ring_trace_file {
    uint32_t len;
    uint32_t pad;
    /* char path[len]; */
};

/* Largest payload a record may carry; larger writes are dropped (and
 * counted). Smaller rings may allow less: see hm_ring_stats.max_payload. */
#define HM_RING_MAX_PAYLOAD (64 * 1024 - 8)

/* Default ring size when HTAMERGE_RING_BYTES is not set. */
#define HM_RING_DEFAULT_BYTES ((size_t)64 << 20)

struct hm_ring;   /* opaque; one handle per process per side */

/* Counters, from the ring's shared header (so the consumer sees the
 * producers' counts). "bytes" are payload bytes. */
struct hm_ring_stats {
    uint64_t written_records, written_bytes;  /* committed by producers */
    uint64_t dropped_records, dropped_bytes;  /* refused: ring full or payload too large */
    uint64_t read_records, read_bytes;        /* delivered to the consumer */
    uint64_t lost_records, lost_bytes;        /* skipped in flight: producer died or stalled
                                                 mid-write; records is a lower bound */
    uint64_t capacity_bytes;                  /* record space */
    uint64_t used_bytes;                      /* reserved and not yet read */
    uint32_t max_payload;                     /* largest payload this ring takes */
    uint32_t producers;                       /* hm_ring_attach calls so far */
    int32_t producer_pid;                     /* last attacher's pid, 0 if none */
    int64_t heartbeat_ns;                     /* last hm_ring_heartbeat (CLOCK_MONOTONIC), 0 if never */
};

/* Consumer side (the collector). Not thread-safe: one thread reads. */

/* Creates the shared-memory object `name` (must start with '/', no other
 * '/', at most 250 bytes) with room for about `bytes` bytes in total
 * (0: hm_ring_default_bytes()), maps it and returns the owning handle, or
 * NULL after filling err. A stale object of that name (a crashed earlier
 * run) is replaced. The memory is allocated up front, so a too-small
 * /dev/shm fails here rather than in the producer. */
struct hm_ring *hm_ring_create(const char *name, size_t bytes, struct hm_err *err);

/* Called by hm_ring_read for each record, in reservation order. payload
 * (8-byte aligned) is valid only during the call and must be treated as
 * untrusted input (validate lengths inside it). Return 0 to go on, nonzero
 * to stop after this record; the record is consumed either way. */
typedef int (*hm_ring_cb)(void *ctx, uint16_t type, const void *payload, uint32_t len);

/* Drains up to max committed records into cb and returns how many it
 * delivered (0 when the ring is empty or the oldest record is still being
 * written). Never waits. A record left unfinished for longer than the stall
 * timeout (hm_ring_set_stall_timeout) is skipped and counted as lost. */
int hm_ring_read(struct hm_ring *r, hm_ring_cb cb, void *ctx, int max);

/* Stall timeout in ns (default 2 s): how long an unfinished record may hold
 * up the ring before it is presumed abandoned by a dead producer. */
void hm_ring_set_stall_timeout(struct hm_ring *r, int64_t ns);

/* Declares the producers gone (the child has exited): from now on the
 * records that are unfinished and were reserved before this call are
 * skipped, and counted lost, without waiting for the stall timeout. Call
 * hm_ring_read afterwards to drain the committed records around them. */
void hm_ring_abandon(struct hm_ring *r);

/* Producer side (the injection library, the test producer). */

/* Maps an existing ring. Returns a handle (owned; close with hm_ring_close),
 * or NULL after filling err: HM_EIO if it does not exist, HM_EFORMAT or
 * HM_EVERSION if it is not a ring this code understands. May allocate; call
 * it once, not from a signal handler. */
struct hm_ring *hm_ring_attach(const char *name, struct hm_err *err);

/* Appends one record. Returns 0, or -1 when the record was dropped (ring
 * full, payload over max_payload, r NULL) and counted. Thread-safe and
 * lock-free; never blocks, never allocates, never makes a system call;
 * async-signal-safe. A record is visible to the consumer when this
 * returns. */
int hm_ring_write(struct hm_ring *r, uint16_t type, const void *payload, uint32_t len);

/* Same, with the payload in two parts copied back to back (e.g. a struct
 * hm_ring_string and its text); len = len_a + len_b. */
int hm_ring_write2(struct hm_ring *r, uint16_t type, const void *a, uint32_t len_a,
                   const void *b, uint32_t len_b);

/* Stamps the producer-alive heartbeat (CLOCK_MONOTONIC ns). Call it every
 * ~100 ms from a producer thread that lives as long as the process.
 * Async-signal-safe. */
void hm_ring_heartbeat(struct hm_ring *r);

/* Both sides. */

/* Bytes of the control area. */
#define HM_RING_CONTROL_BYTES 1024

/* The ring's control area: HM_RING_CONTROL_BYTES of shared memory, zero
 * at creation, 64-byte aligned, that the ring itself never touches. It
 * carries what goes the other way, from the collector to the sources (the
 * capture plan, common/capture_plan.h), and their progress back. NULL for
 * a NULL ring. */
void *hm_ring_control_area(struct hm_ring *r);

/* Reads the shared counters. */
void hm_ring_stats(const struct hm_ring *r, struct hm_ring_stats *st);

/* Unmaps and frees r; the owner (hm_ring_create) also unlinks the name.
 * NULL does nothing. A producer's records stay readable after it closes. */
void hm_ring_close(struct hm_ring *r);

/* Helpers. */

/* HTAMERGE_RING_BYTES ("67108864", "64M", "1G", "512K"), else
 * HM_RING_DEFAULT_BYTES; an unparsable value also gives the default. */
size_t hm_ring_default_bytes(void);

/* Writes "/htamerge-<jobid>-<rank>-p<pid>" into buf, pid being the
 * caller's (the collector that creates the ring; jobid: characters other
 * than [A-Za-z0-9_.-] become '_', cut to fit). Returns 0 or HM_EINVAL if
 * buf is too small. */
int hm_ring_format_name(char *buf, size_t len, const char *jobid, int rank);

/* Removes from dir (the shm folder, /dev/shm on Linux) the rings of
 * collectors that are gone: named as hm_ring_format_name names them, ours,
 * and whose creator pid no longer exists on this host (a collector always
 * runs on its ring's host). A killed rank cannot unlink its 64 MiB ring,
 * and /dev/shm is memory: a day of killed test runs once held 23 GB of it.
 * Mappings that live processes still hold stay valid. Returns how many
 * were removed; *bytes (may be NULL) the memory they held. */
int hm_ring_sweep_stale(const char *dir, uint64_t *bytes);

/* Testing only: reserves room for a record of len payload bytes and never
 * finishes it, as a producer that died mid-write. Returns 0 or -1 (full). */
int hm_ring_reserve_abandoned(struct hm_ring *r, uint32_t len);

#endif
