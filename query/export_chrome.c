/* Chrome trace-event JSON export of a merged database (`htamerge export`).
 * It reads the database and writes JSON; it never changes the database and
 * computes no analysis. Its neighbours: store/ (the writer) made the tables,
 * cli/cmd_export.c owns the output file.
 *
 * What the file holds:
 *   - one process (pid) per rank's host ("rank R · HOST · CPU") and one per
 *     rank's GPU device ("rank R · GPU D"), named and ordered by M events;
 *     one thread (tid) per track, named by the track's name ("stream 7");
 *   - every slice of the chosen ranks as an X event; ts and dur are the
 *     aligned ns written as exact microsecond decimals (three digits after
 *     the point, formatted from integers), relative to origin_ns (the
 *     file's first time, floored to a whole us, in otherData) so that a
 *     double still holds every ns;
 *   - counters (memory) as C events on the rank's CPU or GPU process;
 *   - flows: "launch" from a CPU launch slice to the kernel/memcpy/memset
 *     with its correlation id, and "collective" chaining one matched
 *     collective instance through every exported rank in entry order
 *     (s, t..., f). Flow events are written after all slices and sit at the
 *     start of their slice; the finish binds with "bp":"e". Ids are unique.
 *
 * Partial overlaps: a viewer needs the X events of one tid to nest. The
 * source can break that (two GPU annotations that cross, clock error
 * between files of one thread). Slices are read per track in (ts, longer
 * first) order and each goes on the first lane where it nests; lane 0 is the
 * track's tid, a further lane is a tid of its own named "... · overlap N".
 * No slice is cut or dropped; the ids of moved slices are kept in a small
 * table (one entry per moved slice) so flows find their tid. */
#include "export.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/vec.h"
#include "store/columns.h"
#include "export_ends.h"
#include "export_json.h"
#include "hm_sql.h"

/* ---- the columns of the export's queries (sql/queries/export_*.sql) ---- */

#define RANK_COLUMNS(X) X(RK_RANK, "rank") X(RK_HOST, "host")
#define TRACK_COLUMNS(X) \
    X(TK_ID, "id") X(TK_RANK, "rank") X(TK_KIND, "kind") X(TK_PID, "pid") X(TK_TID, "tid") X(TK_NAME, "name")
#define DEVICE_COLUMNS(X) X(DV_RANK, "rank") X(DV_DEVICE, "device")
#define STEP_COLUMNS(X) X(SP_RANK, "rank") X(SP_NUMBER, "number") X(SP_TS, "ts") X(SP_DUR, "dur")
#define ORIGIN_COLUMNS(X) X(OR_ORIGIN, "origin")
#define SLICE_COLUMNS(X)                                                                               \
    X(SL_ID, "id") X(SL_TS, "ts") X(SL_DUR, "dur") X(SL_NAME, "name") X(SL_CAT, "cat")                 \
    X(SL_CAT_NAME, "cat_name") X(SL_DEPTH, "depth") X(SL_CORRELATION, "correlation")                   \
    X(SL_EXTERNAL_ID, "external_id") X(SL_BYTES, "bytes") X(SL_ITERATION, "iteration") X(SL_ARGS, "args")
#define COUNTER_COLUMNS(X) \
    X(CN_RANK, "rank") X(CN_DEVICE, "device") X(CN_NAME, "name") X(CN_TS, "ts") X(CN_VALUE, "value")
/* Launch flows and collective members hold flow ends: four columns each,
 * slice id, ts, dur, track, read by flow_end_get from the first. */
#define LAUNCH_COLUMNS(X)                                                                              \
    X(LF_GPU_ID, "gpu_id") X(LF_GPU_TS, "gpu_ts") X(LF_GPU_DUR, "gpu_dur") X(LF_GPU_TRACK, "gpu_track") \
    X(LF_CPU_ID, "cpu_id") X(LF_CPU_TS, "cpu_ts") X(LF_CPU_DUR, "cpu_dur") X(LF_CPU_TRACK, "cpu_track") \
    X(LF_CORRELATION, "correlation")
#define MEMBER_COLUMNS(X)                                                                              \
    X(CM_INSTANCE, "instance") X(CM_OP, "op") X(CM_PG, "pg") X(CM_SEQ, "seq") X(CM_RANK, "rank")       \
    X(CM_SLICE, "slice") X(CM_TS, "ts") X(CM_DUR, "dur") X(CM_TRACK, "track")
/* A sharded export: a shard's collectives' slices, the index's members. */
#define END_COLUMNS(X) \
    X(CE_RANK, "rank") X(CE_ORD, "ord") X(CE_SLICE, "slice") X(CE_TS, "ts") X(CE_DUR, "dur") X(CE_TRACK, "track")
#define INDEX_MEMBER_COLUMNS(X) X(IM_INSTANCE, "instance") X(IM_OP, "op") X(IM_RANK, "rank") X(IM_ORD, "ord")

enum { RANK_COLUMNS(HM_COLUMN_ENUM) RK__COUNT };
enum { TRACK_COLUMNS(HM_COLUMN_ENUM) TK__COUNT };
enum { DEVICE_COLUMNS(HM_COLUMN_ENUM) DV__COUNT };
enum { STEP_COLUMNS(HM_COLUMN_ENUM) SP__COUNT };
enum { ORIGIN_COLUMNS(HM_COLUMN_ENUM) OR__COUNT };
enum { SLICE_COLUMNS(HM_COLUMN_ENUM) SL__COUNT };
enum { COUNTER_COLUMNS(HM_COLUMN_ENUM) CN__COUNT };
enum { LAUNCH_COLUMNS(HM_COLUMN_ENUM) LF__COUNT };
enum { MEMBER_COLUMNS(HM_COLUMN_ENUM) CM__COUNT };
enum { END_COLUMNS(HM_COLUMN_ENUM) CE__COUNT };
enum { INDEX_MEMBER_COLUMNS(HM_COLUMN_ENUM) IM__COUNT };
static const char *const rank_names[] = {RANK_COLUMNS(HM_COLUMN_NAME)};
static const char *const track_names[] = {TRACK_COLUMNS(HM_COLUMN_NAME)};
static const char *const device_names[] = {DEVICE_COLUMNS(HM_COLUMN_NAME)};
static const char *const step_names[] = {STEP_COLUMNS(HM_COLUMN_NAME)};
static const char *const origin_names[] = {ORIGIN_COLUMNS(HM_COLUMN_NAME)};
static const char *const slice_names[] = {SLICE_COLUMNS(HM_COLUMN_NAME)};
static const char *const counter_names[] = {COUNTER_COLUMNS(HM_COLUMN_NAME)};
static const char *const launch_names[] = {LAUNCH_COLUMNS(HM_COLUMN_NAME)};
static const char *const member_names[] = {MEMBER_COLUMNS(HM_COLUMN_NAME)};
static const char *const end_names[] = {END_COLUMNS(HM_COLUMN_NAME)};
static const char *const index_member_names[] = {INDEX_MEMBER_COLUMNS(HM_COLUMN_NAME)};

/* ---- the export's state ---- */

/* A pid: one rank's host, or one of its GPU devices. */
struct xproc {
    int rank;
    bool gpu;
    int64_t device;   /* GPU device index; -1 for the host */
    bool wanted;      /* its rank is exported */
};

/* One nesting lane of a track: the ends of the open slices, innermost last. */
struct lane {
    int64_t *ends;    /* owned */
    int n;
    size_t cap;
    int64_t tid;
};

struct xtrack {
    int64_t id;
    int rank;
    bool gpu;
    int64_t device, ident;  /* device and stream id, or host pid and thread id */
    char *name;             /* owned: thread or stream name */
    int proc;               /* index into procs */
    int64_t tid;            /* tid of lane 0: id + number of processes (see build_procs) */
    bool wanted;
    struct lane *lanes;     /* owned; filled while the track's slices are written */
    int nlanes;
    size_t lanes_cap;
};

/* Slices put on an overlap lane: slice id -> tid (open addressing). */
struct moved {
    int64_t *key, *tid;     /* owned */
    unsigned char *used;    /* owned */
    size_t cap, n;
};

struct window {
    int64_t start, end;     /* [start, end) aligned ns */
};

struct rank_host {
    int rank;
    char *host;             /* owned; NULL if unknown */
};

struct xctx {
    sqlite3 *db;                        /* borrowed */
    const struct qry_export_opts *o;    /* borrowed */
    FILE *f;                            /* borrowed */
    struct hm_err *err;                 /* borrowed */
    const char *path;                   /* borrowed from sqlite: for messages */
    struct rank_host *hosts;            /* owned */
    int nhosts;
    struct xproc *procs;                /* owned, sorted by (rank, gpu, device); pid = index + 1 */
    int nprocs;
    size_t procs_cap;
    struct xtrack *tracks;              /* owned, in export order */
    int ntracks;
    int *by_id;                         /* owned: track indexes sorted by track id */
    struct window *win;                 /* owned; NULL = no --steps */
    int nwin;
    int64_t origin, next_tid, next_flow;
    struct moved moved;
    struct qry_buf ev, dec;            /* owned: the event being built; decoded strings */
    bool first;
    struct qry_export_stats st;
};

static int sql_fail(struct xctx *x, const char *what)
{
    return hm_err_set(x->err, HM_ESQL, x->path, -1, "export: %s: %s", what, sqlite3_errmsg(x->db));
}

/* A sharded export's index (export.h, qry_export_part) failed. */
static int index_fail(struct xctx *x, const char *what)
{
    sqlite3 *db = x->o->part->index;
    return hm_err_set(x->err, HM_ESQL, sqlite3_db_filename(db, "main"), -1, "export: %s: %s", what,
                      sqlite3_errmsg(db));
}

static int oom(struct xctx *x) { return hm_err_set(x->err, HM_ENOMEM, NULL, -1, "export: out of memory"); }

static bool in_list(const int *ranks, int n, int rank)
{
    if (!ranks)
        return true;
    for (int i = 0; i < n; i++)
        if (ranks[i] == rank)
            return true;
    return false;
}

static bool rank_wanted(const struct qry_export_opts *o, int rank)
{
    return in_list(o->ranks, o->nranks, rank);
}

/* Whether rank is in the document: a part of a sharded export exports
 * some of its ranks, whose --steps windows span them all. */
static bool doc_rank(const struct xctx *x, int rank)
{
    const struct qry_export_part *p = x->o->part;
    return p && p->index ? in_list(p->ranks_all, p->nranks_all, rank) : rank_wanted(x->o, rank);
}

/* Whether [ts, ts + dur) overlaps a --steps window; a zero-length slice
 * counts when it lies in [start, end). */
static bool in_windows(const struct xctx *x, int64_t ts, int64_t dur)
{
    int64_t end = ts + dur;
    if (!x->win)
        return true;
    for (int i = 0; i < x->nwin; i++)
        if (ts < x->win[i].end && (end > x->win[i].start || (dur == 0 && ts >= x->win[i].start)))
            return true;
    return false;
}

static char *dup_text(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? strdup((const char *)t) : NULL;
}

/* ---- moved slices ---- */

static size_t mv_slot(const struct moved *m, int64_t key)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h ^ (h >> 29)) & (m->cap - 1);
    while (m->used[i] && m->key[i] != key)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int mv_put(struct moved *m, int64_t key, int64_t tid)
{
    size_t i;
    if ((m->n + 1) * 2 > m->cap) {
        struct moved g = {NULL, NULL, NULL, m->cap ? m->cap * 2 : 64, 0};
        g.key = malloc(g.cap * sizeof *g.key);
        g.tid = malloc(g.cap * sizeof *g.tid);
        g.used = calloc(g.cap, 1);
        if (!g.key || !g.tid || !g.used) {
            free(g.key);
            free(g.tid);
            free(g.used);
            return HM_ENOMEM;
        }
        for (size_t j = 0; j < m->cap; j++)
            if (m->used[j])
                mv_put(&g, m->key[j], m->tid[j]);   /* g has room: no recursion past this */
        free(m->key);
        free(m->tid);
        free(m->used);
        *m = g;
    }
    i = mv_slot(m, key);
    m->n += !m->used[i];
    m->used[i] = 1;
    m->key[i] = key;
    m->tid[i] = tid;
    return 0;
}

/* The tid a slice of track t was written on. */
static int64_t slice_tid(const struct xctx *x, const struct xtrack *t, int64_t slice)
{
    size_t i;
    if (x->moved.n == 0)
        return t->tid;
    i = mv_slot(&x->moved, slice);
    return x->moved.used[i] ? x->moved.tid[i] : t->tid;
}

/* The pid of process i (index into procs) in the document. */
static int64_t pid_of(const struct xctx *x, int i)
{
    return i + 1 + (x->o->part ? x->o->part->pid_base : 0);
}

/* ---- events ---- */

static void ev_start(struct xctx *x)
{
    x->ev.n = 0;
    qry_buf_puts(&x->ev, x->first ? "\n{" : ",\n{");
    x->first = false;
}

static int ev_flush(struct xctx *x)
{
    if (x->ev.oom)
        return oom(x);
    if (fwrite(x->ev.p, 1, x->ev.n, x->f) != x->ev.n || ferror(x->f))
        return hm_err_set(x->err, HM_EIO, NULL, -1, "write failed: %s", strerror(errno));
    return 0;
}

/* Writes one M event named what (process_name, thread_sort_index, ...);
 * tid < 0 for a process-level one. text != NULL gives args.name, else num
 * gives args.sort_index. */
static int write_meta(struct xctx *x, int64_t pid, int64_t tid, const char *what, const char *text,
                      int64_t num)
{
    ev_start(x);
    qry_buf_puts(&x->ev, "\"ph\":\"M\",\"pid\":");
    qry_json_i64(&x->ev, pid);
    if (tid >= 0) {
        qry_buf_puts(&x->ev, ",\"tid\":");
        qry_json_i64(&x->ev, tid);
    }
    qry_buf_puts(&x->ev, ",\"name\":\"");
    qry_buf_puts(&x->ev, what);
    if (text) {
        qry_buf_puts(&x->ev, "\",\"args\":{\"name\":");
        qry_json_cstr(&x->ev, text);
    } else {
        qry_buf_puts(&x->ev, "\",\"args\":{\"sort_index\":");
        qry_json_i64(&x->ev, num);
    }
    qry_buf_puts(&x->ev, "}}");
    return ev_flush(x);
}

static void put_ts(struct xctx *x, int64_t ns)
{
    qry_json_us(&x->ev, (int64_t)((uint64_t)ns - (uint64_t)x->origin));
}

/* ---- what the file has: ranks, processes, tracks, step windows ---- */

static int load_hosts(struct xctx *x)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc;

    if (sqlite3_prepare_v2(x->db, hm_sql_export_ranks, -1, &st, NULL) != SQLITE_OK)
        return sql_fail(x, "reading ranks");
    HM_COLUMNS_CHECK(st, rank_names);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (hm_vec_reserve((void **)&x->hosts, &cap, (size_t)x->nhosts + 1, sizeof *x->hosts) != 0)
            break;
        x->hosts[x->nhosts].rank = sqlite3_column_int(st, RK_RANK);
        x->hosts[x->nhosts++].host = dup_text(st, RK_HOST);
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW)
        return oom(x);
    return rc == SQLITE_DONE ? 0 : sql_fail(x, "reading ranks");
}

static int proc_cmp(const void *a, const void *b)
{
    const struct xproc *p = a, *q = b;
    if (p->rank != q->rank)
        return p->rank < q->rank ? -1 : 1;
    if (p->gpu != q->gpu)
        return p->gpu ? 1 : -1;
    return p->device < q->device ? -1 : p->device > q->device;
}

/* Index of the process (rank, gpu, device); adds it when add is set.
 * -1 when absent (or out of memory while adding). */
static int proc_find(struct xctx *x, int rank, bool gpu, int64_t device, bool add)
{
    struct xproc key = {rank, gpu, gpu ? device : -1, false};
    for (int i = 0; i < x->nprocs; i++)
        if (!proc_cmp(&x->procs[i], &key))
            return i;
    if (!add || hm_vec_reserve((void **)&x->procs, &x->procs_cap, (size_t)x->nprocs + 1, sizeof *x->procs) != 0)
        return -1;
    key.wanted = rank_wanted(x->o, rank);
    x->procs[x->nprocs] = key;
    return x->nprocs++;
}

static int add_track(struct xctx *x, sqlite3_stmt *st, size_t *cap)
{
    struct xtrack *t;
    if (hm_vec_reserve((void **)&x->tracks, cap, (size_t)x->ntracks + 1, sizeof *x->tracks) != 0)
        return HM_ENOMEM;
    t = &x->tracks[x->ntracks];
    memset(t, 0, sizeof *t);
    t->id = sqlite3_column_int64(st, TK_ID);
    t->rank = sqlite3_column_int(st, TK_RANK);
    t->gpu = sqlite3_column_text(st, TK_KIND) && !strcmp((const char *)sqlite3_column_text(st, TK_KIND), "gpu_stream");
    t->device = sqlite3_column_int64(st, TK_PID);
    t->ident = sqlite3_column_int64(st, TK_TID);
    t->wanted = rank_wanted(x->o, t->rank);
    if (sqlite3_column_type(st, TK_NAME) != SQLITE_NULL)
        t->name = dup_text(st, TK_NAME);
    else if (asprintf(&t->name, "%s %" PRId64, t->gpu ? "stream" : "thread", t->ident) < 0)
        t->name = NULL;
    if (!t->name)
        return HM_ENOMEM;
    x->ntracks++;
    return 0;
}

static int by_id_cmp(const void *a, const void *b, void *arg)
{
    const struct xtrack *t = arg;
    int64_t p = t[*(const int *)a].id, q = t[*(const int *)b].id;
    return p < q ? -1 : p > q;
}

static int load_tracks(struct xctx *x)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc;

    if (sqlite3_prepare_v2(x->db, hm_sql_export_tracks, -1, &st, NULL) != SQLITE_OK)
        return sql_fail(x, "reading tracks");
    HM_COLUMNS_CHECK(st, track_names);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (add_track(x, st, &cap) != 0)
            break;
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW)
        return oom(x);
    if (rc != SQLITE_DONE)
        return sql_fail(x, "reading tracks");
    if (!(x->by_id = malloc((size_t)(x->ntracks + 1) * sizeof *x->by_id)))
        return oom(x);
    for (int i = 0; i < x->ntracks; i++)
        x->by_id[i] = i;
    qsort_r(x->by_id, (size_t)x->ntracks, sizeof *x->by_id, by_id_cmp, x->tracks);
    return 0;
}

static int proc_lookup(const struct xctx *x, int rank, bool gpu, int64_t device)
{
    struct xproc key = {rank, gpu, gpu ? device : -1, false};
    const struct xproc *p = bsearch(&key, x->procs, (size_t)x->nprocs, sizeof key, proc_cmp);
    return p ? (int)(p - x->procs) : -1;
}

/* Every rank gets a host process, every GPU device with a stream or a
 * counter a process of its own; pids follow (rank, host first, device).
 * Tids come after the pids: Perfetto keeps one tid space for all
 * processes and files an event without a tid (a counter) under tid = pid,
 * so a tid equal to another process's pid would split that thread. */
static int build_procs(struct xctx *x)
{
    sqlite3_stmt *st = NULL;
    int rc;

    for (int i = 0; i < x->nhosts; i++)
        if (proc_find(x, x->hosts[i].rank, false, -1, true) < 0)
            return oom(x);
    for (int i = 0; i < x->ntracks; i++)
        if (proc_find(x, x->tracks[i].rank, false, -1, true) < 0 ||
            proc_find(x, x->tracks[i].rank, x->tracks[i].gpu, x->tracks[i].device, true) < 0)
            return oom(x);
    if (sqlite3_prepare_v2(x->db, hm_sql_export_counter_devices, -1, &st, NULL) != SQLITE_OK)
        return sql_fail(x, "reading counter devices");
    HM_COLUMNS_CHECK(st, device_names);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (proc_find(x, sqlite3_column_int(st, DV_RANK), false, -1, true) < 0 ||
            (sqlite3_column_int64(st, DV_DEVICE) >= 0 &&
             proc_find(x, sqlite3_column_int(st, DV_RANK), true, sqlite3_column_int64(st, DV_DEVICE), true) < 0))
            break;
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW)
        return oom(x);
    if (rc != SQLITE_DONE)
        return sql_fail(x, "reading counter devices");
    qsort(x->procs, (size_t)x->nprocs, sizeof *x->procs, proc_cmp);
    int64_t base = x->o->part ? x->o->part->tid_base : 0;
    x->next_tid = x->nprocs + 1 + base;
    for (int i = 0; i < x->ntracks; i++) {
        struct xtrack *t = &x->tracks[i];
        t->proc = proc_lookup(x, t->rank, t->gpu, t->device);
        t->tid = t->id + x->nprocs + base;
        if (t->tid >= x->next_tid)
            x->next_tid = t->tid + 1;
    }
    return 0;
}

/* Refuses a --ranks entry the file does not have. */
static int check_ranks(struct xctx *x)
{
    for (int i = 0; x->o->ranks && i < x->o->nranks; i++) {
        if (proc_lookup(x, x->o->ranks[i], false, -1) >= 0)
            continue;
        if (x->nprocs == 0)
            return hm_err_set(x->err, HM_EINVAL, x->path, -1, "rank %d: the file has no ranks",
                              x->o->ranks[i]);
        return hm_err_set(x->err, HM_EINVAL, x->path, -1, "rank %d is not in the file (it has ranks %d to %d)",
                          x->o->ranks[i], x->procs[0].rank, x->procs[x->nprocs - 1].rank);
    }
    return 0;
}

/* One step's window: from the earliest start to the latest end of
 * ProfilerStep#number over the exported ranks. False if none has it;
 * [*lo, *hi] is then the range of step numbers they have (lo > hi: none). */
static bool step_window(struct xctx *x, sqlite3_stmt *st, int64_t number, struct window *w, int64_t *lo,
                        int64_t *hi)
{
    bool found = false;
    *lo = INT64_MAX, *hi = INT64_MIN;
    sqlite3_reset(st);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t n = sqlite3_column_int64(st, SP_NUMBER), ts = sqlite3_column_int64(st, SP_TS);
        int64_t end = ts + sqlite3_column_int64(st, SP_DUR);
        if (!doc_rank(x, sqlite3_column_int(st, SP_RANK)))
            continue;
        *lo = n < *lo ? n : *lo, *hi = n > *hi ? n : *hi;
        if (n != number)
            continue;
        if (!found || ts < w->start)
            w->start = ts;
        if (!found || end > w->end)
            w->end = end;
        found = true;
    }
    return found;
}

static int load_windows(struct xctx *x)
{
    sqlite3_stmt *st = NULL;
    int64_t lo, hi;
    int rc = 0;

    if (!x->o->steps)
        return 0;
    if (!(x->win = calloc((size_t)x->o->nsteps + 1, sizeof *x->win)))
        return oom(x);
    /* a sharded export's windows: the index's steps of every exported rank */
    if (sqlite3_prepare_v2(x->o->part && x->o->part->index ? x->o->part->index : x->db, hm_sql_export_steps, -1, &st,
                           NULL) != SQLITE_OK)
        return x->o->part && x->o->part->index ? index_fail(x, "reading steps") : sql_fail(x, "reading steps");
    HM_COLUMNS_CHECK(st, step_names);
    for (int i = 0; i < x->o->nsteps && rc == 0; i++) {
        if (step_window(x, st, x->o->steps[i], &x->win[x->nwin], &lo, &hi))
            x->nwin++;
        else if (lo > hi)
            rc = hm_err_set(x->err, HM_EINVAL, x->path, -1, "--steps: the file has no ProfilerSteps%s",
                            x->o->ranks ? " on the chosen ranks" : "");
        else
            rc = hm_err_set(x->err, HM_EINVAL, x->path, -1,
                            "ProfilerStep %" PRId64 " is not in the file (it has steps %" PRId64 " to %" PRId64
                            "%s)", x->o->steps[i], lo, hi, x->o->ranks ? " on the chosen ranks" : "");
    }
    sqlite3_finalize(st);
    return rc;
}

int qry_export_origin(sqlite3 *db, int64_t *origin_ns, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int64_t o = 0;

    if (sqlite3_prepare_v2(db, hm_sql_export_origin, -1, &st, NULL) != SQLITE_OK)
        return hm_err_set(err, HM_ESQL, sqlite3_db_filename(db, "main"), -1, "export: reading the first time: %s",
                          sqlite3_errmsg(db));
    HM_COLUMNS_CHECK(st, origin_names);
    if (sqlite3_step(st) == SQLITE_ROW)
        o = sqlite3_column_int64(st, OR_ORIGIN);
    sqlite3_finalize(st);
    *origin_ns = o - ((o % 1000) + 1000) % 1000;
    return 0;
}

/* ts 0 of the export: the first time in the file, floored to a whole us so
 * that the digits after the point are those of the aligned time (or the
 * parts' shared one). */
static int load_origin(struct xctx *x)
{
    if (x->o->absolute)
        return 0;
    if (x->o->part) {
        x->origin = x->o->part->origin_ns;
        return 0;
    }
    return qry_export_origin(x->db, &x->origin, x->err);
}

/* ---- metadata: process and thread names and order ---- */

static int write_process_meta(struct xctx *x, int i)
{
    const struct xproc *p = &x->procs[i];
    const char *host = NULL;
    char name[600];
    int rc;

    for (int h = 0; h < x->nhosts; h++)
        if (x->hosts[h].rank == p->rank)
            host = x->hosts[h].host;
    if (p->gpu)
        snprintf(name, sizeof name, "rank %d \xc2\xb7 GPU %" PRId64, p->rank, p->device);
    else
        snprintf(name, sizeof name, "rank %d \xc2\xb7 %s \xc2\xb7 CPU", p->rank, host && *host ? host : "host");
    rc = write_meta(x, pid_of(x, i), -1, "process_name", name, 0);
    if (rc == 0)
        rc = write_meta(x, pid_of(x, i), -1, "process_sort_index", NULL, pid_of(x, i) - 1);
    x->st.processes++;
    return rc;
}

/* Names tid of track i; lane > 0 is one of its overlap lanes. */
static int write_thread_meta(struct xctx *x, int i, int lane, int64_t tid)
{
    const struct xtrack *t = &x->tracks[i];
    char *name = NULL;
    int rc;

    if (lane > 0 && asprintf(&name, "%s \xc2\xb7 overlap %d", t->name, lane) < 0)
        return oom(x);
    rc = write_meta(x, pid_of(x, t->proc), tid, "thread_name", name ? name : t->name, 0);
    free(name);
    if (rc == 0)
        rc = write_meta(x, pid_of(x, t->proc), tid, "thread_sort_index", NULL,
                        (int64_t)i * 1024 + (lane < 1023 ? lane : 1023));
    x->st.threads++;
    return rc;
}

static int write_metadata(struct xctx *x)
{
    int rc = 0;
    for (int i = 0; i < x->nprocs && rc == 0; i++)
        if (x->procs[i].wanted)
            rc = write_process_meta(x, i);
    for (int i = 0; i < x->ntracks && rc == 0; i++)
        if (x->tracks[i].wanted)
            rc = write_thread_meta(x, i, 0, x->tracks[i].tid);
    return rc;
}

/* ---- slices ---- */

/* Whether [ts, end) nests on lane l (slices come in (ts, longer first)
 * order, so every open slice started at or before ts); pops the slices
 * that ended by ts. */
static bool lane_fits(struct lane *l, int64_t ts, int64_t end)
{
    while (l->n > 0) {
        int64_t top = l->ends[l->n - 1];
        if (end <= top)
            return true;
        if (top > ts)
            return false;   /* starts inside the open slice, ends after it */
        l->n--;
    }
    return true;
}

/* Puts [ts, end) on the first lane of t where it nests, opening a lane
 * (and naming its tid) when none fits; returns the lane or a negative code. */
static int lane_place(struct xctx *x, int ti, int64_t ts, int64_t end)
{
    struct xtrack *t = &x->tracks[ti];
    struct lane *l;
    int i;

    for (i = 0; i < t->nlanes && !lane_fits(&t->lanes[i], ts, end); i++)
        ;
    if (i == t->nlanes) {
        struct lane *n;
        if (hm_vec_reserve((void **)&t->lanes, &t->lanes_cap, (size_t)i + 1, sizeof *t->lanes) != 0)
            return oom(x);
        n = t->lanes;
        memset(&n[i], 0, sizeof n[i]);
        n[i].tid = i == 0 ? t->tid : x->next_tid++;
        t->nlanes++;
        if (i > 0 && write_thread_meta(x, ti, i, n[i].tid) != 0)
            return x->err->code;
    }
    l = &t->lanes[i];
    if (hm_vec_reserve((void **)&l->ends, &l->cap, (size_t)l->n + 1, sizeof *l->ends) != 0)
        return oom(x);
    l->ends[l->n++] = end;
    return i;
}

/* Appends "key":value when the column is not NULL and notes the key. */
static void arg_i64(struct qry_buf *b, const char *key, sqlite3_stmt *st, int col, const char **written, int *n)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return;
    qry_buf_puts(b, ",\"");
    qry_buf_puts(b, key);
    qry_buf_puts(b, "\":");
    qry_json_i64(b, sqlite3_column_int64(st, col));
    written[(*n)++] = key;
}

/* The args object of a slice row: the columns, then the stored args. */
static void slice_args(struct xctx *x, const struct xtrack *t, sqlite3_stmt *st, int lane)
{
    const char *stored = (const char *)sqlite3_column_text(st, SL_ARGS);
    const char *written[12] = {"slice_id", "rank"};
    int n = 2;
    size_t keep;

    qry_buf_puts(&x->ev, ",\"args\":{\"slice_id\":");
    qry_json_i64(&x->ev, sqlite3_column_int64(st, SL_ID));
    qry_buf_puts(&x->ev, ",\"rank\":");
    qry_json_i64(&x->ev, t->rank);
    if (t->gpu) {
        qry_buf_puts(&x->ev, ",\"stream\":");
        qry_json_i64(&x->ev, t->ident);
        written[n++] = "stream";
    }
    arg_i64(&x->ev, "depth", st, SL_DEPTH, written, &n);
    arg_i64(&x->ev, "correlation", st, SL_CORRELATION, written, &n);
    arg_i64(&x->ev, "external_id", st, SL_EXTERNAL_ID, written, &n);
    arg_i64(&x->ev, "bytes", st, SL_BYTES, written, &n);
    arg_i64(&x->ev, "step", st, SL_ITERATION, written, &n);
    if (lane > 0) {
        qry_buf_puts(&x->ev, ",\"overlap_lane\":");
        qry_json_i64(&x->ev, lane);
        written[n++] = "overlap_lane";
    }
    keep = x->ev.n;
    if (stored && !qry_json_copy_members(stored, (size_t)sqlite3_column_bytes(st, SL_ARGS), written, &x->ev, &x->dec)) {
        x->ev.n = keep;   /* not a JSON object: keep it as text */
        qry_buf_puts(&x->ev, ",\"args_text\":");
        qry_json_str(&x->ev, stored, (size_t)sqlite3_column_bytes(st, SL_ARGS));
    }
    qry_buf_puts(&x->ev, "}");
}

/* Category text: the categories name, or the original text of "other". */
static void slice_cat(struct xctx *x, sqlite3_stmt *st)
{
    const char *cat = (const char *)sqlite3_column_text(st, SL_CAT);
    if (sqlite3_column_type(st, SL_CAT_NAME) != SQLITE_NULL && (!cat || !strcmp(cat, "other")))
        qry_json_str(&x->ev, (const char *)sqlite3_column_text(st, SL_CAT_NAME),
                     (size_t)sqlite3_column_bytes(st, SL_CAT_NAME));
    else
        qry_json_cstr(&x->ev, cat ? cat : "other");
}

static int write_slice(struct xctx *x, int ti, sqlite3_stmt *st)
{
    const struct xtrack *t = &x->tracks[ti];
    int64_t id = sqlite3_column_int64(st, SL_ID), ts = sqlite3_column_int64(st, SL_TS);
    int64_t dur = sqlite3_column_int64(st, SL_DUR);
    int lane;

    if (dur < 0)
        dur = 0;
    if (!in_windows(x, ts, dur))
        return 0;
    if ((lane = lane_place(x, ti, ts, ts + dur)) < 0)
        return lane;
    if (lane > 0) {
        if (mv_put(&x->moved, id, t->lanes[lane].tid) != 0)
            return oom(x);
        x->st.moved_slices++;
    }
    ev_start(x);
    qry_buf_puts(&x->ev, "\"ph\":\"X\",\"pid\":");
    qry_json_i64(&x->ev, pid_of(x, t->proc));
    qry_buf_puts(&x->ev, ",\"tid\":");
    qry_json_i64(&x->ev, t->lanes[lane].tid);
    qry_buf_puts(&x->ev, ",\"ts\":");
    put_ts(x, ts);
    qry_buf_puts(&x->ev, ",\"dur\":");
    qry_json_us(&x->ev, dur);
    qry_buf_puts(&x->ev, ",\"name\":");
    qry_json_str(&x->ev, (const char *)sqlite3_column_text(st, SL_NAME), (size_t)sqlite3_column_bytes(st, SL_NAME));
    qry_buf_puts(&x->ev, ",\"cat\":");
    slice_cat(x, st);
    slice_args(x, t, st, lane);
    qry_buf_puts(&x->ev, "}");
    x->st.slices++;
    return ev_flush(x);
}

static void track_lanes_free(struct xtrack *t)
{
    for (int i = 0; i < t->nlanes; i++)
        free(t->lanes[i].ends);
    free(t->lanes);
    t->lanes = NULL;
    t->nlanes = 0;
    t->lanes_cap = 0;
}

/* Streams one track's slices (sqlite3_step: one row in memory at a time). */
static int write_track(struct xctx *x, sqlite3_stmt *st, int ti)
{
    int rc, wrc = 0;

    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, x->tracks[ti].id);
    while (wrc == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
        wrc = write_slice(x, ti, st);
    track_lanes_free(&x->tracks[ti]);
    if (wrc != 0)
        return wrc;
    return rc == SQLITE_DONE ? 0 : sql_fail(x, "reading slices");
}

static int write_slices(struct xctx *x)
{
    sqlite3_stmt *st = NULL;
    int rc = 0;

    if (sqlite3_prepare_v2(x->db, hm_sql_export_slices, -1, &st, NULL) != SQLITE_OK)
        return sql_fail(x, "reading slices");
    HM_COLUMNS_CHECK(st, slice_names);
    for (int i = 0; i < x->ntracks && rc == 0; i++)
        if (x->tracks[i].wanted)
            rc = write_track(x, st, i);
    sqlite3_finalize(st);
    return rc;
}

/* ---- counters ---- */

static int write_counter(struct xctx *x, sqlite3_stmt *st)
{
    int rank = sqlite3_column_int(st, CN_RANK), proc;
    int64_t device = sqlite3_column_int64(st, CN_DEVICE), ts = sqlite3_column_int64(st, CN_TS);
    double v = sqlite3_column_double(st, CN_VALUE);
    char num[40];

    if (!rank_wanted(x->o, rank) || !in_windows(x, ts, 0) || sqlite3_column_type(st, CN_VALUE) == SQLITE_NULL ||
        !isfinite(v))
        return 0;
    if ((proc = proc_lookup(x, rank, device >= 0, device)) < 0)
        return 0;   /* cannot happen: build_procs added every (rank, device) */
    ev_start(x);
    qry_buf_puts(&x->ev, "\"ph\":\"C\",\"pid\":");
    qry_json_i64(&x->ev, pid_of(x, proc));
    qry_buf_puts(&x->ev, ",\"ts\":");
    put_ts(x, ts);
    qry_buf_puts(&x->ev, ",\"name\":");
    qry_json_cstr(&x->ev, sqlite3_column_type(st, CN_NAME) == SQLITE_NULL
                              ? "counter"
                              : (const char *)sqlite3_column_text(st, CN_NAME));
    qry_buf_puts(&x->ev, ",\"args\":{\"value\":");
    if (v == floor(v) && fabs(v) < 9e15)
        snprintf(num, sizeof num, "%.0f", v);
    else
        snprintf(num, sizeof num, "%.17g", v);
    qry_buf_puts(&x->ev, num);
    qry_buf_puts(&x->ev, "}}");
    x->st.counters++;
    return ev_flush(x);
}

static int write_counters(struct xctx *x)
{
    sqlite3_stmt *st = NULL;
    int rc, wrc = 0;

    if (sqlite3_prepare_v2(x->db, hm_sql_export_counters, -1, &st, NULL) != SQLITE_OK)
        return sql_fail(x, "reading counters");
    HM_COLUMNS_CHECK(st, counter_names);
    while (wrc == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
        wrc = write_counter(x, st);
    sqlite3_finalize(st);
    if (wrc != 0)
        return wrc;
    return rc == SQLITE_DONE ? 0 : sql_fail(x, "reading counters");
}

/* ---- flows ---- */

static const struct xtrack *track_by_id(const struct xctx *x, int64_t id)
{
    int lo = 0, hi = x->ntracks - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        int64_t v = x->tracks[x->by_id[mid]].id;
        if (v == id)
            return &x->tracks[x->by_id[mid]];
        if (v < id)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

/* An exported slice, where its events are: struct qry_export_end
 * (export_ends.h), which a sharded export's parts hand on. */
typedef struct qry_export_end flow_end;

/* Whether the slice (id, ts, dur, track) at columns col.. of st was
 * exported; fills e. */
static bool flow_end_get(const struct xctx *x, sqlite3_stmt *st, int col, flow_end *e)
{
    enum { FE_SLICE, FE_TS, FE_DUR, FE_TRACK };   /* offsets from col */
    int64_t dur = sqlite3_column_int64(st, col + FE_DUR);
    const struct xtrack *t = track_by_id(x, sqlite3_column_int64(st, col + FE_TRACK));

    e->slice = sqlite3_column_int64(st, col + FE_SLICE);
    e->ts = sqlite3_column_int64(st, col + FE_TS);
    if (!t || !t->wanted || !in_windows(x, e->ts, dur < 0 ? 0 : dur))
        return false;
    e->rank = t->rank;
    e->pid = pid_of(x, t->proc);
    e->tid = slice_tid(x, t, e->slice);
    return true;
}

/* One flow event ("s", "t" or "f") at the start of e's slice. extra is
 * appended inside args (starting with ','), may be "". */
static int write_flow_event(struct xctx *x, const char *ph, int64_t id, const char *cat, const char *name,
                            const flow_end *e, const char *extra)
{
    ev_start(x);
    qry_buf_puts(&x->ev, "\"ph\":\"");
    qry_buf_puts(&x->ev, ph);
    qry_buf_puts(&x->ev, !strcmp(ph, "f") ? "\",\"bp\":\"e\",\"id\":" : "\",\"id\":");
    qry_json_i64(&x->ev, id);
    qry_buf_puts(&x->ev, ",\"pid\":");
    qry_json_i64(&x->ev, e->pid);
    qry_buf_puts(&x->ev, ",\"tid\":");
    qry_json_i64(&x->ev, e->tid);
    qry_buf_puts(&x->ev, ",\"ts\":");
    put_ts(x, e->ts);
    qry_buf_puts(&x->ev, ",\"cat\":");
    qry_json_cstr(&x->ev, cat);
    qry_buf_puts(&x->ev, ",\"name\":");
    qry_json_cstr(&x->ev, name);
    qry_buf_puts(&x->ev, ",\"args\":{\"slice_id\":");
    qry_json_i64(&x->ev, e->slice);
    qry_buf_puts(&x->ev, extra);
    qry_buf_puts(&x->ev, "}}");
    return ev_flush(x);
}

static int write_launch_flows(struct xctx *x)
{
    sqlite3_stmt *st = NULL;
    flow_end gpu, cpu;
    char extra[48];
    int rc, wrc = 0;

    if (sqlite3_prepare_v2(x->db, hm_sql_export_launch_flows, -1, &st, NULL) != SQLITE_OK)
        return sql_fail(x, "reading launches");
    HM_COLUMNS_CHECK(st, launch_names);
    {   /* the exported GPU tracks, as the query's JSON list */
        struct qry_buf ids = {0};
        qry_buf_puts(&ids, "[");
        for (int i = 0, n = 0; i < x->ntracks; i++)
            if (x->tracks[i].gpu && x->tracks[i].wanted) {
                qry_buf_puts(&ids, n++ ? "," : "");
                qry_json_i64(&ids, x->tracks[i].id);
            }
        qry_buf_puts(&ids, "]");
        rc = ids.oom ? SQLITE_NOMEM : sqlite3_bind_text(st, 1, ids.p, (int)ids.n, SQLITE_TRANSIENT);
        qry_buf_free(&ids);
        if (rc != SQLITE_OK) {
            sqlite3_finalize(st);
            return sql_fail(x, "reading launches");
        }
    }
    while (wrc == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (!flow_end_get(x, st, LF_GPU_ID, &gpu) || !flow_end_get(x, st, LF_CPU_ID, &cpu))
            continue;
        snprintf(extra, sizeof extra, ",\"correlation\":%" PRId64, (int64_t)sqlite3_column_int64(st, LF_CORRELATION));
        x->next_flow++;
        wrc = write_flow_event(x, "s", x->next_flow, "launch", "launch", &cpu, extra);
        if (wrc == 0)
            wrc = write_flow_event(x, "f", x->next_flow, "launch", "launch", &gpu, extra);
        x->st.launch_flows++;
    }
    sqlite3_finalize(st);
    if (wrc != 0)
        return wrc;
    return rc == SQLITE_DONE ? 0 : sql_fail(x, "reading launches");
}

/* The exported members of one collective instance. */
struct instance {
    int64_t id;
    char *op;                 /* owned; NULL if unknown */
    flow_end *m;              /* owned */
    int n;
    size_t cap;
};

/* Entry order: by start, then rank. */
static int member_cmp(const void *pa, const void *pb)
{
    const flow_end *a = pa, *b = pb;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* The instance's arrow through its members in entry order (the unsharded
 * query gives them so; the index's members come from several shards). */
static int instance_flush(struct xctx *x, struct instance *in)
{
    char extra[64];
    int rc = 0;

    if (in->n >= 2) {
        qsort(in->m, (size_t)in->n, sizeof *in->m, member_cmp);
        snprintf(extra, sizeof extra, ",\"instance\":%" PRId64, in->id);
        x->next_flow++;
        for (int i = 0; i < in->n && rc == 0; i++)
            rc = write_flow_event(x, i == 0 ? "s" : i == in->n - 1 ? "f" : "t", x->next_flow, "collective",
                                  in->op ? in->op : "collective", &in->m[i], extra);
        x->st.collective_flows++;
    }
    in->n = 0;
    free(in->op);
    in->op = NULL;
    return rc;
}

/* Adds e (NULL: a member not exported) to the instance of the row st,
 * whose op is at column op. */
static int instance_add(struct xctx *x, struct instance *in, sqlite3_stmt *st, int op, const flow_end *e)
{
    if (in->n == 0 && !in->op && sqlite3_column_type(st, op) != SQLITE_NULL && !(in->op = dup_text(st, op)))
        return oom(x);
    if (!e)
        return 0;
    if (hm_vec_reserve((void **)&in->m, &in->cap, (size_t)in->n + 1, sizeof *in->m) != 0)
        return oom(x);
    in->m[in->n++] = *e;
    return 0;
}

/* The member of the row st: this file's slice, or in a sharded export the
 * slice a part wrote (the index's members name their collective). */
static const flow_end *member_of(struct xctx *x, sqlite3_stmt *st, flow_end *e)
{
    const struct qry_export_part *p = x->o->part;

    if (p && p->index)
        return qry_export_ends_find(p->ends, sqlite3_column_int(st, IM_RANK), sqlite3_column_int64(st, IM_ORD));
    return flow_end_get(x, st, CM_SLICE, e) ? e : NULL;
}

/* A sharded export's part notes where it wrote its collectives' slices,
 * for the arrows the last part draws. */
static int note_collective_ends(struct xctx *x)
{
    sqlite3_stmt *st = NULL;
    flow_end e;
    int rc, wrc = 0;

    if (sqlite3_prepare_v2(x->db, hm_sql_export_collective_ends, -1, &st, NULL) != SQLITE_OK)
        return sql_fail(x, "reading collectives");
    HM_COLUMNS_CHECK(st, end_names);
    while (wrc == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (!flow_end_get(x, st, CE_SLICE, &e))
            continue;
        e.ord = sqlite3_column_int64(st, CE_ORD);
        if (qry_export_ends_add(x->o->part->ends, &e) != 0)
            wrc = oom(x);
    }
    sqlite3_finalize(st);
    if (wrc != 0)
        return wrc;
    return rc == SQLITE_DONE ? 0 : sql_fail(x, "reading collectives");
}

/* One arrow per matched instance with two or more exported members. In a
 * sharded export the instances are the index's, drawn once, by the last
 * part, through the slices every part noted. */
static int write_collective_flows(struct xctx *x)
{
    const struct qry_export_part *p = x->o->part;
    bool index = p && p->index;
    sqlite3_stmt *st = NULL;
    struct instance in = {0};
    flow_end e;
    int rc, wrc = index ? note_collective_ends(x) : 0;

    if (wrc != 0 || (index && !p->tail))
        return wrc;
    if (sqlite3_prepare_v2(index ? p->index : x->db,
                           index ? hm_sql_export_index_members : hm_sql_export_collective_members, -1, &st,
                           NULL) != SQLITE_OK)
        return index ? index_fail(x, "reading collectives") : sql_fail(x, "reading collectives");
    if (index)
        HM_COLUMNS_CHECK(st, index_member_names);
    else
        HM_COLUMNS_CHECK(st, member_names);
    while (wrc == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, index ? IM_INSTANCE : CM_INSTANCE);
        if (id != in.id)
            wrc = instance_flush(x, &in);
        in.id = id;
        if (wrc == 0)
            wrc = instance_add(x, &in, st, index ? IM_OP : CM_OP, member_of(x, st, &e));
    }
    if (wrc == 0 && rc == SQLITE_DONE)
        wrc = instance_flush(x, &in);
    free(in.op);
    free(in.m);
    sqlite3_finalize(st);
    if (wrc != 0 || rc == SQLITE_DONE)
        return wrc;
    return index ? index_fail(x, "reading collectives") : sql_fail(x, "reading collectives");
}

/* ---- the whole file ---- */

static void put_list(struct qry_buf *b, const char *key, const int64_t *v, const int *iv, int n)
{
    qry_buf_puts(b, ",\"");
    qry_buf_puts(b, key);
    qry_buf_puts(b, n < 0 ? "\":\"all\"" : "\":[");
    for (int i = 0; i < n; i++) {
        if (i)
            qry_buf_puts(b, ",");
        qry_json_i64(b, v ? v[i] : iv[i]);
    }
    if (n >= 0)
        qry_buf_puts(b, "]");
}

/* Ends traceEvents and writes what a reader needs to map ts back to the
 * database (origin_ns as a string: a double cannot hold it). */
static int write_trailer(struct xctx *x)
{
    struct qry_buf *b = &x->ev;
    char origin[24];

    b->n = 0;
    qry_buf_puts(b, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"producer\":");
    qry_json_cstr(b, x->o->producer ? x->o->producer : "htamerge");
    qry_buf_puts(b, ",\"source\":");
    qry_json_cstr(b, x->o->source ? x->o->source : x->path);
    snprintf(origin, sizeof origin, "%" PRId64, x->origin);
    qry_buf_puts(b, ",\"origin_ns\":");
    qry_json_cstr(b, origin);
    qry_buf_puts(b, ",\"ts_unit\":\"us since origin_ns on the aligned clock\"");
    if (x->o->part)
        put_list(b, "ranks", NULL, x->o->part->ranks_all, x->o->part->ranks_all ? x->o->part->nranks_all : -1);
    else
        put_list(b, "ranks", NULL, x->o->ranks, x->o->ranks ? x->o->nranks : -1);
    put_list(b, "steps", x->o->steps, NULL, x->o->steps ? x->o->nsteps : -1);
    const struct qry_export_stats *e = x->o->part ? x->o->part->before : NULL, none = {0};
    if (!e)
        e = &none;
    qry_buf_puts(b, ",\"slices\":");
    qry_json_i64(b, x->st.slices + e->slices);
    qry_buf_puts(b, ",\"moved_slices\":");
    qry_json_i64(b, x->st.moved_slices + e->moved_slices);
    qry_buf_puts(b, ",\"launch_flows\":");
    qry_json_i64(b, x->st.launch_flows + e->launch_flows);
    qry_buf_puts(b, ",\"collective_flows\":");
    qry_json_i64(b, x->st.collective_flows + e->collective_flows);
    qry_buf_puts(b, ",\"counters\":");
    qry_json_i64(b, x->st.counters + e->counters);
    qry_buf_puts(b, "}}\n");
    return ev_flush(x);
}

static void xctx_free(struct xctx *x)
{
    for (int i = 0; i < x->nhosts; i++)
        free(x->hosts[i].host);
    for (int i = 0; i < x->ntracks; i++) {
        free(x->tracks[i].name);
        track_lanes_free(&x->tracks[i]);
    }
    free(x->hosts);
    free(x->procs);
    free(x->tracks);
    free(x->by_id);
    free(x->win);
    free(x->moved.key);
    free(x->moved.tid);
    free(x->moved.used);
    free(x->ev.p);
    free(x->dec.p);
}

int qry_export_chrome(sqlite3 *db, const struct qry_export_opts *opts, FILE *out,
                      struct qry_export_stats *stats, struct hm_err *err)
{
    const struct qry_export_part *part = opts->part;
    struct xctx x = {.db = db, .o = opts, .f = out, .err = err, .first = !part || !part->more,
                     .next_flow = part ? part->flow_base : 0};
    int rc;

    x.path = sqlite3_db_filename(db, "main");
    /* A rank's slices lie all over a large file (stored batch by batch,
     * ranks interleaved) and its 64 KiB pages were read again for each
     * slice through a 2 MiB cache: 2.7 M pread calls, 15 s, to export one
     * rank of 64 x 55 MB. Mapped, they cost no call and no copy. */
    sqlite3_exec(db, "PRAGMA mmap_size = 2147418112; PRAGMA cache_size = -65536", NULL, NULL, NULL);
    rc = load_hosts(&x);
    if (rc == 0)
        rc = load_tracks(&x);
    if (rc == 0)
        rc = build_procs(&x);
    if (rc == 0)
        rc = check_ranks(&x);
    if (rc == 0)
        rc = load_windows(&x);
    if (rc == 0)
        rc = load_origin(&x);
    if (rc == 0 && (!part || part->head) && (fputs("{\"traceEvents\":[", out) < 0 || ferror(out)))
        rc = hm_err_set(err, HM_EIO, NULL, -1, "write failed: %s", strerror(errno));
    if (rc == 0)
        rc = write_metadata(&x);
    if (rc == 0)
        rc = write_slices(&x);
    if (rc == 0)
        rc = write_counters(&x);
    if (rc == 0)
        rc = write_launch_flows(&x);
    if (rc == 0)
        rc = write_collective_flows(&x);
    if (rc == 0 && (!part || part->tail))
        rc = write_trailer(&x);
    x.st.origin_ns = x.origin;
    x.st.pids = x.nprocs;
    x.st.flows = x.next_flow - (part ? part->flow_base : 0);
    if (stats)
        *stats = x.st;
    xctx_free(&x);
    return rc;
}
