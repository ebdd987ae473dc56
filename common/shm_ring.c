/* The shared-memory ring (see shm_ring.h for the contract): a bounded
 * multi-producer, single-consumer queue of variable-length records in a
 * POSIX shm object, in the style of Vyukov's bounded MPMC queue generalised
 * to records that span several cells.
 *
 * Layout of the object: a 4 KiB header (struct ring_shared), an array of
 * `cells` 64-bit sequence words, and `cells` data cells of CELL bytes. A
 * record of len payload bytes takes k = ceil((8 + len) / CELL) consecutive
 * cells (wrapping at the end): an 8-byte header {u32 len, u16 type, u16 0}
 * then the payload. Positions p = 0, 1, 2, ... count cells for ever; cell
 * p % cells belongs to position p on lap p / cells.
 *
 * State of position p, held in seq[p % cells] (values only grow):
 *   p          free for p's lap, or reserved and being written (head > p)
 *   p + 1      committed, first cell of a record
 *   p + 2      committed, continuation cell of a record
 *   p + cells  read (or skipped) by the consumer: free for position p + cells
 * Producer (hm_ring_write): reserve k cells at head by CAS(head, pos,
 * pos + k) once seq of the LAST cell equals its position (the consumer frees
 * cells in order, so the earlier ones are free too); seq below that means
 * the ring is full: drop and count, never wait. Copy the record in, then
 * CAS each continuation p -> p + 2 and finally the first cell p -> p + 1.
 * Consumer (hm_ring_read): at tail t, a first cell (t + 1) is delivered and
 * its cells set to p + cells in order; a lone continuation (t + 2) is what
 * is left of a skipped record and is skipped; t with head > t is a record
 * still being written: wait, and after the stall timeout (or
 * hm_ring_abandon) skip its cells by CAS t -> t + cells. Because both sides
 * change a state only by CAS from the value they expect, a producer that
 * wakes after its record was skipped sees its CAS fail and gives up; it
 * never resurrects a freed cell. The consumer never trusts lengths it reads:
 * a bad header is skipped as lost. */
#include "shm_ring.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RING_MAGIC 0x31474e4952484d48ull /* "HMRING1" little-endian */
#define RING_VERSION 2u   /* 2: the control area */
#define HDR_BYTES 4096u
#define CELL 32u             /* data bytes per cell */
#define MIN_CELLS 1024u
#define REC_HDR 8u
#define STALL_DEFAULT_NS 2000000000ll

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "the ring needs lock-free 64-bit atomics");
_Static_assert(sizeof(struct hm_ring_slice) == 64, "slice payload layout");
_Static_assert(sizeof(struct hm_ring_string) == 8, "string payload layout");
_Static_assert(sizeof(struct hm_ring_counter) == 24, "counter payload layout");
_Static_assert(sizeof(struct hm_ring_nccl_coll) == 80, "nccl payload layout");
_Static_assert(sizeof(struct hm_ring_nvtx) == 56, "nvtx payload layout");
_Static_assert(sizeof(struct hm_ring_cpu_coll) == 88, "cpu collective payload layout");
_Static_assert(sizeof(struct hm_ring_trace_file) == 8, "trace file payload layout");

/* The shared header. Fields before `head` are written once by the creator;
 * the rest are atomics, grouped by writer to keep cache lines apart. */
struct ring_shared {
    _Atomic uint64_t magic;      /* RING_MAGIC, stored last at creation */
    uint32_t version, hdr_bytes;
    uint64_t cells;
    uint32_t cell_bytes, max_payload;
    uint64_t seq_off, data_off, total_bytes;
    int32_t consumer_pid;
    _Alignas(64) _Atomic uint64_t head;            /* producers: next position */
    _Atomic uint64_t written_records, written_bytes;
    _Alignas(64) _Atomic uint64_t dropped_records, dropped_bytes;
    _Alignas(64) _Atomic uint64_t tail;            /* consumer: next position */
    _Atomic uint64_t read_records, read_bytes, lost_records, lost_bytes;
    _Alignas(64) _Atomic int64_t heartbeat_ns;
    _Atomic int32_t producer_pid;
    _Atomic uint32_t producers;
    /* Consumer -> producers (and their progress back): hm_ring_control_area. */
    _Alignas(64) unsigned char control[HM_RING_CONTROL_BYTES];
};
_Static_assert(sizeof(struct ring_shared) <= HDR_BYTES, "header fits its page");

struct rec_hdr {
    uint32_t len;
    uint16_t type;
    uint16_t zero;
};

struct hm_ring {
    struct ring_shared *sh;   /* the mapping, map_bytes long */
    _Atomic uint64_t *seq;    /* in the mapping */
    unsigned char *data;      /* in the mapping */
    uint64_t cells;
    uint32_t max_payload;
    size_t map_bytes;
    int owner;                /* created it: unlinks the name at close */
    char name[256];
    /* consumer only */
    unsigned char *scratch;   /* owned; max_payload bytes, for records that wrap */
    uint64_t tail;            /* mirror of sh->tail */
    int64_t stall_ns;
    uint64_t stall_pos;       /* position + 1 of the unfinished record being timed, 0 none */
    int64_t stall_since;      /* CLOCK_MONOTONIC ns when it was first seen */
    uint64_t stall_head;      /* head then */
    uint64_t skip_until;      /* unfinished cells before this position are skipped */
    int in_lost_run;          /* the previous cell was skipped unfinished */
};

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static uint64_t cells_for(uint64_t len)
{
    return (REC_HDR + len + CELL - 1) / CELL;
}

/* Copies n bytes into the record at position pos, starting off bytes into
 * it, wrapping at the end of the data area. */
static void copy_in(struct hm_ring *r, uint64_t pos, uint64_t off, const void *src, uint64_t n)
{
    uint64_t total = r->cells * CELL;
    uint64_t at = ((pos % r->cells) * CELL + off) % total;
    uint64_t first = n < total - at ? n : total - at;

    if (!n)
        return;
    memcpy(r->data + at, src, first);
    if (first < n)
        memcpy(r->data, (const unsigned char *)src + first, n - first);
}

static void copy_out(const struct hm_ring *r, uint64_t pos, uint64_t off, void *dst, uint64_t n)
{
    uint64_t total = r->cells * CELL;
    uint64_t at = ((pos % r->cells) * CELL + off) % total;
    uint64_t first = n < total - at ? n : total - at;

    if (!n)
        return;
    memcpy(dst, r->data + at, first);
    if (first < n)
        memcpy((unsigned char *)dst + first, r->data, n - first);
}

/* ---- producer ---------------------------------------------------------- */

static int drop(struct hm_ring *r, uint64_t len)
{
    atomic_fetch_add_explicit(&r->sh->dropped_records, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->sh->dropped_bytes, len, memory_order_relaxed);
    return -1;
}

/* Reserves k cells; returns 0 with *out the first position, or -1 when the
 * ring is full. Lock-free: a CAS fails only when another producer won. */
static int reserve(struct hm_ring *r, uint64_t k, uint64_t *out)
{
    uint64_t pos = atomic_load_explicit(&r->sh->head, memory_order_relaxed);

    for (;;) {
        uint64_t last = pos + k - 1;
        uint64_t s = atomic_load_explicit(&r->seq[last % r->cells], memory_order_acquire);
        int64_t d = (int64_t)(s - last);

        if (d == 0) {
            if (atomic_compare_exchange_weak_explicit(&r->sh->head, &pos, pos + k,
                                                      memory_order_relaxed, memory_order_relaxed)) {
                *out = pos;
                return 0;
            }
        } else if (d < 0) {
            return -1;   /* position last - cells not read yet: full */
        } else {
            pos = atomic_load_explicit(&r->sh->head, memory_order_relaxed);
        }
    }
}

/* Publishes the record at pos: continuations first, the first cell last.
 * Returns -1 if the consumer skipped it meanwhile (it counted it lost). */
static int commit(struct hm_ring *r, uint64_t pos, uint64_t k)
{
    for (uint64_t j = 1; j <= k; j++) {
        uint64_t p = pos + (j % k);   /* pos+1 .. pos+k-1, then pos */
        uint64_t want = p;
        uint64_t to = p + (p == pos ? 1 : 2);
        if (!atomic_compare_exchange_strong_explicit(&r->seq[p % r->cells], &want, to,
                                                     memory_order_release, memory_order_relaxed))
            return -1;
    }
    return 0;
}

int hm_ring_write2(struct hm_ring *r, uint16_t type, const void *a, uint32_t len_a,
                   const void *b, uint32_t len_b)
{
    uint64_t len = (uint64_t)len_a + len_b;
    struct rec_hdr h;
    uint64_t pos, k;

    if (!r)
        return -1;
    if (len > r->max_payload)
        return drop(r, len);
    k = cells_for(len);
    if (reserve(r, k, &pos) != 0)
        return drop(r, len);
    h.len = (uint32_t)len;
    h.type = type;
    h.zero = 0;
    copy_in(r, pos, 0, &h, sizeof h);
    copy_in(r, pos, REC_HDR, a, len_a);
    copy_in(r, pos, REC_HDR + len_a, b, len_b);
    if (commit(r, pos, k) != 0)
        return -1;
    atomic_fetch_add_explicit(&r->sh->written_records, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->sh->written_bytes, len, memory_order_relaxed);
    return 0;
}

int hm_ring_write(struct hm_ring *r, uint16_t type, const void *payload, uint32_t len)
{
    return hm_ring_write2(r, type, payload, len, NULL, 0);
}

int hm_ring_reserve_abandoned(struct hm_ring *r, uint32_t len)
{
    uint64_t pos;

    if (!r || len > r->max_payload)
        return -1;
    return reserve(r, cells_for(len), &pos);
}

void *hm_ring_control_area(struct hm_ring *r)
{
    return r ? r->sh->control : NULL;
}

void hm_ring_heartbeat(struct hm_ring *r)
{
    if (r)
        atomic_store_explicit(&r->sh->heartbeat_ns, mono_ns(), memory_order_relaxed);
}

/* ---- consumer ---------------------------------------------------------- */

enum { STEP_BLOCKED, STEP_DELIVERED, STEP_SKIPPED };

/* Marks position t read and moves the tail past it. `from` is the state
 * expected; returns 0, or -1 if the state changed (re-examine it). */
static int free_cell(struct hm_ring *r, uint64_t t, uint64_t from)
{
    if (!atomic_compare_exchange_strong_explicit(&r->seq[t % r->cells], &from, t + r->cells,
                                                 memory_order_acq_rel, memory_order_relaxed))
        return -1;
    r->tail = t + 1;
    atomic_store_explicit(&r->sh->tail, r->tail, memory_order_release);
    return 0;
}

/* Skips one cell as lost. A run of unfinished cells counts one record. */
static int skip_lost(struct hm_ring *r, uint64_t t, uint64_t from, int unfinished)
{
    if (free_cell(r, t, from) != 0)
        return STEP_SKIPPED;
    if (unfinished && !r->in_lost_run)
        atomic_fetch_add_explicit(&r->sh->lost_records, 1, memory_order_relaxed);
    r->in_lost_run = unfinished;
    atomic_fetch_add_explicit(&r->sh->lost_bytes, CELL, memory_order_relaxed);
    return STEP_SKIPPED;
}

/* Checks the record at t (state t + 1) and returns its header, or -1 if
 * its length or continuation cells are inconsistent. */
static int check_record(const struct hm_ring *r, uint64_t t, struct rec_hdr *h, uint64_t *k)
{
    copy_out(r, t, 0, h, sizeof *h);
    if (h->len > r->max_payload)
        return -1;
    *k = cells_for(h->len);
    for (uint64_t j = 1; j < *k; j++) {
        uint64_t s = atomic_load_explicit(&r->seq[(t + j) % r->cells], memory_order_acquire);
        if (s != t + j + 2)
            return -1;
    }
    return 0;
}

static int deliver(struct hm_ring *r, uint64_t t, hm_ring_cb cb, void *ctx, int *stop)
{
    struct rec_hdr h;
    uint64_t k, i = t % r->cells;
    const void *payload;

    if (check_record(r, t, &h, &k) != 0) {   /* the rest follows as orphans */
        if (free_cell(r, t, t + 1) == 0) {
            atomic_fetch_add_explicit(&r->sh->lost_records, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&r->sh->lost_bytes, CELL, memory_order_relaxed);
            r->in_lost_run = 0;
        }
        return STEP_SKIPPED;
    }
    if (i + k <= r->cells) {
        payload = r->data + i * CELL + REC_HDR;
    } else {
        copy_out(r, t, REC_HDR, r->scratch, h.len);
        payload = r->scratch;
    }
    *stop = cb(ctx, h.type, payload, h.len);
    for (uint64_t j = 0; j < k; j++)   /* in order: see reserve() */
        atomic_store_explicit(&r->seq[(t + j) % r->cells], t + j + r->cells, memory_order_release);
    r->tail = t + k;
    atomic_store_explicit(&r->sh->tail, r->tail, memory_order_release);
    atomic_fetch_add_explicit(&r->sh->read_records, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->sh->read_bytes, h.len, memory_order_relaxed);
    r->in_lost_run = 0;
    r->stall_pos = 0;
    return STEP_DELIVERED;
}

/* Position t is reserved but unfinished, or empty. Waits out the stall
 * timeout once per record, then skips unfinished cells reserved before
 * the stall began. */
static int unfinished(struct hm_ring *r, uint64_t t)
{
    uint64_t head;
    int64_t now;

    if (t < r->skip_until)
        return skip_lost(r, t, t, 1);
    head = atomic_load_explicit(&r->sh->head, memory_order_acquire);
    if (head == t) {
        r->stall_pos = 0;
        return STEP_BLOCKED;
    }
    now = mono_ns();
    if (r->stall_pos != t + 1) {
        r->stall_pos = t + 1;
        r->stall_since = now;
        r->stall_head = head;
        return STEP_BLOCKED;
    }
    if (now - r->stall_since < r->stall_ns)
        return STEP_BLOCKED;
    r->skip_until = r->stall_head;
    r->stall_pos = 0;
    return STEP_SKIPPED;
}

static int step(struct hm_ring *r, hm_ring_cb cb, void *ctx, int *stop)
{
    uint64_t t = r->tail;
    uint64_t s = atomic_load_explicit(&r->seq[t % r->cells], memory_order_acquire);

    if (s == t + 1)
        return deliver(r, t, cb, ctx, stop);
    if (s == t)
        return unfinished(r, t);
    /* t + 2: the rest of a skipped record; anything else: scribbled */
    return skip_lost(r, t, s, 0);
}

int hm_ring_read(struct hm_ring *r, hm_ring_cb cb, void *ctx, int max)
{
    int n = 0, stop = 0;

    if (!r || !r->owner)
        return 0;
    while (n < max && !stop) {
        int rc = step(r, cb, ctx, &stop);
        if (rc == STEP_BLOCKED)
            break;
        if (rc == STEP_DELIVERED)
            n++;
    }
    return n;
}

void hm_ring_set_stall_timeout(struct hm_ring *r, int64_t ns)
{
    if (r)
        r->stall_ns = ns < 0 ? 0 : ns;
}

void hm_ring_abandon(struct hm_ring *r)
{
    if (r)
        r->skip_until = atomic_load_explicit(&r->sh->head, memory_order_acquire);
}

/* ---- both sides -------------------------------------------------------- */

void hm_ring_stats(const struct hm_ring *r, struct hm_ring_stats *st)
{
    const struct ring_shared *sh = r->sh;
    uint64_t head = atomic_load_explicit(&sh->head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&sh->tail, memory_order_relaxed);

    memset(st, 0, sizeof *st);
    st->written_records = atomic_load_explicit(&sh->written_records, memory_order_relaxed);
    st->written_bytes = atomic_load_explicit(&sh->written_bytes, memory_order_relaxed);
    st->dropped_records = atomic_load_explicit(&sh->dropped_records, memory_order_relaxed);
    st->dropped_bytes = atomic_load_explicit(&sh->dropped_bytes, memory_order_relaxed);
    st->read_records = atomic_load_explicit(&sh->read_records, memory_order_relaxed);
    st->read_bytes = atomic_load_explicit(&sh->read_bytes, memory_order_relaxed);
    st->lost_records = atomic_load_explicit(&sh->lost_records, memory_order_relaxed);
    st->lost_bytes = atomic_load_explicit(&sh->lost_bytes, memory_order_relaxed);
    st->capacity_bytes = r->cells * CELL;
    st->used_bytes = head > tail ? (head - tail) * CELL : 0;
    st->max_payload = r->max_payload;
    st->producers = atomic_load_explicit(&sh->producers, memory_order_relaxed);
    st->producer_pid = atomic_load_explicit(&sh->producer_pid, memory_order_relaxed);
    st->heartbeat_ns = atomic_load_explicit(&sh->heartbeat_ns, memory_order_relaxed);
}

void hm_ring_close(struct hm_ring *r)
{
    if (!r)
        return;
    if (r->sh)
        munmap(r->sh, r->map_bytes);
    if (r->owner)
        shm_unlink(r->name);
    free(r->scratch);
    free(r);
}

/* ---- creating and attaching -------------------------------------------- */

static int name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    return n >= 2 && n <= 250 && name[0] == '/' && !strchr(name + 1, '/');
}

static struct hm_ring *handle_new(const char *name, int owner)
{
    struct hm_ring *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    snprintf(r->name, sizeof r->name, "%s", name);
    r->owner = owner;
    r->stall_ns = STALL_DEFAULT_NS;
    return r;
}

/* Points the handle's fields into a validated mapping. */
static void handle_bind(struct hm_ring *r, void *base, size_t bytes)
{
    r->sh = base;
    r->map_bytes = bytes;
    r->cells = r->sh->cells;
    r->max_payload = r->sh->max_payload;
    r->seq = (_Atomic uint64_t *)((unsigned char *)base + r->sh->seq_off);
    r->data = (unsigned char *)base + r->sh->data_off;
}

/* Opens name exclusively, replacing a stale object once. */
static int open_new(const char *name, struct hm_err *err)
{
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) {
        shm_unlink(name);
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    }
    if (fd < 0)
        hm_err_set(err, HM_EIO, NULL, -1, "cannot create shared memory %s: %s", name, strerror(errno));
    return fd;
}

/* Gives fd `bytes` of memory now, so running out shows here and not as
 * SIGBUS in a producer. */
static int size_object(int fd, const char *name, uint64_t bytes, struct hm_err *err)
{
    int rc = posix_fallocate(fd, 0, (off_t)bytes);
    if (rc == EOPNOTSUPP || rc == EINVAL)
        rc = ftruncate(fd, (off_t)bytes) ? errno : 0;
    if (rc)
        return hm_err_set(err, HM_EIO, NULL, -1, "cannot size shared memory %s to %llu bytes: %s",
                          name, (unsigned long long)bytes, strerror(rc));
    return 0;
}

static void init_shared(struct ring_shared *sh, uint64_t cells, uint64_t total)
{
    _Atomic uint64_t *seq;
    uint64_t room = (cells / 4) * CELL - REC_HDR;

    sh->version = RING_VERSION;
    sh->hdr_bytes = HDR_BYTES;
    sh->cells = cells;
    sh->cell_bytes = CELL;
    sh->max_payload = (uint32_t)(room < HM_RING_MAX_PAYLOAD ? room : HM_RING_MAX_PAYLOAD);
    sh->seq_off = HDR_BYTES;
    sh->data_off = HDR_BYTES + ((cells * 8 + 63) & ~(uint64_t)63);
    sh->total_bytes = total;
    sh->consumer_pid = (int32_t)getpid();
    seq = (_Atomic uint64_t *)((unsigned char *)sh + sh->seq_off);
    for (uint64_t i = 0; i < cells; i++)
        atomic_store_explicit(&seq[i], i, memory_order_relaxed);
    atomic_store_explicit(&sh->magic, RING_MAGIC, memory_order_release);
}

struct hm_ring *hm_ring_create(const char *name, size_t bytes, struct hm_err *err)
{
    struct hm_ring *r = NULL;
    uint64_t cells, total;
    void *base = MAP_FAILED;
    int fd = -1;

    if (!name_ok(name)) {
        hm_err_set(err, HM_EINVAL, NULL, -1, "bad ring name '%s': want /NAME", name ? name : "");
        return NULL;
    }
    if (!bytes)
        bytes = hm_ring_default_bytes();
    cells = bytes > HDR_BYTES + 64 ? (bytes - HDR_BYTES - 64) / (CELL + 8) : 0;
    if (cells < MIN_CELLS) {
        hm_err_set(err, HM_EINVAL, NULL, -1, "ring of %zu bytes is too small (minimum %u)",
                   bytes, HDR_BYTES + 64 + MIN_CELLS * (CELL + 8));
        return NULL;
    }
    total = HDR_BYTES + ((cells * 8 + 63) & ~(uint64_t)63) + cells * CELL;
    r = handle_new(name, 1);
    if (!r || !(r->scratch = malloc(HM_RING_MAX_PAYLOAD + 8))) {
        hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        goto fail;
    }
    if ((fd = open_new(name, err)) < 0)
        goto fail;
    if (size_object(fd, name, total, err) != 0)
        goto fail_unlink;
    base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        hm_err_set(err, HM_EIO, NULL, -1, "cannot map shared memory %s: %s", name, strerror(errno));
        goto fail_unlink;
    }
    close(fd);
    init_shared(base, cells, total);
    handle_bind(r, base, total);
    return r;

fail_unlink:
    shm_unlink(name);
    close(fd);
fail:
    if (r)
        r->owner = 0;
    hm_ring_close(r);
    return NULL;
}

/* Checks that the mapping of `bytes` bytes holds a ring this code reads. */
static int check_shared(const struct ring_shared *sh, size_t bytes, const char *name,
                        struct hm_err *err)
{
    uint64_t data_end;

    if (atomic_load_explicit(&sh->magic, memory_order_acquire) != RING_MAGIC)
        return hm_err_set(err, HM_EFORMAT, NULL, -1, "%s is not an htamerge ring", name);
    if (sh->version != RING_VERSION)
        return hm_err_set(err, HM_EVERSION, NULL, -1, "%s: ring version %u, expected %u", name,
                          sh->version, RING_VERSION);
    if (sh->cells < MIN_CELLS || sh->cells > bytes / CELL || sh->data_off > bytes)
        return hm_err_set(err, HM_EFORMAT, NULL, -1, "%s: inconsistent ring header", name);
    data_end = sh->data_off + sh->cells * CELL;
    if (sh->hdr_bytes != HDR_BYTES || sh->cell_bytes != CELL || sh->seq_off != HDR_BYTES ||
        sh->data_off < sh->seq_off + sh->cells * 8 || sh->data_off % 64 || data_end > bytes ||
        sh->max_payload > HM_RING_MAX_PAYLOAD || cells_for(sh->max_payload) > sh->cells / 4)
        return hm_err_set(err, HM_EFORMAT, NULL, -1, "%s: inconsistent ring header", name);
    return 0;
}

struct hm_ring *hm_ring_attach(const char *name, struct hm_err *err)
{
    struct hm_ring *r;
    struct stat st;
    void *base;
    int fd;

    if (!name_ok(name)) {
        hm_err_set(err, HM_EINVAL, NULL, -1, "bad ring name '%s': want /NAME", name ? name : "");
        return NULL;
    }
    fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) {
        hm_err_set(err, HM_EIO, NULL, -1, "cannot open shared memory %s: %s", name, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)HDR_BYTES) {
        hm_err_set(err, HM_EFORMAT, NULL, -1, "%s is not an htamerge ring (too small)", name);
        close(fd);
        return NULL;
    }
    base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
        hm_err_set(err, HM_EIO, NULL, -1, "cannot map shared memory %s: %s", name, strerror(errno));
        return NULL;
    }
    r = handle_new(name, 0);
    if (!r || check_shared(base, (size_t)st.st_size, name, err) != 0) {
        if (!r)
            hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        munmap(base, (size_t)st.st_size);
        free(r);
        return NULL;
    }
    handle_bind(r, base, (size_t)st.st_size);
    atomic_fetch_add_explicit(&r->sh->producers, 1, memory_order_relaxed);
    atomic_store_explicit(&r->sh->producer_pid, (int32_t)getpid(), memory_order_relaxed);
    hm_ring_heartbeat(r);
    return r;
}

/* ---- helpers ----------------------------------------------------------- */

size_t hm_ring_default_bytes(void)
{
    const char *s = getenv("HTAMERGE_RING_BYTES");
    unsigned long long v;
    char *end;

    if (!s || !*s)
        return HM_RING_DEFAULT_BYTES;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || end == s)
        return HM_RING_DEFAULT_BYTES;
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if (end[0] == 'i' && end[1] == 'B' && end > s && end[-1] > '9')   /* "64MiB" */
        end += 2;
    if (*end || v == 0 || v > ((unsigned long long)1 << 40))
        return HM_RING_DEFAULT_BYTES;
    return (size_t)v;
}

int hm_ring_format_name(char *buf, size_t len, const char *jobid, int rank)
{
    char id[128];
    size_t i;
    int n;

    if (!jobid || !*jobid)
        jobid = "local";
    for (i = 0; jobid[i] && i < sizeof id - 1; i++) {
        char c = jobid[i];
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '.' || c == '-';
        id[i] = ok ? c : '_';
    }
    id[i] = '\0';
    n = snprintf(buf, len, "/htamerge-%s-%d-p%ld", id, rank, (long)getpid());
    return (n < 0 || (size_t)n >= len) ? HM_EINVAL : 0;
}

/* The creator's pid of a ring name "htamerge-...-p<pid>", 0 if the name is
 * not one. */
static long ring_creator(const char *name)
{
    const char *p = strrchr(name, '-');
    char *end;
    long pid;

    if (strncmp(name, "htamerge-", 9) != 0 || !p || p[1] != 'p' || p[2] < '1' || p[2] > '9')
        return 0;
    pid = strtol(p + 2, &end, 10);
    return *end || pid <= 0 || pid > INT32_MAX ? 0 : pid;
}

int hm_ring_sweep_stale(const char *dir, uint64_t *bytes)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    if (bytes)
        *bytes = 0;
    if (!d)
        return 0;
    while ((e = readdir(d)) != NULL) {
        long pid = ring_creator(e->d_name);
        struct stat st;
        if (!pid || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0) {
            n++;
            if (bytes)
                *bytes += (uint64_t)st.st_blocks * 512;
        }
    }
    closedir(d);
    return n;
}
