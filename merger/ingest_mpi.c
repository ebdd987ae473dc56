/* Parallel ingest, merger side (rank 0 of `mpirun -n N htamerge ingest`):
 * the other ranks read the files (collector/ingest_send.c, their shares
 * from collector/ingest_list.c) and send records; this rank analyses and
 * writes them in the order of the file list, and says goodbye when every
 * rank is done. A failure stops the writing but not the conversation, so
 * no rank hangs. */
#include "ingest.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "collector/ingest_msg.h"
#include "common/protocol.h"
#include "common/wire.h"
#include "analysis/cross_rank.h"
#include "analysis/hta_codec.h"
#include "ingest_int.h"
#include "ingest_mpi_int.h"
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

/* Files are stored in the order of the list, as the threaded ingest
 * stores them: the output is the same whatever the number of readers, and
 * the clock guess meets its reference (the lowest rank) first. A file that
 * arrives early waits, decoded, until those before it are stored; its
 * reader's credit comes back only then, so at most HM_CREDIT_INITIAL
 * batches per reader wait. A reader reads its share in list order, so the
 * file awaited is always one its reader may send. */
/* Where rank 0's time goes, seconds (HTAMERGE_STATS). */
struct r0_time {
    const char *role; /* "writer", or a sharded ingest's "index" or "shard" */
    double busy;   /* decoding and storing, joins included; the rest is waiting */
    double decode; /* wire and analysis results */
    double join;   /* ranks of several files: their readers' analyses stored, or read back and
                    * analysed (rank_files.h) */
};

struct order {
    struct mrg_slot **early; /* owned: early[i] arrived before file next */
    int *from;               /* early[i]'s reader; -1: a file error (no credit) */
    size_t next;             /* the file to store next */
    MPI_Comm comm;           /* the readers' (role->comm) */
    int size;                /* comm's */
    MPI_Comm up;             /* a host writer's link to the index writer, or MPI_COMM_NULL */
    int up_credit;           /* batches it may still forward */
    int index;               /* the index writer of a sharded ingest */
    int ref_told;            /* index: the clock guess's reference sent; host: received */
};

/* The clock guess of a sharded ingest. The index writer's guesses (against
 * the first rank it stores with collectives, ingest.c) are what clock
 * refinement undoes, so a host writer that stores a rank with the same
 * guess leaves nothing to re-time where refinement agrees: the index
 * writer sends every host writer its reference's calls once it has them
 * (or none, at the latest before its goodbye), and a host writer guesses
 * against them the ranks it stores from then on. It never waits for them:
 * a rank stored before stays unshifted and is re-timed at the end. */

static void tell_ref(struct mrg_store *s, struct order *o, int at_end)
{
    const struct mrg_clock_guess *g = &s->guess;
    int64_t head[2] = {g->ref, g->ref >= 0 ? (int64_t)g->n : 0};
    size_t bytes = sizeof head + (size_t)head[1] * sizeof *g->calls;
    char *buf;

    if (!o->index || o->ref_told || (g->ref < 0 && !at_end))
        return;
    if (!(buf = malloc(bytes)))
        MPI_Abort(MPI_COMM_WORLD, 1); /* every host writer waits for it before the goodbye */
    memcpy(buf, head, sizeof head);
    if (head[1])
        memcpy(buf + sizeof head, g->calls, (size_t)head[1] * sizeof *g->calls);
    for (int r = 1; r < o->size; r++)
        MPI_Send(buf, (int)bytes, MPI_BYTE, r, HM_TAG_GUESS_REF, o->comm);
    free(buf);
    o->ref_told = 1;
}

/* A host writer takes the reference if it has come. */
static void take_ref(struct mrg_store *s, struct order *o)
{
    struct mrg_clock_guess *g = &s->guess;
    int flag = 0, len = 0;
    MPI_Status st;
    char *buf;
    int64_t head[2];

    if (o->up == MPI_COMM_NULL || o->ref_told)
        return;
    MPI_Iprobe(0, HM_TAG_GUESS_REF, o->up, &flag, &st);
    if (!flag)
        return;
    MPI_Get_count(&st, MPI_BYTE, &len);
    if (!(buf = malloc(len > 0 ? (size_t)len : 1)))
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Recv(buf, len, MPI_BYTE, 0, HM_TAG_GUESS_REF, o->up, MPI_STATUS_IGNORE);
    o->ref_told = 1;
    memcpy(head, buf, sizeof head);
    if (head[0] >= 0 && head[1] > 0 && (g->calls = malloc((size_t)head[1] * sizeof *g->calls)) != NULL) {
        memcpy(g->calls, buf + sizeof head, (size_t)head[1] * sizeof *g->calls);
        g->n = (size_t)head[1];
        g->ref = (int)head[0];
        g->on = 1;
    }
    free(buf);
}

/* A host writer of a sharded ingest hands the index writer each file's
 * message as it stores the file, so in list order (the index writer's
 * order restricted to this host: what it waits for is always the next
 * this host sends). Batches within the index writer's credit, as readers
 * send; file errors need none. */
static int forward(struct order *o, const struct mrg_slot *slot, struct hm_err *err)
{
    if (o->up == MPI_COMM_NULL || !slot->raw)
        return 0;
    if (slot->raw_tag == HM_TAG_BATCH) {
        while (o->up_credit == 0) {
            int c = 0;
            if (MPI_Recv(&c, 1, MPI_INT, 0, HM_TAG_CREDIT, o->up, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                return hm_err_set(err, HM_EMPI, NULL, -1, "cannot reach the index writer");
            o->up_credit += c;
        }
        o->up_credit--;
    }
    if (MPI_Send(slot->raw, (int)slot->raw_len, MPI_BYTE, 0, slot->raw_tag, o->up) != MPI_SUCCESS)
        return hm_err_set(err, HM_EMPI, NULL, -1, "cannot reach the index writer");
    return 0;
}

/* Keeps a copy of the message for forward. */
static int keep_raw(const struct order *o, struct mrg_slot *slot, const void *buf, size_t len, int tag)
{
    if (o->up == MPI_COMM_NULL)
        return 0;
    if (!(slot->raw = malloc(len ? len : 1)))
        return HM_ENOMEM;
    memcpy(slot->raw, buf, len);
    slot->raw_len = len;
    slot->raw_tag = tag;
    return 0;
}

static int store_now(struct mrg_store *s, struct order *o, size_t i, struct mrg_slot *slot, int from,
                     struct hm_err *err)
{
    int rc = forward(o, slot, err), one = 1;

    take_ref(s, o);
    if (rc == 0)
        rc = mrg_store_slot(s, i, slot, err);
    tell_ref(s, o, 0);
    mrg_release_slot(slot);
    if (from >= 0 && MPI_Send(&one, 1, MPI_INT, from, HM_TAG_CREDIT, o->comm) != MPI_SUCCESS && rc == 0)
        rc = hm_err_set(err, HM_EMPI, NULL, -1, "cannot reach rank %d", from);
    return rc;
}

/* Stores file i now if it is next (and the early ones it unblocks), else parks it. */
static int arrive(struct mrg_store *s, struct order *o, size_t i, struct mrg_slot *slot, int from,
                  struct hm_err *err)
{
    int rc;

    if (i < o->next || o->early[i]) {
        mrg_release_slot(slot);
        return hm_err_set(err, HM_EFORMAT, s->files[i], -1, "rank %d sent the file a second time", from);
    }
    if (i != o->next) {
        struct mrg_slot *p = malloc(sizeof *p);
        if (!p) {
            mrg_release_slot(slot);
            return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        }
        *p = *slot;
        o->early[i] = p;
        o->from[i] = from;
        return 0;
    }
    rc = store_now(s, o, i, slot, from, err);
    for (o->next++; rc == 0 && o->next < s->nfiles && o->early[o->next]; o->next++) {
        struct mrg_slot *p = o->early[o->next];
        o->early[o->next] = NULL;
        rc = store_now(s, o, o->next, p, o->from[o->next], err);
        free(p);
    }
    return rc;
}

/* After a failure, or at the end: the parked files are stored (store 1)
 * or dropped, and their readers get their credits back either way. */
static int release_early(struct mrg_store *s, struct order *o, int store, struct hm_err *err)
{
    int rc = 0, one = 1;

    for (size_t i = 0; i < s->nfiles; i++) {
        struct mrg_slot *p = o->early[i];
        if (!p)
            continue;
        o->early[i] = NULL;
        if (store && rc == 0) {
            rc = store_now(s, o, i, p, o->from[i], err);
        } else {
            mrg_release_slot(p);
            if (o->from[i] >= 0)
                MPI_Send(&one, 1, MPI_INT, o->from[i], HM_TAG_CREDIT, o->comm);
        }
        free(p);
    }
    return rc;
}

/* A reader's message: the wire batch, then its analyses' results (the
 * readers analyse what they parse: collector/ingest_send.c) and maybe a
 * rank's over all its files (collector/ingest_msg.h; *tail borrows from
 * buf). A batch without results is analysed here when stored
 * (mrg_store_slot). */
static int decode(const uint8_t *buf, size_t len, struct mrg_slot *slot, struct col_ingest_tail *tail)
{
    struct hm_wire_header h;
    int rc = hm_wire_peek(buf, len, &h, &slot->err);

    memset(tail, 0, sizeof *tail);
    if (rc == 0 && h.total_len > len)
        rc = hm_err_set(&slot->err, HM_EFORMAT, NULL, (int64_t)len, "batch message cut short");
    if (rc == 0)
        rc = hm_wire_decode(buf, (size_t)h.total_len, &slot->batch, &slot->err);
    if (rc == 0 && h.total_len < len)
        rc = col_ingest_tail_decode(buf + h.total_len, len - (size_t)h.total_len, tail, &slot->err);
    if (rc == 0 && tail->file_res) {
        rc = an_results_decode(tail->file_res, tail->file_len, slot->res, 2, &slot->err);
        slot->analysed = rc == 0;
    }
    if (rc)
        mrg_release_slot(slot);
    return rc;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* A rank's analyses over its files, made by the reader that read them all:
 * kept for the end (merger/rank_files.h), which checks that they cover the
 * files stored for the rank. */
static int offer(struct mrg_store *s, int rank, const struct col_ingest_tail *t, int from, struct hm_err *err)
{
    struct an_rank_result res[2];
    size_t *idx = malloc((t->nnames ? t->nnames : 1) * sizeof *idx);
    const char *name = t->names;
    int rc;

    if (!idx)
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    if ((rc = an_results_decode(t->rank_res, t->rank_len, res, 2, err)) != 0) {
        free(idx);
        return rc;
    }
    for (size_t i = 0; rc == 0 && i < t->nnames; i++, name += strlen(name) + 1)
        if ((idx[i] = file_index(s, name)) == s->nfiles)
            rc = hm_err_set(err, HM_EFORMAT, name, -1, "rank %d joined a file nobody asked for", from);
    if (rc == 0) {
        qsort(idx, t->nnames, sizeof *idx, cmp_size);
        if ((rc = mrg_rank_files_offer(&s->rfiles, rank, idx, t->nnames, res)) != 0)
            hm_err_set(err, rc, NULL, -1, "out of memory");
    } else {
        an_rank_result_clear(&res[0]);
        an_rank_result_clear(&res[1]);
    }
    free(idx);
    return rc;
}

static int on_batch(struct mrg_store *s, struct order *o, const uint8_t *buf, int len, int from,
                    double *decode_s, struct hm_err *err)
{
    struct col_ingest_tail tail;
    struct mrg_slot slot;
    size_t i;

    memset(&slot, 0, sizeof slot);
    *decode_s -= hm_mono_s();
    slot.rc = decode(buf, (size_t)len, &slot, &tail);
    if (slot.rc == 0 && tail.rank_res &&
        (slot.rc = offer(s, slot.batch->info.rank, &tail, from, &slot.err)) != 0)
        mrg_release_slot(&slot);
    *decode_s += hm_mono_s();
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
    if (keep_raw(o, &slot, buf, (size_t)len, HM_TAG_BATCH)) {
        mrg_release_slot(&slot);
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    }
    return arrive(s, o, i, &slot, from, err);
}

static int on_file_error(struct mrg_store *s, struct order *o, const struct hm_msg_file_error *m,
                         struct hm_err *err)
{
    struct mrg_slot slot;
    size_t i = file_index(s, m->file);

    memset(&slot, 0, sizeof slot);
    slot.rc = (int)m->code;
    hm_err_set(&slot.err, (int)m->code, m->file, m->offset, "%s", m->msg);
    if (keep_raw(o, &slot, m, sizeof *m, HM_TAG_FILE_ERROR))
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    if (i == s->nfiles) /* not one of ours: report it, in no particular place */
        return store_now(s, o, 0, &slot, -1, err);
    return arrive(s, o, i, &slot, -1, err);
}

/* Receives until every other rank sent DONE. Returns the first failure;
 * failed: one before the first message (then nothing is stored, but the
 * readers still get their credits). t: where the time went. */
static int receive_all(struct mrg_store *s, struct order *o, uint64_t total, int failed,
                       struct r0_time *t, struct hm_err *err)
{
    uint8_t *buf = NULL;
    size_t cap = 0;
    int done = 0, rc = failed;

    while (done < o->size - 1) {
        MPI_Status st;
        int len = 0, r;
        MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, o->comm, &st);
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
        MPI_Recv(buf, len, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, o->comm, MPI_STATUS_IGNORE);
        if (st.MPI_TAG == HM_TAG_DONE) {
            done++;
            continue;
        }
        if (rc != 0) { /* already failed: keep the others moving */
            if (st.MPI_TAG == HM_TAG_BATCH) {
                int one = 1;
                MPI_Send(&one, 1, MPI_INT, st.MPI_SOURCE, HM_TAG_CREDIT, o->comm);
            }
            continue;
        }
        t->busy -= hm_mono_s();
        if (st.MPI_TAG == HM_TAG_BATCH)
            r = on_batch(s, o, buf, len, st.MPI_SOURCE, &t->decode, err);
        else if (st.MPI_TAG == HM_TAG_FILE_ERROR && (size_t)len >= sizeof(struct hm_msg_file_error))
            r = on_file_error(s, o, (const struct hm_msg_file_error *)(const void *)buf, err);
        else
            r = hm_err_set(err, HM_EMPI, NULL, -1, "unexpected message %d from rank %d", st.MPI_TAG,
                           st.MPI_SOURCE);
        t->busy += hm_mono_s();
        rc = r;
        if (rc != 0) { /* the parked files' readers wait for their credits */
            struct hm_err ignored;
            release_early(s, o, 0, &ignored);
        }
        if (rc == 0 && s->opts->progress)
            s->opts->progress(s->opts->progress_ctx, s->st, total, 0);
    }
    free(buf);
    return rc;
}

/* HTAMERGE_STATS=1 prints each phase's wall time (for the benchmarks),
 * the write rate of the phase that receives and writes, and where rank
 * 0's busy time went (bench/readers.sh reads these lines). */
static void phase_done(const char *what, double *since, const struct mrg_store *s, const struct r0_time *t,
                       int rows_too)
{
    double now = hm_mono_s(), el = now - *since;
    char line[640];
    int n;

    /* Each line goes out in one write: under mpirun the writers of a
     * sharded ingest share stderr, and pieces would interleave. */
    if (getenv("HTAMERGE_STATS")) {
        n = snprintf(line, sizeof line, "htamerge-stats: ingest %-22s %.3f s", what, el);
        if (rows_too) {
            const struct mrg_ingest_stats *st = s->st;
            double rows = (double)(st->slices + st->collectives + st->counters);
            /* CPU time too: on an oversubscribed machine (simulated hosts)
             * busy wall time counts the waits for a core. */
            struct rusage ru;
            double cpu = getrusage(RUSAGE_SELF, &ru) == 0
                             ? (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
                                   ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e-6
                             : 0.0;
            size_t by_readers, read_back;
            snprintf(line + n, sizeof line - (size_t)n, " (%.0f rows, %.0f rows/s; writer busy %.3f s, %.0f rows/s "
                     "busy; cpu %.3f s, %.0f rows/cpu-s; %s)\n", rows, el > 0 ? rows / el : 0.0, t->busy,
                     t->busy > 0 ? rows / t->busy : 0.0, cpu, cpu > 0 ? rows / cpu : 0.0, t->role);
            fputs(line, stderr);
            mrg_rank_files_counts(s->rfiles, &by_readers, &read_back);
            snprintf(line, sizeof line, "htamerge-stats: ingest rank 0: decode %.3f s, analyses %.3f s (%zu of %zu "
                     "files analysed on rank 0), ranks of several files: %zu analysed by their reader, %zu read "
                     "back and analysed, joined %.3f s\n", t->decode, s->analyse_s, s->analysed_here, s->nfiles,
                     by_readers, read_back, t->join);
            fputs(line, stderr);
        } else {
            snprintf(line + n, sizeof line - (size_t)n, " (%s)\n", t->role);
            fputs(line, stderr);
        }
    }
    *since = now;
}

static void say_goodbye(const struct order *o)
{
    struct hm_msg_done fin = {0};
    for (int r = 1; r < o->size; r++)
        MPI_Send(&fin, sizeof fin, MPI_BYTE, r, HM_TAG_DONE, o->comm);
}

/* A host writer, its readers done: tells the index writer it is done too
 * (as a reader would) and waits for its goodbye, taking what else comes
 * first (credits, and the guess's reference if it had not come). */
static int up_done(struct mrg_store *s, struct order *o, struct hm_err *err)
{
    struct hm_msg_done d = {0};
    int rc = 0;

    if (o->up == MPI_COMM_NULL)
        return 0;
    if (MPI_Send(&d, sizeof d, MPI_BYTE, 0, HM_TAG_DONE, o->up) != MPI_SUCCESS)
        rc = hm_err_set(err, HM_EMPI, NULL, -1, "cannot reach the index writer");
    for (;;) {
        MPI_Status st;
        int c;
        if (MPI_Probe(0, MPI_ANY_TAG, o->up, &st) != MPI_SUCCESS)
            return rc ? rc : hm_err_set(err, HM_EMPI, NULL, -1, "cannot reach the index writer");
        if (st.MPI_TAG == HM_TAG_DONE) {
            MPI_Recv(&d, sizeof d, MPI_BYTE, 0, HM_TAG_DONE, o->up, MPI_STATUS_IGNORE);
            return rc;
        }
        if (st.MPI_TAG == HM_TAG_GUESS_REF)
            take_ref(s, o);   /* too late to guess with, but it must be taken */
        else
            MPI_Recv(&c, 1, MPI_INT, 0, HM_TAG_CREDIT, o->up, MPI_STATUS_IGNORE);
    }
}

int mrg_ingest_mpi_merge(char *const *files, size_t nfiles, const struct mrg_ingest_opts *opts,
                         struct mrg_ingest_stats *stats, struct hm_err *err)
{
    struct mrg_mpi_role role = {.comm = MPI_COMM_WORLD, .up = MPI_COMM_NULL};

    return mrg_ingest_mpi_run(files, nfiles, &role, opts, stats, err);
}

int mrg_ingest_mpi_run(char *const *files, size_t nfiles, const struct mrg_mpi_role *role,
                       const struct mrg_ingest_opts *opts, struct mrg_ingest_stats *stats, struct hm_err *err)
{
    /* As the threaded ingest: clocks guessed before writing and the
     * analyses' view tapped while writing, so that the cross-rank phase
     * re-times and reads back nothing it can avoid (ingest.c). A host
     * writer guesses against the index writer's reference once it has it
     * (take_ref) and runs no cross-rank analysis: the index writer fits the
     * clocks over every host, and the host writer re-times its shard to them
     * where they differ from its guesses (before_finish). */
    int host_writer = role->up != MPI_COMM_NULL;
    struct mrg_store s = {.files = files, .nfiles = nfiles, .opts = opts, .st = stats,
                          .guess = {.on = !host_writer, .ref = -1}};   /* a host writer's: take_ref */
    struct xr_view view = {0};
    struct order ord = {calloc(nfiles + 1, sizeof *ord.early), calloc(nfiles + 1, sizeof *ord.from), 0,
                        role->comm, 0, role->up, HM_CREDIT_INITIAL, role->index, 0};
    uint64_t total = 0;
    double t0 = hm_mono_s(), t_phase = t0;
    struct r0_time t = {host_writer ? "shard" : role->index ? "index" : "writer", 0, 0, 0};
    struct stat sb;
    int rc;

    MPI_Comm_size(role->comm, &ord.size);
    memset(stats, 0, sizeof *stats);
    for (size_t i = 0; i < nfiles; i++)
        if (stat(files[i], &sb) == 0)
            total += (uint64_t)sb.st_size;
    s.w = mrg_writer_open(opts->output, err);
    rc = s.w ? 0 : (err->code ? err->code : HM_EIO);
    if (s.w && !host_writer) {
        view.spill = xr_view_spill_for(opts->output);
        mrg_writer_set_slice_tap(s.w, xr_view_tap, &view);
    }
    if (s.w && role->index)
        mrg_writer_set_index_only(s.w, 1);
    if (rc == 0 && (!ord.early || !ord.from))
        rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    {
        struct hm_err rerr;
        hm_err_clear(&rerr);
        int r = receive_all(&s, &ord, total, rc, &t, rc ? &rerr : err);
        if (rc == 0)
            rc = r;
        /* Parked files left mean a file never came: store the rest anyway. */
        r = ord.early ? release_early(&s, &ord, rc == 0, rc ? &rerr : err) : 0;
        if (rc == 0)
            rc = r;
    }
    free(ord.early);
    free(ord.from);
    tell_ref(&s, &ord, 1);   /* before the goodbye, which host writers wait for after it */
    say_goodbye(&ord);
    {
        struct hm_err uerr;
        int r = up_done(&s, &ord, rc ? &uerr : err);
        if (rc == 0)
            rc = r;
    }
    t.join -= hm_mono_s();
    if (rc == 0)
        rc = mrg_rank_files_finish(s.rfiles, s.w, err); /* ranks of several files */
    if (rc == 0 && role->index) {
        size_t offered, read_back;
        mrg_rank_files_counts(s.rfiles, &offered, &read_back);
        if (read_back) /* the index holds too few slices to read a rank back */
            rc = hm_err_set(err, HM_EINVAL, NULL, -1,
                            "--shards: %zu rank(s) of several files were not joined by one reader (a "
                            "rank's files on two hosts, file names that do not group, or steps other than "
                            "ProfilerSteps): ingest them without --shards", read_back);
    }
    t.join += hm_mono_s();
    t.busy += t.join;
    phase_done("parse and write", &t_phase, &s, &t, 1);
    mrg_rank_files_free(s.rfiles);
    if (rc == 0 && stats->ranks == 0)
        rc = hm_err_set(err, HM_EFORMAT, NULL, -1, "none of the %zu files could be read", nfiles);
    if (rc == 0)
        rc = mrg_ingest_write_meta(s.w, opts, "htamerge ingest (parallel)", err);
    if (s.w)
        mrg_writer_set_slice_tap(s.w, NULL, NULL);
    if (rc == 0 && !host_writer)
        rc = xr_finish_view(s.w, NULL, &view, err);
    xr_view_free(&view);
    phase_done("cross-rank analyses", &t_phase, &s, &t, 0);
    if (role->before_finish) {
        rc = role->before_finish(role->ctx, s.w, rc, err);
        phase_done(host_writer ? "clocks and re-timing" : "the shards' finish", &t_phase, &s, &t, 0);
    }
    if (s.w) {
        if (rc == 0)
            rc = mrg_writer_finish(s.w, err);
        else
            mrg_writer_abort(s.w);
    }
    phase_done("indexes and close", &t_phase, &s, &t, 0);
    free(s.ranks.owner);
    free(s.guess.calls);
    stats->seconds = hm_mono_s() - t0;
    if (opts->progress)
        opts->progress(opts->progress_ctx, stats, total, 1);
    return rc;
}
