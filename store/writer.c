/* SQLite writer: the database a run leaves behind (API in writer.h).
 *
 * Load plan: one connection and one transaction over the whole load, with
 * fast-load pragmas (no journal, no fsync: a crash loses only the temporary
 * file, never FINAL_PATH) and prepared statements reused row after row.
 * Fact tables (slices, collectives, counters, steps, a_*) stream in as calls
 * arrive. Dimension tables (strings, tracks, ranks, files, skipped) live in
 * memory, where batches update them cheaply, and are written by _finish.
 *
 * States:  open -> loading (add_*, set_*) -> finish: rows of the dimension
 *          tables, indexes.sql, views.sql, ANALYZE, COMMIT, journal_mode
 *          DELETE, close, fsync, rename -> done (w freed)
 *          A call that fails after changing something (SQLite, memory) sets
 *          `failed`: later calls are refused and _finish cleans up. A refused
 *          argument (HM_EINVAL, HM_EFORMAT) changes nothing.
 *
 * Not here: clock fitting (the caller passes parameters), collective
 * matching and NVTX stitching (they fill their tables through SQL later). */
#include "store/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hm_sql.h"

#define RANK_MAX (1 << 20)          /* refuse rank numbers beyond this */
#define PAGE_SIZE_BYTES 65536       /* as in load_pragmas */
#define UNMAPPED UINT32_MAX         /* batch string not yet mapped */

/* Prepared statements, one per kind of row. One-line SQL stays here;
 * anything longer lives in sql/queries/. */
enum {
    ST_SLICE, ST_SLICES, ST_COLL, ST_COUNTER, ST_STEP, ST_STRING, ST_CATEGORY, ST_TRACK, ST_RANK,
    ST_FILE, ST_SKIPPED, ST_META, ST_A_TEMPORAL, ST_A_OVERLAP, ST_A_IDLE, ST_A_KCLASS,
    ST_A_KLABEL, ST_A_KERNEL, ST_A_STEP, ST_DEL_TEMPORAL, ST_DEL_OVERLAP, ST_DEL_IDLE,
    ST_DEL_KCLASS, ST_DEL_KLABEL, ST_DEL_KERNEL, ST_PAGES, ST__COUNT
};

/* Slices go in SLICE_ROWS rows per statement: one statement execution per
 * row costs about as much as the row itself (cursor open, seek, halt), so
 * batching rows measured 1.5-2x faster; 32 was the best of 8/16/32/64. The
 * statements (ST_SLICE: one row, ST_SLICES: SLICE_ROWS) are built at open.
 * The id is left to SQLite (max + 1, measured 20% fewer instructions than
 * binding it, which makes SQLite seek): the writer is the only one adding
 * slices, so ids are w->next_slice, ... and insert_slices checks that. */
#define SLICE_ROWS 32
#define SLICE_COLS 14
static const char slice_insert_head[] =
    "INSERT INTO slices (track, ts, dur, name, cat, cat_name, depth, parent, correlation, "
    "external_id, bytes, iteration, args, flags) VALUES ";

static const char *const stmt_sql[ST__COUNT] = {
    [ST_COLL] = "INSERT INTO collectives (rank, slice, pg, pg_desc, op, seq, comms_id, in_nelems, "
                "out_nelems, group_size, dtype, pg_ranks, enter_ns, exit_ns) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    [ST_COUNTER] = "INSERT INTO counters (rank, device, name, ts, value) VALUES (?1, ?2, ?3, ?4, ?5)",
    [ST_STEP] = "INSERT INTO steps (rank, number, slice, ts, dur) VALUES (?1, ?2, ?3, ?4, ?5) "
                "ON CONFLICT (rank, number) DO NOTHING",
    [ST_STRING] = "INSERT INTO strings (id, str) VALUES (?1, ?2)",
    [ST_CATEGORY] = "INSERT INTO categories (id, name) VALUES (?1, ?2)",
    [ST_TRACK] = "INSERT OR REPLACE INTO tracks (id, rank, kind, pid, tid, name) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [ST_RANK] = "INSERT OR REPLACE INTO ranks (rank, host, pid, world_size, backend, rank_source, base_time_ns, "
                "clock_offset_ns, clock_drift_ppm, clock_ref_ns, clock_method, clock_uncertainty_ns, "
                "complete, batches, pg_config, device_props, nccl_version, trace_meta, trace_flags) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, "
                "?18, ?19)",
    [ST_FILE] = "INSERT INTO files (rank, path, batches, slices) VALUES (?1, ?2, ?3, ?4)",
    [ST_SKIPPED] = "INSERT INTO skipped (rank, file, reason, count) VALUES (?1, ?2, ?3, ?4)",
    [ST_META] = "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
    [ST_A_TEMPORAL] = "INSERT INTO a_temporal (mode, rank, has_gpu, idle_us, compute_us, "
                      "non_compute_us, kernel_us, idle_pct, compute_pct, non_compute_pct) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    [ST_A_OVERLAP] = "INSERT INTO a_overlap (mode, rank, comm_us, overlap_us, overlap_pct) "
                     "VALUES (?1, ?2, ?3, ?4, ?5)",
    [ST_A_IDLE] = "INSERT INTO a_idle (mode, rank, stream, host_wait_us, kernel_wait_us, other_us) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [ST_A_KCLASS] = "INSERT INTO a_kernel_class (mode, rank, class, union_us, comp_overlap_comm_us) "
                    "VALUES (?1, ?2, ?3, ?4, ?5)",
    [ST_A_KLABEL] = "INSERT INTO a_kernel_labels (mode, rank, label, mask, us) "
                    "VALUES (?1, ?2, ?3, ?4, ?5)",
    [ST_A_KERNEL] = "INSERT INTO a_kernels (mode, rank, name, class, count, sum_us, min_us, max_us, "
                    "mean_us, std_us) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    [ST_A_STEP] = hm_sql_writer_step_analysis,
    [ST_DEL_TEMPORAL] = "DELETE FROM a_temporal WHERE mode = ?1 AND rank = ?2",
    [ST_DEL_OVERLAP] = "DELETE FROM a_overlap WHERE mode = ?1 AND rank = ?2",
    [ST_DEL_IDLE] = "DELETE FROM a_idle WHERE mode = ?1 AND rank = ?2",
    [ST_DEL_KCLASS] = "DELETE FROM a_kernel_class WHERE mode = ?1 AND rank = ?2",
    [ST_DEL_KLABEL] = "DELETE FROM a_kernel_labels WHERE mode = ?1 AND rank = ?2",
    [ST_DEL_KERNEL] = "DELETE FROM a_kernels WHERE mode = ?1 AND rank = ?2",
    [ST_PAGES] = "PRAGMA page_count",
};

/* Fast-load settings, applied before the schema (page_size must come
 * first). No journal: a failed load is deleted, never rolled back. Page
 * size: 4, 16 and 64 KiB load within 1% of each other (instruction counts);
 * 64 KiB makes the full scans readers do (reports, SQL) touch fewer pages.
 * Cache: 256 MiB; 1 GiB made no difference to the load and slowed the
 * index builds. */
static const char *const load_pragmas[] = {
    "PRAGMA page_size = 65536",
    "PRAGMA journal_mode = OFF",
    "PRAGMA synchronous = OFF",
    "PRAGMA locking_mode = EXCLUSIVE",
    "PRAGMA cache_size = -262144",
};

/* Settings and statements run by _finish after the indexes and views. */
static const char *const finish_sql[] = {
    "PRAGMA analysis_limit = 1000",
    "ANALYZE",
    "COMMIT",
    "PRAGMA journal_mode = DELETE",
};

struct rank_track {
    int64_t pid, tid;
    int64_t id;              /* tracks.id */
    uint32_t kind;           /* enum hm_track_kind */
    hm_strid name;           /* id in w->strings; 0 until a batch names it */
};

struct rank_file {
    hm_strid path;           /* id in w->strings; 0 = no source file (live) */
    uint64_t batches, slices;
    uint64_t skipped[HM_SKIP__COUNT];
};

struct rank_clock {
    int set;                 /* 1 after mrg_writer_set_clock */
    int64_t base_ns;         /* HM_NONE: each batch's own base_time_ns */
    int64_t offset_ns, ref_ns, uncertainty_ns;
    double drift_ppm;
    char method[16];
    int64_t step_ns, step_at_ns; /* a repaired clock step; step_ns 0 = none */
};

/* What the writer knows about one rank; becomes its ranks/tracks/files rows. */
struct rank_state {
    int known;               /* 1 once any call named the rank */
    int complete;            /* -1: not set, then "has a batch" */
    uint64_t batches;
    struct rank_clock clk;
    int64_t base_seen;       /* base_time_ns of its first batch that had one */
    int64_t shift_ns;        /* guessed clock correction its rows carry (set_time_shift) */
    int64_t pid;
    int32_t world_size;
    uint32_t trace_flags;    /* HM_INFO_F_* of its batches, or-ed */
    hm_strid host, backend, rank_source, pg_config, device_props, nccl_version, trace_meta;
    HM_VEC(struct rank_track) tracks;
    HM_VEC(struct rank_file) files;
};

struct nest_key {
    int64_t ts, end;
    uint32_t idx;            /* slice index in the batch */
};

/* Scratch for one add_batch call, reused across calls (owned by the writer). */
struct scratch {
    hm_strid *smap;          /* batch string id -> w->strings id, UNMAPPED */
    size_t smap_cap;
    int64_t *tmap;           /* batch track index -> tracks.id */
    size_t tmap_cap;
    size_t *seg;             /* per track: end of its segment in keys */
    size_t seg_cap;
    struct nest_key *keys;   /* slices in storage order: (track, ts, longer first) */
    uint32_t *depth;         /* by batch index */
    uint32_t *parent;        /* by batch index: parent's keys position + 1, 0 = none */
    uint32_t *pos;           /* by batch index: its keys position */
    uint32_t *stack;         /* keys positions of the open slices */
    size_t keys_cap;
};

struct mrg_writer {
    sqlite3 *db;                     /* owned */
    int64_t *loaded_ids;             /* owned: slices.id of each slice of the last
                                        mrg_writer_load_rank batch, in its order */
    size_t nloaded;
    char *final_path, *tmp_path;     /* owned */
    sqlite3_stmt *st[ST__COUNT];     /* owned */
    struct hm_strtab *strings;       /* owned; its ids are strings.id */
    struct rank_state *ranks;        /* owned, indexed by rank */
    int nranks;                      /* entries allocated in ranks */
    int64_t next_slice, next_track;  /* next slices.id / tracks.id */
    int64_t page_size;
    int failed;                      /* 1 after a failed call */
    char failure[256];               /* the first storing failure, for run_status */
    char *reserve_path;              /* owned; live: space held back (see take_reserve) */
    int live;                        /* written in place, WAL, committed as it goes */
    int reopened;                    /* mrg_writer_reopen: an existing file, analyses only */
    void (*tap)(void *ctx, const struct mrg_slice_row *row); /* mrg_writer_set_slice_tap */
    void *tap_ctx;
    uint32_t strings_written;        /* ids below this are rows of `strings` */
    int oom;                         /* a string could not be interned */
    struct mrg_writer_stats stats;
    struct scratch sc;
};

/* The batch being stored and what the writer derived for it. */
struct bctx {
    const struct hm_batch *b;        /* borrowed */
    struct rank_state *r;
    int rank;
    int64_t base;                    /* base added to raw times */
    int64_t first;                   /* slices.id of storage position 0 */
    int drift;                       /* the rank's clock has a drift term */
};

/* --- Small helpers ------------------------------------------------------ */

static int fail_sql(struct mrg_writer *w, struct hm_err *err, const char *what)
{
    int rc = sqlite3_errcode(w->db) & 0xff, code = HM_ESQL;

    if (rc == SQLITE_NOMEM)
        code = HM_ENOMEM;
    else if (rc == SQLITE_IOERR || rc == SQLITE_FULL || rc == SQLITE_CANTOPEN ||
             rc == SQLITE_READONLY || rc == SQLITE_PERM)
        code = HM_EIO;
    w->failed = 1;
    if (!w->failure[0])
        snprintf(w->failure, sizeof w->failure, "%s: %s", what, sqlite3_errmsg(w->db));
    return hm_err_set(err, code, w->final_path, -1, "%s: %s", what, sqlite3_errmsg(w->db));
}

/* Refuses a call; the writer is unchanged unless the caller marks it failed. */
static int fail(struct mrg_writer *w, struct hm_err *err, int code, int rank, const char *msg)
{
    hm_err_set(err, code, w->final_path, -1, "%s", msg);
    if (err)
        err->rank = rank;
    return code;
}

/* Runs a statement that returns no rows we need, then resets it. */
static int step(struct mrg_writer *w, sqlite3_stmt *st, struct hm_err *err, const char *what)
{
    int rc = sqlite3_step(st);

    sqlite3_reset(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        return fail_sql(w, err, what);
    return 0;
}

static int exec(struct mrg_writer *w, const char *sql, struct hm_err *err, const char *what)
{
    if (sqlite3_exec(w->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return fail_sql(w, err, what);
    return 0;
}

/* Adds without signed-overflow UB: corrupt input must not crash the writer. */
static int64_t add_wrap(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

static void bind_opt(sqlite3_stmt *st, int i, int64_t v)
{
    if (v == HM_NONE)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_int64(st, i, v);
}

static void bind_sid(sqlite3_stmt *st, int i, hm_strid id)
{
    if (id == 0)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_int64(st, i, id);
}

static void bind_real(sqlite3_stmt *st, int i, double v)
{
    if (isfinite(v))
        sqlite3_bind_double(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

/* Binds string id of table t as text (static: t outlives the statement's
 * use), or NULL for id 0. */
static void bind_str(sqlite3_stmt *st, int i, const struct hm_strtab *t, hm_strid id)
{
    size_t len;
    const char *s = hm_strtab_get(t, id, &len);

    if (id == 0 || len == 0)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_text64(st, i, s, len, SQLITE_STATIC, SQLITE_UTF8);
}

static void bind_cstr(sqlite3_stmt *st, int i, const char *s)
{
    if (s && *s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

static hm_strid intern(struct mrg_writer *w, const char *s, size_t len)
{
    hm_strid id = hm_strtab_intern(w->strings, s, len);

    if (id == UINT32_MAX) {
        w->oom = 1;
        return 0;
    }
    return id;
}

/* Maps a batch string id to the writer's table, interning on first use so
 * strings a batch never references as a name (args JSON) stay out. */
static hm_strid gstr(struct mrg_writer *w, const struct hm_batch *b, hm_strid id)
{
    size_t len;
    const char *s;

    if (id == 0 || id >= hm_strtab_count(b->strings))
        return 0;
    if (w->sc.smap[id] == UNMAPPED) {
        s = hm_strtab_get(b->strings, id, &len);
        w->sc.smap[id] = intern(w, s, len);
    }
    return w->sc.smap[id];
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    void *np;

    if (need <= *cap)
        return 0;
    np = realloc(*p, need * elem);
    if (!np)
        return HM_ENOMEM;
    *p = np;
    *cap = need;
    return 0;
}

/* --- Ranks ---------------------------------------------------------------- */

/* Returns the state of rank, creating it; NULL when out of memory. */
static struct rank_state *rank_get(struct mrg_writer *w, int rank)
{
    struct rank_state *r;

    if (rank >= w->nranks) {
        int n = w->nranks ? w->nranks : 8;
        while (n <= rank)
            n *= 2;
        r = realloc(w->ranks, (size_t)n * sizeof *r);
        if (!r)
            return NULL;
        memset(r + w->nranks, 0, (size_t)(n - w->nranks) * sizeof *r);
        w->ranks = r;
        w->nranks = n;
    }
    r = &w->ranks[rank];
    if (!r->known) {
        r->known = 1;
        r->complete = -1;
        r->base_seen = HM_NONE;
        r->pid = HM_NONE;
        r->world_size = HM_NONE;
        r->clk.base_ns = HM_NONE;
        r->clk.uncertainty_ns = HM_NONE;
    }
    return r;
}

static int check_rank(struct mrg_writer *w, int rank, struct hm_err *err)
{
    char msg[96];

    if (w->failed)
        return fail(w, err, HM_EINVAL, rank, "the writer failed earlier");
    /* A reopened file's ranks live only in its rows, not in w->ranks, so
     * adding to them here would write rows that clobber the stored ones. */
    if (w->reopened)
        return fail(w, err, HM_EINVAL, rank, "a reopened database takes analyses only");
    if (rank < 0 || rank >= RANK_MAX) {
        snprintf(msg, sizeof msg, "rank %d out of range [0, %d)", rank, RANK_MAX);
        return fail(w, err, HM_EINVAL, rank, msg);
    }
    if (!rank_get(w, rank))
        return fail(w, err, HM_ENOMEM, rank, "out of memory");
    return 0;
}

static int valid_method(const char *m)
{
    return m && (!strcmp(m, "base_time") || !strcmp(m, "none") || !strcmp(m, "mpi") ||
                 !strcmp(m, "collectives"));
}

int mrg_writer_set_clock(struct mrg_writer *w, int rank, int64_t base_ns, int64_t offset_ns,
                         double drift_ppm, int64_t ref_ns, const char *method,
                         int64_t uncertainty_ns, struct hm_err *err)
{
    struct rank_clock *c;
    int rc = check_rank(w, rank, err);

    if (rc)
        return rc;
    if (!valid_method(method) || !isfinite(drift_ppm))
        return fail(w, err, HM_EINVAL, rank, "clock method must be base_time, none, mpi or "
                    "collectives, with a finite drift");
    if (w->ranks[rank].batches)
        return fail(w, err, HM_EINVAL, rank, "clock set after the rank's first batch");
    c = &w->ranks[rank].clk;
    c->set = 1;
    c->base_ns = base_ns;
    c->offset_ns = offset_ns;
    c->drift_ppm = drift_ppm;
    c->ref_ns = ref_ns;
    c->uncertainty_ns = uncertainty_ns;
    snprintf(c->method, sizeof c->method, "%s", method);
    return 0;
}

int mrg_writer_set_time_shift(struct mrg_writer *w, int rank, int64_t shift_ns, struct hm_err *err)
{
    int rc = check_rank(w, rank, err);

    if (rc)
        return rc;
    if (w->ranks[rank].batches)
        return fail(w, err, HM_EINVAL, rank, "time shift set after the rank's first batch");
    w->ranks[rank].shift_ns = shift_ns;
    return 0;
}

int64_t mrg_writer_time_shift(const struct mrg_writer *w, int rank)
{
    return rank >= 0 && rank < w->nranks && w->ranks[rank].known ? w->ranks[rank].shift_ns : 0;
}

int mrg_writer_set_rank_complete(struct mrg_writer *w, int rank, int complete,
                                 struct hm_err *err)
{
    int rc = check_rank(w, rank, err);

    if (rc == 0)
        w->ranks[rank].complete = complete ? 1 : 0;
    return rc;
}

/* The aligned time of raw on the batch's rank clock. */
static int64_t align_ts(const struct bctx *c, int64_t raw)
{
    const struct rank_clock *k = &c->r->clk;
    int64_t t = add_wrap(add_wrap(raw, c->base), k->offset_ns);

    if (k->drift_ppm != 0.0)
        t = add_wrap(t, (int64_t)(k->drift_ppm * 1e-6 * (double)add_wrap(raw, -k->ref_ns)));
    return add_wrap(t, c->r->shift_ns);
}

static void keep_sid(hm_strid *dst, hm_strid v)
{
    if (*dst == 0)
        *dst = v;
}

/* Folds the batch's rank info into the rank: first known value wins. */
static void merge_info(struct mrg_writer *w, struct bctx *c)
{
    const struct hm_rank_info *in = &c->b->info;
    struct rank_state *r = c->r;

    if (r->pid == HM_NONE)
        r->pid = in->pid;
    if (r->world_size == HM_NONE)
        r->world_size = in->world_size;
    if (r->base_seen == HM_NONE)
        r->base_seen = in->base_time_ns;
    r->trace_flags |= in->flags;
    keep_sid(&r->host, gstr(w, c->b, in->hostname));
    keep_sid(&r->backend, gstr(w, c->b, in->backend));
    keep_sid(&r->rank_source, gstr(w, c->b, in->rank_source));
    keep_sid(&r->pg_config, gstr(w, c->b, in->pg_config));
    keep_sid(&r->device_props, gstr(w, c->b, in->device_props));
    keep_sid(&r->nccl_version, gstr(w, c->b, in->nccl_version));
    keep_sid(&r->trace_meta, gstr(w, c->b, in->trace_meta));
    r->batches++;
}

/* Counts the batch under its source file, adding its skipped counts. */
static int merge_file(struct mrg_writer *w, struct bctx *c)
{
    hm_strid path = gstr(w, c->b, c->b->info.source_file);
    struct rank_file *f = NULL;

    for (size_t i = 0; i < c->r->files.n && !f; i++)
        if (c->r->files.v[i].path == path)
            f = &c->r->files.v[i];
    if (!f) {
        f = HM_VEC_PUSH(c->r->files);
        if (!f)
            return HM_ENOMEM;
        f->path = path;
    }
    f->batches++;
    f->slices += c->b->slices.n;
    for (int k = 0; k < HM_SKIP__COUNT; k++)
        f->skipped[k] += c->b->info.skipped[k];
    return 0;
}

/* Maps each batch track to its tracks.id, adding new tracks to the rank. */
static int map_tracks(struct mrg_writer *w, struct bctx *c)
{
    const struct hm_batch *b = c->b;

    if (grow((void **)&w->sc.tmap, &w->sc.tmap_cap, b->tracks.n + 1, sizeof *w->sc.tmap))
        return HM_ENOMEM;
    for (size_t i = 0; i < b->tracks.n; i++) {
        const struct hm_track *t = &b->tracks.v[i];
        struct rank_track *rt = NULL;
        for (size_t j = 0; j < c->r->tracks.n && !rt; j++) {
            struct rank_track *x = &c->r->tracks.v[j];
            if (x->kind == t->kind && x->pid == t->pid && x->tid == t->tid)
                rt = x;
        }
        if (!rt) {
            rt = HM_VEC_PUSH(c->r->tracks);
            if (!rt)
                return HM_ENOMEM;
            *rt = (struct rank_track){t->pid, t->tid, w->next_track++, t->kind, 0};
        }
        keep_sid(&rt->name, gstr(w, b, t->name));
        w->sc.tmap[i] = rt->id;
    }
    return 0;
}

/* --- Slice nesting -------------------------------------------------------- */

/* Order within a track: start ascending, then longer first (a parent
 * precedes the children that start with it), then input order. */
static int key_cmp(const void *pa, const void *pb)
{
    const struct nest_key *a = pa, *b = pb;

    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    if (a->end != b->end)
        return a->end > b->end ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Sorts keys[lo, hi) unless already sorted (the common case for sources
 * that emit in time order). */
static void sort_segment(struct nest_key *k, size_t lo, size_t hi)
{
    for (size_t i = lo + 1; i < hi; i++) {
        if (key_cmp(&k[i - 1], &k[i]) > 0) {
            qsort(k + lo, hi - lo, sizeof *k, key_cmp);
            return;
        }
    }
}

/* Assigns depth and parent along one track's sorted keys: a stack holds the
 * open slices; a slice nests in the top one when it starts before the top
 * ends and ends no later (so zero-length slices never have children). */
static void nest_segment(struct scratch *sc, size_t lo, size_t hi)
{
    uint32_t sp = 0;

    for (size_t k = lo; k < hi; k++) {
        const struct nest_key *x = &sc->keys[k];
        while (sp) {
            const struct nest_key *top = &sc->keys[sc->stack[sp - 1]];
            if (x->ts < top->end && x->end <= top->end)
                break;
            sp--;
        }
        sc->depth[x->idx] = sp;
        sc->parent[x->idx] = sp ? sc->stack[sp - 1] + 1 : 0;
        sc->pos[x->idx] = (uint32_t)k;
        sc->stack[sp++] = (uint32_t)k;
    }
}

static int nest_alloc(struct scratch *sc, size_t n, size_t ntracks)
{
    struct nest_key *k;
    uint32_t **u32[] = {&sc->depth, &sc->parent, &sc->pos, &sc->stack};

    if (grow((void **)&sc->seg, &sc->seg_cap, ntracks + 1, sizeof *sc->seg))
        return HM_ENOMEM;
    if (n <= sc->keys_cap)
        return 0;
    k = realloc(sc->keys, n * sizeof *k);
    if (!k)
        return HM_ENOMEM;
    sc->keys = k;
    for (size_t i = 0; i < sizeof u32 / sizeof *u32; i++) {
        uint32_t *p = realloc(*u32[i], n * sizeof *p);
        if (!p)
            return HM_ENOMEM;
        *u32[i] = p;
    }
    sc->keys_cap = n;
    return 0;
}

/* Computes the storage order of the batch's slices, and the depth and
 * parent of each: a stable counting sort groups slices by track, each track
 * is sorted by time and walked. Slices are stored in this order (ids follow
 * it), so a track's slices of one batch sit together in time order: building
 * the (track, ts) index takes half the time, and a timeline window reads
 * neighbouring pages. */
static int compute_nesting(struct mrg_writer *w, const struct hm_batch *b)
{
    struct scratch *sc = &w->sc;
    size_t n = b->slices.n, nt = b->tracks.n;

    if (nest_alloc(sc, n, nt))
        return HM_ENOMEM;
    memset(sc->seg, 0, (nt + 1) * sizeof *sc->seg);
    for (size_t i = 0; i < n; i++)
        sc->seg[b->slices.v[i].track + 1]++;
    for (size_t t = 0; t < nt; t++)
        sc->seg[t + 1] += sc->seg[t];
    for (size_t i = 0; i < n; i++) {
        const struct hm_slice *s = &b->slices.v[i];
        sc->keys[sc->seg[s->track]++] = (struct nest_key){s->ts, add_wrap(s->ts, s->dur), (uint32_t)i};
    }
    /* seg[t] is now the end of track t's segment. */
    for (size_t t = 0, lo = 0; t < nt; lo = sc->seg[t++]) {
        sort_segment(sc->keys, lo, sc->seg[t]);
        nest_segment(sc, lo, sc->seg[t]);
    }
    return 0;
}

/* --- Rows of a batch ------------------------------------------------------ */

/* Checks the batch's internal references before anything is stored. */
static int check_batch(struct mrg_writer *w, const struct hm_batch *b, struct hm_err *err)
{
    int rank = b->info.rank;

    if (b->slices.n >= UINT32_MAX)
        return fail(w, err, HM_EINVAL, rank, "batch has too many slices");
    for (size_t i = 0; i < b->slices.n; i++)
        if (b->slices.v[i].track >= b->tracks.n)
            return fail(w, err, HM_EFORMAT, rank, "slice refers to a missing track");
    for (size_t i = 0; i < b->collectives.n; i++)
        if (b->collectives.v[i].slice >= b->slices.n)
            return fail(w, err, HM_EFORMAT, rank, "collective refers to a missing slice");
    for (size_t i = 0; i < b->steps.n; i++)
        if (b->steps.v[i].slice >= b->slices.n)
            return fail(w, err, HM_EFORMAT, rank, "step refers to a missing slice");
    return 0;
}

/* Binds the slice at storage position k (id c->first + k) to parameters
 * o+1 .. o+SLICE_COLS. */
static void bind_slice(struct mrg_writer *w, const struct bctx *c, sqlite3_stmt *st, int o,
                       size_t k)
{
    const struct hm_batch *b = c->b;
    uint32_t i = w->sc.keys[k].idx, parent = w->sc.parent[i];
    const struct hm_slice *s = &b->slices.v[i];
    int64_t ts = align_ts(c, s->ts);

    sqlite3_bind_int64(st, o + 1, w->sc.tmap[s->track]);
    sqlite3_bind_int64(st, o + 2, ts);
    sqlite3_bind_int64(st, o + 3, c->drift ? align_ts(c, add_wrap(s->ts, s->dur)) - ts : s->dur);
    bind_sid(st, o + 4, gstr(w, b, s->name));
    sqlite3_bind_int(st, o + 5, s->cat < HM_CAT__COUNT ? s->cat : HM_CAT_OTHER);
    bind_sid(st, o + 6, s->cat == HM_CAT_OTHER ? gstr(w, b, s->cat_name) : 0);
    sqlite3_bind_int(st, o + 7, (int)w->sc.depth[i]);
    bind_opt(st, o + 8, parent ? c->first + parent - 1 : HM_NONE);
    bind_opt(st, o + 9, s->correlation);
    bind_opt(st, o + 10, s->external_id);
    bind_opt(st, o + 11, s->bytes);
    bind_opt(st, o + 12, s->iteration);
    bind_str(st, o + 13, b->strings, s->args);
    sqlite3_bind_int(st, o + 14, s->flags);
}

/* slices.id of the batch's slice i. */
static int64_t slice_id(const struct mrg_writer *w, const struct bctx *c, uint32_t i)
{
    return c->first + w->sc.pos[i];
}

/* Tells the slice tap the batch's slices, as bind_slice stored them. */
static void tap_slices(struct mrg_writer *w, const struct bctx *c)
{
    const struct hm_batch *b = c->b;

    for (size_t k = 0; k < b->slices.n; k++) {
        const struct hm_slice *s = &b->slices.v[w->sc.keys[k].idx];
        struct mrg_slice_row row = {
            .rank = c->rank,
            .gpu = b->tracks.v[s->track].kind == HM_TRACK_GPU_STREAM,
            .cat = s->cat < HM_CAT__COUNT ? s->cat : HM_CAT_OTHER,
            .id = c->first + (int64_t)k,
            .track = w->sc.tmap[s->track],
            .ts = align_ts(c, s->ts),
            .correlation = s->correlation,
            .name = gstr(w, b, s->name),
            .iteration = s->iteration,
        };
        row.dur = c->drift ? align_ts(c, add_wrap(s->ts, s->dur)) - row.ts : s->dur;
        w->tap(w->tap_ctx, &row);
    }
}

void mrg_writer_set_slice_tap(struct mrg_writer *w, void (*tap)(void *ctx, const struct mrg_slice_row *row),
                              void *ctx)
{
    w->tap = tap;
    w->tap_ctx = ctx;
}

static int insert_slices(struct mrg_writer *w, struct bctx *c, struct hm_err *err)
{
    size_t i = 0, n = c->b->slices.n;
    sqlite3_stmt *st = w->st[ST_SLICES];

    c->drift = c->r->clk.drift_ppm != 0.0;
    for (; i + SLICE_ROWS <= n; i += SLICE_ROWS) {
        for (int k = 0; k < SLICE_ROWS; k++)
            bind_slice(w, c, st, k * SLICE_COLS, i + (size_t)k);
        if (sqlite3_step(st) != SQLITE_DONE)
            return fail_sql(w, err, "storing slices");
        sqlite3_reset(st);
    }
    st = w->st[ST_SLICE];
    for (; i < n; i++) {
        bind_slice(w, c, st, 0, i);
        if (sqlite3_step(st) != SQLITE_DONE)
            return fail_sql(w, err, "storing a slice");
        sqlite3_reset(st);
    }
    if (n && sqlite3_last_insert_rowid(w->db) != c->first + (int64_t)n - 1) {
        w->failed = 1;
        return fail(w, err, HM_ESQL, c->rank, "slice ids out of step with the writer's count");
    }
    w->stats.slices += n;
    w->stats.rows += n;
    if (w->tap)
        tap_slices(w, c);
    return 0;
}

static int insert_collectives(struct mrg_writer *w, struct bctx *c, struct hm_err *err)
{
    int rc;
    sqlite3_stmt *st = w->st[ST_COLL];
    const struct hm_batch *b = c->b;

    for (size_t i = 0; i < b->collectives.n; i++) {
        const struct hm_collective *k = &b->collectives.v[i];
        const struct hm_slice *s = &b->slices.v[k->slice];
        sqlite3_bind_int(st, 1, c->rank);
        sqlite3_bind_int64(st, 2, slice_id(w, c, k->slice));
        bind_str(st, 3, b->strings, k->pg_name);
        bind_str(st, 4, b->strings, k->pg_desc);
        bind_str(st, 5, b->strings, k->op);
        bind_opt(st, 6, k->seq);
        bind_str(st, 7, b->strings, k->comms_id);
        bind_opt(st, 8, k->in_nelems);
        bind_opt(st, 9, k->out_nelems);
        bind_opt(st, 10, k->group_size);
        bind_str(st, 11, b->strings, k->dtype);
        bind_str(st, 12, b->strings, k->pg_ranks);
        sqlite3_bind_int64(st, 13, align_ts(c, s->ts));
        sqlite3_bind_int64(st, 14, align_ts(c, add_wrap(s->ts, s->dur)));
        if ((rc = step(w, st, err, "storing a collective")))
            return rc;
    }
    w->stats.rows += b->collectives.n;
    return 0;
}

static int insert_counters_steps(struct mrg_writer *w, struct bctx *c, struct hm_err *err)
{
    int rc;
    sqlite3_stmt *st = w->st[ST_COUNTER];
    const struct hm_batch *b = c->b;

    for (size_t i = 0; i < b->counters.n; i++) {
        const struct hm_counter *k = &b->counters.v[i];
        sqlite3_bind_int(st, 1, c->rank);
        sqlite3_bind_int(st, 2, k->device);
        bind_sid(st, 3, gstr(w, b, k->name));
        sqlite3_bind_int64(st, 4, align_ts(c, k->ts));
        bind_real(st, 5, k->value);
        if ((rc = step(w, st, err, "storing a counter")))
            return rc;
    }
    st = w->st[ST_STEP];
    for (size_t i = 0; i < b->steps.n; i++) {
        const struct hm_step *k = &b->steps.v[i];
        int64_t ts = align_ts(c, k->ts);
        sqlite3_bind_int(st, 1, c->rank);
        sqlite3_bind_int64(st, 2, k->number);
        sqlite3_bind_int64(st, 3, slice_id(w, c, k->slice));
        sqlite3_bind_int64(st, 4, ts);
        sqlite3_bind_int64(st, 5, align_ts(c, add_wrap(k->ts, k->dur)) - ts);
        if ((rc = step(w, st, err, "storing a step")))
            return rc;
    }
    w->stats.rows += b->counters.n + b->steps.n;
    return 0;
}

/* Prepares the per-batch context: rank state, string map, tracks, base. */
static int batch_begin(struct mrg_writer *w, const struct hm_batch *b, struct bctx *c,
                       struct hm_err *err)
{
    uint32_t ns = hm_strtab_count(b->strings);
    int rc = check_rank(w, b->info.rank, err);

    if (rc || (rc = check_batch(w, b, err)))
        return rc;
    *c = (struct bctx){.b = b, .rank = b->info.rank, .r = &w->ranks[b->info.rank]};
    if (grow((void **)&w->sc.smap, &w->sc.smap_cap, ns, sizeof *w->sc.smap))
        return fail(w, err, HM_ENOMEM, c->rank, "out of memory");
    memset(w->sc.smap, 0xff, (size_t)ns * sizeof *w->sc.smap);
    merge_info(w, c);
    if (merge_file(w, c) || map_tracks(w, c) || compute_nesting(w, b)) {
        w->failed = 1;
        return fail(w, err, HM_ENOMEM, c->rank, "out of memory");
    }
    c->base = c->r->clk.base_ns != HM_NONE ? c->r->clk.base_ns
              : b->info.base_time_ns != HM_NONE ? b->info.base_time_ns : 0;
    c->first = w->next_slice;
    w->next_slice += (int64_t)b->slices.n;
    return 0;
}

int mrg_writer_add_batch(struct mrg_writer *w, const struct hm_batch *b, struct hm_err *err)
{
    struct bctx c;
    int rc = batch_begin(w, b, &c, err);

    if (rc == 0)
        rc = insert_slices(w, &c, err);
    if (rc == 0)
        rc = insert_collectives(w, &c, err);
    if (rc == 0)
        rc = insert_counters_steps(w, &c, err);
    if (rc == 0 && w->oom) {
        w->failed = 1;
        rc = fail(w, err, HM_ENOMEM, c.rank, "out of memory interning strings");
    }
    if (rc && err) {
        err->rank = b->info.rank;
        hm_err_prefix(err, "storing rank %d", b->info.rank);
    }
    return rc;
}

/* --- Analysis results ----------------------------------------------------- */

static void bind_key(sqlite3_stmt *st, const char *mode, int rank)
{
    sqlite3_bind_text(st, 1, mode, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, rank);
}

/* Per-rank rows: temporal, overlap, kernel classes and labels. */
static int analysis_rank_rows(struct mrg_writer *w, const struct an_rank_result *r,
                              const char *mode, struct hm_err *err)
{
    int rc;
    sqlite3_stmt *st = w->st[ST_A_TEMPORAL];
    const struct an_temporal *t = &r->temporal;

    bind_key(st, mode, r->rank);
    sqlite3_bind_int(st, 3, r->has_gpu ? 1 : 0);
    sqlite3_bind_int64(st, 4, t->idle_us);
    sqlite3_bind_int64(st, 5, t->compute_us);
    sqlite3_bind_int64(st, 6, t->non_compute_us);
    sqlite3_bind_int64(st, 7, t->kernel_us);
    bind_real(st, 8, t->idle_pct);
    bind_real(st, 9, t->compute_pct);
    bind_real(st, 10, t->non_compute_pct);
    if ((rc = step(w, st, err, "storing a_temporal")))
        return rc;
    st = w->st[ST_A_OVERLAP];
    bind_key(st, mode, r->rank);
    sqlite3_bind_int64(st, 3, r->overlap.comm_us);
    sqlite3_bind_int64(st, 4, r->overlap.overlap_us);
    bind_real(st, 5, r->overlap.overlap_pct);
    if ((rc = step(w, st, err, "storing a_overlap")))
        return rc;
    st = w->st[ST_A_KCLASS];
    for (int k = 0; k < AN_KCLASS__COUNT; k++) {
        bind_key(st, mode, r->rank);
        sqlite3_bind_text(st, 3, an_kclass_name((enum an_kclass)k), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, r->kclass_us[k]);
        sqlite3_bind_int64(st, 5, r->comp_overlap_comm_us);
        if ((rc = step(w, st, err, "storing a_kernel_class")))
            return rc;
    }
    st = w->st[ST_A_KLABEL];
    for (int m = 1; m < (int)(sizeof r->label_us / sizeof *r->label_us); m++) {
        bind_key(st, mode, r->rank);
        sqlite3_bind_text(st, 3, an_label_name(m), -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 4, m);
        sqlite3_bind_int64(st, 5, r->label_us[m]);
        if ((rc = step(w, st, err, "storing a_kernel_labels")))
            return rc;
    }
    return 0;
}

/* Per-stream and per-kernel rows. */
static int analysis_list_rows(struct mrg_writer *w, const struct an_rank_result *r,
                              const char *mode, struct hm_err *err)
{
    int rc;
    sqlite3_stmt *st = w->st[ST_A_IDLE];

    for (size_t i = 0; i < r->idle.n; i++) {
        const struct an_idle *d = &r->idle.v[i];
        bind_key(st, mode, r->rank);
        sqlite3_bind_int64(st, 3, d->stream);
        sqlite3_bind_int64(st, 4, d->host_wait_us);
        sqlite3_bind_int64(st, 5, d->kernel_wait_us);
        sqlite3_bind_int64(st, 6, d->other_us);
        if ((rc = step(w, st, err, "storing a_idle")))
            return rc;
    }
    st = w->st[ST_A_KERNEL];
    for (size_t i = 0; i < r->kernels.n; i++) {
        const struct an_kernel *k = &r->kernels.v[i];
        bind_key(st, mode, r->rank);
        bind_sid(st, 3, k->name ? intern(w, k->name, strlen(k->name)) : 0);
        sqlite3_bind_text(st, 4, an_kclass_name((enum an_kclass)k->kclass), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, k->count);
        sqlite3_bind_int64(st, 6, k->sum_us);
        sqlite3_bind_int64(st, 7, k->min_us);
        sqlite3_bind_int64(st, 8, k->max_us);
        bind_real(st, 9, k->mean_us);
        bind_real(st, 10, k->std_us);
        if ((rc = step(w, st, err, "storing a_kernels")))
            return rc;
    }
    return 0;
}

/* Step analysis into `steps` (mode hta only), times aligned like the
 * rank's batches (its explicit base, else its first batch's). */
static int analysis_steps(struct mrg_writer *w, const struct an_rank_result *r,
                          struct hm_err *err)
{
    int rc;
    sqlite3_stmt *st = w->st[ST_A_STEP];
    struct bctx c = {.r = &w->ranks[r->rank], .rank = r->rank};

    c.base = c.r->clk.base_ns != HM_NONE ? c.r->clk.base_ns
             : c.r->base_seen != HM_NONE ? c.r->base_seen : 0;
    for (size_t i = 0; i < r->steps.n; i++) {
        const struct an_step *s = &r->steps.v[i];
        int64_t ts = align_ts(&c, s->ts_ns);
        sqlite3_bind_int(st, 1, r->rank);
        sqlite3_bind_int64(st, 2, s->number);
        sqlite3_bind_int64(st, 3, ts);
        sqlite3_bind_int64(st, 4, align_ts(&c, add_wrap(s->ts_ns, s->dur_ns)) - ts);
        sqlite3_bind_int64(st, 5, s->gpu_busy_us);
        sqlite3_bind_int64(st, 6, s->kernel_count);
        sqlite3_bind_int(st, 7, s->dropped ? 1 : 0);
        if ((rc = step(w, st, err, "storing a step's analysis")))
            return rc;
    }
    return 0;
}

int mrg_writer_add_analysis(struct mrg_writer *w, const struct an_rank_result *r,
                            const char *mode, struct hm_err *err)
{
    int rc;

    if (!mode)
        mode = "hta";
    if ((rc = check_rank(w, r->rank, err)))
        return rc;
    if (strcmp(mode, "hta") != 0 && strcmp(mode, "all_steps") != 0)
        return fail(w, err, HM_EINVAL, r->rank, "analysis mode must be hta or all_steps");
    for (int s = ST_DEL_TEMPORAL; s <= ST_DEL_KERNEL && rc == 0; s++) {
        bind_key(w->st[s], mode, r->rank);
        rc = step(w, w->st[s], err, "replacing analysis rows");
    }
    if (rc == 0)
        rc = analysis_rank_rows(w, r, mode, err);
    if (rc == 0)
        rc = analysis_list_rows(w, r, mode, err);
    if (rc == 0 && strcmp(mode, "hta") == 0)
        rc = analysis_steps(w, r, err);
    if (rc == 0 && w->oom) {
        w->failed = 1;
        rc = fail(w, err, HM_ENOMEM, r->rank, "out of memory interning strings");
    }
    if (rc && err)
        err->rank = r->rank;
    return rc;
}

int mrg_writer_set_meta(struct mrg_writer *w, const char *key, const char *value,
                        struct hm_err *err)
{
    sqlite3_stmt *st = w->st[ST_META];

    if (w->failed)
        return fail(w, err, HM_EINVAL, -1, "the writer failed earlier");
    if (!key || !*key)
        return fail(w, err, HM_EINVAL, -1, "meta key must not be empty");
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    bind_cstr(st, 2, value);
    return step(w, st, err, "storing meta");
}

void mrg_writer_stats(struct mrg_writer *w, struct mrg_writer_stats *out)
{
    sqlite3_stmt *st = w->st[ST_PAGES];

    w->stats.strings = hm_strtab_count(w->strings) - 1;
    w->stats.bytes = 0;
    if (sqlite3_step(st) == SQLITE_ROW)
        w->stats.bytes = (uint64_t)sqlite3_column_int64(st, 0) * (uint64_t)w->page_size;
    sqlite3_reset(st);
    *out = w->stats;
}

/* --- Dimension tables (written by _finish) -------------------------------- */

static int write_strings(struct mrg_writer *w, struct hm_err *err)
{
    int rc;
    sqlite3_stmt *st = w->st[ST_STRING];
    uint32_t n = hm_strtab_count(w->strings);

    for (uint32_t id = w->strings_written ? w->strings_written : 1; id < n; id++) {
        size_t len;
        const char *s = hm_strtab_get(w->strings, id, &len);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text64(st, 2, s, len, SQLITE_STATIC, SQLITE_UTF8);
        if ((rc = step(w, st, err, "storing strings")))
            return rc;
    }
    w->strings_written = n;
    return 0;
}

static int write_rank_row(struct mrg_writer *w, int rank, const struct rank_state *r,
                          struct hm_err *err)
{
    sqlite3_stmt *st = w->st[ST_RANK];
    const struct hm_strtab *t = w->strings;
    int64_t base = r->clk.base_ns != HM_NONE ? r->clk.base_ns : r->base_seen;
    const char *method = r->clk.set ? r->clk.method : base != HM_NONE ? "base_time" : "none";

    sqlite3_bind_int(st, 1, rank);
    bind_str(st, 2, t, r->host);
    bind_opt(st, 3, r->pid);
    bind_opt(st, 4, r->world_size);
    bind_str(st, 5, t, r->backend);
    bind_str(st, 6, t, r->rank_source);
    bind_opt(st, 7, base);
    sqlite3_bind_int64(st, 8, r->clk.offset_ns);
    sqlite3_bind_double(st, 9, r->clk.drift_ppm);
    sqlite3_bind_int64(st, 10, r->clk.ref_ns);
    sqlite3_bind_text(st, 11, method, -1, SQLITE_STATIC);
    bind_opt(st, 12, r->clk.uncertainty_ns);
    sqlite3_bind_int(st, 13, r->complete >= 0 ? r->complete : r->batches > 0);
    sqlite3_bind_int64(st, 14, (int64_t)r->batches);
    bind_str(st, 15, t, r->pg_config);
    bind_str(st, 16, t, r->device_props);
    bind_str(st, 17, t, r->nccl_version);
    bind_str(st, 18, t, r->trace_meta);
    sqlite3_bind_int64(st, 19, r->trace_flags);
    int rc = step(w, st, err, "storing a rank");
    if (rc)
        return rc;
    /* Apart from the row's statement, which files older than the step
     * columns can take (only live runs repair a step). */
    if (r->clk.step_ns) {
        char sql[160];
        snprintf(sql, sizeof sql, "UPDATE ranks SET clock_step_ns = %lld, clock_step_at_ns = %lld WHERE rank = %d",
                 (long long)r->clk.step_ns, (long long)r->clk.step_at_ns, rank);
        return exec(w, sql, err, "storing a clock step");
    }
    return 0;
}

static int write_tracks(struct mrg_writer *w, int rank, const struct rank_state *r,
                        struct hm_err *err)
{
    int rc;
    sqlite3_stmt *st = w->st[ST_TRACK];

    for (size_t i = 0; i < r->tracks.n; i++) {
        const struct rank_track *t = &r->tracks.v[i];
        sqlite3_bind_int64(st, 1, t->id);
        sqlite3_bind_int(st, 2, rank);
        sqlite3_bind_text(st, 3, t->kind == HM_TRACK_GPU_STREAM ? "gpu_stream" : "cpu_thread", -1,
                          SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, t->pid);
        sqlite3_bind_int64(st, 5, t->tid);
        bind_sid(st, 6, t->name);
        if ((rc = step(w, st, err, "storing a track")))
            return rc;
    }
    return 0;
}

static int write_files(struct mrg_writer *w, int rank, const struct rank_state *r,
                       struct hm_err *err)
{
    int rc;
    for (size_t i = 0; i < r->files.n; i++) {
        const struct rank_file *f = &r->files.v[i];
        sqlite3_stmt *st = w->st[ST_FILE];
        if (f->path) {
            sqlite3_bind_int(st, 1, rank);
            bind_str(st, 2, w->strings, f->path);
            sqlite3_bind_int64(st, 3, (int64_t)f->batches);
            sqlite3_bind_int64(st, 4, (int64_t)f->slices);
            if ((rc = step(w, st, err, "storing a file")))
                return rc;
        }
        st = w->st[ST_SKIPPED];
        for (int k = 0; k < HM_SKIP__COUNT; k++) {
            if (!f->skipped[k])
                continue;
            sqlite3_bind_int(st, 1, rank);
            bind_str(st, 2, w->strings, f->path);
            sqlite3_bind_text(st, 3, hm_skip_name((enum hm_skip_reason)k), -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 4, (int64_t)f->skipped[k]);
            if ((rc = step(w, st, err, "storing skipped counts")))
                return rc;
        }
    }
    return 0;
}

/* Strings (new ones only), ranks and tracks (rewritten: they are few and
 * their names and clocks may change). files: also the per-file rows,
 * which are written once, at the end. */
static int write_dimensions_part(struct mrg_writer *w, int files, struct hm_err *err)
{
    int rc;

    /* A reopened file's dimension rows are already stored and w knows none
     * of them (its strings, ranks and tracks start empty): writing w's
     * state would replace rows with blanks. This also drops the clock
     * summaries a re-analysis passes to _update_clock: the data keeps the
     * clocks it was aligned with. */
    if (w->reopened)
        return 0;
    rc = write_strings(w, err);

    for (int rank = 0; rank < w->nranks && rc == 0; rank++) {
        const struct rank_state *r = &w->ranks[rank];
        if (!r->known)
            continue;
        rc = write_rank_row(w, rank, r, err);
        if (rc == 0)
            rc = write_tracks(w, rank, r, err);
        if (rc == 0 && files)
            rc = write_files(w, rank, r, err);
    }
    return rc;
}

static int write_dimensions(struct mrg_writer *w, struct hm_err *err)
{
    return write_dimensions_part(w, 1, err);
}

/* --- Lifecycle ------------------------------------------------------------ */

static void close_db(struct mrg_writer *w)
{
    for (int i = 0; i < ST__COUNT; i++) {
        sqlite3_finalize(w->st[i]);
        w->st[i] = NULL;
    }
    sqlite3_close(w->db);
    w->db = NULL;
}

/* A live file that fills its disk could not even say so: run_status would
 * stay "running". So the live writer holds RESERVE_BYTES in a side file
 * (PATH-reserve) from the start and gives them back to write the failure
 * (mrg_writer_mark_failed). No reserve when the disk is already full: the
 * run then fails at its first commit anyway. */
enum { RESERVE_BYTES = 1 << 20 };

static void hold_reserve(struct mrg_writer *w)
{
    char path[PATH_MAX + 16];
    int fd, ok;

    snprintf(path, sizeof path, "%s-reserve", w->final_path);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    ok = posix_fallocate(fd, 0, RESERVE_BYTES) == 0;
    close(fd);
    if (!ok || !(w->reserve_path = strdup(path)))
        unlink(path);
}

static void take_reserve(struct mrg_writer *w)
{
    if (w->reserve_path)
        unlink(w->reserve_path);
    free(w->reserve_path);
    w->reserve_path = NULL;
}

static void writer_free(struct mrg_writer *w)
{
    take_reserve(w);
    free(w->loaded_ids);
    for (int i = 0; i < w->nranks; i++) {
        HM_VEC_FREE(w->ranks[i].tracks);
        HM_VEC_FREE(w->ranks[i].files);
    }
    free(w->ranks);
    hm_strtab_free(w->strings);
    free(w->sc.smap);
    free(w->sc.tmap);
    free(w->sc.seg);
    free(w->sc.keys);
    free(w->sc.depth);
    free(w->sc.parent);
    free(w->sc.pos);
    free(w->sc.stack);
    free(w->final_path);
    free(w->tmp_path);
    free(w);
}

void mrg_writer_abort(struct mrg_writer *w)
{
    char journal[PATH_MAX + 16];

    if (!w)
        return;
    close_db(w);
    if (w->live) {
        /* The live file is the output: whatever was committed stays. */
        writer_free(w);
        return;
    }
    unlink(w->tmp_path);
    snprintf(journal, sizeof journal, "%s-journal", w->tmp_path);
    unlink(journal);
    writer_free(w);
}

/* Helper threads for the sorts of CREATE INDEX. Measured on 2 busy cores:
 * threads made the (track, ts) index slower (17 s vs 9 s for 16M slices),
 * so only machines with cores to spare get them. */
static const char *sort_threads_pragma(char *buf, size_t len)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    long n = ncpu >= 8 ? 4 : ncpu >= 4 ? ncpu / 2 : 0;

    snprintf(buf, len, "PRAGMA threads = %ld", n);
    return buf;
}

/* Opens the connection on the temporary path with the load settings. */
static int open_db(struct mrg_writer *w, struct hm_err *err)
{
    char threads[64];
    int rc;

    unlink(w->tmp_path);
    rc = sqlite3_open_v2(w->tmp_path, &w->db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        int e = w->db ? sqlite3_system_errno(w->db) : 0;
        return hm_err_set(err, HM_EIO, w->final_path, -1, "cannot create %s: %s%s%s", w->tmp_path,
                          w->db ? sqlite3_errmsg(w->db) : sqlite3_errstr(rc), e ? ": " : "",
                          e ? strerror(e) : "");
    }
    for (size_t i = 0; i < sizeof load_pragmas / sizeof *load_pragmas; i++)
        if ((rc = exec(w, load_pragmas[i], err, "setting up the database")))
            return rc;
    return exec(w, sort_threads_pragma(threads, sizeof threads), err, "setting up the database");
}

/* Schema, categories, prepared statements, and the load's transaction. */
/* Prepares `INSERT INTO slices ... VALUES (?, ...)` with rows tuples. */
static int prepare_slice_insert(struct mrg_writer *w, int rows, sqlite3_stmt **st)
{
    char sql[sizeof slice_insert_head + SLICE_ROWS * (2 * SLICE_COLS + 2)];
    size_t n = sizeof slice_insert_head - 1;

    memcpy(sql, slice_insert_head, n);
    for (int r = 0; r < rows; r++) {
        sql[n++] = r ? ',' : '(';
        if (r)
            sql[n++] = '(';
        for (int k = 0; k < SLICE_COLS; k++) {
            sql[n++] = k ? ',' : '?';
            if (k)
                sql[n++] = '?';
        }
        sql[n++] = ')';
    }
    return sqlite3_prepare_v3(w->db, sql, (int)n, SQLITE_PREPARE_PERSISTENT, st, NULL);
}

/* The statements of stmt_sql and the slice inserts. */
static int prepare_statements(struct mrg_writer *w, struct hm_err *err)
{
    int rc = 0;

    if (prepare_slice_insert(w, 1, &w->st[ST_SLICE]) != SQLITE_OK ||
        prepare_slice_insert(w, SLICE_ROWS, &w->st[ST_SLICES]) != SQLITE_OK)
        rc = fail_sql(w, err, "preparing statements");
    for (int i = 0; i < ST__COUNT && rc == 0; i++)
        if (stmt_sql[i] && sqlite3_prepare_v3(w->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                                              &w->st[i], NULL) != SQLITE_OK)
            rc = fail_sql(w, err, "preparing statements");
    return rc;
}

static int open_schema(struct mrg_writer *w, struct hm_err *err)
{
    int rc = exec(w, "BEGIN", err, "starting the load");

    if (rc == 0)
        rc = exec(w, hm_sql_schema, err, "creating the schema");
    if (rc == 0)
        rc = prepare_statements(w, err);
    for (int c = 0; c < HM_CAT__COUNT && rc == 0; c++) {
        sqlite3_bind_int(w->st[ST_CATEGORY], 1, c);
        sqlite3_bind_text(w->st[ST_CATEGORY], 2, hm_cat_name((enum hm_cat)c), -1, SQLITE_STATIC);
        rc = step(w, w->st[ST_CATEGORY], err, "storing categories");
    }
    return rc;
}

struct mrg_writer *mrg_writer_open(const char *final_path, struct hm_err *err)
{
    struct mrg_writer *w = calloc(1, sizeof *w);
    size_t len = final_path ? strlen(final_path) : 0;

    if (!len || len > PATH_MAX) {
        free(w);
        hm_err_set(err, HM_EINVAL, final_path, -1, "invalid output path");
        return NULL;
    }
    if (!w || !(w->final_path = strdup(final_path)) || !(w->tmp_path = malloc(len + 32))) {
        hm_err_set(err, HM_ENOMEM, final_path, -1, "out of memory");
        goto fail;
    }
    snprintf(w->tmp_path, len + 32, "%s.tmp-%ld", final_path, (long)getpid());
    if (!(w->strings = hm_strtab_new())) {
        hm_err_set(err, HM_ENOMEM, final_path, -1, "out of memory");
        goto fail;
    }
    w->next_slice = w->next_track = 1;
    w->page_size = PAGE_SIZE_BYTES;
    if (open_db(w, err) || open_schema(w, err))
        goto fail;
    return w;
fail:
    if (w && w->tmp_path)
        mrg_writer_abort(w);
    else if (w)
        writer_free(w);
    return NULL;
}

/* Makes the closed temporary file durable and moves it into place; the
 * directory fsync is best effort (the data itself is already synced). */
static int publish(struct mrg_writer *w, struct hm_err *err)
{
    char dir[PATH_MAX + 1], *slash;
    int fd = open(w->tmp_path, O_RDONLY | O_CLOEXEC);

    if (fd < 0 || fsync(fd) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return hm_err_set(err, HM_EIO, w->final_path, -1, "syncing %s: %s", w->tmp_path,
                          strerror(e));
    }
    close(fd);
    if (rename(w->tmp_path, w->final_path) != 0)
        return hm_err_set(err, HM_EIO, w->final_path, -1, "renaming %s: %s", w->tmp_path,
                          strerror(errno));
    snprintf(dir, sizeof dir, "%s", w->final_path);
    slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    fd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    return 0;
}

int mrg_writer_finish(struct mrg_writer *w, struct hm_err *err)
{
    int rc = w->failed ? fail(w, err, HM_EINVAL, -1, "the writer failed earlier") : 0;

    if (rc == 0)
        rc = write_dimensions(w, err);
    if (rc == 0)
        rc = exec(w, hm_sql_indexes, err, "building indexes");
    if (rc == 0)
        rc = exec(w, hm_sql_views, err, "creating views");
    for (size_t i = 0; i < sizeof finish_sql / sizeof *finish_sql && rc == 0; i++) {
        /* A live file may have readers (htamerge serve): then it stays WAL. */
        if (w->live && strstr(finish_sql[i], "journal_mode"))
            sqlite3_exec(w->db, finish_sql[i], NULL, NULL, NULL);
        else
            rc = exec(w, finish_sql[i], err, "finishing the database");
    }
    if (rc == 0) {
        for (int i = 0; i < ST__COUNT; i++) {
            sqlite3_finalize(w->st[i]);
            w->st[i] = NULL;
        }
        if (sqlite3_close(w->db) != SQLITE_OK)
            rc = fail_sql(w, err, "closing the database");
        else
            w->db = NULL;
    }
    if (rc == 0 && !w->live)
        rc = publish(w, err);
    if (rc != 0) {
        mrg_writer_abort(w);
        return rc;
    }
    writer_free(w);
    return 0;
}

/* --- Live mode ------------------------------------------------------------ */

static const char *const live_pragmas[] = {
    "PRAGMA page_size = 65536",
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = NORMAL",
    "PRAGMA cache_size = -262144",
};

int mrg_writer_mark_failed(struct mrg_writer *w, const char *status)
{
    sqlite3_stmt *st = NULL;
    char text[320];
    int rc;

    if (!w->live || !w->db)
        return -1;
    take_reserve(w);
    snprintf(text, sizeof text, "%s%s%s", status, w->failure[0] ? ": " : "", w->failure);
    sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);   /* what failed is not kept */
    rc = sqlite3_prepare_v2(w->db, "INSERT OR REPLACE INTO meta (key, value) VALUES ('run_status', ?1)", -1,
                            &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_finalize(st);
    /* Out of the transaction the statement committed itself; start the one
     * the writer's close expects to find. */
    if (rc == SQLITE_OK)
        sqlite3_exec(w->db, "BEGIN", NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : -1;
}

struct mrg_writer *mrg_writer_open_live(const char *path, struct hm_err *err)
{
    struct mrg_writer *w = calloc(1, sizeof *w);
    char threads[64], side[PATH_MAX + 16];
    int rc;

    if (!w || !path || !*path || strlen(path) > PATH_MAX) {
        free(w);
        hm_err_set(err, w ? HM_EINVAL : HM_ENOMEM, path, -1, "invalid output path");
        return NULL;
    }
    w->live = 1;
    w->final_path = strdup(path);
    w->tmp_path = strdup(path);
    w->strings = hm_strtab_new();
    w->next_slice = w->next_track = 1;
    w->page_size = PAGE_SIZE_BYTES;
    if (!w->final_path || !w->tmp_path || !w->strings) {
        hm_err_set(err, HM_ENOMEM, path, -1, "out of memory");
        goto fail;
    }
    /* A previous file of that name is replaced, as ingest does. */
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    rc = sqlite3_open_v2(path, &w->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                         NULL);
    if (rc != SQLITE_OK) {
        hm_err_set(err, HM_EIO, path, -1, "cannot create: %s",
                   w->db ? sqlite3_errmsg(w->db) : sqlite3_errstr(rc));
        goto fail;
    }
    for (size_t i = 0; i < sizeof live_pragmas / sizeof *live_pragmas; i++)
        if (exec(w, live_pragmas[i], err, "setting up the database"))
            goto fail;
    if (exec(w, sort_threads_pragma(threads, sizeof threads), err, "setting up the database") ||
        open_schema(w, err))
        goto fail;
    hold_reserve(w);
    return w;
fail:
    close_db(w);
    writer_free(w);
    return NULL;
}

int mrg_writer_commit(struct mrg_writer *w, struct hm_err *err)
{
    int rc = w->failed ? fail(w, err, HM_EINVAL, -1, "the writer failed earlier") : 0;

    if (rc == 0)
        rc = write_dimensions_part(w, 0, err);
    if (rc == 0)
        rc = exec(w, "COMMIT", err, "committing");
    if (rc == 0)
        rc = exec(w, "BEGIN", err, "committing");
    return rc;
}

int mrg_writer_close_live(struct mrg_writer *w, struct hm_err *err)
{
    int rc = 0;

    if (!w->failed) {
        rc = write_dimensions(w, err);
        if (rc == 0)
            rc = exec(w, hm_sql_views, err, "creating views");
        if (rc == 0)
            rc = exec(w, "COMMIT", err, "committing");
    }
    mrg_writer_abort(w);
    return rc;
}

/* --- Reopening a finished file (re-analysis) ------------------------------ */

/* Checks that the file is an htamerge database; its views are dropped so
 * that _finish recreates them (views.sql has no IF NOT EXISTS, and a newer
 * htamerge brings newer views). The first read is where SQLite notices a
 * file that is not a database at all. */
static int reopen_check(struct mrg_writer *w, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    char *drops = NULL;
    int rc, found = 0;

    if (sqlite3_prepare_v2(w->db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &st,
                           NULL) != SQLITE_OK) {
        rc = hm_err_set(err, HM_EFORMAT, w->final_path, -1, "not an htamerge database: %s",
                        sqlite3_errmsg(w->db));
        w->failed = 1;
        return rc;
    }
    found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    if (!found) {
        w->failed = 1;
        return hm_err_set(err, HM_EFORMAT, w->final_path, -1,
                          "not an htamerge database: meta has no schema_version");
    }
    if (sqlite3_prepare_v2(w->db,
                           "SELECT group_concat('DROP VIEW \"' || name || '\"', ';') FROM sqlite_master "
                           "WHERE type = 'view'", -1, &st, NULL) != SQLITE_OK)
        return fail_sql(w, err, "listing views");
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        drops = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    rc = drops ? exec(w, drops, err, "dropping views") : 0;
    free(drops);
    return rc;
}

struct mrg_writer *mrg_writer_reopen(const char *path, struct hm_err *err)
{
    struct mrg_writer *w = calloc(1, sizeof *w);
    int rc;

    if (!w || !path || !*path || strlen(path) > PATH_MAX) {
        hm_err_set(err, w ? HM_EINVAL : HM_ENOMEM, path, -1, "%s",
                   w ? "invalid database path" : "out of memory");
        free(w);
        return NULL;
    }
    /* In place like a live file: _finish neither renames nor publishes,
     * and _abort keeps the file (its transaction rolls back on close). */
    w->live = 1;
    w->reopened = 1;
    w->final_path = strdup(path);
    w->tmp_path = strdup(path);
    w->strings = hm_strtab_new();
    w->page_size = PAGE_SIZE_BYTES;
    if (!w->final_path || !w->tmp_path || !w->strings) {
        hm_err_set(err, HM_ENOMEM, path, -1, "out of memory");
        goto fail;
    }
    rc = sqlite3_open_v2(path, &w->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        int e = w->db ? sqlite3_system_errno(w->db) : 0;
        hm_err_set(err, HM_EIO, path, -1, "cannot open: %s%s%s",
                   w->db ? sqlite3_errmsg(w->db) : sqlite3_errstr(rc), e ? ": " : "",
                   e ? strerror(e) : "");
        goto fail;
    }
    /* Not the load's journal_mode OFF: a failed re-analysis must roll back
     * to the file as it was, which only a journal can do. */
    if (exec(w, "PRAGMA cache_size = -262144", err, "setting up the database") ||
        exec(w, "BEGIN IMMEDIATE", err, "starting the re-analysis") || reopen_check(w, err) ||
        prepare_statements(w, err))
        goto fail;
    return w;
fail:
    close_db(w);
    writer_free(w);
    return NULL;
}

/* The clock models of a realign pass, by rank and by track. */
int mrg_writer_flush(struct mrg_writer *w, struct hm_err *err)
{
    if (w->failed)
        return fail(w, err, HM_EINVAL, -1, "the writer failed earlier");
    return write_dimensions_part(w, 0, err);
}

sqlite3 *mrg_writer_db(struct mrg_writer *w)
{
    return w->db;
}

struct realign {
    const struct mrg_realign_rank *ranks; /* borrowed, indexed by rank; fn NULL = keep */
    int nranks;
    int *track_rank;                      /* owned: tracks.id -> rank, -1 none */
    int64_t ntracks;
};

/* The aligned time of raw + applied t of rank, read by row (-1: none);
 * end: t ends an interval that started at start. */
static int64_t realign_one(const struct realign *ra, int rank, int64_t row, int64_t start, int64_t t, int end)
{
    const struct mrg_realign_rank *m;
    int64_t peer;

    if (rank < 0 || rank >= ra->nranks || !ra->ranks[rank].offset_at)
        return t;
    m = &ra->ranks[rank];
    peer = t - m->applied_offset_ns;
    if (m->row_offset_at)
        return peer + m->row_offset_at(m->ctx, row, start - m->applied_offset_ns, peer, end);
    return peer + m->offset_at(m->ctx, peer);
}

static int track_rank(const struct realign *ra, sqlite3_value *v)
{
    int64_t track = sqlite3_value_int64(v);
    return track >= 0 && track < ra->ntracks ? ra->track_rank[track] : -1;
}

static int64_t row_of(int argc, sqlite3_value **argv, int at)
{
    return argc > at && sqlite3_value_type(argv[at]) != SQLITE_NULL ? sqlite3_value_int64(argv[at]) : -1;
}

/* hm_realign(rank, t [, row]) and hm_realign_track(track, t [, row]). */
static void sql_realign(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    const struct realign *ra = sqlite3_user_data(cx);
    int64_t t = sqlite3_value_int64(argv[1]);

    if (sqlite3_value_type(argv[1]) == SQLITE_NULL) {
        sqlite3_result_null(cx);
        return;
    }
    sqlite3_result_int64(cx, realign_one(ra, (int)sqlite3_value_int64(argv[0]), row_of(argc, argv, 2), t, t, 0));
}

static void sql_realign_track(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    const struct realign *ra = sqlite3_user_data(cx);
    int64_t t = sqlite3_value_int64(argv[1]);

    sqlite3_result_int64(cx, realign_one(ra, track_rank(ra, argv[0]), row_of(argc, argv, 2), t, t, 0));
}

/* hm_realign_end(rank, row, start, end) and hm_realign_track_end(track,
 * row, start, end): the end of an interval, which a clock step may put on
 * a later clock than its start. */
static void realign_end_result(sqlite3_context *cx, const struct realign *ra, int rank, sqlite3_value **argv)
{
    int64_t start = sqlite3_value_int64(argv[2]), end = sqlite3_value_int64(argv[3]);

    if (sqlite3_value_type(argv[3]) == SQLITE_NULL)
        sqlite3_result_null(cx);
    else if (sqlite3_value_type(argv[2]) == SQLITE_NULL)
        sqlite3_result_int64(cx, realign_one(ra, rank, row_of(4, argv, 1), end, end, 0));
    else
        sqlite3_result_int64(cx, realign_one(ra, rank, row_of(4, argv, 1), start, end, 1));
}

static void sql_realign_end(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    (void)argc;
    realign_end_result(cx, sqlite3_user_data(cx), (int)sqlite3_value_int64(argv[0]), argv);
}

static void sql_realign_track_end(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    const struct realign *ra = sqlite3_user_data(cx);

    (void)argc;
    realign_end_result(cx, ra, track_rank(ra, argv[0]), argv);
}

/* The functions writer_realign.sql calls, registered for one pass. */
static const struct {
    const char *name;
    int nargs;
    void (*fn)(sqlite3_context *, int, sqlite3_value **);
} realign_fns[] = {
    {"hm_realign", 2, sql_realign},           {"hm_realign", 3, sql_realign},
    {"hm_realign_track", 2, sql_realign_track}, {"hm_realign_track", 3, sql_realign_track},
    {"hm_realign_end", 4, sql_realign_end},   {"hm_realign_track_end", 4, sql_realign_track_end},
};

int mrg_writer_realign_all(struct mrg_writer *w, const struct mrg_realign_rank *ranks, int nranks,
                           struct hm_err *err)
{
    struct realign ra = {ranks, nranks, NULL, w->next_track};
    int rc, any = 0;

    for (int r = 0; r < nranks; r++)
        any |= ranks[r].offset_at != NULL;
    if (!any)
        return 0;
    /* Re-timing stored data twice would compound the fits (and w knows
     * none of a reopened file's tracks): re-analyse with no_refine. */
    if (w->reopened)
        return fail(w, err, HM_EINVAL, -1, "a reopened database cannot be re-timed");
    rc = write_dimensions_part(w, 0, err);
    if (rc)
        return rc;
    ra.track_rank = malloc((size_t)(ra.ntracks ? ra.ntracks : 1) * sizeof *ra.track_rank);
    if (!ra.track_rank)
        return fail(w, err, HM_ENOMEM, -1, "out of memory");
    for (int64_t t = 0; t < ra.ntracks; t++)
        ra.track_rank[t] = -1;
    for (int r = 0; r < w->nranks; r++)
        for (size_t i = 0; i < w->ranks[r].tracks.n; i++)
            ra.track_rank[w->ranks[r].tracks.v[i].id] = r;
    rc = 0;
    for (size_t i = 0; i < sizeof realign_fns / sizeof *realign_fns && rc == 0; i++)
        if (sqlite3_create_function(w->db, realign_fns[i].name, realign_fns[i].nargs,
                                    SQLITE_UTF8 | SQLITE_DETERMINISTIC, &ra, realign_fns[i].fn, NULL,
                                    NULL) != SQLITE_OK)
            rc = fail_sql(w, err, "registering the clock function");
    if (rc == 0)
        rc = exec(w, hm_sql_writer_realign, err, "applying the clock model");
    for (size_t i = 0; i < sizeof realign_fns / sizeof *realign_fns; i++)
        sqlite3_create_function(w->db, realign_fns[i].name, realign_fns[i].nargs, SQLITE_UTF8, NULL, NULL, NULL,
                                NULL);
    free(ra.track_rank);
    return rc;
}

int mrg_writer_build_indexes(struct mrg_writer *w, struct hm_err *err)
{
    int rc = write_dimensions_part(w, 0, err);
    return rc ? rc : exec(w, hm_sql_indexes, err, "building indexes");
}

int mrg_writer_set_clock_step(struct mrg_writer *w, int rank, int64_t step_ns, int64_t step_at_ns,
                              struct hm_err *err)
{
    struct rank_state *r = rank_get(w, rank);

    if (!r)
        return fail(w, err, HM_ENOMEM, rank, "out of memory");
    r->clk.step_ns = step_ns;
    r->clk.step_at_ns = step_at_ns;
    return 0;
}

int mrg_writer_update_clock(struct mrg_writer *w, int rank, int64_t offset_ns, double drift_ppm,
                            int64_t ref_ns, const char *method, int64_t uncertainty_ns,
                            struct hm_err *err)
{
    struct rank_state *r;

    if (!valid_method(method))
        return fail(w, err, HM_EINVAL, rank, "unknown clock method");
    r = rank_get(w, rank);
    if (!r)
        return fail(w, err, HM_ENOMEM, rank, "out of memory");
    r->clk.set = 1;
    r->clk.offset_ns = offset_ns;
    r->clk.drift_ppm = drift_ppm;
    r->clk.ref_ns = ref_ns;
    r->clk.uncertainty_ns = uncertainty_ns;
    snprintf(r->clk.method, sizeof r->clk.method, "%s", method);
    return 0;
}

/* Interns a global string into b, once per id (map: global id -> batch
 * id, 0 = not yet); UINT32_MAX when out of memory. */
static hm_strid to_batch(const struct mrg_writer *w, struct hm_batch *b, sqlite3_stmt *st, int col,
                         hm_strid *map)
{
    size_t len;
    const char *s;
    hm_strid g;

    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return 0;
    g = (hm_strid)sqlite3_column_int64(st, col);
    if (g < hm_strtab_count(w->strings) && map[g])
        return map[g];
    s = hm_strtab_get(w->strings, g, &len);
    hm_strid id = hm_batch_intern(b, s, len);
    if (g < hm_strtab_count(w->strings) && id != UINT32_MAX)
        map[g] = id;
    return id;
}

static int64_t col_opt(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? HM_NONE : sqlite3_column_int64(st, col);
}

static int load_slices(struct mrg_writer *w, int rank, struct hm_batch *b, int64_t **ids,
                       struct hm_err *err)
{
    size_t cap = 0;
    sqlite3_stmt *st = NULL;
    hm_strid *map = calloc(hm_strtab_count(w->strings) + 1, sizeof *map);
    int rc = map ? sqlite3_prepare_v2(w->db, hm_sql_writer_load_slices, -1, &st, NULL) : SQLITE_NOMEM;

    if (rc != SQLITE_OK) {
        free(map);
        return fail_sql(w, err, "loading a rank");
    }
    sqlite3_bind_int(st, 1, rank);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t t = hm_batch_track(b, (uint32_t)sqlite3_column_int(st, 8), sqlite3_column_int64(st, 9),
                                   sqlite3_column_int64(st, 10));
        struct hm_slice *s = HM_VEC_PUSH(b->slices);
        if (t < 0 || !s) {
            sqlite3_finalize(st);
            free(map);
            return fail(w, err, HM_ENOMEM, rank, "out of memory loading a rank");
        }
        s->ts = sqlite3_column_int64(st, 0);
        s->dur = sqlite3_column_int64(st, 1);
        s->name = to_batch(w, b, st, 2, map);
        s->cat = (uint16_t)sqlite3_column_int(st, 3);
        s->correlation = col_opt(st, 4);
        s->external_id = col_opt(st, 5);
        s->bytes = col_opt(st, 6);
        s->flags = (uint16_t)sqlite3_column_int(st, 7);
        s->track = (uint32_t)t;
        s->iteration = HM_NONE;
        if (grow((void **)ids, &cap, b->slices.n, sizeof **ids)) {
            sqlite3_finalize(st);
            free(map);
            return fail(w, err, HM_ENOMEM, rank, "out of memory loading a rank");
        }
        (*ids)[b->slices.n - 1] = sqlite3_column_int64(st, 11);
        if (s->name == UINT32_MAX) {
            sqlite3_finalize(st);
            free(map);
            return fail(w, err, HM_ENOMEM, rank, "out of memory loading a rank");
        }
    }
    sqlite3_finalize(st);
    free(map);
    return rc == SQLITE_DONE ? 0 : fail_sql(w, err, "loading a rank");
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int load_steps(struct mrg_writer *w, int rank, struct hm_batch *b, const int64_t *ids,
                      struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(w->db, hm_sql_writer_load_steps, -1, &st, NULL);

    if (rc != SQLITE_OK)
        return fail_sql(w, err, "loading steps");
    sqlite3_bind_int(st, 1, rank);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct hm_step *p = HM_VEC_PUSH(b->steps);
        if (!p) {
            sqlite3_finalize(st);
            return fail(w, err, HM_ENOMEM, rank, "out of memory loading steps");
        }
        p->number = sqlite3_column_int64(st, 0);
        p->ts = sqlite3_column_int64(st, 1);
        p->dur = sqlite3_column_int64(st, 2);
        int64_t id = sqlite3_column_int64(st, 3);
        const int64_t *hit = ids ? bsearch(&id, ids, b->slices.n, sizeof *ids, cmp_i64) : NULL;
        p->slice = hit ? (uint32_t)(hit - ids) : UINT32_MAX; /* position in load order */
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : fail_sql(w, err, "loading steps");
}

/* The rank's CUPTI recording samples: the analyses leave paused time out
 * of GPU idle. Other counters (memory) are not analysed and stay behind. */
static int load_recording(struct mrg_writer *w, int rank, struct hm_batch *b, struct hm_err *err)
{
    static const char name[] = "htamerge/cupti recording";
    sqlite3_stmt *st = NULL;
    hm_strid id = 0;
    int rc = sqlite3_prepare_v2(w->db, hm_sql_writer_load_recording, -1, &st, NULL);

    if (rc != SQLITE_OK)
        return fail_sql(w, err, "loading CUPTI pauses");
    sqlite3_bind_int(st, 1, rank);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct hm_counter *k = HM_VEC_PUSH(b->counters);
        if (k && !id)
            id = hm_batch_intern(b, name, sizeof name - 1);
        if (!k || id == UINT32_MAX) {
            sqlite3_finalize(st);
            return fail(w, err, HM_ENOMEM, rank, "out of memory loading CUPTI pauses");
        }
        k->ts = sqlite3_column_int64(st, 0);
        k->value = sqlite3_column_double(st, 1);
        k->device = sqlite3_column_int(st, 2);
        k->name = id;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : fail_sql(w, err, "loading CUPTI pauses");
}

int mrg_writer_load_rank(struct mrg_writer *w, int rank, struct hm_batch **out, struct hm_err *err)
{
    struct hm_batch *b;
    int rc;

    *out = NULL;
    if (rank < 0 || rank >= w->nranks || !w->ranks[rank].known || !w->ranks[rank].batches)
        return HM_EEMPTY;
    rc = write_dimensions_part(w, 0, err);
    if (rc)
        return rc;
    b = hm_batch_new();
    if (!b)
        return fail(w, err, HM_ENOMEM, rank, "out of memory");
    b->info.rank = rank;
    b->info.flags = w->ranks[rank].trace_flags & ~HM_INFO_F_FRACTIONAL_TS;
    int64_t *ids = NULL;
    rc = load_slices(w, rank, b, &ids, err);
    if (rc == 0)
        rc = load_steps(w, rank, b, ids, err);
    if (rc == 0)
        rc = load_recording(w, rank, b, err);
    free(w->loaded_ids);
    w->loaded_ids = rc == 0 ? ids : NULL;
    w->nloaded = rc == 0 ? b->slices.n : 0;
    if (rc)
        free(ids);
    if (rc) {
        hm_batch_free(b);
        return rc;
    }
    *out = b;
    return 0;
}

int mrg_writer_store_iterations(struct mrg_writer *w, const struct hm_batch *b, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;

    if (b->slices.n == 0 && w->nloaded == 0)   /* a rank that sent no slice: nothing to store */
        return 0;
    if (!w->loaded_ids || b->slices.n != w->nloaded)
        return fail(w, err, HM_EINVAL, b->info.rank, "storing iterations of a batch that was not loaded");
    if (sqlite3_prepare_v2(w->db, "UPDATE slices SET iteration = ?2 WHERE id = ?1", -1, &st, NULL) != SQLITE_OK)
        return fail_sql(w, err, "storing iterations");
    for (size_t i = 0; i < b->slices.n; i++) {
        if (b->slices.v[i].iteration == HM_NONE)
            continue;
        sqlite3_bind_int64(st, 1, w->loaded_ids[i]);
        sqlite3_bind_int(st, 2, b->slices.v[i].iteration);
        rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE) {
            sqlite3_finalize(st);
            return fail_sql(w, err, "storing iterations");
        }
    }
    sqlite3_finalize(st);
    return 0;
}
