/* The writer's internals, shared by the files of store/ that implement
 * writer.h (one concept each: writer.c lifecycle and failures,
 * rank_state.c, rows.c, analysis_rows.c, in_place.c, retime.c,
 * readback.c). Callers use writer.h only. */
#ifndef HM_STORE_WRITER_INT_H
#define HM_STORE_WRITER_INT_H

#include <stdint.h>

#include <sqlite3.h>

#include "common/strtab.h"
#include "common/vec.h"
#include "store/slice_nesting.h"
#include "store/writer.h"

#define RANK_MAX (1 << 20)          /* refuse rank numbers beyond this */
#define PAGE_SIZE_BYTES 65536       /* as in load_pragmas (writer.c) */
#define UNMAPPED UINT32_MAX         /* batch string not yet mapped */

/* SQLite's page cache for every writer connection, and with it the memory
 * CREATE INDEX sorts in before it spills to temporary files. The writer
 * appends rows and reads a rank back soon after writing it, so a small
 * cache misses little: on 2 cores 16 MiB loaded 1,024 ranks (1 M slices)
 * and 64 x 55 MB of traces (9.7 M slices) as fast as 256 MiB did (fewer
 * page faults), and 256 MiB of pages, filled as the file grew, were most
 * of ingest's peak memory (bench/RESULTS.md, "Scale"). bench/run.sh reads
 * the value from here. */
#define WR_CACHE_PRAGMA "PRAGMA cache_size = -16384"

/* Slices go in SLICE_ROWS rows per statement (see rows.c). */
#define SLICE_ROWS 32
#define SLICE_COLS 14

/* Prepared statements, one per kind of row (their SQL: writer.c). */
enum {
    ST_SLICE, ST_SLICES, ST_COLL, ST_COUNTER, ST_STEP, ST_STRING, ST_CATEGORY, ST_TRACK, ST_RANK,
    ST_FILE, ST_SKIPPED, ST_META, ST_A_TEMPORAL, ST_A_OVERLAP, ST_A_IDLE, ST_A_KCLASS,
    ST_A_KLABEL, ST_A_KERNEL, ST_A_STEP, ST_DEL_TEMPORAL, ST_DEL_OVERLAP, ST_DEL_IDLE,
    ST_DEL_KCLASS, ST_DEL_KLABEL, ST_DEL_KERNEL, ST_PAGES, ST_RANK_SLICES, ST_SLICE_ID, ST__COUNT
};

/* The writer's state: the diagram is at the top of writer.c. */
enum wr_state {
    WR_FRESH,      /* a new file under its temporary name; _finish publishes it */
    WR_LIVE,       /* a new file written in place (WAL), committed as it goes */
    WR_REOPENED,   /* an existing file in place, one transaction, analyses only */
    WR_FAILED,     /* a call failed while storing: w->first_err says why */
    WR_CLOSED,     /* the connection is closed; only publishing and freeing remain */
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
/* Consecutive slices.id values [first, first + n). */
struct id_span {
    int64_t first, n;
};

struct rank_state {
    int known;               /* 1 once any call named the rank */
    int complete;            /* -1: not set, then "has a batch" */
    uint64_t batches;
    uint64_t slices;         /* stored, all batches */
    struct rank_clock clk;
    int64_t base_seen;       /* base_time_ns of its first batch that had one */
    int64_t shift_ns;        /* guessed clock correction its rows carry (set_time_shift) */
    int retimed;             /* 0: rows carry shift_ns; 1: re-timed by final; -1: by a model
                                that is not linear (mrg_writer_final_model) */
    struct mrg_lin_model final;
    int64_t pid;
    int32_t world_size;
    uint32_t trace_flags;    /* HM_INFO_F_* of its batches, or-ed */
    hm_strid host, backend, rank_source, pg_config, device_props, nccl_version, trace_meta;
    HM_VEC(struct rank_track) tracks;
    HM_VEC(struct rank_file) files;
    HM_VEC(struct id_span) slice_spans;  /* slices.id of its batches, in order */
};

/* Scratch for one add_batch call, reused across calls (owned by the writer). */
struct scratch {
    hm_strid *smap;          /* batch string id -> w->strings id, UNMAPPED */
    size_t smap_cap;
    int64_t *tmap;           /* batch track index -> tracks.id */
    size_t tmap_cap;
    struct hm_nesting nest;  /* storage order, depth and parent of the batch's slices */
};

struct mrg_writer {
    sqlite3 *db;                     /* owned */
    enum wr_state state;
    struct hm_err first_err;         /* in WR_FAILED: the failure that put it there */
    int64_t *loaded_ids;             /* owned: slices.id of each slice of the last
                                        mrg_writer_load_rank batch, in its order */
    size_t nloaded;
    char *final_path;                /* owned */
    char *tmp_path;                  /* owned; NULL when written in place */
    sqlite3_stmt *st[ST__COUNT];     /* owned */
    struct hm_strtab *strings;       /* owned; its ids are strings.id */
    struct rank_state *ranks;        /* owned, indexed by rank */
    int nranks;                      /* entries allocated in ranks */
    int64_t next_slice, next_track;  /* next slices.id / tracks.id */
    int64_t page_size;
    char *reserve_path;              /* owned; live: space held back (in_place.c) */
    void (*tap)(void *ctx, const struct mrg_slice_row *row); /* mrg_writer_set_slice_tap */
    void *tap_ctx;
    int index_only;                  /* mrg_writer_set_index_only */
    unsigned char *keep;             /* index mode: which slices of the batch are stored */
    size_t keep_cap;
    uint32_t strings_written;        /* ids below this are rows of `strings` */
    int64_t *first_slice;            /* owned, by strings.id: the first slices.id of that
                                        name, 0 none (name_first_slices); NULL when not kept */
    size_t first_cap;
    int first_lost;                  /* out of memory while noting them: not written */
    struct mrg_writer_stats stats;
    struct scratch sc;
    int wb_fd;                       /* writeback.c: -1 not open yet, -2 off */
    int64_t wb_size;                 /* file size at the last writeback */
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

/* Keeps the first known value of a string field. */
static inline void wr_keep_sid(hm_strid *dst, hm_strid v)
{
    if (*dst == 0)
        *dst = v;
}

/* --- writer.c: states, failures, statements ---------------------------- */

/* Written in place (live or reopened): no temporary file to publish or delete. */
static inline int wr_in_place(const struct mrg_writer *w)
{
    return w->tmp_path == NULL;
}

/* 0, or the first failure's code with err a copy of it (WR_FAILED). */
int wr_usable(struct mrg_writer *w, struct hm_err *err);
/* Enters WR_FAILED (keeping an earlier first failure) and fills err. */
int wr_fail(struct mrg_writer *w, struct hm_err *err, int code, int rank, const char *msg);
/* SQLite refused: wr_fail with the connection's error mapped to a code. */
int wr_fail_sql(struct mrg_writer *w, struct hm_err *err, const char *what);
/* Refuses a call for its arguments; the writer is unchanged. */
int wr_refuse(struct mrg_writer *w, struct hm_err *err, int code, int rank, const char *msg);
int wr_step(struct mrg_writer *w, sqlite3_stmt *st, struct hm_err *err, const char *what);
int wr_exec(struct mrg_writer *w, const char *sql, struct hm_err *err, const char *what);
/* v_comms, v_critical_path and the like: the report topics' own queries as
 * views (report_views.c). */
int wr_create_report_views(struct mrg_writer *w, struct hm_err *err);
int wr_prepare_statements(struct mrg_writer *w, struct hm_err *err);
int wr_open_schema(struct mrg_writer *w, struct hm_err *err);
const char *wr_sort_threads_pragma(char *buf, size_t len);
/* A writer in state FRESH with its strings table and paths (tmp_path NULL:
 * written in place), or NULL when out of memory. */
struct mrg_writer *wr_alloc(const char *final_path, const char *tmp_path);
void wr_close_db(struct mrg_writer *w);
void wr_free(struct mrg_writer *w);

/* Binders: NULL for HM_NONE, string id 0, non-finite reals, empty text. */
void wr_bind_opt(sqlite3_stmt *st, int i, int64_t v);
void wr_bind_sid(sqlite3_stmt *st, int i, hm_strid id);
void wr_bind_real(sqlite3_stmt *st, int i, double v);
void wr_bind_str(sqlite3_stmt *st, int i, const struct hm_strtab *t, hm_strid id);
void wr_bind_cstr(sqlite3_stmt *st, int i, const char *s);

/* Interns into w->strings; 0 (and WR_FAILED) when out of memory. */
hm_strid wr_intern(struct mrg_writer *w, const char *s, size_t len);
/* A batch string id in w->strings, interned on first use (w->sc.smap). */
hm_strid wr_gstr(struct mrg_writer *w, const struct hm_batch *b, hm_strid id);

/* --- load_index.c: the slice index kept during a fresh load ------------- */

/* Creates slices_track_ts (as sql/indexes.sql has it) before any slice. */
int wr_create_load_index(struct mrg_writer *w, struct hm_err *err);
/* Drops it (if there) before every slice is re-timed; _finish rebuilds it. */
int wr_drop_load_index(struct mrg_writer *w, struct hm_err *err);
/* Run after ANALYZE: its row count exact, whichever way the index was made. */
extern const char wr_load_index_stat_sql[];

/* --- writeback.c: the temporary file written out as it grows ------------- */

/* After a batch: starts the kernel's writes of what the file holds, every
 * 64 MiB of growth (FRESH only; best effort). */
void wr_writeback(struct mrg_writer *w);
void wr_writeback_close(struct mrg_writer *w);

/* --- rank_state.c -------------------------------------------------------- */

struct rank_state *wr_rank_get(struct mrg_writer *w, int rank);
int wr_check_rank(struct mrg_writer *w, int rank, struct hm_err *err);
int64_t wr_align_ts(const struct bctx *c, int64_t raw);
void wr_merge_info(struct mrg_writer *w, struct bctx *c);
int wr_merge_file(struct mrg_writer *w, struct bctx *c);

/* --- rows.c / analysis_rows.c / in_place.c ------------------------------- */

int wr_prepare_slice_insert(struct mrg_writer *w, int rows, sqlite3_stmt **st);
/* Strings (new ones), ranks and tracks; files: also the per-file rows. */
int wr_write_dimensions(struct mrg_writer *w, int files, struct hm_err *err);
int wr_write_rank_dimensions(struct mrg_writer *w, int rank, struct hm_err *err);
void wr_take_reserve(struct mrg_writer *w);

#endif
