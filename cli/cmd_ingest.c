/* `htamerge ingest`: trace folders that already exist -> one SQLite file. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "collector/sources/kineto_json/kineto_json.h"
#include "collector/ingest_list.h"
#include "collector/ingest_send.h"
#include "collector/launcher_env.h"
#include "merger/ingest.h"
#include "merger/ingest_shards.h"
#include "common/monotime.h"

#include <mpi.h>

static const char ingest_help[] =
    "usage: htamerge ingest [-o FILE.db] [--keep-going] [-j N] [--node-local [--shards]] PATH...\n"
    "\n"
    "Reads Kineto (torch.profiler) traces, .json or .json.gz, from the files and\n"
    "folders given (folders are searched recursively), and writes one SQLite file\n"
    "with every rank, its slices, collectives, counters and steps, plus the\n"
    "HTA-compatible analyses (see `htamerge report`).\n"
    "\n"
    "A file's rank comes from distributedInfo.rank, else from its name (rank-3,\n"
    "rank3, rank_3). Two files claiming the same rank is an error.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE.db  output (default htamerge-YYYYmmdd-HHMMSS.db); written to\n"
    "                        a temporary file and renamed when complete\n"
    "  -k, --keep-going      skip files that cannot be read, ingest the rest\n"
    "  -j, --jobs N          parser threads (default: one per spare core)\n"
    "      --no-args         do not store each slice's args JSON (smaller file)\n"
    "      --node-local      under mpirun: every host has its own PATH (node-local\n"
    "                        disks); each host's ranks read its files, stored as\n"
    "                        HOST:PATH (host: $HTAMERGE_HOSTNAME, else its name)\n"
    "      --shards          with --node-local: one file per host, FILE.db.d/HOST.db,\n"
    "                        written by the host's first rank other than rank 0\n"
    "                        (the rest read), plus the index FILE.db (per-rank and\n"
    "                        cross-rank tables) written by rank 0: the writing grows\n"
    "                        with the hosts. report/serve/sql/export read the index\n"
    "                        and open the shards of the ranks asked for\n"
    "  -q, --quiet           no progress output\n"
    "  -h, --help            this text\n"
    "\n"
    "Under mpirun (-n N, N > 1) the files are read by ranks 1..N-1 in parallel\n"
    "and only records travel to rank 0, which writes the file.\n"
    "\n"
    "exit status:\n"
    "  0  all files ingested\n"
    "  1  failed (bad input without --keep-going, or I/O); no output file is left\n"
    "  2  bad command line\n"
    "  3  output written, but some files were skipped (--keep-going)\n"
    "\n"
    "examples:\n"
    "  htamerge ingest -o run.db ./traces\n"
    "  htamerge ingest -o run.db rank-0.pt.trace.json.gz rank-1.pt.trace.json.gz\n"
    "  htamerge ingest -k -o run.db ./traces        # skip unreadable files; exit 3 then\n"
    "  mpirun -n 9 htamerge ingest -o run.db ./traces  # 8 parser ranks + the writer\n"
    "  mpirun -n 16 --map-by ppr:4:node htamerge ingest --node-local -o run.db /scratch/traces\n"
    "  mpirun -n 16 --map-by ppr:4:node htamerge ingest --node-local --shards -o run.db /scratch/traces\n";

struct progress {
    int tty;
    double last;
};

/* A progress bar with bytes/s on a terminal; one summary line otherwise. */
static void show_progress(void *ctx, const struct mrg_ingest_stats *s, uint64_t total, int done)
{
    struct progress *p = ctx;
    double el = s->seconds > 0 ? s->seconds : hm_mono_s() - p->last;

    if (!done && p->tty) {
        int width = 30, fill = total ? (int)(width * (double)s->bytes_in / (double)total) : 0;
        char bar[64];
        if (fill > width)
            fill = width;
        memset(bar, '#', (size_t)fill);
        memset(bar + fill, '.', (size_t)(width - fill));
        bar[width] = '\0';
        fprintf(stderr, "\r[%s] %zu files  %.1f/%.1f MB  %.0f MB/s JSON ", bar, s->files,
                s->bytes_in / 1e6, total / 1e6, el > 0 ? s->bytes_json / 1e6 / el : 0.0);
        return;
    }
    if (!done)
        return;
    if (p->tty)
        fputc('\n', stderr);
    fprintf(stderr,
            "htamerge: ingested %zu of %zu files, %zu ranks, %llu slices, %llu collectives, "
            "%llu skipped events; %.1f MB JSON in %.2f s (%.0f MB/s)\n",
            s->files - s->files_failed, s->files, s->ranks, (unsigned long long)s->slices,
            (unsigned long long)s->collectives, (unsigned long long)s->skipped,
            s->bytes_json / 1e6, s->seconds, s->seconds > 0 ? s->bytes_json / 1e6 / s->seconds : 0.0);
}

static const char *default_output(void)
{
    static char buf[64];
    time_t t = time(NULL);
    struct tm tm;
    strftime(buf, sizeof buf, "htamerge-%Y%m%d-%H%M%S.db", localtime_r(&t, &tm));
    return buf;
}

/* `mpirun -n N htamerge ingest`: ranks > 0 read, rank 0 merges. */
static int ingest_parallel(int argc, char **argv, const struct mrg_ingest_opts *opts, int quiet, int node_local,
                           int shards)
{
    struct mrg_ingest_stats st;
    struct col_ingest_list list;
    struct hm_err err;
    char line[1400];
    int rank, size, rc;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (shards)
        rc = col_ingest_list_share_sharded((const char *const *)argv + optind, argc - optind, &list, &err);
    else
        rc = col_ingest_list_share((const char *const *)argv + optind, argc - optind, node_local, &list, &err);
    if (rc != 0) {
        if (err.code)
            hm_say("rank %d: %s", rank, hm_err_line(&err, line, sizeof line));
        MPI_Finalize();
        return CLI_EXIT_FAIL;
    }
    if (shards)
        rc = mrg_ingest_sharded(&list, opts, &st, &err);
    else if (rank == 0)
        rc = mrg_ingest_mpi_merge(list.files, list.nfiles, opts, &st, &err);
    else
        rc = col_ingest_send(&list, opts->keep_args, &err);
    col_ingest_list_free(&list);
    if (rc != 0)
        hm_say("rank %d: %s", rank, hm_err_line(&err, line, sizeof line));
    else if (rank == 0 && !quiet && shards)
        fprintf(stderr, "htamerge: wrote %s (index) and its shards in %s.d\n", opts->output, opts->output);
    else if (rank == 0 && !quiet)
        fprintf(stderr, "htamerge: wrote %s (%d reader ranks)\n", opts->output, size - 1);
    MPI_Finalize();
    if (rc != 0)
        return CLI_EXIT_FAIL;
    return rank == 0 && st.files_failed ? CLI_EXIT_PARTIAL : CLI_EXIT_OK;
}

int cli_ingest(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, 0, 'o'}, {"keep-going", no_argument, 0, 'k'},
        {"jobs", required_argument, 0, 'j'},   {"no-args", no_argument, 0, 'A'},
        {"quiet", no_argument, 0, 'q'},        {"help", no_argument, 0, 'h'},
        {"node-local", no_argument, 0, 'N'},   {"shards", no_argument, 0, 'S'},
        {0, 0, 0, 0}};
    struct mrg_ingest_opts opts = {.keep_args = 1};
    struct progress prog = {.tty = isatty(2), .last = hm_mono_s()};
    struct mrg_ingest_stats st;
    struct hm_err err;
    char **files = NULL, line[1400];
    size_t nfiles = 0;
    int c, quiet = 0, node_local = 0, shards = 0, rc;

    opts.command_line = cli_command_line(argc, argv);
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:kj:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': opts.output = optarg; break;
        case 'k': opts.keep_going = 1; break;
        case 'j': opts.jobs = atoi(optarg); break;
        case 'A': opts.keep_args = 0; break;
        case 'q': quiet = 1; break;
        case 'N': node_local = 1; break;
        case 'S': shards = 1; break;
        case 'h': fputs(ingest_help, stdout); return CLI_EXIT_OK;
        default: fputs(ingest_help, stderr); return CLI_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        hm_say("ingest: no input paths (try `htamerge ingest --help`)");
        return CLI_EXIT_USAGE;
    }
    if (!opts.output)
        opts.output = default_output();
    if (!quiet) {
        opts.progress = show_progress;
        opts.progress_ctx = &prog;
    }
    /* A shard per host needs each host's own files: a shared folder listed
     * on every host would give every host every file. */
    if (shards && !node_local) {
        hm_say("ingest: --shards needs --node-local (each host's own trace folder) and mpirun");
        return CLI_EXIT_USAGE;
    }
    {
        struct col_launcher who;
        if (col_env_launcher(&who, NULL) == 0 && who.size > 1)
            return ingest_parallel(argc, argv, &opts, quiet, node_local, shards);
    }
    if (shards) {
        hm_say("ingest: --shards needs mpirun (a writer per host)");
        return CLI_EXIT_USAGE;
    }

    hm_err_clear(&err);
    rc = src_kineto_list((const char *const *)argv + optind, argc - optind, &files, &nfiles, &err);
    if (rc != 0) {
        hm_say("%s", hm_err_line(&err, line, sizeof line));
        return CLI_EXIT_FAIL;
    }
    rc = mrg_ingest(files, nfiles, &opts, &st, &err);
    src_kineto_list_free(files, nfiles);
    if (rc != 0) {
        hm_say("%s", hm_err_line(&err, line, sizeof line));
        return CLI_EXIT_FAIL;
    }
    if (!quiet)
        fprintf(stderr, "htamerge: wrote %s\n", opts.output);
    return st.files_failed ? CLI_EXIT_PARTIAL : CLI_EXIT_OK;
}
