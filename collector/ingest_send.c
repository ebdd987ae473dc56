/* Parallel ingest, collector side: read, analyse, send within credit,
 * report. The per-rank analyses run here, where the file was parsed (as
 * the threaded ingest runs them on its parser threads), so that rank 0,
 * the one writer, only decodes and stores (docs/SCALING.md). */
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
#include "transport.h"

static int report_failure(const char *path, const struct hm_err *e)
{
    struct hm_msg_file_error m;

    memset(&m, 0, sizeof m);
    m.code = e->code ? e->code : HM_EFORMAT;
    m.offset = e->offset;
    snprintf(m.file, sizeof m.file, "%s", path);
    snprintf(m.msg, sizeof m.msg, "%s", e->msg);
    return MPI_Send(&m, sizeof m, MPI_BYTE, 0, HM_TAG_FILE_ERROR, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : HM_EMPI;
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

/* Reads one file and queues its batch under the name rank 0 expects. */
static int send_one(struct col_link *l, const char *path, const char *name, int keep_args, struct hm_msg_done *d,
                    struct hm_err *err)
{
    struct src_kineto_opts ko = {.keep_args = keep_args};
    struct hm_batch *b = NULL;
    struct encoded res = {0};
    struct hm_err perr;
    int rc;

    hm_err_clear(&perr);
    d->files++;
    if (src_kineto_read(path, &ko, &b, &perr) != 0 || analyse(b, &res, &perr) != 0) {
        hm_batch_free(b);
        d->files_failed++;
        return report_failure(name, &perr);
    }
    if (name != path) {
        hm_strid id = hm_batch_intern(b, name, strlen(name));
        if (!id) {
            hm_batch_free(b);
            free(res.buf);
            return hm_err_set(err, HM_ENOMEM, path, -1, "out of memory");
        }
        b->info.source_file = id;
    }
    d->batches++;
    rc = col_link_queue_with(l, b, res.buf, res.len, err);
    free(res.buf);
    return rc;
}

int col_ingest_send(const struct col_ingest_list *list, int keep_args, struct hm_err *err)
{
    struct hm_clockhook none = {0};
    struct hm_msg_done d = {0};
    struct col_link *l = col_link_new(&none, err);
    int rc = l ? 0 : HM_ENOMEM, fin = 0;
    size_t die = die_before(), k = 0;
    char name[PATH_MAX + 80];

    for (size_t i = list->first; rc == 0 && list->step && i < list->nfiles; i += list->step, k++) {
        if (k == die)
            raise(SIGKILL);
        rc = send_one(l, list->files[i], file_name(list, list->files[i], name, sizeof name), keep_args, &d, err);
        if (rc == 0)
            rc = pump(l, COL_LINK_MAX_BACKLOG, &fin, err);
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
