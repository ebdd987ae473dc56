/* Tests for common/shm_ring: round trip, wraparound, overflow accounting,
 * abandoned records, many producer threads against a live consumer, and a
 * producer in another process. */
#include "test.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/shm_ring.h"

/* A test payload: a producer id, a sequence number and a filler whose
 * bytes are derived from both, so any mix-up shows. */
struct rec {
    uint32_t producer;
    uint32_t len;       /* bytes of the whole payload */
    uint64_t seq;
    unsigned char fill[HM_RING_MAX_PAYLOAD];
};

static uint32_t fill_len(uint64_t seq)
{
    return (uint32_t)((seq * 37) % 300);
}

static uint32_t make_rec(struct rec *r, uint32_t producer, uint64_t seq, uint32_t extra)
{
    r->producer = producer;
    r->seq = seq;
    r->len = 16 + extra;
    for (uint32_t i = 0; i < extra; i++)
        r->fill[i] = (unsigned char)(seq * 131 + i * 7 + producer);
    return r->len;
}

static int rec_ok(const void *p, uint32_t len)
{
    const struct rec *r = p;
    if (len < 16 || r->len != len)
        return 0;
    for (uint32_t i = 0; i < len - 16; i++)
        if (r->fill[i] != (unsigned char)(r->seq * 131 + i * 7 + r->producer))
            return 0;
    return 1;
}

/* Consumer state: checks every record and per-producer order. */
struct sink {
    uint64_t n, bad, out_of_order;
    uint64_t next[16];     /* expected seq per producer, or 0 = any */
    uint64_t last[16];     /* last seq seen + 1 per producer */
    uint16_t type;
    int stop_after;        /* stop after this many records (0 = never) */
};

static int sink_cb(void *ctx, uint16_t type, const void *payload, uint32_t len)
{
    struct sink *s = ctx;
    const struct rec *r = payload;

    if (type != s->type || !rec_ok(payload, len) || r->producer >= 16 ||
        ((uintptr_t)payload & 7)) {
        s->bad++;
    } else {
        if (s->next[r->producer] && r->seq != s->next[r->producer])
            s->out_of_order++;
        if (r->seq + 1 <= s->last[r->producer])
            s->out_of_order++;
        s->last[r->producer] = r->seq + 1;
        if (s->next[r->producer])
            s->next[r->producer]++;
    }
    s->n++;
    return s->stop_after && s->n % (uint64_t)s->stop_after == 0;
}

static const char *ring_name(const char *tag)
{
    static char buf[128];
    snprintf(buf, sizeof buf, "/hm-test-%d-%s", (int)getpid(), tag);
    return buf;
}

static void test_round_trip(void)
{
    struct hm_err err;
    struct hm_ring *c = hm_ring_create(ring_name("rt"), 1 << 20, &err);
    struct hm_ring *p;
    struct hm_ring_stats st;
    struct sink s = { .type = 7 };
    static struct rec r;

    CHECK(c != NULL);
    if (!c)
        return;
    p = hm_ring_attach(ring_name("rt"), &err);
    CHECK(p != NULL);
    s.next[1] = 1;
    for (uint64_t i = 1; i <= 100; i++)
        CHECK_EQ_INT(hm_ring_write(p, 7, &r, make_rec(&r, 1, i, fill_len(i))), 0);
    CHECK_EQ_INT(hm_ring_read(c, sink_cb, &s, 1000), 100);
    CHECK_EQ_INT(s.bad, 0);
    CHECK_EQ_INT(s.out_of_order, 0);
    CHECK_EQ_INT(hm_ring_read(c, sink_cb, &s, 1000), 0);

    /* max bounds the count; a callback can stop early */
    for (uint64_t i = 101; i <= 110; i++)
        hm_ring_write(p, 7, &r, make_rec(&r, 1, i, 8));
    CHECK_EQ_INT(hm_ring_read(c, sink_cb, &s, 3), 3);
    s.stop_after = 2;
    CHECK_EQ_INT(hm_ring_read(c, sink_cb, &s, 100), 1);   /* 104th record is the 2nd multiple */
    s.stop_after = 0;
    CHECK_EQ_INT(hm_ring_read(c, sink_cb, &s, 100), 6);

    /* zero-length and two-part payloads */
    CHECK_EQ_INT(hm_ring_write(p, 9, NULL, 0), 0);
    hm_ring_stats(c, &st);
    CHECK_EQ_INT(st.written_records, 111);
    CHECK_EQ_INT(st.read_records, 110);
    CHECK_EQ_INT(st.producers, 1);
    CHECK_EQ_INT(st.producer_pid, getpid());
    CHECK(st.heartbeat_ns > 0);
    CHECK(st.max_payload > 1000);
    hm_ring_close(p);
    hm_ring_close(c);
    /* the owner unlinked it */
    CHECK(hm_ring_attach(ring_name("rt"), &err) == NULL);
    CHECK_EQ_INT(err.code, HM_EIO);
}

struct two_part {
    uint16_t type;
    char text[64];
    uint32_t id, len;
    int n;
};

static int string_cb(void *ctx, uint16_t type, const void *payload, uint32_t len)
{
    struct two_part *t = ctx;
    struct hm_ring_string h;

    t->type = type;
    if (len < sizeof h)
        return 0;
    memcpy(&h, payload, sizeof h);
    t->id = h.id;
    t->len = h.len;
    if (h.len == len - sizeof h && h.len < sizeof t->text) {
        memcpy(t->text, (const char *)payload + sizeof h, h.len);
        t->text[h.len] = '\0';
    }
    t->n++;
    return 0;
}

static void test_string_record(void)
{
    struct hm_err err;
    struct hm_ring *c = hm_ring_create(ring_name("str"), 1 << 20, &err);
    struct hm_ring_string h = { .id = 42, .len = 11 };
    struct two_part t = { 0 };

    CHECK(c != NULL);
    if (!c)
        return;
    CHECK_EQ_INT(hm_ring_write2(c, HM_RING_STRING, &h, sizeof h, "ncclKernel_", 11), 0);
    CHECK_EQ_INT(hm_ring_read(c, string_cb, &t, 10), 1);
    CHECK_EQ_INT(t.type, HM_RING_STRING);
    CHECK_EQ_INT(t.id, 42);
    CHECK_STR(t.text, "ncclKernel_");
    hm_ring_close(c);
}

/* Smallest ring, records of varied length: positions wrap many times and
 * some records straddle the end of the data area. */
static void test_wraparound(void)
{
    struct hm_err err;
    struct hm_ring *c = hm_ring_create(ring_name("wrap"), 64 << 10, &err);
    struct hm_ring_stats st;
    struct sink s = { .type = 3 };
    static struct rec r;
    uint64_t seq = 1;

    CHECK(c != NULL);
    if (!c)
        return;
    hm_ring_stats(c, &st);
    s.next[2] = 1;
    for (int round = 0; round < 400; round++) {
        for (int i = 0; i < 20; i++, seq++)
            CHECK_EQ_INT(hm_ring_write(c, 3, &r, make_rec(&r, 2, seq, fill_len(seq))), 0);
        hm_ring_read(c, sink_cb, &s, 1000);
    }
    CHECK_EQ_INT(s.n, seq - 1);
    CHECK_EQ_INT(s.bad, 0);
    CHECK_EQ_INT(s.out_of_order, 0);
    hm_ring_stats(c, &st);
    CHECK(st.read_bytes > 10 * st.capacity_bytes);   /* wrapped at least ten times */
    CHECK_EQ_INT(st.used_bytes, 0);

    /* the largest payload this ring takes, at every alignment */
    for (int i = 0; i < 12; i++, seq++) {
        CHECK_EQ_INT(hm_ring_write(c, 3, &r, make_rec(&r, 2, seq, st.max_payload - 16)), 0);
        CHECK_EQ_INT(hm_ring_read(c, sink_cb, &s, 10), 1);
    }
    CHECK_EQ_INT(s.bad, 0);
    hm_ring_close(c);
}

/* Without a reader the ring fills; every refused write is counted. */
static void test_overflow(void)
{
    struct hm_err err;
    struct hm_ring *c = hm_ring_create(ring_name("ovf"), 64 << 10, &err);
    struct hm_ring_stats st;
    struct sink s = { .type = 1 };
    static struct rec r;
    uint64_t ok = 0, dropped = 0, dropped_bytes = 0, written_bytes = 0;

    CHECK(c != NULL);
    if (!c)
        return;
    for (uint64_t i = 1; i <= 5000; i++) {
        uint32_t len = make_rec(&r, 0, i, fill_len(i));
        if (hm_ring_write(c, 1, &r, len) == 0)
            ok++, written_bytes += len;
        else
            dropped++, dropped_bytes += len;
    }
    hm_ring_stats(c, &st);
    CHECK(ok > 100);
    CHECK(dropped > 1000);
    CHECK_EQ_INT(st.written_records, ok);
    CHECK_EQ_INT(st.written_bytes, written_bytes);
    CHECK_EQ_INT(st.dropped_records, dropped);
    CHECK_EQ_INT(st.dropped_bytes, dropped_bytes);
    CHECK(st.used_bytes <= st.capacity_bytes);

    /* too large is a drop too; NULL handle refuses quietly */
    CHECK_EQ_INT(hm_ring_write(c, 1, &r, st.max_payload + 1), -1);
    CHECK_EQ_INT(hm_ring_write(NULL, 1, &r, 16), -1);
    hm_ring_stats(c, &st);
    CHECK_EQ_INT(st.dropped_records, dropped + 1);

    CHECK_EQ_INT(hm_ring_read(c, sink_cb, &s, 100000), ok);
    CHECK_EQ_INT(s.bad, 0);
    CHECK_EQ_INT(s.out_of_order, 0);
    CHECK_EQ_INT(hm_ring_write(c, 1, &r, make_rec(&r, 0, 9999, 4)), 0);   /* room again */
    hm_ring_close(c);
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
    nanosleep(&ts, NULL);
}

/* A producer that dies mid-write leaves an unfinished record: the reader
 * waits the stall timeout, then skips it and counts it lost. */
static void test_abandoned(void)
{
    struct hm_err err;
    struct hm_ring *c = hm_ring_create(ring_name("dead"), 64 << 10, &err);
    struct hm_ring_stats st;
    struct sink s = { .type = 5 };
    static struct rec r;

    CHECK(c != NULL);
    if (!c)
        return;
    s.next[4] = 1;
    CHECK_EQ_INT(hm_ring_write(c, 5, &r, make_rec(&r, 4, 1, 10)), 0);
    CHECK_EQ_INT(hm_ring_reserve_abandoned(c, 100), 0);
    for (uint64_t i = 2; i <= 11; i++)
        hm_ring_write(c, 5, &r, make_rec(&r, 4, i, 10));
    hm_ring_set_stall_timeout(c, 50 * 1000000ll);
    CHECK_EQ_INT(hm_ring_read(c, sink_cb, &s, 100), 1);   /* stops at the unfinished one */
    CHECK_EQ_INT(hm_ring_read(c, sink_cb, &s, 100), 0);
    sleep_ms(80);
    CHECK_EQ_INT(hm_ring_read(c, sink_cb, &s, 100), 10);
    hm_ring_stats(c, &st);
    CHECK_EQ_INT(st.lost_records, 1);
    CHECK_EQ_INT(st.lost_bytes, 4 * 32);   /* 8 + 100 bytes take four 32-byte cells */
    CHECK_EQ_INT(s.bad, 0);

    /* hm_ring_abandon skips at once; two unfinished in a row count as one
     * run (a lower bound) */
    hm_ring_set_stall_timeout(c, 60 * 1000000000ll);
    CHECK_EQ_INT(hm_ring_reserve_abandoned(c, 10), 0);
    CHECK_EQ_INT(hm_ring_reserve_abandoned(c, 40), 0);
    CHECK_EQ_INT(hm_ring_write(c, 5, &r, make_rec(&r, 4, 12, 0)), 0);
    CHECK_EQ_INT(hm_ring_read(c, sink_cb, &s, 100), 0);
    hm_ring_abandon(c);
    CHECK_EQ_INT(hm_ring_read(c, sink_cb, &s, 100), 1);
    hm_ring_stats(c, &st);
    CHECK_EQ_INT(st.lost_records, 2);
    CHECK_EQ_INT(st.lost_bytes, (4 + 1 + 2) * 32);
    CHECK_EQ_INT(s.out_of_order, 0);
    CHECK_EQ_INT(st.used_bytes, 0);
    hm_ring_close(c);
}

/* ---- threads ---- */

#define THREADS 4
#define PER_THREAD 200000

struct prod {
    struct hm_ring *ring;
    uint32_t id;
    uint64_t ok, dropped;
};

static void *producer_main(void *arg)
{
    struct prod *p = arg;
    struct rec r;

    for (uint64_t i = 1; i <= PER_THREAD; i++) {
        if (hm_ring_write(p->ring, 2, &r, make_rec(&r, p->id, i, (uint32_t)(i % 5) * 8)) == 0)
            p->ok++;
        else
            p->dropped++;
    }
    return NULL;
}

static void run_threads(size_t bytes, int expect_no_loss)
{
    struct hm_err err;
    struct hm_ring *c = hm_ring_create(ring_name("mt"), bytes, &err);
    struct hm_ring *p;
    pthread_t th[THREADS];
    struct prod pr[THREADS];
    struct sink s = { .type = 2 };
    struct hm_ring_stats st;
    uint64_t ok = 0, dropped = 0;

    CHECK(c != NULL);
    if (!c)
        return;
    /* The producers write through the consumer's own mapping: ThreadSanitizer
     * tracks synchronisation by virtual address and would not connect two
     * mappings of one object. Attaching is tested across processes below. */
    p = c;
    for (int i = 0; i < THREADS; i++) {
        pr[i] = (struct prod){ .ring = p, .id = (uint32_t)i };
        pthread_create(&th[i], NULL, producer_main, &pr[i]);
    }
    for (;;) {   /* live consumer until the producers are done */
        hm_ring_stats(c, &st);
        if (st.written_records + st.dropped_records == (uint64_t)THREADS * PER_THREAD)
            break;
        if (!hm_ring_read(c, sink_cb, &s, 4096))
            sched_yield();
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        ok += pr[i].ok;
        dropped += pr[i].dropped;
    }
    while (hm_ring_read(c, sink_cb, &s, 1 << 20) > 0)
        ;
    hm_ring_stats(c, &st);
    CHECK_EQ_INT(ok + dropped, (uint64_t)THREADS * PER_THREAD);
    CHECK_EQ_INT(st.written_records, ok);
    CHECK_EQ_INT(st.dropped_records, dropped);
    CHECK_EQ_INT(st.read_records, ok);
    CHECK_EQ_INT(s.n, ok);
    CHECK_EQ_INT(s.bad, 0);
    CHECK_EQ_INT(s.out_of_order, 0);
    CHECK_EQ_INT(st.lost_records, 0);
    if (expect_no_loss)
        CHECK_EQ_INT(dropped, 0);
    fprintf(stderr, "threads: ring %zu bytes: %llu written, %llu dropped\n", bytes,
            (unsigned long long)ok, (unsigned long long)dropped);
    hm_ring_close(c);
}

/* ---- another process ---- */

static void test_cross_process(void)
{
    struct hm_err err;
    char name[128];
    struct hm_ring *c;
    struct sink s = { .type = 11 };
    struct hm_ring_stats st;
    int status = 0;
    pid_t pid;

    snprintf(name, sizeof name, "%s", ring_name("xp"));   /* the child's pid differs */
    c = hm_ring_create(name, 4 << 20, &err);
    CHECK(c != NULL);
    if (!c)
        return;
    pid = fork();
    if (pid == 0) {
        struct hm_err e2;
        struct hm_ring *p = hm_ring_attach(name, &e2);
        static struct rec r;
        int waited_ms = 0;
        if (!p)
            _exit(3);
        /* 20 000 records are more than the ring holds: when the parent is
         * slow to read (a loaded machine), the write is dropped and the
         * child offers it again, for up to 30 s, so that what is checked
         * is the crossing between processes, not the parent's speed. */
        for (uint64_t i = 1; i <= 20000; i++)
            while (hm_ring_write(p, 11, &r, make_rec(&r, 9, i, fill_len(i))) != 0) {
                if (++waited_ms > 30000)
                    _exit(4);
                sleep_ms(1);
            }
        hm_ring_heartbeat(p);
        hm_ring_close(p);
        _exit(0);
    }
    s.next[9] = 1;
    while (waitpid(pid, &status, WNOHANG) == 0)
        if (!hm_ring_read(c, sink_cb, &s, 1000))
            sleep_ms(1);
    while (hm_ring_read(c, sink_cb, &s, 100000) > 0)
        ;
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ_INT(s.n, 20000);
    CHECK_EQ_INT(s.bad, 0);
    CHECK_EQ_INT(s.out_of_order, 0);
    hm_ring_stats(c, &st);
    CHECK_EQ_INT(st.producer_pid, pid);
    CHECK_EQ_INT(st.written_records, 20000);   /* each dropped offer was made again */
    hm_ring_close(c);
}

static void test_errors_and_helpers(void)
{
    struct hm_err err;
    char buf[64];
    struct hm_ring *c;

    CHECK(hm_ring_create("noslash", 1 << 20, &err) == NULL);
    CHECK_EQ_INT(err.code, HM_EINVAL);
    CHECK(hm_ring_create("/a/b", 1 << 20, &err) == NULL);
    CHECK(hm_ring_create(ring_name("tiny"), 4096, &err) == NULL);
    CHECK_CONTAINS(err.msg, "too small");
    CHECK(hm_ring_attach(ring_name("none"), &err) == NULL);
    CHECK_EQ_INT(err.code, HM_EIO);
    CHECK_CONTAINS(err.msg, "No such file");

    /* a stale object of the same name is replaced; a non-ring is refused */
    c = hm_ring_create(ring_name("stale"), 1 << 20, &err);
    CHECK(c != NULL);
    memset(buf, 0, sizeof buf);
    {
        struct hm_ring *again = hm_ring_create(ring_name("stale"), 1 << 20, &err);
        CHECK(again != NULL);
        hm_ring_close(again);
    }
    hm_ring_close(c);

    {
        char want[64];
        CHECK_EQ_INT(hm_ring_format_name(buf, sizeof buf, "12345.0", 3), 0);
        snprintf(want, sizeof want, "/htamerge-12345.0-3-p%ld", (long)getpid());
        CHECK_STR(buf, want);
        CHECK_EQ_INT(hm_ring_format_name(buf, sizeof buf, "a/b c", 0), 0);
        snprintf(want, sizeof want, "/htamerge-a_b_c-0-p%ld", (long)getpid());
        CHECK_STR(buf, want);
    }
    CHECK_EQ_INT(hm_ring_format_name(buf, 8, "job", 0), HM_EINVAL);

    unsetenv("HTAMERGE_RING_BYTES");
    CHECK_EQ_INT(hm_ring_default_bytes(), 64 << 20);
    setenv("HTAMERGE_RING_BYTES", "8M", 1);
    CHECK_EQ_INT(hm_ring_default_bytes(), 8 << 20);
    setenv("HTAMERGE_RING_BYTES", "1048576", 1);
    CHECK_EQ_INT(hm_ring_default_bytes(), 1 << 20);
    setenv("HTAMERGE_RING_BYTES", "2GiB", 1);
    CHECK_EQ_INT(hm_ring_default_bytes(), (size_t)2 << 30);
    setenv("HTAMERGE_RING_BYTES", "lots", 1);
    CHECK_EQ_INT(hm_ring_default_bytes(), 64 << 20);
    unsetenv("HTAMERGE_RING_BYTES");
}

static void test_not_a_ring(void)
{
    struct hm_err err;
    const char *name = ring_name("junk");
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);

    CHECK(fd >= 0);
    if (fd < 0)
        return;
    CHECK_EQ_INT(ftruncate(fd, 1 << 16), 0);
    close(fd);
    CHECK(hm_ring_attach(name, &err) == NULL);
    CHECK_EQ_INT(err.code, HM_EFORMAT);
    shm_unlink(name);
}

/* ---- the test producer tool, when it has been built ---- */

struct tool_sink {
    uint64_t slices, strings, bad;
    int32_t pid;
};

static int tool_cb(void *ctx, uint16_t type, const void *payload, uint32_t len)
{
    struct tool_sink *t = ctx;
    struct hm_ring_slice sl;
    struct hm_ring_string str;

    if (type == HM_RING_STRING && len >= sizeof str) {
        memcpy(&str, payload, sizeof str);
        t->strings++;
        t->bad += str.id < 1 || str.len != len - sizeof str;
    } else if (type == HM_RING_SLICE && len == sizeof sl) {
        memcpy(&sl, payload, sizeof sl);
        t->slices++;
        t->bad += sl.pid != t->pid || sl.dur != 500 || sl.name < 1 || sl.name > 4 ||
                  sl.bytes != -1 || sl.kind != 0;
    } else {
        t->bad++;
    }
    return 0;
}

static void test_tool_producer(void)
{
    const char *bin = getenv("HM_BINARY_DIR");
    char tool[4096], name[128];
    struct hm_err err;
    struct hm_ring *c;
    struct hm_ring_stats st;
    struct tool_sink t = { 0 };
    int status = 0;
    pid_t pid;

    snprintf(tool, sizeof tool, "%s/ring_producer", bin ? bin : ".");
    if (access(tool, X_OK) != 0) {
        fprintf(stderr, "ring_producer not built (%s): skipped\n", tool);
        return;
    }
    snprintf(name, sizeof name, "%s", ring_name("tool"));
    c = hm_ring_create(name, 1 << 20, &err);
    CHECK(c != NULL);
    if (!c)
        return;
    setenv("HTAMERGE_RING", name, 1);
    pid = fork();
    if (pid == 0) {
        /* In a ThreadSanitizer build of the tool, the producers' threads
         * synchronise through our (the consumer's) stores, which it cannot
         * see from another process: its reports there are false. */
        setenv("TSAN_OPTIONS", "report_bugs=0", 1);
        execl(tool, tool, "--records", "100000", "--threads", "4", (char *)NULL);
        _exit(127);
    }
    unsetenv("HTAMERGE_RING");
    t.pid = (int32_t)pid;
    while (waitpid(pid, &status, WNOHANG) == 0)
        if (!hm_ring_read(c, tool_cb, &t, 4096))
            sleep_ms(1);
    while (hm_ring_read(c, tool_cb, &t, 1 << 20) > 0)
        ;
    hm_ring_stats(c, &st);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ_INT(t.strings, 4);
    CHECK_EQ_INT(t.bad, 0);
    CHECK_EQ_INT(t.slices + st.dropped_records, 100000);
    CHECK_EQ_INT(st.read_records, st.written_records);
    CHECK(st.heartbeat_ns > 0);
    hm_ring_close(c);
}

/* Rings of collectors that are gone are removed; a live creator's ring,
 * another name, another kind of file stay. */
static void test_sweep_stale(void)
{
    struct hm_err err;
    char dead_name[96], live_name[96], path[160];
    pid_t dead = fork();
    uint64_t bytes = 0;
    struct hm_ring *dead_ring, *live_ring;

    if (dead == 0)
        _exit(0);
    waitpid(dead, NULL, 0);   /* a pid that no longer exists */
    snprintf(dead_name, sizeof dead_name, "/htamerge-sweeptest-%ld-0-p%ld", (long)getpid(), (long)dead);
    snprintf(live_name, sizeof live_name, "/htamerge-sweeptest-%ld-1-p%ld", (long)getpid(), (long)getpid());
    dead_ring = hm_ring_create(dead_name, 1 << 20, &err);
    live_ring = hm_ring_create(live_name, 1 << 20, &err);
    CHECK(dead_ring != NULL && live_ring != NULL);
    CHECK(hm_ring_sweep_stale("/dev/shm", &bytes) >= 1);
    CHECK(bytes >= (1 << 20));
    snprintf(path, sizeof path, "/dev/shm%s", dead_name);
    CHECK(access(path, F_OK) != 0);
    snprintf(path, sizeof path, "/dev/shm%s", live_name);
    CHECK(access(path, F_OK) == 0);
    /* The swept ring's mapping stays valid for whoever holds it. */
    if (dead_ring)
        CHECK_EQ_INT(hm_ring_write(dead_ring, HM_RING_STRING, "xxxxxxxx", 8), 0);
    hm_ring_close(dead_ring);   /* its unlink now finds nothing: fine */
    hm_ring_close(live_ring);
    CHECK(access(path, F_OK) != 0);
    CHECK_EQ_INT(hm_ring_sweep_stale("/nonexistent-dir", &bytes), 0);
}

int main(void)
{
    test_round_trip();
    test_string_record();
    test_wraparound();
    test_overflow();
    test_abandoned();
    test_cross_process();
    test_errors_and_helpers();
    test_not_a_ring();
    test_tool_producer();
    test_sweep_stale();
    run_threads(96 << 20, 1);   /* room for everything: no loss */
    run_threads(256 << 10, 0);  /* small: drops, accounted exactly */
    return hm_test_done();
}
