/* NVTX capture, implemented by htamerge itself (CUPTI 13.0's own NVTX
 * injection crashes in nvtxNameOsThreadA): InitializeInjectionNvtx2 fills
 * each NVTX client's core callback tables with the functions below. Push/pop
 * ranges are matched on a per-thread stack, start/end ranges in a shared
 * table (nvtx_stack.c); each completed range or mark becomes one
 * HM_RING_NVTX record on its thread. Names are interned string ids;
 * registered strings and domains are small heap handles holding an id.
 * Thread names, categories' names, resources and payloads are ignored. */
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "inject.h"
#include "inject_int.h"
#include "nvtx_abi.h"

struct nvtx_handle {            /* what a domain or registered-string handle points to */
    uint32_t id;                /* string id */
};

static struct inj *nvtx_live(void)
{
    struct inj *g = inj_get();
    return g->active ? g : NULL;
}

static uint32_t wide_id(struct inj *g, const wchar_t *w)
{
    char buf[1024];
    size_t n = inj_wide_to_utf8(w, buf, sizeof buf);
    return inj_str(g, buf, n);
}

static uint32_t domain_id(const void *domain)
{
    return domain ? ((const struct nvtx_handle *)domain)->id : 0;
}

/* Fills f from event attributes (f->ts and f->domain already set). */
static void frame_attr(struct inj *g, const inj_nvtx_attr *a, struct inj_nvtx_frame *f)
{
    f->name = f->category = f->color = 0;
    if (!a || a->size < offsetof(inj_nvtx_attr, message) + sizeof a->message)
        return;
    f->category = a->category;
    f->color = a->color_type == INJ_NVTX_COLOR_ARGB ? a->color : 0;
    switch (a->message_type) {
    case INJ_NVTX_MSG_ASCII: f->name = inj_cstr(g, a->message.ascii); break;
    case INJ_NVTX_MSG_UNICODE: f->name = wide_id(g, a->message.unicode); break;
    case INJ_NVTX_MSG_REGISTERED: f->name = domain_id(a->message.registered); break;
    default: break;
    }
}

static void frame_text(struct inj *g, const char *a, const wchar_t *w, struct inj_nvtx_frame *f)
{
    f->name = a ? inj_cstr(g, a) : wide_id(g, w);
    f->category = f->color = 0;
}

static void emit(struct inj *g, const struct inj_nvtx_frame *f, int64_t end, int64_t tid, uint32_t depth,
                 uint16_t flags)
{
    struct hm_ring_nvtx r = {.ts = f->ts, .dur = end > f->ts ? end - f->ts : 0, .tid = tid, .pid = g->pid,
                             .name = f->name, .domain = f->domain, .depth = (uint16_t)depth,
                             .flags = flags, .category = f->category, .color = f->color};
    inj_emit(g, HM_RING_NVTX, &r, sizeof r);
}

/* ---- marks ----------------------------------------------------------------- */

static void mark(struct inj *g, struct inj_nvtx_frame *f)
{
    struct inj_nvtx_stack *s = inj_nvtx_tls();
    emit(g, f, f->ts, inj_tid(), s->depth + s->hidden, HM_RING_NVTX_F_MARK);
}

static void domain_mark_ex(const void *domain, const inj_nvtx_attr *a)
{
    struct inj *g = nvtx_live();
    if (g) {
        struct inj_nvtx_frame f = {.ts = inj_now(g), .domain = domain_id(domain)};
        frame_attr(g, a, &f);
        mark(g, &f);
    }
}

static void mark_ex(const inj_nvtx_attr *a)
{
    domain_mark_ex(NULL, a);
}

static void mark_text(const char *a, const wchar_t *w)
{
    struct inj *g = nvtx_live();
    if (g) {
        struct inj_nvtx_frame f = {.ts = inj_now(g)};
        frame_text(g, a, w, &f);
        mark(g, &f);
    }
}

static void mark_a(const char *m) { mark_text(m, NULL); }
static void mark_w(const wchar_t *m) { mark_text(NULL, m); }

/* ---- push / pop ------------------------------------------------------------ */

static int push(struct inj_nvtx_frame *f)
{
    return inj_nvtx_push(inj_nvtx_tls(), f);
}

static int domain_push_ex(const void *domain, const inj_nvtx_attr *a)
{
    struct inj *g = nvtx_live();
    struct inj_nvtx_frame f;

    if (!g)
        return 0;
    f.ts = inj_now(g);
    f.domain = domain_id(domain);
    frame_attr(g, a, &f);
    return push(&f);
}

static int push_ex(const inj_nvtx_attr *a)
{
    return domain_push_ex(NULL, a);
}

static int push_text(const char *a, const wchar_t *w)
{
    struct inj *g = nvtx_live();
    struct inj_nvtx_frame f;

    if (!g)
        return 0;
    f.ts = inj_now(g);
    f.domain = 0;
    frame_text(g, a, w, &f);
    return push(&f);
}

static int push_a(const char *m) { return push_text(m, NULL); }
static int push_w(const wchar_t *m) { return push_text(NULL, m); }

static int domain_pop(const void *domain)
{
    struct inj *g = nvtx_live();
    struct inj_nvtx_stack *s = inj_nvtx_tls();
    struct inj_nvtx_frame f;
    uint32_t depth;
    int64_t end;

    if (!g)
        return -1;
    end = inj_now(g);
    if (s->hidden) {   /* a range pushed past the stored depth */
        inj_nvtx_pop(s, 0, 1, &f, &depth);
        return (int)(s->depth + s->hidden);
    }
    if (!inj_nvtx_pop(s, domain_id(domain), 0, &f, &depth)) {
        atomic_fetch_add_explicit(&g->nvtx.unmatched, 1, memory_order_relaxed);
        return -1;
    }
    emit(g, &f, end, inj_tid(), depth, 0);
    return (int)depth;
}

static int pop(void)
{
    return domain_pop(NULL);
}

/* ---- start / end ------------------------------------------------------------ */

static uint64_t domain_start_ex(const void *domain, const inj_nvtx_attr *a)
{
    struct inj *g = nvtx_live();
    struct inj_nvtx_frame f;

    if (!g)
        return 0;
    f.ts = inj_now(g);
    f.domain = domain_id(domain);
    frame_attr(g, a, &f);
    return inj_nvtx_start(&g->nvtx, &f, inj_tid());
}

static uint64_t start_ex(const inj_nvtx_attr *a)
{
    return domain_start_ex(NULL, a);
}

static uint64_t start_text(const char *a, const wchar_t *w)
{
    struct inj *g = nvtx_live();
    struct inj_nvtx_frame f;

    if (!g)
        return 0;
    f.ts = inj_now(g);
    f.domain = 0;
    frame_text(g, a, w, &f);
    return inj_nvtx_start(&g->nvtx, &f, inj_tid());
}

static uint64_t start_a(const char *m) { return start_text(m, NULL); }
static uint64_t start_w(const wchar_t *m) { return start_text(NULL, m); }

static void domain_end(const void *domain, uint64_t id)
{
    struct inj *g = nvtx_live();
    struct inj_nvtx_frame f;
    int64_t tid, end;

    (void)domain;
    if (!g)
        return;
    end = inj_now(g);
    if (inj_nvtx_end(&g->nvtx, id, &f, &tid))
        emit(g, &f, end, tid, 0, 0);
    else
        atomic_fetch_add_explicit(&g->nvtx.unmatched, 1, memory_order_relaxed);
}

static void end_(uint64_t id)
{
    domain_end(NULL, id);
}

/* ---- domains and registered strings ------------------------------------------ */

static void *handle(uint32_t id)
{
    struct nvtx_handle *h = malloc(sizeof *h);   /* lives as long as the process */
    if (h)
        h->id = id;
    return h;
}

static void *domain_create_a(const char *name)
{
    struct inj *g = nvtx_live();
    return handle(g ? inj_cstr(g, name) : 0);
}

static void *domain_create_w(const wchar_t *name)
{
    struct inj *g = nvtx_live();
    return handle(g ? wide_id(g, name) : 0);
}

static void *register_string_a(const void *domain, const char *s)
{
    (void)domain;
    return domain_create_a(s);
}

static void *register_string_w(const void *domain, const wchar_t *s)
{
    (void)domain;
    return domain_create_w(s);
}

/* ---- injection entry point ---------------------------------------------------- */

struct slot {
    int cbid;
    inj_nvtx_fn fn;
};

#define FN(f) ((inj_nvtx_fn)(void (*)(void))(f))

static void fill(const struct inj_nvtx_etbl_callbacks *cb, int module, const struct slot *s, int n)
{
    inj_nvtx_fn **table = NULL;
    unsigned int size = 0;

    if (!cb->get_module_function_table(module, &table, &size) || !table)
        return;
    for (int i = 0; i < n; i++)
        if ((unsigned)s[i].cbid < size && table[s[i].cbid])
            *table[s[i].cbid] = s[i].fn;
}

int InitializeInjectionNvtx2(const void *(*get_export_table)(unsigned int id))
{
    static const struct slot core[] = {
        {INJ_NVTX_CORE_MarkEx, FN(mark_ex)},         {INJ_NVTX_CORE_MarkA, FN(mark_a)},
        {INJ_NVTX_CORE_MarkW, FN(mark_w)},           {INJ_NVTX_CORE_RangeStartEx, FN(start_ex)},
        {INJ_NVTX_CORE_RangeStartA, FN(start_a)},    {INJ_NVTX_CORE_RangeStartW, FN(start_w)},
        {INJ_NVTX_CORE_RangeEnd, FN(end_)},          {INJ_NVTX_CORE_RangePushEx, FN(push_ex)},
        {INJ_NVTX_CORE_RangePushA, FN(push_a)},      {INJ_NVTX_CORE_RangePushW, FN(push_w)},
        {INJ_NVTX_CORE_RangePop, FN(pop)},
    };
    static const struct slot core2[] = {
        {INJ_NVTX_CORE2_DomainMarkEx, FN(domain_mark_ex)},
        {INJ_NVTX_CORE2_DomainRangeStartEx, FN(domain_start_ex)},
        {INJ_NVTX_CORE2_DomainRangeEnd, FN(domain_end)},
        {INJ_NVTX_CORE2_DomainRangePushEx, FN(domain_push_ex)},
        {INJ_NVTX_CORE2_DomainRangePop, FN(domain_pop)},
        {INJ_NVTX_CORE2_DomainRegisterStringA, FN(register_string_a)},
        {INJ_NVTX_CORE2_DomainRegisterStringW, FN(register_string_w)},
        {INJ_NVTX_CORE2_DomainCreateA, FN(domain_create_a)},
        {INJ_NVTX_CORE2_DomainCreateW, FN(domain_create_w)},
    };
    struct inj *g = inj_get();
    const struct inj_nvtx_etbl_callbacks *cb;
    const struct inj_nvtx_etbl_version *ver;

    if (!g->active || !(g->capture & INJ_CAP_NVTX) || !get_export_table)
        return 0;   /* NVTX turns its calls into no-ops */
    cb = get_export_table(INJ_NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < sizeof *cb || !cb->get_module_function_table)
        return 0;
    ver = get_export_table(INJ_NVTX_ETID_VERSIONINFO);
    if (ver && ver->struct_size >= sizeof *ver && ver->set_injection_nvtx_version)
        ver->set_injection_nvtx_version(2);
    fill(cb, INJ_NVTX_MODULE_CORE, core, (int)(sizeof core / sizeof core[0]));
    fill(cb, INJ_NVTX_MODULE_CORE2, core2, (int)(sizeof core2 / sizeof core2[0]));
    return 1;
}
