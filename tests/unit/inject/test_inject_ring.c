/* Injection library as a ring producer, driven through its real entry
 * points with fake callers: a fake NVTX client (export table and function
 * slots) and fake NCCL profiler calls (v5 and v4), under the clock test
 * hook. The records are read back from the ring as the collector would and
 * checked: names, depths, domains, threads, collective keys, GPU timer
 * mapping, one-rank sequence numbers, and that a full ring drops and counts
 * instead of blocking. No GPU and no CUDA needed (CUPTI is the stub). */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#include "collector/sources/inject/cupti_none.c"
#include "collector/sources/inject/gpuclock.c"
#include "collector/sources/inject/inject.c"
#include "collector/sources/inject/nccl.c"
#include "collector/sources/inject/nvtx.c"
#include "collector/sources/inject/nvtx_stack.c"

#define SKEW_NS 5000000000ll

/* ---- reading the ring back -------------------------------------------------- */

enum { MAX_REC = 200000, MAX_STR = 4096 };
static struct {
    uint32_t ids[MAX_STR];
    char *texts[MAX_STR];
    int nstr;
    struct hm_ring_nvtx nvtx[MAX_REC];
    int nnvtx;
    struct hm_ring_nccl_coll coll[256];
    int ncoll;
    struct hm_ring_slice slice[256];
    int nslice;
    struct hm_ring_counter counter[64];
    int ncounter;
} R;

static const char *text_of(uint32_t id)
{
    for (int i = R.nstr - 1; i >= 0; i--)   /* the latest definition wins */
        if (R.ids[i] == id)
            return R.texts[i];
    return NULL;
}

static int on_rec(void *ctx, uint16_t type, const void *p, uint32_t len)
{
    (void)ctx;
    if (type == HM_RING_STRING && R.nstr < MAX_STR) {
        struct hm_ring_string h;
        memcpy(&h, p, sizeof h);
        R.ids[R.nstr] = h.id;
        R.texts[R.nstr] = strndup((const char *)p + sizeof h, h.len);
        R.nstr++;
    } else if (type == HM_RING_NVTX && R.nnvtx < MAX_REC && len >= sizeof R.nvtx[0]) {
        memcpy(&R.nvtx[R.nnvtx++], p, sizeof R.nvtx[0]);
    } else if (type == HM_RING_NCCL_COLL && R.ncoll < 256) {
        memcpy(&R.coll[R.ncoll++], p, sizeof R.coll[0]);
    } else if (type == HM_RING_SLICE && R.nslice < 256) {
        memcpy(&R.slice[R.nslice++], p, sizeof R.slice[0]);
    } else if (type == HM_RING_COUNTER && R.ncounter < 64) {
        memcpy(&R.counter[R.ncounter++], p, sizeof R.counter[0]);
    }
    return 0;
}

static void drain(struct hm_ring *ring)
{
    R.nnvtx = R.ncoll = R.nslice = R.ncounter = 0;
    while (hm_ring_read(ring, on_rec, NULL, 4096) > 0)
        ;
}

static const struct hm_ring_nvtx *nvtx_named(const char *name)
{
    for (int i = 0; i < R.nnvtx; i++)
        if (text_of(R.nvtx[i].name) && !strcmp(text_of(R.nvtx[i].name), name))
            return &R.nvtx[i];
    return NULL;
}

static int64_t real_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- a fake NVTX client ----------------------------------------------------- */

static inj_nvtx_fn core_fn[16], core2_fn[16];
static inj_nvtx_fn *core_tab[17], *core2_tab[17];

static int fake_table(int module, inj_nvtx_fn ***out, unsigned int *size)
{
    if (module != INJ_NVTX_MODULE_CORE && module != INJ_NVTX_MODULE_CORE2)
        return 0;
    *out = module == INJ_NVTX_MODULE_CORE ? core_tab : core2_tab;
    *size = 16;
    return 1;
}

static const struct inj_nvtx_etbl_callbacks fake_cb = {sizeof fake_cb, fake_table};

static const void *fake_export(unsigned int id)
{
    return id == INJ_NVTX_ETID_CALLBACKS ? &fake_cb : NULL;
}

#define CORE(id, type) ((type)core_fn[INJ_NVTX_CORE_##id])
#define CORE2(id, type) ((type)core2_fn[INJ_NVTX_CORE2_##id])

static void *end_elsewhere(void *arg)
{
    CORE(RangeEnd, void (*)(uint64_t))(*(uint64_t *)arg);
    return NULL;
}

static void test_nvtx(struct hm_ring *ring)
{
    inj_nvtx_attr a = {.version = 3, .size = sizeof a, .category = 4, .color_type = INJ_NVTX_COLOR_ARGB,
                       .color = 0xff00ff00u, .message_type = INJ_NVTX_MSG_ASCII};
    int64_t before = real_now();
    pthread_t th;
    uint64_t id;

    for (int i = 1; i < 16; i++)
        core_tab[i] = &core_fn[i], core2_tab[i] = &core2_fn[i];
    CHECK_EQ_INT(InitializeInjectionNvtx2(fake_export), 1);
    CHECK(core_fn[INJ_NVTX_CORE_RangePushA] != NULL && core2_fn[INJ_NVTX_CORE2_DomainCreateA] != NULL);

    CHECK_EQ_INT(CORE(RangePushA, int (*)(const char *))("outer"), 0);
    CHECK_EQ_INT(CORE(RangePushA, int (*)(const char *))("inner"), 1);
    usleep(2000);
    CHECK_EQ_INT(CORE(RangePop, int (*)(void))(), 1);
    CHECK_EQ_INT(CORE(RangePop, int (*)(void))(), 0);
    CHECK_EQ_INT(CORE(RangePop, int (*)(void))(), -1);   /* nothing open: counted */
    CORE(MarkA, void (*)(const char *))("tick");
    a.message.ascii = "attributed";
    CHECK_EQ_INT(CORE(RangePushEx, int (*)(const inj_nvtx_attr *))(&a), 0);
    CORE(RangePop, int (*)(void))();
    CHECK_EQ_INT(CORE(RangePushW, int (*)(const wchar_t *))(L"wide \u00e9\u2713"), 0);
    CORE(RangePop, int (*)(void))();

    /* A domain range, popped from under a default-domain one. */
    void *dom = CORE2(DomainCreateA, void *(*)(const char *))("mydomain");
    void *reg = CORE2(DomainRegisterStringA, void *(*)(void *, const char *))(dom, "registered");
    inj_nvtx_attr r = {.version = 3, .size = sizeof r, .message_type = INJ_NVTX_MSG_REGISTERED};
    r.message.registered = reg;
    CHECK_EQ_INT(CORE2(DomainRangePushEx, int (*)(void *, const inj_nvtx_attr *))(dom, &r), 0);
    CHECK_EQ_INT(CORE(RangePushA, int (*)(const char *))("default above"), 1);
    CHECK_EQ_INT(CORE2(DomainRangePop, int (*)(void *))(dom), 0);
    CHECK_EQ_INT(CORE(RangePop, int (*)(void))(), 0);
    free(dom);   /* the library never frees handles (NVTX may use them until exit) */
    free(reg);

    /* Start here, end on another thread. */
    id = CORE(RangeStartA, uint64_t (*)(const char *))("async");
    CHECK(id != 0);
    pthread_create(&th, NULL, end_elsewhere, &id);
    pthread_join(th, NULL);

    drain(ring);
    const struct hm_ring_nvtx *o = nvtx_named("outer"), *in = nvtx_named("inner");
    CHECK(o && in);
    if (o && in) {
        CHECK_EQ_INT(o->depth, 0);
        CHECK_EQ_INT(in->depth, 1);
        CHECK(in->ts >= o->ts && in->ts + in->dur <= o->ts + o->dur);
        CHECK(in->dur >= 2000000);
        CHECK_EQ_INT(o->tid, inj_tid());
        CHECK_EQ_INT(o->pid, getpid());
        /* The clock hook moved every time 5 s ahead. */
        CHECK(o->ts >= before + SKEW_NS - 1000000 && o->ts < real_now() + SKEW_NS + 1000000);
    }
    const struct hm_ring_nvtx *m = nvtx_named("tick");
    CHECK(m && (m->flags & HM_RING_NVTX_F_MARK) && m->dur == 0);
    const struct hm_ring_nvtx *at = nvtx_named("attributed");
    CHECK(at && at->category == 4 && at->color == 0xff00ff00u);
    CHECK(nvtx_named("wide \xc3\xa9\xe2\x9c\x93") != NULL);
    const struct hm_ring_nvtx *rg = nvtx_named("registered"), *above = nvtx_named("default above");
    CHECK(rg && above);
    if (rg && above) {
        CHECK_STR(text_of(rg->domain), "mydomain");
        CHECK_EQ_INT(rg->depth, 0);
        CHECK_EQ_INT(above->domain, 0);
        CHECK_EQ_INT(above->depth, 0);   /* it was alone on the stack when popped */
    }
    const struct hm_ring_nvtx *as = nvtx_named("async");
    CHECK(as && as->tid == inj_tid() && as->depth == 0);
    CHECK_EQ_INT(atomic_load(&inj_get()->nvtx.unmatched), 1);
}

/* ---- fake NCCL -------------------------------------------------------------- */

static const struct hm_ring_nccl_coll *coll_seq(const char *func, int64_t seq, uint64_t comm)
{
    for (int i = 0; i < R.ncoll; i++)
        if (R.coll[i].seq == seq && R.coll[i].comm_id == comm && text_of(R.coll[i].func) &&
            !strcmp(text_of(R.coll[i].func), func))
            return &R.coll[i];
    return NULL;
}

static void test_nccl_v5(struct hm_ring *ring)
{
    void *ctx = NULL, *h = NULL, *k0 = NULL, *k1 = NULL, *api = NULL, *lone = NULL;
    int mask = 0;
    inj_nccl_descr_v5 d;
    inj_nccl_state_args st;
    /* This "GPU" clock runs 3 s behind the hooked CPU clock. */
    int64_t gpu_now = real_now() + SKEW_NS - 3000000000ll;

    CHECK_EQ_INT(ncclProfiler_v5.init(&ctx, 0xabcull, &mask, "comm", 1, 2, 1, NULL), 0);
    CHECK(ctx != NULL);
    CHECK(mask & INJ_NCCL_COLL && mask & INJ_NCCL_KERNEL_CH && mask & INJ_NCCL_COLL_API);

    memset(&d, 0, sizeof d);
    d.type = INJ_NCCL_COLL_API;
    d.collApi.func = "AllReduce";
    d.collApi.count = 1024;
    d.collApi.datatype = "ncclFloat32";
    ncclProfiler_v5.startEvent(ctx, &api, &d);
    memset(&d, 0, sizeof d);
    d.type = INJ_NCCL_COLL;
    d.coll.seqNumber = 7;
    d.coll.func = "AllReduce";
    d.coll.count = 1024;
    d.coll.datatype = "ncclFloat32";
    d.coll.nChannels = 2;
    d.coll.algo = "RING";
    d.coll.proto = "LL";
    ncclProfiler_v5.startEvent(ctx, &h, &d);
    CHECK(h != NULL);
    ncclProfiler_v5.stopEvent(h);     /* enqueued: not complete yet */
    ncclProfiler_v5.stopEvent(api);

    memset(&d, 0, sizeof d);
    d.type = INJ_NCCL_KERNEL_CH;
    d.parentObj = h;
    d.kernelCh.channelId = 0;
    d.kernelCh.pTimer = (uint64_t)(gpu_now - 900000);
    ncclProfiler_v5.startEvent(ctx, &k0, &d);
    d.kernelCh.channelId = 1;
    d.kernelCh.pTimer = (uint64_t)(gpu_now - 800000);
    ncclProfiler_v5.startEvent(ctx, &k1, &d);
    CHECK(k0 && k1);
    st.kernelCh.pTimer = (uint64_t)(gpu_now - 100000);
    ncclProfiler_v5.recordEventState(k0, INJ_NCCL_STATE_KERNEL_CH_STOP, &st);
    st.kernelCh.pTimer = (uint64_t)(gpu_now - 50000);
    ncclProfiler_v5.recordEventState(k1, INJ_NCCL_STATE_KERNEL_CH_STOP, &st);
    drain(ring);
    CHECK_EQ_INT(R.ncoll, 0);         /* channels still open */
    /* The API call is a CPU slice (no collective row: two ranks). */
    CHECK_EQ_INT(R.nslice, 1);
    CHECK(R.nslice == 1 && R.slice[0].cat == HM_CAT_COLLECTIVE_COMM && R.slice[0].tid == inj_tid() &&
          !strcmp(text_of(R.slice[0].name), "nccl:AllReduce"));
    ncclProfiler_v5.stopEvent(k0);
    ncclProfiler_v5.stopEvent(k1);

    /* A coll whose channels never report: emitted at finalize. */
    memset(&d, 0, sizeof d);
    d.type = INJ_NCCL_COLL;
    d.coll.seqNumber = 8;
    d.coll.func = "AllReduce";
    d.coll.datatype = "ncclFloat32";
    d.coll.nChannels = 1;
    ncclProfiler_v5.startEvent(ctx, &lone, &d);
    ncclProfiler_v5.stopEvent(lone);

    drain(ring);
    const struct hm_ring_nccl_coll *c = coll_seq("nccl:AllReduce", 7, 0xabc);
    CHECK(c != NULL);
    if (c) {
        CHECK_EQ_INT(c->count, 1024);
        CHECK_EQ_INT(c->nranks, 2);
        CHECK_EQ_INT(c->rank, 1);
        CHECK_EQ_INT(c->nchannels, 2);
        CHECK_STR(text_of(c->dtype), "ncclFloat32");
        CHECK_STR(text_of(c->algo), "RING");
        CHECK_STR(text_of(c->proto), "LL");
        /* GPU span = first channel start .. last channel stop. */
        CHECK_EQ_INT(c->dur, 900000 - 50000);
        /* Mapped to the (hooked) CPU clock: it ended about now. */
        CHECK(llabs(c->ts + c->dur - (real_now() + SKEW_NS)) < 200000000);
    }
    CHECK(coll_seq("nccl:AllReduce", 8, 0xabc) == NULL);

    CHECK_EQ_INT(ncclProfiler_v5.finalize(ctx), 0);
    drain(ring);
    c = coll_seq("nccl:AllReduce", 8, 0xabc);
    CHECK(c != NULL && c->dur >= 0);
}

static void test_nccl_one_rank(struct hm_ring *ring)
{
    void *ctx = NULL, *api = NULL;
    int mask = 0;
    inj_nccl_descr_v5 d;
    const char *funcs[] = {"AllReduce", "AllReduce", "Broadcast", "AllReduce"};

    CHECK_EQ_INT(ncclProfiler_v5.init(&ctx, 0x11ull, &mask, "solo", 1, 1, 0, NULL), 0);
    for (int i = 0; i < 4; i++) {
        memset(&d, 0, sizeof d);
        d.type = INJ_NCCL_COLL_API;
        d.collApi.func = funcs[i];
        d.collApi.count = 10 + i;
        d.collApi.datatype = "ncclBfloat16";
        ncclProfiler_v5.startEvent(ctx, &api, &d);
        ncclProfiler_v5.stopEvent(api);
    }
    drain(ring);
    CHECK_EQ_INT(R.ncoll, 4);
    CHECK(coll_seq("nccl:AllReduce", 0, 0x11) && coll_seq("nccl:AllReduce", 2, 0x11));
    CHECK(coll_seq("nccl:Broadcast", 0, 0x11) != NULL);
    const struct hm_ring_nccl_coll *c = coll_seq("nccl:AllReduce", 2, 0x11);
    CHECK(c && c->count == 13 && c->nranks == 1 && c->stream == HM_NONE);
    ncclProfiler_v5.finalize(ctx);
}

static void test_nccl_v4(struct hm_ring *ring)
{
    void *ctx = NULL, *h = NULL;
    int mask = 0;
    inj_nccl_descr_v4 d;

    CHECK_EQ_INT(ncclProfiler_v4.init(&ctx, &mask, "v4", 0x44ull, 1, 8, 3, NULL), 0);
    CHECK(mask & INJ_NCCL_COLL && !(mask & INJ_NCCL_COLL_API));
    memset(&d, 0, sizeof d);
    d.type = INJ_NCCL_COLL;
    d.coll.seqNumber = 41;
    d.coll.func = "AllGather";
    d.coll.count = 99;
    d.coll.datatype = "ncclInt8";
    d.coll.nChannels = 0;
    ncclProfiler_v4.startEvent(ctx, &h, &d);
    ncclProfiler_v4.stopEvent(h);
    drain(ring);
    const struct hm_ring_nccl_coll *c = coll_seq("nccl:AllGather", 41, 0x44);
    CHECK(c && c->count == 99 && c->nranks == 8 && c->rank == 3);
    ncclProfiler_v4.finalize(ctx);
    CHECK_EQ_INT(ncclProfiler_v4.startEvent(NULL, &h, &d), 0);
    CHECK(h == NULL);
}

/* A full ring drops and counts; the producer never waits. */
static void test_full(struct hm_ring *ring)
{
    struct hm_ring_stats st;
    int64_t t0 = real_now();

    for (int i = 0; i < 200000; i++)
        CORE(MarkA, void (*)(const char *))("flood");
    hm_ring_stats(ring, &st);
    CHECK(st.dropped_records > 0);
    CHECK(real_now() - t0 < 5000000000ll);
    drain(ring);
    CHECK(R.nnvtx > 0 && R.nnvtx < 200000);
}

int main(void)
{
    char name[64];
    struct hm_err err;
    struct hm_ring *ring;

    snprintf(name, sizeof name, "/hm-test-inject-%d", (int)getpid());
    setenv("HTAMERGE_RING", name, 1);
    setenv("HTAMERGE_CLOCK_SKEW_NS", "5000000000", 1);
    unsetenv("HTAMERGE_CAPTURE");
    hm_err_clear(&err);
    ring = hm_ring_create(name, 1 << 20, &err);
    CHECK(ring != NULL);
    if (!ring)
        return hm_test_done();
    CHECK_EQ_INT(InitializeInjection(), 1);   /* the CUPTI stub says "off" once */
    drain(ring);
    CHECK(R.ncounter == 1 && !strcmp(text_of(R.counter[0].name), "htamerge/cupti unavailable"));
    test_nvtx(ring);
    test_nccl_v5(ring);
    test_nccl_one_rank(ring);
    test_nccl_v4(ring);
    test_full(ring);
    /* Detach the library before the ring goes (its atexit hook then does nothing). */
    hm_ring_close(inj_get()->ring);
    inj_get()->ring = NULL;
    inj_get()->active = 0;
    hm_ring_close(ring);
    return hm_test_done();
}
