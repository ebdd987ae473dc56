/* The live merger on rank 0.
 *
 * State per peer rank: its clock model (rounds of ping-pong), whether it
 * has sent DONE, and its exit code. The first sync round with every peer
 * runs before any of its batches is written, so each batch is written with
 * the rank's start offset; at the end the full piecewise-linear model is
 * applied to what was written (mrg_writer_realign), in two pieces where
 * the rank's clock stepped (merger/clock.h mrg_clock_split). Batches are written as
 * they arrive and committed at least every commit_ms, so a reader of the
 * WAL file sees the run grow. */
#include "live.h"

#include <mpi.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/hta.h"
#include "clock.h"
#include "common/clockhook.h"
#include "common/protocol.h"
#include "common/wire.h"
#include "analysis/cross_rank.h"
#include "store/columns.h"
#include "store/writer.h"
#include "common/monotime.h"
#include "common/vec.h"
#include "hm_sql.h"

enum { COMMIT_MS = 500, MAX_MSGS_PER_STEP = 64 };

struct peer {
    struct mrg_clock_model clock;
    int synced;          /* first round done, clock set in the writer */
    int done;            /* DONE received */
    int exit_code;
    int watch_polling;   /* its trace folder was scanned: no inotify to be had */
    int64_t batches;
};

struct mrg_live {
    struct mrg_live_opts opts;
    struct mrg_writer *w;      /* owned */
    struct hm_clockhook hook;  /* rank 0's own clock (the test hook applies to it too) */
    struct peer *peers;        /* owned, one per rank; [0] is rank 0 */
    int size;
    int initial_done;
    int local_done;
    int64_t last_sync_ns, last_commit_ns;
    int64_t write_ns, decode_ns; /* time spent writing / decoding batches */
    uint64_t rows;             /* records written */
    int64_t files_refused;     /* unreadable_file counts of the batches written */
    uint8_t *buf;              /* receive buffer, owned */
    size_t cap;
    long test_delay_us;        /* TEST ONLY: HTAMERGE_TEST_MERGER_DELAY_US, see write_batch */
};

static int mpi_fail(struct hm_err *err, const char *what, int rc)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return hm_err_set(err, HM_EMPI, NULL, -1, "%s: %s", what, msg);
}

struct mrg_live *mrg_live_start(const struct mrg_live_opts *opts, struct hm_err *err)
{
    struct mrg_live *m = calloc(1, sizeof *m);
    char hostname[256], pidtext[32];

    if (!m) {
        hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        return NULL;
    }
    m->opts = *opts;
    if (m->opts.sync_samples <= 0)
        m->opts.sync_samples = 32;
    MPI_Comm_size(MPI_COMM_WORLD, &m->size);
    m->peers = calloc((size_t)m->size, sizeof *m->peers);
    if (!m->peers) {
        hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        goto fail;
    }
    m->hook = *opts->hook;
    /* TEST ONLY: a merger this much slower per batch, for the back-pressure
     * fault test (tests/integration/test_fault_backpressure.sh). */
    if (getenv("HTAMERGE_TEST_MERGER_DELAY_US"))
        m->test_delay_us = atol(getenv("HTAMERGE_TEST_MERGER_DELAY_US"));
    m->w = mrg_writer_open_live(opts->output, err);
    if (!m->w)
        goto fail;
    gethostname(hostname, sizeof hostname);
    snprintf(pidtext, sizeof pidtext, "%ld", (long)getpid());
    if (mrg_writer_set_meta(m->w, "created_by", opts->created_by ? opts->created_by : "htamerge", err) ||
        mrg_writer_set_meta(m->w, "run_status", "running", err) ||
        (opts->command_line && mrg_writer_set_meta(m->w, "command_line", opts->command_line, err)) ||
        mrg_writer_set_meta(m->w, "merger_host", hostname, err) ||
        mrg_writer_set_meta(m->w, "merger_pid", pidtext, err) ||
        mrg_writer_set_clock(m->w, 0, HM_NONE, 0, 0, 0, "mpi", 0, err) ||
        mrg_writer_set_rank_complete(m->w, 0, 0, err) ||
        mrg_writer_commit(m->w, err))
        goto fail;
    m->peers[0].synced = 1;
    m->last_commit_ns = hm_mono_ns();
    return m;
fail:
    mrg_writer_abort(m->w);
    free(m->peers);
    free(m);
    return NULL;
}

/* One ping-pong round with peer r; adds the best sample to its model. */
static int sync_round(struct mrg_live *m, int r, struct hm_err *err)
{
    struct hm_msg_sync start = {HM_SYNC_START, m->opts.sync_samples, 0}, ping = {HM_SYNC_PING, 0, 0}, pong;
    struct mrg_clock_sample s[256];
    int n = m->opts.sync_samples < 256 ? m->opts.sync_samples : 256, rc;

    start.count = n;
    rc = MPI_Send(&start, sizeof start, MPI_BYTE, r, HM_TAG_SYNC, MPI_COMM_WORLD);
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
        s[i].t0 = ping.t = hm_clock_now(&m->hook);
        rc = MPI_Send(&ping, sizeof ping, MPI_BYTE, r, HM_TAG_SYNC, MPI_COMM_WORLD);
        if (rc == MPI_SUCCESS)
            rc = MPI_Recv(&pong, sizeof pong, MPI_BYTE, r, HM_TAG_SYNC, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        s[i].t2 = hm_clock_now(&m->hook);
        s[i].t1 = pong.t;
    }
    if (rc != MPI_SUCCESS)
        return mpi_fail(err, "clock sync", rc);
    return mrg_clock_add_round(&m->peers[r].clock, s, (size_t)n) == 0
               ? 0
               : hm_err_set(err, HM_EINVAL, NULL, -1, "clock sync with rank %d gave no usable sample", r);
}

/* The first round with every peer: sets each rank's start offset. */
static int initial_sync(struct mrg_live *m, struct hm_err *err)
{
    for (int r = 1; r < m->size; r++) {
        int64_t off, ref, unc;
        double drift;
        int rc = sync_round(m, r, err);
        if (rc)
            return rc;
        mrg_clock_summary(&m->peers[r].clock, &off, &drift, &ref, &unc);
        rc = mrg_writer_set_clock(m->w, r, HM_NONE, off, 0, 0, "mpi", unc, err);
        /* Not complete until its DONE arrives: a file cut short says so. */
        if (rc == 0)
            rc = mrg_writer_set_rank_complete(m->w, r, 0, err);
        if (rc)
            return rc;
        m->peers[r].synced = 1;
    }
    m->initial_done = 1;
    m->last_sync_ns = hm_mono_ns();
    return 0;
}

static int periodic_sync(struct mrg_live *m, struct hm_err *err)
{
    int rc = 0;
    for (int r = 1; r < m->size && rc == 0; r++)
        if (!m->peers[r].done)
            rc = sync_round(m, r, err);
    m->last_sync_ns = hm_mono_ns();
    return rc;
}

static int write_batch(struct mrg_live *m, struct hm_batch *b, struct hm_err *err)
{
    int64_t t0 = hm_mono_ns();
    if (m->test_delay_us > 0)
        usleep((useconds_t)m->test_delay_us); /* TEST ONLY, see mrg_live_start */
    int rc = mrg_writer_add_batch(m->w, b, err);
    m->write_ns += hm_mono_ns() - t0;
    m->rows += b->slices.n + b->collectives.n + b->counters.n + b->steps.n;
    if (rc == 0)
        m->files_refused += b->info.skipped[HM_SKIP_UNREADABLE_FILE];
    hm_batch_free(b);
    return rc;
}

int mrg_live_local(struct mrg_live *m, struct hm_batch *b, struct hm_err *err)
{
    b->info.rank = 0;
    return write_batch(m, b, err);
}

/* Enough rows that the rate is the writing's, not its first batch's. */
enum { RATE_MIN_ROWS = 200000 };

double mrg_live_write_rate(const struct mrg_live *m)
{
    int64_t busy = m->write_ns + m->decode_ns;
    return m->rows >= RATE_MIN_ROWS && busy > 0 ? (double)m->rows * 1e9 / (double)busy : 0;
}

void mrg_live_local_done(struct mrg_live *m, int exit_code, int watch_polling)
{
    m->peers[0].watch_polling = watch_polling;
    if (!m->local_done)
        mrg_writer_set_rank_complete(m->w, 0, 1, NULL);
    m->local_done = 1;
    m->peers[0].exit_code = exit_code;
    m->peers[0].done = 1;
}

/* Receives one message that MPI_Iprobe found. */
static int receive_one(struct mrg_live *m, MPI_Status *st, struct hm_err *err)
{
    int count = 0, r = st->MPI_SOURCE, rc;
    struct hm_batch *b = NULL;

    MPI_Get_count(st, MPI_BYTE, &count);
    if ((size_t)count > m->cap) {
        uint8_t *nb = realloc(m->buf, (size_t)count);
        if (!nb)
            return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory receiving %d bytes", count);
        m->buf = nb;
        m->cap = (size_t)count;
    }
    rc = MPI_Recv(m->buf, count, MPI_BYTE, r, st->MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
        return mpi_fail(err, "receive", rc);
    if (st->MPI_TAG == HM_TAG_DONE) {
        struct hm_msg_done d;
        memcpy(&d, m->buf, count < (int)sizeof d ? (size_t)count : sizeof d);
        m->peers[r].done = 1;
        m->peers[r].exit_code = (int)d.exit_code;
        m->peers[r].watch_polling = d.watch_polling != 0;
        return mrg_writer_set_rank_complete(m->w, r, 1, err);
    }
    int64_t t0 = hm_mono_ns();
    rc = hm_wire_decode(m->buf, (size_t)count, &b, err);
    m->decode_ns += hm_mono_ns() - t0;
    if (rc == 0) {
        b->info.rank = r; /* the sender is authoritative, not the trace */
        rc = write_batch(m, b, err);
        m->peers[r].batches++;
    }
    if (rc == 0) {
        int one = 1;
        rc = MPI_Send(&one, 1, MPI_INT, r, HM_TAG_CREDIT, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS)
            return mpi_fail(err, "credit", rc);
    }
    if (rc != 0)
        err->rank = r;
    return rc;
}

int mrg_live_step(struct mrg_live *m, int *all_done, struct hm_err *err)
{
    int rc = 0, flag = 1, done = 1;
    MPI_Status st;

    if (!m->initial_done && (rc = initial_sync(m, err)) != 0)
        return rc;
    for (int k = 0; k < MAX_MSGS_PER_STEP && flag && rc == 0; k++) {
        MPI_Iprobe(MPI_ANY_SOURCE, HM_TAG_BATCH, MPI_COMM_WORLD, &flag, &st);
        if (!flag)
            MPI_Iprobe(MPI_ANY_SOURCE, HM_TAG_DONE, MPI_COMM_WORLD, &flag, &st);
        if (flag)
            rc = receive_one(m, &st, err);
    }
    if (rc == 0 && m->opts.sync_interval_ms > 0 &&
        hm_mono_ns() - m->last_sync_ns > m->opts.sync_interval_ms * 1000000)
        rc = periodic_sync(m, err);
    if (rc == 0 && hm_mono_ns() - m->last_commit_ns > (int64_t)COMMIT_MS * 1000000) {
        rc = mrg_writer_commit(m->w, err);
        m->last_commit_ns = hm_mono_ns();
    }
    for (int r = 1; r < m->size; r++)
        done &= m->peers[r].done;
    *all_done = done;
    return rc;
}

/* Final round, then FIN to every peer so it can leave. */
static int say_goodbye(struct mrg_live *m, struct hm_err *err)
{
    struct hm_msg_done fin = {0};
    int rc = periodic_sync(m, err);
    for (int r = 1; r < m->size && rc == 0; r++)
        if (MPI_Send(&fin, sizeof fin, MPI_BYTE, r, HM_TAG_DONE, MPI_COMM_WORLD) != MPI_SUCCESS)
            rc = hm_err_set(err, HM_EMPI, NULL, -1, "cannot reach rank %d at the end", r);
    return rc;
}

/* A rank's model as the realign pass sees it; clamped counts interval
 * ends a clock step would have put before their starts. */
struct realign_ctx {
    struct mrg_clock_model *clock;
    int64_t clamped;
};

static int64_t model_offset(void *ctx, int64_t peer_ns)
{
    return mrg_clock_offset_at(((struct realign_ctx *)ctx)->clock, peer_ns);
}

static int64_t model_row_offset(void *ctx, int64_t row, int64_t start, int64_t t, int end)
{
    struct realign_ctx *x = ctx;
    return end ? mrg_clock_end_offset_of(x->clock, row, start, t, &x->clamped)
               : mrg_clock_offset_of(x->clock, row, t);
}

/* A model that moves no time by more than a ns from the start offset
 * needs no rewrite (one host, no drift). */
static int model_is_constant(const struct mrg_clock_model *c, int64_t applied)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->rounds[i].offset_ns != applied)
            return 0;
    return 1;
}

/* The columns of live_place_collectives.sql and live_place_sequences.sql. */
#define PLACE_COLL_COLUMNS(X) \
    X(PC_SLICE, "slice") X(PC_ENTER, "enter_ns") X(PC_EXIT, "exit_ns") X(PC_RANK0_EXIT, "rank0_exit_ns")
enum { PLACE_COLL_COLUMNS(HM_COLUMN_ENUM) PC__COUNT };
static const char *const place_coll_names[] = {PLACE_COLL_COLUMNS(HM_COLUMN_NAME)};
#define PLACE_SEQ_COLUMNS(X) \
    X(PS_TRACK, "track") X(PS_BY_EXTERNAL, "by_external_id") X(PS_ID, "id") X(PS_TS, "ts")
enum { PLACE_SEQ_COLUMNS(HM_COLUMN_ENUM) PS__COUNT };
static const char *const place_seq_names[] = {PLACE_SEQ_COLUMNS(HM_COLUMN_NAME)};

/* Tells a split model which side of its step each GPU collective of rank
 * r was on, by the same collective's exit on rank 0 (whose times are
 * final): where the clock stepped back, the rounds cannot tell a moment
 * before the step from one read again after it. Rows hold raw + applied. */
static int place_collectives(struct mrg_live *m, int r, int64_t applied, struct hm_err *err)
{
    sqlite3 *db = mrg_writer_db(m->w);
    sqlite3_stmt *st = NULL;
    int rc = mrg_writer_flush(m->w, err), src = SQLITE_DONE;

    if (rc)
        return rc;
    if (sqlite3_prepare_v2(db, hm_sql_live_place_collectives, -1, &st, NULL) != SQLITE_OK)
        return hm_err_set(err, HM_ESQL, NULL, -1, "placing rank %d's collectives: %s", r, sqlite3_errmsg(db));
    HM_COLUMNS_CHECK(st, place_coll_names);
    sqlite3_bind_int(st, 1, r);
    while (rc == 0 && (src = sqlite3_step(st)) == SQLITE_ROW) {
        if (sqlite3_column_type(st, PC_ENTER) == SQLITE_NULL || sqlite3_column_type(st, PC_EXIT) == SQLITE_NULL ||
            sqlite3_column_type(st, PC_RANK0_EXIT) == SQLITE_NULL)
            continue;
        if (mrg_clock_place(&m->peers[r].clock, sqlite3_column_int64(st, PC_SLICE),
                            sqlite3_column_int64(st, PC_ENTER) - applied, sqlite3_column_int64(st, PC_EXIT) - applied,
                            sqlite3_column_int64(st, PC_RANK0_EXIT)))
            rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    }
    if (rc == 0 && src != SQLITE_DONE)
        rc = hm_err_set(err, HM_ESQL, NULL, -1, "placing rank %d's collectives: %s", r, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return rc;
}

/* Slices of one track in the order a sequence number gives (CUPTI
 * correlation, else Kineto's External id), gathered for
 * mrg_clock_place_sequence. */
struct seq_run {
    HM_VEC(int64_t) row;
    HM_VEC(int64_t) start;
};

static int seq_flush(struct mrg_clock_model *c, struct seq_run *q)
{
    int rc = q->row.n > 1 ? mrg_clock_place_sequence(c, q->row.v, q->start.v, q->row.n) : 0;
    q->row.n = q->start.n = 0;
    return rc;
}

static int seq_add(struct seq_run *q, int64_t row, int64_t start)
{
    int64_t *r = HM_VEC_PUSH(q->row), *t = r ? HM_VEC_PUSH(q->start) : NULL;

    if (!t) {
        q->row.n -= r != NULL;   /* both or neither */
        return HM_ENOMEM;
    }
    *r = row;
    *t = start;
    return 0;
}

/* Tells a split model (a step back) the side of rank r's slices read
 * around its step from their order: the clock read those moments twice,
 * but a track's sequence numbers go on. Rows hold raw + applied. */
static int place_sequences(struct mrg_live *m, int r, int64_t applied, struct hm_err *err)
{
    struct mrg_clock_model *c = &m->peers[r].clock;
    sqlite3 *db = mrg_writer_db(m->w);
    sqlite3_stmt *st = NULL;
    struct seq_run q = {0};
    int64_t track = -1, family = -1;
    int rc, src = SQLITE_DONE;

    if (c->split == 0 || c->step_ns >= 0)
        return 0;
    if (sqlite3_prepare_v2(db, hm_sql_live_place_sequences, -1, &st, NULL) != SQLITE_OK)
        return hm_err_set(err, HM_ESQL, NULL, -1, "ordering rank %d's slices: %s", r, sqlite3_errmsg(db));
    /* Every slice that starts or ends between the two rounds around the
     * step, on either clock (an end there is placed by its start). */
    HM_COLUMNS_CHECK(st, place_seq_names);
    sqlite3_bind_int(st, 1, r);
    sqlite3_bind_int64(st, 2, c->rounds[c->split - 1].peer_ns + c->step_ns + applied);
    sqlite3_bind_int64(st, 3, c->rounds[c->split].peer_ns - c->step_ns + applied);
    rc = 0;
    while (rc == 0 && (src = sqlite3_step(st)) == SQLITE_ROW) {
        if (sqlite3_column_int64(st, PS_TRACK) != track || sqlite3_column_int64(st, PS_BY_EXTERNAL) != family) {
            rc = seq_flush(c, &q);
            track = sqlite3_column_int64(st, PS_TRACK);
            family = sqlite3_column_int64(st, PS_BY_EXTERNAL);
        }
        if (rc == 0)
            rc = seq_add(&q, sqlite3_column_int64(st, PS_ID), sqlite3_column_int64(st, PS_TS) - applied);
    }
    if (rc == 0)
        rc = seq_flush(c, &q);
    if (rc)
        rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    else if (src != SQLITE_DONE)
        rc = hm_err_set(err, HM_ESQL, NULL, -1, "ordering rank %d's slices: %s", r, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    HM_VEC_FREE(q.row);
    HM_VEC_FREE(q.start);
    return rc;
}

/* A step of rank r's clock: repaired (mrg_clock_split, then the sides of
 * the collectives and sequences around it), said on stderr and stored for
 * `report clocks`. */
static int repair_step(struct mrg_live *m, int r, int64_t applied, int64_t ref, struct hm_err *err)
{
    struct mrg_clock_model *c = &m->peers[r].clock;
    int64_t at_peer = 0, step = -mrg_clock_step(c, &at_peer);
    int steps = mrg_clock_split(c), rc;

    if (steps == 0)
        return 0;
    rc = place_collectives(m, r, applied, err);
    if (rc == 0)
        rc = place_sequences(m, r, applied, err);
    if (rc)
        return rc;
    fprintf(stderr, "htamerge: warning: rank %d's clock stepped by %+.3f ms between two clock syncs (at its "
            "%.3f s); repaired: times read after the step are aligned with the clock after it\n",
            r, (double)step / 1e6, (double)(at_peer - ref) / 1e9);
    if (steps > 1)
        fprintf(stderr, "htamerge: warning: rank %d's clock stepped %d times; only the largest is repaired, "
                "times near the others are uncertain by about their size\n", r, steps);
    return mrg_writer_set_clock_step(m->w, r, c->step_ns, c->step_lo_ns + (c->step_hi_ns - c->step_lo_ns) / 2,
                                     err);
}

/* Applies each rank's full clock model and stores its summary. */
static int apply_clocks(struct mrg_live *m, struct hm_err *err)
{
    struct mrg_realign_rank *rr = calloc((size_t)m->size, sizeof *rr);
    struct realign_ctx *ctx = calloc((size_t)m->size, sizeof *ctx);
    int rc = rr && ctx ? 0 : hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");

    for (int r = 1; r < m->size && rc == 0; r++) {
        struct mrg_clock_model *c = &m->peers[r].clock;
        int64_t off, ref, unc;
        double drift;
        if (c->n == 0)
            continue;
        mrg_clock_summary(c, &off, &drift, &ref, &unc);
        rc = repair_step(m, r, off, ref, err);
        if (rc)
            break;
        /* The drift of the pieces, the step left out. */
        mrg_clock_summary(c, &off, &drift, &ref, &unc);
        ctx[r].clock = c;
        if (!model_is_constant(c, off))
            rr[r] = (struct mrg_realign_rank){off, model_offset, &ctx[r], model_row_offset, NULL};
        rc = mrg_writer_update_clock(m->w, r, off, drift, ref, "mpi", unc, err);
    }
    if (rc == 0)
        rc = mrg_writer_realign_all(m->w, rr, m->size, err);
    for (int r = 1; r < m->size && rc == 0; r++)
        if (ctx[r].clamped)
            fprintf(stderr, "htamerge: warning: rank %d: %lld intervals across its clock step would end before "
                    "they start; their duration is 0\n", r, (long long)ctx[r].clamped);
    free(ctx);
    free(rr);
    return rc;
}

/* HTA analyses per rank on what was written. */
static int analyse(struct mrg_live *m, struct hm_err *err)
{
    struct an_options modes[2] = {{.all_steps = 0}, {.all_steps = 1}};
    for (int r = 0; r < m->size; r++) {
        struct an_rank_result res[2];
        struct hm_batch *b = NULL;
        int rc = mrg_writer_load_rank(m->w, r, &b, err);
        if (rc == HM_EEMPTY)
            continue;
        if (rc == 0) {
            b->info.flags |= HM_INFO_F_LIVE;
            rc = an_hta_run_modes(b, modes, 2, res, err);
        }
        if (rc == 0)
            rc = mrg_writer_store_iterations(m->w, b, err);
        hm_batch_free(b);
        if (rc)
            return rc;
        res[0].rank = res[1].rank = r;
        rc = mrg_writer_add_analysis(m->w, &res[0], "hta", err);
        if (rc == 0)
            rc = mrg_writer_add_analysis(m->w, &res[1], "all_steps", err);
        an_rank_result_clear(&res[0]);
        an_rank_result_clear(&res[1]);
        if (rc)
            return rc;
    }
    return 0;
}

/* One line for all the ranks that scanned their trace folders: inotify's
 * per-user instances (128 by default) run out with that many ranks on a
 * host, and a line per rank would be hundreds. */
static void say_polling(const struct mrg_live *m)
{
    int n = 0, first = -1;

    for (int r = 0; r < m->size; r++)
        if (m->peers[r].watch_polling && n++ == 0)
            first = r;
    if (n)
        fprintf(stderr, "htamerge: warning: %d of %d ranks (rank %d first) could not watch their trace folders with "
                "inotify and scanned them every second instead (trace files reached rank 0 up to a second or two "
                "later); raise fs.inotify.max_user_instances (sysctl) above the ranks on a host\n", n, m->size, first);
}

/* meta.exit_codes: "rank:code" for every rank whose program failed (127:
 * it could not be started), "" when all exited 0. */
static int store_exit_codes(struct mrg_live *m, struct hm_err *err)
{
    char buf[4096] = "";
    size_t n = 0;

    for (int r = 0; r < m->size && n < sizeof buf - 32; r++)
        if (m->peers[r].exit_code)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%d:%d", n ? "," : "", r,
                                  m->peers[r].exit_code);
    return mrg_writer_set_meta(m->w, "exit_codes", buf, err);
}

int mrg_live_finish(struct mrg_live *m, int complete, struct mrg_live_result *res,
                    struct hm_err *err)
{
    int rc = 0, worst = 0;

    for (int r = 0; r < m->size; r++) {
        if (!m->peers[r].done && r > 0)
            mrg_writer_set_rank_complete(m->w, r, 0, err);
        if (m->peers[r].exit_code && !worst)
            worst = m->peers[r].exit_code;
    }
    if (complete) {
        int64_t t0 = hm_mono_ns(), t1, t2;
        rc = say_goodbye(m, err);
        if (rc == 0)
            rc = apply_clocks(m, err);
        /* Indexes first: the analyses read each rank back through them. */
        if (rc == 0)
            rc = mrg_writer_build_indexes(m->w, err);
        t1 = hm_mono_ns();
        if (rc == 0 && m->opts.analyse)
            rc = analyse(m, err);
        if (rc == 0)
            rc = xr_finish(m->w, &(struct xr_opts){.live = 1}, err);
        t2 = hm_mono_ns();
        if (getenv("HTAMERGE_STATS"))
            fprintf(stderr,
                    "htamerge-stats: merger wrote %llu records in %.3f s of writing + %.3f s of decoding "
                    "(%.0f records/s); clocks+indexes %.3f s, analyses %.3f s\n",
                    (unsigned long long)m->rows, m->write_ns * 1e-9, m->decode_ns * 1e-9,
                    m->rows / ((m->write_ns + m->decode_ns) * 1e-9 + 1e-12), (t1 - t0) * 1e-9, (t2 - t1) * 1e-9);
    }
    say_polling(m);
    if (rc == 0)
        rc = store_exit_codes(m, err);
    if (rc == 0)
        rc = mrg_writer_set_meta(m->w, "run_status", complete ? "complete" : "incomplete", err);
    if (rc == 0)
        rc = complete ? mrg_writer_finish(m->w, err) : mrg_writer_close_live(m->w, err);
    else {
        mrg_writer_mark_failed(m->w, "failed");
        mrg_writer_close_live(m->w, NULL);
    }
    res->job_exit = worst;
    res->files_refused = m->files_refused;
    for (int r = 0; r < m->size; r++)
        mrg_clock_free(&m->peers[r].clock);
    free(m->peers);
    free(m->buf);
    free(m);
    return rc;
}
