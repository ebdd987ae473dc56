/* Sharded ingest (ingest_shards.h): the communicators, the two writer
 * roles around mrg_ingest_mpi_run, and the conversation at the end: rank
 * 0 sends each host writer the final clock model of every rank, the host
 * writers re-time and finish their shards and report back, and rank 0
 * writes the `shards` table and finishes the index last. Every step runs
 * on every rank whatever failed before it, so no rank waits forever. */
#include "ingest_shards.h"

#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "collector/ingest_send.h"
#include "collector/link_comm.h"
#include "common/protocol.h"
#include "hm_sql.h"
#include "ingest_mpi_int.h"

/* One rank's clock as the index writer settled it: the model that takes
 * its rows as a host writer stored them (unshifted) to their final times,
 * and the ranks row's clock columns. */
struct shard_clock {
    int64_t rank;
    double offset, slope;
    int64_t ref;
    int64_t clock_offset_ns, clock_ref_ns, uncertainty_ns;
    double drift_ppm;
    char method[16];
};

struct clocks_head {
    int64_t status; /* 0, or the index writer failed: abort the shard */
    int64_t n;
};

/* What a host writer tells rank 0 once its shard is finished (or not),
 * followed by nranks int32 ranks. */
struct shard_report {
    int64_t status;  /* 0 written, 1 no files on the host, < 0 failed */
    int64_t slices, rows, bytes, nranks;
    int64_t first_ns, end_ns; /* its slices' extent, at the final times */
    char host[64];
    char msg[1024];
};

void mrg_shard_dir(const char *output, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s.d", output);
}

void mrg_shard_path(const char *output, const char *host, char *buf, size_t cap)
{
    char name[64];
    size_t i = 0;

    for (; host[i] && i + 1 < sizeof name; i++) {
        char c = host[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                 c == '-' || c == '_';
        name[i] = ok && !(i == 0 && c == '.') ? c : '_';
    }
    name[i] = 0;
    snprintf(buf, cap, "%s.d/%s.db", output, name);
}

/* --- The host writer ------------------------------------------------------ */

struct host_ctx {
    MPI_Comm up;
    const char *index;    /* the index's path, for the shard's meta */
    struct shard_report rep;
    int32_t *ranks; /* owned: the shard's ranks */
};

static int64_t lin_at(void *ctx, int64_t t)
{
    const struct mrg_lin_model *m = ctx;
    return (int64_t)llround(m->offset + m->slope * (double)(t - m->ref));
}

/* Receives the index writer's clocks (always: it sends them whatever
 * happened); *out owned by the caller. */
static int recv_clocks(MPI_Comm up, struct clocks_head *h, struct shard_clock **out)
{
    MPI_Status st;
    int len = 0;
    char *buf;

    MPI_Probe(0, HM_TAG_SHARD_CLOCKS, up, &st);
    MPI_Get_count(&st, MPI_BYTE, &len);
    buf = malloc(len > 0 ? (size_t)len : 1);
    if (!buf)
        MPI_Abort(MPI_COMM_WORLD, 1); /* a conversation half done cannot be unwound */
    MPI_Recv(buf, len, MPI_BYTE, 0, HM_TAG_SHARD_CLOCKS, up, MPI_STATUS_IGNORE);
    memcpy(h, buf, sizeof *h);
    *out = malloc((size_t)(h->n > 0 ? h->n : 1) * sizeof **out);
    if (!*out)
        MPI_Abort(MPI_COMM_WORLD, 1);
    memcpy(*out, buf + sizeof *h, (size_t)h->n * sizeof **out);
    free(buf);
    return 0;
}

/* The shard's ranks, for the report. */
static int list_ranks(struct host_ctx *hc, struct mrg_writer *w, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 16, n = 0;
    int rc = mrg_writer_flush(w, err);

    if (rc)
        return rc;
    if (sqlite3_prepare_v2(mrg_writer_db(w), "SELECT rank FROM ranks ORDER BY rank", -1, &st, NULL) != SQLITE_OK)
        return hm_err_set(err, HM_ESQL, NULL, -1, "listing the shard's ranks: %s",
                          sqlite3_errmsg(mrg_writer_db(w)));
    hc->ranks = malloc(cap * sizeof *hc->ranks);
    while (hc->ranks && sqlite3_step(st) == SQLITE_ROW) {
        if (n == cap) {
            int32_t *r = realloc(hc->ranks, 2 * cap * sizeof *r);
            if (!r)
                break;
            hc->ranks = r;
            cap *= 2;
        }
        hc->ranks[n++] = sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
    hc->rep.nranks = (int64_t)n;
    return hc->ranks ? 0 : hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
}

/* Re-times the shard's ranks to the index writer's clocks (those it
 * stored with the index writer's guess, as refinement found them, not at
 * all) and copies its clock columns, so that the shard's times are the
 * index's. */
static int apply_clocks(struct host_ctx *hc, struct mrg_writer *w, const struct shard_clock *c, int64_t n,
                        struct hm_err *err)
{
    struct mrg_lin_model *m = calloc((size_t)n + 1, sizeof *m);
    struct mrg_realign_rank *ra = calloc((size_t)n + 1, sizeof *ra);
    int rc = m && ra ? 0 : hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");

    for (int64_t k = 0; rc == 0 && k < hc->rep.nranks; k++) {
        int64_t r = hc->ranks[k];
        if (r < 0 || r >= n || c[r].rank != r)
            rc = hm_err_set(err, HM_EFORMAT, NULL, -1, "the index writer sent no clock for rank %lld",
                            (long long)r);
        else if (c[r].slope != 0 || llround(c[r].offset) != mrg_writer_time_shift(w, (int)r)) {
            /* Rows at the guess this writer made (0 if none): moved to the fit. */
            m[r] = (struct mrg_lin_model){c[r].offset, c[r].slope, c[r].ref};
            ra[r] = (struct mrg_realign_rank){mrg_writer_time_shift(w, (int)r), lin_at, &m[r], NULL, &m[r]};
        }
    }
    if (rc == 0)
        rc = mrg_writer_realign_all(w, ra, (int)n, err);
    for (int64_t k = 0; rc == 0 && k < hc->rep.nranks; k++) {
        const struct shard_clock *x = &c[hc->ranks[k]];
        rc = mrg_writer_update_clock(w, (int)x->rank, x->clock_offset_ns, x->drift_ppm, x->clock_ref_ns,
                                     x->method, x->uncertainty_ns, err);
    }
    free(m);
    free(ra);
    return rc;
}

/* The shard's slices' extent for the index, which keeps too few slices to
 * know the run's (query/dbh.c takes the timeline's origin from it). */
static int extent(struct host_ctx *hc, struct mrg_writer *w, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;

    if (sqlite3_prepare_v2(mrg_writer_db(w), "SELECT min(ts), max(ts + dur) FROM slices", -1, &st, NULL) != SQLITE_OK)
        return hm_err_set(err, HM_ESQL, NULL, -1, "the shard's extent: %s", sqlite3_errmsg(mrg_writer_db(w)));
    if (sqlite3_step(st) == SQLITE_ROW) {
        hc->rep.first_ns = sqlite3_column_int64(st, 0);
        hc->rep.end_ns = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return 0;
}

static int host_before_finish(void *ctx, struct mrg_writer *w, int rc, struct hm_err *err)
{
    struct host_ctx *hc = ctx;
    struct shard_clock *c = NULL;
    struct clocks_head h;

    recv_clocks(hc->up, &h, &c);
    if (rc == 0 && w)
        rc = list_ranks(hc, w, err);
    if (rc == 0 && h.status != 0)
        rc = hm_err_set(err, HM_EINVAL, NULL, -1, "the index writer failed");
    if (rc == 0)
        rc = apply_clocks(hc, w, c, h.n, err);
    if (rc == 0)
        rc = extent(hc, w, err);
    /* The shard names its index (by file name: they move together) and host. */
    if (rc == 0)
        rc = mrg_writer_set_meta(w, "shard_of", strrchr(hc->index, '/') ? strrchr(hc->index, '/') + 1 : hc->index,
                                 err);
    if (rc == 0)
        rc = mrg_writer_set_meta(w, "shard_host", hc->rep.host, err);
    free(c);
    return rc;
}

static int64_t file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (int64_t)sb.st_size : -1;
}

static int host_writer(const struct col_ingest_list *list, MPI_Comm hcomm, MPI_Comm icomm,
                       const struct mrg_ingest_opts *opts, struct mrg_ingest_stats *stats, struct hm_err *err)
{
    char path[4096], dir[4096], line[1200];
    struct mrg_ingest_opts o = *opts;
    struct host_ctx hc = {.up = icomm, .index = opts->output};
    struct mrg_mpi_role role = {hcomm, icomm, 0, host_before_finish, &hc};
    char **names = calloc(list->nfiles + 1, sizeof *names);
    int rc = names ? 0 : hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");

    /* The names rank 0 and the readers know the files by (ingest_list.h). */
    for (size_t i = 0; rc == 0 && i < list->nfiles; i++) {
        size_t len = strlen(list->host) + strlen(list->files[i]) + 2;
        if (!(names[i] = malloc(len)))
            rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        else
            snprintf(names[i], len, "%s:%s", list->host, list->files[i]);
    }
    mrg_shard_dir(opts->output, dir, sizeof dir);
    mrg_shard_path(opts->output, list->host, path, sizeof path);
    if (rc == 0 && mkdir(dir, 0777) != 0 && errno != EEXIST)
        rc = hm_err_set(err, HM_EIO, dir, -1, "cannot create the shards' folder: %s", strerror(errno));
    o.output = path;
    o.progress = NULL;
    snprintf(hc.rep.host, sizeof hc.rep.host, "%s", list->host);
    /* Even failed, the writer takes part: its readers and rank 0 wait. */
    {
        int r = mrg_ingest_mpi_run(names, rc ? 0 : list->nfiles, &role, &o, stats, rc ? &(struct hm_err){0} : err);
        if (rc == 0)
            rc = r;
    }
    hc.rep.status = list->nfiles == 0 ? 1 : rc ? -1 : 0;
    hc.rep.slices = (int64_t)stats->slices;
    hc.rep.rows = (int64_t)(stats->slices + stats->collectives + stats->counters);
    hc.rep.bytes = hc.rep.status == 0 ? file_size(path) : 0;
    if (rc && list->nfiles)
        snprintf(hc.rep.msg, sizeof hc.rep.msg, "%s", hm_err_line(err, line, sizeof line));
    if (hc.rep.status != 0)
        hc.rep.nranks = 0;
    {
        size_t bytes = sizeof hc.rep + (size_t)hc.rep.nranks * sizeof *hc.ranks;
        char *buf = malloc(bytes);
        if (!buf)
            MPI_Abort(MPI_COMM_WORLD, 1);
        memcpy(buf, &hc.rep, sizeof hc.rep);
        if (hc.rep.nranks)
            memcpy(buf + sizeof hc.rep, hc.ranks, (size_t)hc.rep.nranks * sizeof *hc.ranks);
        MPI_Send(buf, (int)bytes, MPI_BYTE, 0, HM_TAG_SHARD_REPORT, icomm);
        free(buf);
    }
    for (size_t i = 0; names && i < list->nfiles; i++)
        free(names[i]);
    free(names);
    free(hc.ranks);
    return list->nfiles == 0 ? 0 : rc;
}

/* --- The index writer ------------------------------------------------------ */

struct index_ctx {
    MPI_Comm icomm;
    const char *output;
};

#define CLOCK_SQL                                                                                    \
    "SELECT rank, clock_offset_ns, clock_drift_ppm, clock_ref_ns, clock_method, clock_uncertainty_ns " \
    "FROM ranks ORDER BY rank"

/* Every rank's clock from the index (writer and ranks table). */
static int gather_clocks(struct mrg_writer *w, struct shard_clock **out, int64_t *n, struct hm_err *err)
{
    sqlite3 *db = mrg_writer_db(w);
    sqlite3_stmt *st = NULL;
    int64_t cap = 0;
    int rc = mrg_writer_flush(w, err);

    if (rc)
        return rc;
    if (sqlite3_prepare_v2(db, "SELECT coalesce(max(rank), -1) + 1 FROM ranks", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        cap = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    *out = calloc((size_t)cap + 1, sizeof **out);
    if (!*out)
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    for (int64_t r = 0; r < cap; r++)
        (*out)[r].rank = -1;
    *n = cap;
    if (sqlite3_prepare_v2(db, CLOCK_SQL, -1, &st, NULL) != SQLITE_OK)
        return hm_err_set(err, HM_ESQL, NULL, -1, "reading the clocks: %s", sqlite3_errmsg(db));
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        int64_t r = sqlite3_column_int64(st, 0);
        struct shard_clock *c;
        struct mrg_lin_model m;
        const unsigned char *method = sqlite3_column_text(st, 4);
        if (r < 0 || r >= cap)
            continue;
        c = &(*out)[r];
        if (mrg_writer_final_model(w, (int)r, &m) != 0) {
            rc = hm_err_set(err, HM_EINVAL, NULL, -1, "--shards: rank %lld's clock model is not linear",
                            (long long)r);
            break;
        }
        *c = (struct shard_clock){r, m.offset, m.slope, m.ref, sqlite3_column_int64(st, 1),
                                  sqlite3_column_int64(st, 3),
                                  sqlite3_column_type(st, 5) == SQLITE_NULL ? HM_NONE : sqlite3_column_int64(st, 5),
                                  sqlite3_column_double(st, 2), {0}};
        snprintf(c->method, sizeof c->method, "%s", method ? (const char *)method : "none");
    }
    sqlite3_finalize(st);
    return rc;
}

static void send_clocks(MPI_Comm icomm, int nhosts, const struct shard_clock *c, int64_t n, int status)
{
    struct clocks_head h = {status, status ? 0 : n};
    size_t bytes = sizeof h + (size_t)h.n * sizeof *c;
    char *buf = malloc(bytes);

    if (!buf)
        MPI_Abort(MPI_COMM_WORLD, 1);
    memcpy(buf, &h, sizeof h);
    if (h.n)
        memcpy(buf + sizeof h, c, (size_t)h.n * sizeof *c);
    for (int k = 1; k < nhosts; k++)
        MPI_Send(buf, (int)bytes, MPI_BYTE, k, HM_TAG_SHARD_CLOCKS, icomm);
    free(buf);
}

static int bind_text(sqlite3_stmt *st, int i, const char *s)
{
    return sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
}

/* The shard's rows of the index. */
static int store_shard(struct mrg_writer *w, const struct index_ctx *ic, int id, const struct shard_report *rep,
                       const int32_t *ranks, struct hm_err *err)
{
    sqlite3 *db = mrg_writer_db(w);
    sqlite3_stmt *st = NULL, *rs = NULL;
    char path[4096], *list = malloc((size_t)rep->nranks * 12 + 1);
    const char *base = strrchr(ic->output, '/');
    size_t at = 0;
    int rc = 0;

    if (!list)
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    list[0] = 0;
    for (int64_t k = 0; k < rep->nranks; k++)
        at += (size_t)sprintf(list + at, k ? ",%d" : "%d", ranks[k]);
    mrg_shard_path(base ? base + 1 : ic->output, rep->host, path, sizeof path);
    if (sqlite3_prepare_v2(db, hm_sql_shard_insert, -1, &st, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, hm_sql_shard_insert_rank, -1, &rs, NULL) != SQLITE_OK)
        rc = hm_err_set(err, HM_ESQL, NULL, -1, "storing the shards: %s", sqlite3_errmsg(db));
    if (rc == 0) {
        sqlite3_bind_int(st, 1, id);
        bind_text(st, 2, rep->host);
        bind_text(st, 3, path);
        bind_text(st, 4, list);
        sqlite3_bind_int64(st, 5, rep->nranks);
        sqlite3_bind_int64(st, 6, rep->slices);
        sqlite3_bind_int64(st, 7, rep->rows);
        sqlite3_bind_int64(st, 8, rep->bytes);
        sqlite3_bind_int64(st, 9, rep->first_ns);
        sqlite3_bind_int64(st, 10, rep->end_ns);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = hm_err_set(err, HM_ESQL, NULL, -1, "storing the shards: %s", sqlite3_errmsg(db));
    }
    for (int64_t k = 0; rc == 0 && k < rep->nranks; k++) {
        sqlite3_bind_int(rs, 1, ranks[k]);
        sqlite3_bind_int(rs, 2, id);
        if (sqlite3_step(rs) != SQLITE_DONE)
            rc = hm_err_set(err, HM_ESQL, NULL, -1, "storing the shards: %s", sqlite3_errmsg(db));
        sqlite3_reset(rs);
    }
    sqlite3_finalize(st);
    sqlite3_finalize(rs);
    free(list);
    return rc;
}

/* Takes every host writer's report; the first failure wins. */
static int take_reports(const struct index_ctx *ic, struct mrg_writer *w, int nhosts, int rc, struct hm_err *err)
{
    int id = 0;

    if (rc == 0 && sqlite3_exec(mrg_writer_db(w), hm_sql_shard_tables, NULL, NULL, NULL) != SQLITE_OK)
        rc = hm_err_set(err, HM_ESQL, NULL, -1, "creating the shards table: %s", sqlite3_errmsg(mrg_writer_db(w)));
    for (int k = 1; k < nhosts; k++) {
        MPI_Status st;
        int len = 0;
        char *buf;
        struct shard_report rep;
        MPI_Probe(k, HM_TAG_SHARD_REPORT, ic->icomm, &st);
        MPI_Get_count(&st, MPI_BYTE, &len);
        if (!(buf = malloc(len > 0 ? (size_t)len : 1)))
            MPI_Abort(MPI_COMM_WORLD, 1);
        MPI_Recv(buf, len, MPI_BYTE, k, HM_TAG_SHARD_REPORT, ic->icomm, MPI_STATUS_IGNORE);
        memcpy(&rep, buf, sizeof rep);
        if (rc == 0 && rep.status < 0)
            rc = hm_err_set(err, HM_EIO, NULL, -1, "the shard of host %s failed: %s", rep.host, rep.msg);
        else if (rc == 0 && rep.status == 0)
            rc = store_shard(w, ic, ++id, &rep, (const int32_t *)(const void *)(buf + sizeof rep), err);
        free(buf);
    }
    if (rc == 0) {
        char n[32];
        snprintf(n, sizeof n, "%d", id);
        rc = mrg_writer_set_meta(w, "shards", n, err);
    }
    return rc;
}

static int index_before_finish(void *ctx, struct mrg_writer *w, int rc, struct hm_err *err)
{
    const struct index_ctx *ic = ctx;
    struct shard_clock *c = NULL;
    int64_t n = 0;
    int nhosts;

    MPI_Comm_size(ic->icomm, &nhosts);
    if (rc == 0 && w)
        rc = gather_clocks(w, &c, &n, err);
    send_clocks(ic->icomm, nhosts, c, n, rc != 0 || !w);
    free(c);
    return take_reports(ic, w, nhosts, rc, err);
}

/* --- Roles ----------------------------------------------------------------- */

int mrg_ingest_sharded(const struct col_ingest_list *list, const struct mrg_ingest_opts *opts,
                       struct mrg_ingest_stats *stats, struct hm_err *err)
{
    MPI_Comm hcomm = MPI_COMM_NULL, icomm = MPI_COMM_NULL;
    int rank, rc;

    memset(stats, 0, sizeof *stats);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* A host's readers and its writer (rank 0 of it: the lowest rank);
     * rank 0 and the host writers. */
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : list->host_color, rank, &hcomm);
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 || list->shard_writer ? 0 : MPI_UNDEFINED, rank, &icomm);
    if (rank == 0) {
        struct index_ctx ic = {icomm, opts->output};
        struct mrg_mpi_role role = {icomm, MPI_COMM_NULL, 1, index_before_finish, &ic};
        rc = mrg_ingest_mpi_run(list->files, list->nfiles, &role, opts, stats, err);
    } else if (list->shard_writer) {
        rc = host_writer(list, hcomm, icomm, opts, stats, err);
    } else {
        col_link_set_comm(hcomm);
        rc = col_ingest_send(list, opts->keep_args, err);
        col_link_set_comm(MPI_COMM_NULL);
    }
    if (hcomm != MPI_COMM_NULL)
        MPI_Comm_free(&hcomm);
    if (icomm != MPI_COMM_NULL)
        MPI_Comm_free(&icomm);
    return rc;
}
