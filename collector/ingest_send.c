/* Parallel ingest, collector side: read, analyse, send within credit,
 * report. The per-rank analyses run here, where the file was parsed (as
 * the threaded ingest runs them on its parser threads), and so do those of
 * a rank of several files when its files are all here (ingest_join.h), so
 * that rank 0, the one writer, only decodes and stores (docs/SCALING.md). */
#include "ingest_send.h"

#include <limits.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/hta.h"
#include "analysis/hta_codec.h"
#include "collector/sources/kineto_json/kineto_json.h"
#include "common/clockhook.h"
#include "ingest_join.h"
#include "ingest_msg.h"
#include "link_comm.h"
#include "transport.h"

static int report_failure(const char *path, const struct hm_err *e)
{
    struct hm_msg_file_error m;

    memset(&m, 0, sizeof m);
    m.code = e->code ? e->code : HM_EFORMAT;
    m.offset = e->offset;
    snprintf(m.file, sizeof m.file, "%s", path);
    snprintf(m.msg, sizeof m.msg, "%s", e->msg);
    return MPI_Send(&m, sizeof m, MPI_BYTE, 0, HM_TAG_FILE_ERROR, col_link_comm()) == MPI_SUCCESS ? 0 : HM_EMPI;
}

/* Pumps the link until its backlog is below limit (or fin). */
static int pump(struct col_link *l, uint64_t limit, int *fin, struct hm_err *err)
{
    int rc = 0;
    while (rc == 0 && !*fin && col_link_backlog(l) > limit) {
        rc = col_link_step(l, fin, err);
        if (rc == 0 && col_link_backlog(l) > limit)
            usleep(200);
    }
    return rc;
}

/* The name rank 0 knows the file by: the path, or "host:path" when each
 * host has its own folder (ingest_list.h). */
static const char *file_name(const struct col_ingest_list *l, const char *path, char *buf, size_t cap)
{
    if (!l->host[0])
        return path;
    snprintf(buf, cap, "%s:%s", l->host, path);
    return buf;
}

/* Test hook: the reader dies (SIGKILL) before its file number N, so the
 * tests can check that a dead reader never hangs the job. */
static size_t die_before(void)
{
    const char *v = getenv("HTAMERGE_TEST_INGEST_DIE_BEFORE");
    return v && v[0] ? (size_t)strtoull(v, NULL, 10) : (size_t)-1;
}

struct encoded {
    uint8_t *buf; /* owned */
    size_t len;
};

/* Both modes of the per-rank analyses, as the single-process ingest runs
 * them (merger/ingest.c, parse_one): they also fill each slice's
 * iteration, which the wire carries. */
static int analyse(struct hm_batch *b, struct encoded *out, struct hm_err *err)
{
    struct an_options modes[2] = {{.all_steps = 0}, {.all_steps = 1}};
    struct an_rank_result res[2];
    int rc = an_hta_run_modes(b, modes, 2, res, err);

    if (rc)
        return rc;
    rc = an_results_encode(res, 2, &out->buf, &out->len);
    an_rank_result_clear(&res[0]);
    an_rank_result_clear(&res[1]);
    return rc ? hm_err_set(err, rc, NULL, -1, "out of memory") : 0;
}

/* One file of a group on its way out: parsed and analysed, or failed. */
struct file_in {
    struct hm_batch *b;  /* owned until queued; NULL: reading it failed (reported) */
    struct encoded res;  /* its own analyses' results */
    struct encoded tail; /* what follows the batch (ingest_msg.h) */
    char *name;          /* owned: the name rank 0 knows it by */
};

/* Reads and analyses one file; a failure is reported to rank 0 (f->b NULL). */
static int read_one(const char *path, int keep_args, struct file_in *f, struct hm_msg_done *d)
{
    struct src_kineto_opts ko = {.keep_args = keep_args};
    struct hm_err perr;

    hm_err_clear(&perr);
    d->files++;
    if (src_kineto_read(path, &ko, &f->b, &perr) != 0 || analyse(f->b, &f->res, &perr) != 0) {
        hm_batch_free(f->b);
        f->b = NULL;
        d->files_failed++;
        return report_failure(f->name, &perr);
    }
    return 0;
}

/* The rank of files g[k] with k from `at`: its analyses over all its files
 * of the group, joined (ingest_join.h), go after the last one's batch. */
static int join_rank(struct file_in *g, size_t n, size_t at, struct hm_err *err)
{
    struct hm_batch *bs[COL_INGEST_GROUP_MAX], *j = NULL;
    const char *names[COL_INGEST_GROUP_MAX];
    struct encoded rank_res = {0};
    struct hm_err aerr;
    size_t m = 0;
    int rc;

    hm_err_clear(&aerr);
    for (size_t k = at; k < n; k++)
        if (g[k].b && g[k].b->info.rank == g[at].b->info.rank) {
            names[m] = g[k].name;
            bs[m++] = g[k].b;
        }
    if (m < 2 || g[at].b->info.rank < 0 || (rc = col_ingest_join(bs, m, &j)) == 0)
        return 0;
    if (rc < 0)
        return hm_err_set(err, rc, NULL, -1, "out of memory");
    rc = analyse(j, &rank_res, &aerr);
    hm_batch_free(j);
    if (rc == HM_ENOMEM)
        return hm_err_set(err, rc, NULL, -1, "out of memory");
    if (rc) /* rank 0 reads the rank back, and fails on it as the single-process ingest would */
        return 0;
    for (size_t k = n; k-- > at;)
        if (g[k].b == bs[m - 1]) {
            rc = col_ingest_tail_encode(g[k].res.buf, g[k].res.len, rank_res.buf, rank_res.len, names, m,
                                        &g[k].tail.buf, &g[k].tail.len);
            break;
        }
    free(rank_res.buf);
    return rc ? hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory") : 0;
}

/* Queues a read file under the name rank 0 expects. */
static int queue_one(struct col_link *l, const char *path, struct file_in *f, struct hm_msg_done *d,
                     struct hm_err *err)
{
    const struct encoded *x = f->tail.buf ? &f->tail : &f->res;
    struct hm_batch *b = f->b;

    f->b = NULL;
    if (strcmp(f->name, path) != 0) {
        hm_strid id = hm_batch_intern(b, f->name, strlen(f->name));
        if (!id) {
            hm_batch_free(b);
            return hm_err_set(err, HM_ENOMEM, path, -1, "out of memory");
        }
        b->info.source_file = id;
    }
    d->batches++;
    return col_link_queue_with(l, b, x->buf, x->len, err);
}

static void file_in_clear(struct file_in *f)
{
    hm_batch_free(f->b);
    free(f->res.buf);
    free(f->tail.buf);
    free(f->name);
    memset(f, 0, sizeof *f);
}

/* Reads the files [i, end) of one group, joins each rank of several files
 * among them, and queues them in list order. *k counts files read. */
static int send_group(struct col_link *l, const struct col_ingest_list *list, size_t i, size_t end, int keep_args,
                      struct hm_msg_done *d, size_t *k, int *fin, struct hm_err *err)
{
    struct file_in g[COL_INGEST_GROUP_MAX];
    size_t n = end - i, die = die_before();
    char name[PATH_MAX + 80];
    int rc = 0;

    memset(g, 0, sizeof g);
    for (size_t f = 0; f < n && rc == 0; f++, (*k)++) {
        if (*k == die)
            raise(SIGKILL);
        g[f].name = strdup(file_name(list, list->files[i + f], name, sizeof name));
        rc = g[f].name ? read_one(list->files[i + f], keep_args, &g[f], d)
                       : hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    }
    for (size_t f = 0; f < n && rc == 0; f++) {
        int first = g[f].b != NULL;
        for (size_t e = 0; e < f && first; e++) /* once per rank */
            first = !g[e].b || g[e].b->info.rank != g[f].b->info.rank;
        if (first)
            rc = join_rank(g, n, f, err);
    }
    for (size_t f = 0; f < n && rc == 0; f++)
        if (g[f].b && (rc = queue_one(l, list->files[i + f], &g[f], d, err)) == 0)
            rc = pump(l, COL_LINK_MAX_BACKLOG, fin, err);
    for (size_t f = 0; f < n; f++)
        file_in_clear(&g[f]);
    return rc;
}

int col_ingest_send(const struct col_ingest_list *list, int keep_args, struct hm_err *err)
{
    struct hm_clockhook none = {0};
    struct hm_msg_done d = {0};
    struct col_link *l = col_link_new(&none, err);
    int rc = l ? 0 : HM_ENOMEM, fin = 0;
    size_t k = 0, g = 0;

    /* Group by group, every step-th from first: a rank's files stay on one
     * reader (ingest_list.h). */
    for (size_t i = 0, end; rc == 0 && list->step && i < list->nfiles; i = end, g++) {
        end = col_ingest_group_end(list->files, list->nfiles, i);
        if (g % list->step == list->first)
            rc = send_group(l, list, i, end, keep_args, &d, &k, &fin, err);
    }
    while (rc == 0 && !fin) {
        rc = col_link_step(l, &fin, err);
        if (rc == 0 && col_link_done(l, &d, err) < 0)
            rc = err->code;
        if (rc == 0 && !fin)
            usleep(500);
    }
    col_link_free(l);
    return rc;
}
