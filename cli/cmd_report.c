/* `htamerge report` and `htamerge sql`: answers from a merged file. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "query/report.h"
#include "query/shards.h"
#include "query/sql_guard.h"
#include "query/topics.h"

static const char report_help_head[] =
    "usage: htamerge report FILE.db [TOPIC] [--format table|json|csv] [--ranks LIST]\n"
    "                       [--all-ranks] [--steps LIST] [--all-steps] [--top N]\n"
    "                       [--method scalasca|hta] [--by graph]\n"
    "\n"
    "topics:\n";

static const char report_help_tail[] =
    "\n"
    "By default the numbers follow Holistic Trace Analysis' definitions, including\n"
    "dropping the last ProfilerStep; --all-steps keeps it.\n"
    "\n"
    "Past 64 ranks the per-rank tables list the ranks that stand out (the straggler,\n"
    "the --top highest and lowest by the topic's figure) and summarise the others\n"
    "(rank_summary, spread); steps summarises each step across the ranks\n"
    "(step_summary, step_phases); stragglers lists the --top worst ranks past --top\n"
    "ranks. --ranks or --all-ranks give the rows.\n"
    "\n"
    "options:\n"
    "  -f, --format F   table (default), json or csv\n"
    "  -r, --ranks L    only these ranks, e.g. 0-7,517 (their rows, never summarised)\n"
    "  -A, --all-ranks  every rank's rows, however many ranks\n";

/* After the --steps line, whose topics come from the table. */
static const char report_help_options[] =
    "  -a, --all-steps  keep the last ProfilerStep\n"
    "  -n, --top N      kernels per rank in the kernels topic; ranks listed at each\n"
    "                   end of a summarised per-rank table (default 10)\n"
    "      --method M   stragglers: scalasca (default: wait states on aligned enter times)\n"
    "                   or hta (HTA's get_potential_stragglers: late-starting ncclKernel*)\n"
    "      --candidates K  ranks --method hta names (default 2, as HTA)\n"
    "      --by graph   kernels: per CUDA graph (live capture), its launches, kernels,\n"
    "                   GPU time and the ranges its nodes were captured in\n"
    "\n"
    "exit status: 0 ok, 1 the file cannot be read, 2 bad command line.\n"
    "\n"
    "examples:\n"
    "  htamerge report run.db\n"
    "  htamerge report run.db temporal --format json\n"
    "  htamerge report run.db idle --ranks 0 --format csv\n"
    "  htamerge report run.db stragglers --format json\n"
    "  htamerge report run.db stragglers --method hta\n"
    "  htamerge report run.db steps --steps 3-5 --ranks 0,2\n"
    "  htamerge report run.db temporal --all-ranks --format csv > temporal.csv\n"
    "  htamerge report run.db kernels --top 5 --format csv > kernels.csv\n"
    "  htamerge report run.db kernels --by graph\n";

/* report --help: the topics are those of the table in query/topics.c. */
static void report_help(FILE *out)
{
    const char *sep = "";

    fputs(report_help_head, out);
    qry_topics_help(out);
    fputs(report_help_tail, out);
    fputs("  -s, --steps L    only these ProfilerStep numbers (", out);
    for (const struct qry_topic *t = qry_topics; t->name; t++)
        if (t->flags & QRY_TOPIC_STEPS) {
            fprintf(out, "%s%s", sep, t->name);
            sep = ", ";
        }
    fputs(")\n", out);
    fputs(report_help_options, out);
}

static int run_report(const char *path, struct qry_report_opts *o, enum qry_format fmt)
{
    struct hm_err err;
    char line[1400];
    cJSON *doc = NULL;
    sqlite3 *db;
    int rc;

    hm_err_clear(&err);
    db = qry_open(path, &err);
    if (!db) {
        hm_say("%s", hm_err_line(&err, line, sizeof line));
        return CLI_EXIT_FAIL;
    }
    rc = qry_report_build(db, o, &doc, &err);
    sqlite3_close(db);
    if (rc != 0) {
        hm_say("%s", hm_err_line(&err, line, sizeof line));
        return CLI_EXIT_FAIL;
    }
    qry_report_render(doc, fmt, fmt == QRY_FORMAT_TABLE && cli_parse_color("auto"), stdout);
    cJSON_Delete(doc);
    return CLI_EXIT_OK;
}

int cli_report(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"format", required_argument, 0, 'f'}, {"ranks", required_argument, 0, 'r'},
        {"steps", required_argument, 0, 's'},  {"all-steps", no_argument, 0, 'a'},
        {"top", required_argument, 0, 'n'},    {"help", no_argument, 0, 'h'},
        {"method", required_argument, 0, 'M'}, {"candidates", required_argument, 0, 'K'},
        {"all-ranks", no_argument, 0, 'A'},    {"by", required_argument, 0, 'B'},
        {0, 0, 0, 0}};
    struct qry_report_opts o = {.topic = "summary"};
    enum qry_format fmt = QRY_FORMAT_TABLE;
    int64_t *ranks = NULL, *steps = NULL;
    int c, rc, n, ri[4096];

    optind = 1;
    while ((c = getopt_long(argc, argv, "f:r:s:an:hA", longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (cli_parse_format(optarg, &fmt)) {
                hm_say("report: unknown format '%s' (table, json or csv)", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case 'r':
            free(ranks);
            if ((n = cli_parse_list(optarg, &ranks)) < 0 || n > 4096) {
                hm_say("report: bad rank list '%s' (example: 0,2-3)", optarg);
                return CLI_EXIT_USAGE;
            }
            for (int i = 0; i < n; i++)
                ri[i] = (int)ranks[i];
            o.ranks = ri;
            o.nranks = n;
            break;
        case 's':
            free(steps);
            if ((o.nsteps = cli_parse_list(optarg, &steps)) < 0) {
                hm_say("report: bad step list '%s' (example: 551,553-560)", optarg);
                return CLI_EXIT_USAGE;
            }
            o.steps = steps;
            break;
        case 'a': o.all_steps = 1; break;
        case 'A': o.all_ranks = 1; break;
        case 'n': o.top_kernels = atoi(optarg); break;
        case 'M':
            if (strcmp(optarg, "hta") != 0 && strcmp(optarg, "scalasca") != 0) {
                hm_say("report: unknown straggler method '%s' (scalasca or hta)", optarg);
                return CLI_EXIT_USAGE;
            }
            o.method = optarg;
            break;
        case 'K':
            if ((o.candidates = atoi(optarg)) < 1) {
                hm_say("report: --candidates needs a positive number, not '%s'", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case 'B':
            if (strcmp(optarg, "graph") != 0) {
                hm_say("report: unknown grouping --by '%s' (graph)", optarg);
                return CLI_EXIT_USAGE;
            }
            o.by = optarg;
            break;
        case 'h': report_help(stdout); return CLI_EXIT_OK;
        default: report_help(stderr); return CLI_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        hm_say("report: missing FILE.db (try `htamerge report --help`)");
        return CLI_EXIT_USAGE;
    }
    if (optind + 1 < argc)
        o.topic = argv[optind + 1];
    if (optind + 2 < argc || !qry_topic_find(o.topic)) {
        hm_say("report: unknown topic '%s' (try `htamerge report --help`)", o.topic);
        rc = CLI_EXIT_USAGE;
    } else if (o.by && strcmp(o.topic, "kernels") != 0) {
        hm_say("report: --by graph applies to the kernels topic");
        rc = CLI_EXIT_USAGE;
    } else {
        rc = run_report(argv[optind], &o, fmt);
    }
    free(ranks);
    free(steps);
    return rc;
}

static const char sql_help[] =
    "usage: htamerge sql FILE.db \"SELECT ...\" [--format table|json|csv] [--rank R]\n"
    "\n"
    "Runs one read-only statement. The file is opened read-only and only reads\n"
    "are allowed; results are limited in rows and time. Tables and views are\n"
    "documented in sql/schema.sql and sql/views.sql.\n"
    "\n"
    "exit status: 0 ok, 1 refused or failed statement, 2 bad command line.\n"
    "\n"
    "options:\n"
    "  -f, --format F   table (default), json or csv\n"
    "  -r, --rank R     FILE.db is the index of a sharded ingest (`ingest --shards`):\n"
    "                   run the statement on the shard that holds rank R (its host's\n"
    "                   ranks, every slice) instead of the index (per-rank and\n"
    "                   cross-rank tables, only the slices collectives and steps name)\n"
    "\n"
    "examples:\n"
    "  htamerge sql run.db 'SELECT rank, idle_pct FROM v_temporal'\n"
    "  htamerge sql run.db --rank 17 'SELECT count(*) FROM slices'\n"
    "  htamerge sql run.db 'SELECT * FROM v_stragglers' --format csv > stragglers.csv\n"
    "  htamerge sql run.db \"SELECT name FROM sqlite_schema WHERE type = 'view'\"\n";

/* A statement that begins with a SQL comment ("-- top ranks\nSELECT ...")
 * would be read as a long option: an argument before any "--" that starts
 * with "--" and holds white space is the statement. av (argc + 2 slots)
 * gets argv with it moved last, after a "--", where getopt leaves it.
 * Returns av's argc. */
static int statement_last(int argc, char **argv, char **av)
{
    static char dashdash[] = "--";
    char *stmt = NULL;
    int n = 0, seen_dashdash = 0;

    for (int i = 0; i < argc; i++) {
        seen_dashdash |= i > 0 && !strcmp(argv[i], "--");
        if (i > 0 && !seen_dashdash && !stmt && !strncmp(argv[i], "--", 2) && strpbrk(argv[i], " \t\n"))
            stmt = argv[i];
        else
            av[n++] = argv[i];
    }
    if (stmt && !seen_dashdash)
        av[n++] = dashdash;
    if (stmt)
        av[n++] = stmt;
    av[n] = NULL;
    return n;
}

int cli_sql(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"format", required_argument, 0, 'f'}, {"help", no_argument, 0, 'h'}, {"rank", required_argument, 0, 'r'},
        {0, 0, 0, 0}};
    enum qry_format fmt = QRY_FORMAT_TABLE;
    struct qry_sql_limits lim = {.max_rows = 100000, .max_ms = 30000};
    struct hm_err err;
    char line[1400];
    cJSON *doc = NULL;
    sqlite3 *db;
    int c, rc, rank = -1;

    char *av[16];

    if (argc + 3 > (int)(sizeof av / sizeof av[0])) {
        fputs(sql_help, stderr);
        return CLI_EXIT_USAGE;
    }
    argc = statement_last(argc, argv, av);
    argv = av;
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:hr:", longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (cli_parse_format(optarg, &fmt)) {
                hm_say("sql: unknown format '%s'", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case 'r':
            if (cli_parse_int(optarg, 0, 1 << 20, &rank)) {
                hm_say("sql: --rank takes a rank number, not '%s'", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case 'h': fputs(sql_help, stdout); return CLI_EXIT_OK;
        default: fputs(sql_help, stderr); return CLI_EXIT_USAGE;
        }
    }
    if (argc - optind != 2) {
        fputs(sql_help, stderr);
        return CLI_EXIT_USAGE;
    }
    hm_err_clear(&err);
    db = qry_open(argv[optind], &err);
    if (db && rank >= 0) {
        sqlite3 *shard = qry_shard_open(db, argv[optind], rank, &err);
        sqlite3_close(db);
        db = shard;
    }
    if (!db) {
        hm_say("%s", hm_err_line(&err, line, sizeof line));
        return CLI_EXIT_FAIL;
    }
    /* Not silently partial: an index's slices are the few it keeps. */
    if (rank < 0 && strcasestr(argv[optind + 1], "slices") && qry_shard_count(db) > 0)
        hm_say("sql: note: %s is the index of a sharded ingest; its slices table holds only the slices "
               "collectives and steps name (--rank R queries the shard of rank R)", argv[optind]);
    rc = qry_sql_run(db, argv[optind + 1], &lim, &doc, &err);
    sqlite3_close(db);
    if (rc != 0) {
        hm_say("%s", hm_err_line(&err, line, sizeof line));
        return CLI_EXIT_FAIL;
    }
    if (fmt != QRY_FORMAT_JSON) {
        cJSON *table = qry_sql_as_objects(doc);
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "truncated")))
            hm_say("sql: output cut at %ld rows", lim.max_rows);
        cJSON_DeleteItemFromObjectCaseSensitive(table, "truncated");
        cJSON_Delete(doc);
        doc = table;
    }
    qry_report_render(doc, fmt, fmt == QRY_FORMAT_TABLE && cli_parse_color("auto"), stdout);
    cJSON_Delete(doc);
    return CLI_EXIT_OK;
}
