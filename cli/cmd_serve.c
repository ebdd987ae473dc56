/* `htamerge serve`: the query server and web viewer over one merged file. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "query/server.h"

static const char serve_help[] =
    "usage: htamerge serve FILE.db [--listen HOST:PORT] [--token TOKEN]\n"
    "\n"
    "Serves the merged file read-only over HTTP: a web viewer (overview,\n"
    "straggler verdict, multi-rank timeline, tables, SQL console) at /, and a\n"
    "JSON API under /api/ (run, ranks, report/TOPIC, timeline, slice/ID,\n"
    "collective/ID, POST sql). Works while a run is still writing the file.\n"
    "\n"
    "options:\n"
    "  -l, --listen HOST:PORT  address to bind (default 127.0.0.1:8080); port 0\n"
    "                          picks a free port, printed on stderr\n"
    "  -t, --token TOKEN       require it on /api/ (Authorization: Bearer TOKEN,\n"
    "                          or ?token=TOKEN); needed to bind a non-loopback\n"
    "                          address. Also read from HTAMERGE_TOKEN.\n"
    "      --timeout S         drop connections idle for S seconds (default 30)\n"
    "      --memory MB         memory budget (default 512): the file's cache and\n"
    "                          map, and the timeline's per-track state, least\n"
    "                          recently drawn tracks dropped past it\n"
    "\n"
    "Web files come from $HTAMERGE_WEB_DIR when set, else from\n"
    "share/htamerge/web_static beside an installed binary (<bin>/../share/...)\n"
    "when that folder exists, so a site may customise the viewer; any file not\n"
    "there comes from the copy built into the binary. No file outside that\n"
    "folder is served (symlinks out of it, dot files and \"..\" are refused).\n"
    "\n"
    "Stops on Ctrl-C (SIGINT) or SIGTERM.\n"
    "exit status: 0 stopped by a signal, 1 cannot serve (file, address in use),\n"
    "2 bad command line or a non-loopback address without a token.\n"
    "\n"
    "examples:\n"
    "  htamerge serve run.db                       # then open http://127.0.0.1:8080\n"
    "  htamerge serve run.db --listen 127.0.0.1:0  # a free port, printed on stderr\n"
    "  htamerge serve run.db --listen 0.0.0.0:8080 --token \"$(openssl rand -hex 16)\"\n"
    "  ssh -L 8080:127.0.0.1:8080 cluster-login    # view a server on a remote node\n"
    "  curl -s http://127.0.0.1:8080/api/report/stragglers\n"
    "  curl -s --data 'SELECT rank, idle_pct FROM v_temporal' http://127.0.0.1:8080/api/sql\n";

int cli_serve(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"listen", required_argument, 0, 'l'}, {"token", required_argument, 0, 't'},
        {"timeout", required_argument, 0, 'T'}, {"memory", required_argument, 0, 'M'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    struct qry_serve_opts o = {.token = getenv("HTAMERGE_TOKEN"), .log = stderr};
    struct hm_err err;
    char line[1400];
    int c, rc;

    optind = 1;
    while ((c = getopt_long(argc, argv, "l:t:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'l': o.listen = optarg; break;
        case 't': o.token = optarg; break;
        case 'T':
            if (cli_parse_int(optarg, 1, 3600, &o.timeout_s)) {
                hm_say("serve: bad --timeout '%s' (1 to 3600 seconds)", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case 'M':
            if (cli_parse_int(optarg, 64, 1048576, &o.memory_mb)) {
                hm_say("serve: bad --memory '%s' (64 to 1048576 MiB)", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case 'h': fputs(serve_help, stdout); return CLI_EXIT_OK;
        default: fputs(serve_help, stderr); return CLI_EXIT_USAGE;
        }
    }
    if (argc - optind != 1) {
        hm_say("serve: give one FILE.db (try `htamerge serve --help`)");
        return CLI_EXIT_USAGE;
    }
    o.db_path = argv[optind];
    if (o.token && !*o.token)
        o.token = NULL;
    /* A client that hangs up mid-answer must not kill the server. */
    signal(SIGPIPE, SIG_IGN);
    hm_err_clear(&err);
    rc = qry_serve(&o, &err);
    if (rc != 0)
        hm_say("serve: %s", hm_err_line(&err, line, sizeof line));
    return rc == 0 ? CLI_EXIT_OK : rc == HM_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
}
