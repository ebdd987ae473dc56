/* Parallel ingest, collector side: read, send within credit, report. */
#include "ingest_send.h"

#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

int col_ingest_send(char *const *files, size_t nfiles, int rank, int size, int keep_args,
                    struct hm_err *err)
{
    struct hm_clockhook none = {0};
    struct src_kineto_opts ko = {.keep_args = keep_args};
    struct hm_msg_done d = {0};
    struct col_link *l = col_link_new(&none, err);
    int rc = l ? 0 : HM_ENOMEM, fin = 0;

    for (size_t i = (size_t)rank - 1; rc == 0 && i < nfiles; i += (size_t)size - 1) {
        struct hm_batch *b = NULL;
        struct hm_err perr;
        hm_err_clear(&perr);
        d.files++;
        if (src_kineto_read(files[i], &ko, &b, &perr) != 0) {
            d.files_failed++;
            rc = report_failure(files[i], &perr);
            continue;
        }
        d.batches++;
        rc = col_link_queue(l, b, err);
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
