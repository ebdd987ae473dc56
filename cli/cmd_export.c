/* `htamerge export`: a merged file as one Chrome/Perfetto JSON trace.
 * This file owns the command line and the output file (written under a
 * temporary name and renamed at the end, so a failed export leaves no
 * half-written JSON); the JSON itself is query/export_chrome.c's. */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "query/export.h"
#include "query/export_ends.h"
#include "query/shards.h"
#include "query/report.h"

#ifndef HTAMERGE_VERSION
#define HTAMERGE_VERSION "0.1.0"
#endif

static const char export_help[] =
    "usage: htamerge export FILE.db [--format chrome] [-o OUT.json] [--ranks LIST]\n"
    "                       [--steps LIST] [--absolute]\n"
    "\n"
    "Writes the merged file as one Chrome trace-event JSON file that Perfetto\n"
    "(ui.perfetto.dev) and chrome://tracing open: every rank's host and each of\n"
    "its GPUs is a process (\"rank 3 \xc2\xb7 HOST \xc2\xb7 CPU\", \"rank 3 \xc2\xb7 GPU 3\"), every\n"
    "thread and stream a named thread; all ranks on the aligned clock. Arrows\n"
    "link each CPU launch to its kernel or memcpy, and each collective across\n"
    "the ranks that took part. Memory counters become counter tracks. The file\n"
    "is written as the database is read, so large runs need little memory.\n"
    "\n"
    "Times are microseconds since otherData.origin_ns (the file's first aligned\n"
    "ns, floored to a whole us), written exactly with three decimals. Slices\n"
    "that only partly overlap another slice of their thread are put on an\n"
    "extra thread named \"... \xc2\xb7 overlap N\" so that every thread nests.\n"
    "\n"
    "options:\n"
    "  -f, --format F    chrome (the only format; the default)\n"
    "  -o, --output OUT  output file; '-' or none: standard output\n"
    "  -r, --ranks L     only these ranks, e.g. 0,2-3\n"
    "  -s, --steps L     only slices overlapping these ProfilerStep numbers (the\n"
    "                    window from a step's earliest start to its latest end\n"
    "                    over the exported ranks)\n"
    "  -a, --absolute    ts as aligned Unix-epoch microseconds (may lose ns\n"
    "                    precision in viewers that read numbers as doubles)\n"
    "\n"
    "exit status: 0 ok, 1 the file cannot be read or the output cannot be\n"
    "written, 2 bad command line (including a rank or step the file lacks).\n"
    "\n"
    "examples:\n"
    "  htamerge export run.db --format chrome -o run.json\n"
    "  htamerge export run.db -o steps.json --ranks 0-3 --steps 5,6\n"
    "  htamerge export run.db | gzip > run.json.gz     # Perfetto opens .json.gz\n";

static bool fits_int(const int64_t *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i] > INT_MAX)
            return false;
    return true;
}

struct export_args {
    const char *db, *out;     /* borrowed from argv; out NULL = stdout */
    int *ranks;               /* owned */
    int64_t *steps;           /* owned */
    struct qry_export_opts o;
};

/* Opens a temporary file beside path; *tmp is owned by the caller. */
static FILE *open_temp(const char *path, char **tmp)
{
    char *d = strdup(path), *b = strdup(path);
    FILE *f = NULL;
    int fd = -1, saved;

    *tmp = NULL;
    if (d && b && asprintf(tmp, "%s/.%s.tmp-XXXXXX", dirname(d), basename(b)) < 0)
        *tmp = NULL;
    free(d);
    free(b);
    if (*tmp && (fd = mkstemp(*tmp)) >= 0) {
        mode_t mask = umask(0);   /* mkstemp makes 0600; the result is an ordinary file */
        umask(mask);
        if (fchmod(fd, 0666 & ~mask) == 0 && (f = fdopen(fd, "w")))
            return f;
    }
    saved = errno;   /* for the caller's message; the cleanup may change it */
    if (fd >= 0) {
        close(fd);
        unlink(*tmp);
    }
    free(*tmp);
    *tmp = NULL;
    errno = saved;
    return NULL;
}

static void report_done(const struct export_args *a, const struct qry_export_stats *st)
{
    fprintf(stderr,
            "htamerge: wrote %s: %d processes, %d threads, %lld slices (%lld on overlap lanes), "
            "%lld launch flows, %lld collective flows, %lld counter samples\n",
            a->out, st->processes, st->threads, (long long)st->slices, (long long)st->moved_slices,
            (long long)st->launch_flows, (long long)st->collective_flows, (long long)st->counters);
}

/* A rank of a sharded ingest's export and its shard. */
struct shard_rank {
    int rank, shard;
};

/* The ranks to export from the index db, by shard (then rank): those asked
 * for, else every rank. *out owned. 0, or HM_EINVAL naming a rank in no
 * shard, or HM_ESQL. */
static int shard_ranks(const struct export_args *a, sqlite3 *db, struct shard_rank **out, int *n, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    struct shard_rank *v = NULL;
    int cap = 0, found = 0, rc = 0;

    *n = 0;
    if (sqlite3_prepare_v2(db, "SELECT rank, shard FROM rank_shards ORDER BY shard, rank", -1, &st, NULL) != SQLITE_OK)
        return hm_err_set(err, HM_ESQL, a->db, -1, "%s", sqlite3_errmsg(db));
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        int r = sqlite3_column_int(st, 0), want = !a->o.ranks;
        for (int i = 0; !want && i < a->o.nranks; i++)
            want = a->o.ranks[i] == r;
        if (!want)
            continue;
        if (*n == cap) {
            struct shard_rank *g = realloc(v, (size_t)(cap = cap * 2 + 16) * sizeof *v);
            if (!g) {
                rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
                break;
            }
            v = g;
        }
        v[(*n)++] = (struct shard_rank){r, sqlite3_column_int(st, 1)};
    }
    sqlite3_finalize(st);
    for (int i = 0; rc == 0 && a->o.ranks && i < a->o.nranks; i++) {
        found = 0;
        for (int k = 0; k < *n && !found; k++)
            found = v[k].rank == a->o.ranks[i];
        if (!found)
            rc = hm_err_set(err, HM_EINVAL, a->db, -1, "rank %d is in no shard of this index", a->o.ranks[i]);
    }
    if (rc == 0 && *n == 0)
        rc = hm_err_set(err, HM_EINVAL, a->db, -1, "the index lists no rank in a shard");
    if (rc)
        free(v);
    else
        *out = v;
    return rc;
}

static void add_stats(struct qry_export_stats *sum, const struct qry_export_stats *st)
{
    sum->slices += st->slices;
    sum->moved_slices += st->moved_slices;
    sum->launch_flows += st->launch_flows;
    sum->collective_flows += st->collective_flows;
    sum->counters += st->counters;
    sum->processes += st->processes;
    sum->threads += st->threads;
}

/* The index of a sharded ingest keeps few slices: the ranks asked for (all
 * without --ranks) are exported from their shards in turn, one document
 * with one origin, the parts' pids, tids and flow ids apart. The arrows
 * across ranks are the index's collective instances, drawn by the last part
 * through the slices each part noted (export_ends.h), and the --steps
 * windows the index's. A missing or incomplete shard fails, naming it. */
static int export_shards(const struct export_args *a, sqlite3 *index, FILE *f, struct qry_export_stats *sum,
                         struct hm_err *err)
{
    struct shard_rank *v = NULL;
    int n = 0, rc = shard_ranks(a, index, &v, &n, err), *sub = NULL, k = 0;
    struct qry_export_part part = {.ranks_all = a->o.ranks, .nranks_all = a->o.nranks, .before = sum,
                                   .index = index, .ends = qry_export_ends_new()};
    int64_t origin = INT64_MAX;

    memset(sum, 0, sizeof *sum);
    if (rc == 0 && (!(sub = malloc((size_t)n * sizeof *sub)) || !part.ends))
        rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    for (int i = 0; rc == 0 && !a->o.absolute && i < n; i++) {   /* the parts' origin: their least */
        sqlite3 *db;
        int64_t o;
        if (i > 0 && v[i].shard == v[i - 1].shard)
            continue;
        if (!(db = qry_shard_open(index, a->db, v[i].rank, err)))
            rc = err->code ? err->code : HM_EIO;
        else if ((rc = qry_export_origin(db, &o, err)) == 0 && o < origin)
            origin = o;
        sqlite3_close(db);
    }
    part.origin_ns = origin == INT64_MAX ? 0 : origin;
    for (int i = 0, end; rc == 0 && i < n; i = end, k++) {
        struct qry_export_opts o = a->o;
        struct qry_export_stats st;
        sqlite3 *db;
        int m = 0;
        for (end = i; end < n && v[end].shard == v[i].shard; end++)
            sub[m++] = v[end].rank;
        o.ranks = sub;
        o.nranks = m;
        o.part = &part;
        part.head = i == 0;
        part.tail = end == n;
        part.more = sum->processes + sum->slices + sum->counters > 0;
        part.tid_base = (int64_t)(k + 1) << 24;   /* above every pid, apart from the other parts' */
        if (!(db = qry_shard_open(index, a->db, v[i].rank, err))) {
            rc = err->code ? err->code : HM_EIO;
            break;
        }
        rc = qry_export_chrome(db, &o, f, &st, err);
        sqlite3_close(db);
        add_stats(sum, &st);
        part.pid_base += st.pids;
        part.flow_base += st.flows;
    }
    sum->origin_ns = a->o.absolute ? 0 : part.origin_ns;
    qry_export_ends_free(part.ends);
    free(v);
    free(sub);
    return rc;
}

static int run_export(struct export_args *a)
{
    static char buf[1 << 20];
    struct qry_export_stats st;
    struct hm_err err;
    char line[1400], *tmp = NULL;
    FILE *f = stdout;
    sqlite3 *db;
    int rc;

    hm_err_clear(&err);
    if (access(a->db, R_OK) != 0) {
        hm_say("export: cannot read %s: %s", a->db, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    if (!(db = qry_open(a->db, &err))) {
        hm_say("%s", hm_err_line(&err, line, sizeof line));
        return CLI_EXIT_FAIL;
    }
    if (a->out && !(f = open_temp(a->out, &tmp))) {
        hm_say("export: cannot create %s: %s", a->out, strerror(errno));
        sqlite3_close(db);
        return CLI_EXIT_FAIL;
    }
    setvbuf(f, buf, _IOFBF, sizeof buf);
    rc = qry_shard_count(db) > 0 ? export_shards(a, db, f, &st, &err) : qry_export_chrome(db, &a->o, f, &st, &err);
    sqlite3_close(db);
    if (rc == HM_EIO)
        snprintf(err.file, sizeof err.file, "%s", a->out ? a->out : "<stdout>");
    if (rc == 0 && (fflush(f) != 0 || ferror(f)))
        rc = hm_err_set(&err, HM_EIO, a->out ? a->out : "<stdout>", -1, "write failed: %s", strerror(errno));
    if (tmp && fclose(f) != 0 && rc == 0)
        rc = hm_err_set(&err, HM_EIO, a->out, -1, "write failed: %s", strerror(errno));
    if (tmp && rc == 0 && rename(tmp, a->out) != 0)
        rc = hm_err_set(&err, HM_EIO, a->out, -1, "cannot rename the finished file into place: %s",
                        strerror(errno));
    if (tmp && rc != 0)
        unlink(tmp);
    free(tmp);
    if (rc != 0) {
        hm_say("%s", hm_err_line(&err, line, sizeof line));
        return rc == HM_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
    }
    if (a->out)
        report_done(a, &st);
    return CLI_EXIT_OK;
}

/* Fills a from the command line; a CLI_EXIT_* code, or -1 to go on. */
static int parse_args(int argc, char **argv, struct export_args *a)
{
    static const struct option longopts[] = {
        {"format", required_argument, 0, 'f'}, {"output", required_argument, 0, 'o'},
        {"ranks", required_argument, 0, 'r'},  {"steps", required_argument, 0, 's'},
        {"absolute", no_argument, 0, 'a'},     {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int64_t *list = NULL;
    int c, n;

    optind = 1;
    while ((c = getopt_long(argc, argv, "f:o:r:s:ah", longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (strcmp(optarg, "chrome") != 0) {
                hm_say("export: unknown format '%s' (chrome is the only one)", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case 'o':
            if (!*optarg) {
                hm_say("export: -o needs a file name ('-' for standard output)");
                return CLI_EXIT_USAGE;
            }
            a->out = strcmp(optarg, "-") ? optarg : NULL;
            break;
        case 'r':
            if ((n = cli_parse_list(optarg, &list)) < 0 || n > 65536 || !fits_int(list, n)) {
                free(list);
                hm_say("export: bad rank list '%s' (example: 0,2-3)", optarg);
                return CLI_EXIT_USAGE;
            }
            free(a->ranks);
            if (!(a->ranks = malloc((size_t)n * sizeof *a->ranks)))
                return free(list), CLI_EXIT_FAIL;
            for (int i = 0; i < n; i++)
                a->ranks[i] = (int)list[i];
            free(list);
            a->o.ranks = a->ranks;
            a->o.nranks = n;
            break;
        case 's':
            free(a->steps);
            a->steps = NULL;
            if ((a->o.nsteps = cli_parse_list(optarg, &a->steps)) < 0) {
                hm_say("export: bad step list '%s' (example: 551,553-560)", optarg);
                return CLI_EXIT_USAGE;
            }
            a->o.steps = a->steps;
            break;
        case 'a': a->o.absolute = true; break;
        case 'h': fputs(export_help, stdout); return CLI_EXIT_OK;
        default: fputs(export_help, stderr); return CLI_EXIT_USAGE;
        }
    }
    if (argc - optind != 1) {
        hm_say("export: %s (try `htamerge export --help`)",
                  optind >= argc ? "missing FILE.db" : "one FILE.db only");
        return CLI_EXIT_USAGE;
    }
    a->db = argv[optind];
    return -1;
}

int cli_export(int argc, char **argv)
{
    struct export_args a = {0};
    int rc = parse_args(argc, argv, &a);

    if (rc < 0) {
        a.o.source = a.db;
        a.o.producer = "htamerge " HTAMERGE_VERSION;
        rc = run_export(&a);
    }
    free(a.ranks);
    free(a.steps);
    return rc;
}
