/* Parallel ingest, merger side (rank 0 of `mpirun -n N htamerge ingest`):
 * the other ranks read the files and send records; this rank analyses and
 * writes them as they come, and says goodbye when every rank is done. A
 * failure stops the writing but not the conversation, so no rank hangs. */
#include "ingest.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/protocol.h"
#include "common/wire.h"
#include "analysis/cross_rank.h"
#include "ingest_int.h"
#include "rank_files.h"
#include "common/monotime.h"

static int cmp_path(const void *key, const void *elem)
{
    return strcmp(key, *(char *const *)elem);
}

/* Index of path in the sorted list, or nfiles if absent. */
static size_t file_index(struct mrg_store *s, const char *path)
{
    char *const *hit = bsearch(path, s->files, s->nfiles, sizeof *s->files, cmp_path);
    return hit ? (size_t)(hit - s->files) : s->nfiles;
}

static int on_batch(struct mrg_store *s, const uint8_t *buf, int len, int from, struct hm_err *err)
{
    struct mrg_slot slot;
    size_t i;
    int rc, one = 1;

    memset(&slot, 0, sizeof slot);
    slot.rc = hm_wire_decode(buf, (size_t)len, &slot.batch, &slot.err);
    if (slot.rc) {
        slot.err.rank = from;
        *err = slot.err;
        return slot.rc; /* a broken message is our bug, never a user's file */
    }
    i = file_index(s, hm_batch_str(slot.batch, slot.batch->info.source_file));
    if (i == s->nfiles) {
        mrg_release_slot(&slot);
        return hm_err_set(err, HM_EFORMAT, NULL, -1, "rank %d sent a file nobody asked for", from);
    }
    s->st->bytes_json += slot.batch->source_bytes;
    rc = mrg_store_slot(s, i, &slot, err);
    mrg_release_slot(&slot);
    if (MPI_Send(&one, 1, MPI_INT, from, HM_TAG_CREDIT, MPI_COMM_WORLD) != MPI_SUCCESS && rc == 0)
        rc = hm_err_set(err, HM_EMPI, NULL, -1, "cannot reach rank %d", from);
    return rc;
}

static int on_file_error(struct mrg_store *s, const struct hm_msg_file_error *m, struct hm_err *err)
{
    struct mrg_slot slot;
    size_t i = file_index(s, m->file);

    memset(&slot, 0, sizeof slot);
    slot.rc = (int)m->code;
    hm_err_set(&slot.err, (int)m->code, m->file, m->offset, "%s", m->msg);
    return mrg_store_slot(s, i < s->nfiles ? i : 0, &slot, err);
}

/* Receives until every other rank sent DONE. Returns the first failure. */
static int receive_all(struct mrg_store *s, int size, uint64_t total, struct hm_err *err)
{
    uint8_t *buf = NULL;
    size_t cap = 0;
    int done = 0, rc = 0;

    while (done < size - 1) {
        MPI_Status st;
        int len = 0, r;
        MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &len);
        if ((size_t)len > cap) {
            uint8_t *nb = realloc(buf, (size_t)len);
            if (!nb) {
                free(buf);
                return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
            }
            buf = nb;
            cap = (size_t)len;
        }
        MPI_Recv(buf, len, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (st.MPI_TAG == HM_TAG_DONE) {
            done++;
            continue;
        }
        if (rc != 0) { /* already failed: keep the others moving */
            if (st.MPI_TAG == HM_TAG_BATCH) {
                int one = 1;
                MPI_Send(&one, 1, MPI_INT, st.MPI_SOURCE, HM_TAG_CREDIT, MPI_COMM_WORLD);
            }
            continue;
        }
        if (st.MPI_TAG == HM_TAG_BATCH)
            r = on_batch(s, buf, len, st.MPI_SOURCE, err);
        else if (st.MPI_TAG == HM_TAG_FILE_ERROR && (size_t)len >= sizeof(struct hm_msg_file_error))
            r = on_file_error(s, (const struct hm_msg_file_error *)(const void *)buf, err);
        else
            r = hm_err_set(err, HM_EMPI, NULL, -1, "unexpected message %d from rank %d", st.MPI_TAG,
                           st.MPI_SOURCE);
        rc = r;
        if (rc == 0 && s->opts->progress)
            s->opts->progress(s->opts->progress_ctx, s->st, total, 0);
    }
    free(buf);
    return rc;
}

static void say_goodbye(int size)
{
    struct hm_msg_done fin = {0};
    for (int r = 1; r < size; r++)
        MPI_Send(&fin, sizeof fin, MPI_BYTE, r, HM_TAG_DONE, MPI_COMM_WORLD);
}

int mrg_ingest_mpi_merge(char *const *files, size_t nfiles, int size, const struct mrg_ingest_opts *opts,
                         struct mrg_ingest_stats *stats, struct hm_err *err)
{
    struct mrg_store s = {.files = files, .nfiles = nfiles, .opts = opts, .st = stats};
    uint64_t total = 0;
    double t0 = hm_mono_s();
    struct stat sb;
    int rc;

    memset(stats, 0, sizeof *stats);
    for (size_t i = 0; i < nfiles; i++)
        if (stat(files[i], &sb) == 0)
            total += (uint64_t)sb.st_size;
    s.w = mrg_writer_open(opts->output, err);
    rc = s.w ? 0 : (err->code ? err->code : HM_EIO);
    {
        struct hm_err rerr;
        hm_err_clear(&rerr);
        int r = receive_all(&s, size, total, rc ? &rerr : err);
        if (rc == 0)
            rc = r;
    }
    say_goodbye(size);
    if (rc == 0)
        rc = mrg_rank_files_finish(s.rfiles, s.w, err); /* ranks of several files */
    mrg_rank_files_free(s.rfiles);
    if (rc == 0 && stats->ranks == 0)
        rc = hm_err_set(err, HM_EFORMAT, NULL, -1, "none of the %zu files could be read", nfiles);
    if (rc == 0)
        rc = mrg_ingest_write_meta(s.w, opts, "htamerge ingest (parallel)", err);
    if (rc == 0)
        rc = xr_finish(s.w, NULL, err);
    if (s.w) {
        if (rc == 0)
            rc = mrg_writer_finish(s.w, err);
        else
            mrg_writer_abort(s.w);
    }
    free(s.ranks.owner);
    stats->seconds = hm_mono_s() - t0;
    if (opts->progress)
        opts->progress(opts->progress_ctx, stats, total, 1);
    return rc;
}
