/* htamerge entry point: dispatches to a subcommand. */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

#ifndef HTAMERGE_VERSION
#define HTAMERGE_VERSION "0.1.0"
#endif
#ifndef HTAMERGE_SCHEMA_VERSION
#define HTAMERGE_SCHEMA_VERSION "1"
#endif
/* Set by CMake when libhtamerge-inject.so was built (CUDA toolkit found). */
#ifndef HTAMERGE_GPU_CAPTURE
#define HTAMERGE_GPU_CAPTURE "not built (no CUDA toolkit at build time): Kineto files only"
#endif

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"ingest", cli_ingest, "merge existing Kineto trace files into one SQLite file"},
    {"report", cli_report, "answer questions about a merged file in the terminal"},
    {"sql", cli_sql, "run a read-only SQL query on a merged file"},
    {"serve", cli_serve, "serve a merged file: web viewer (timeline, stragglers) and JSON API"},
    {"export", cli_export, "write a merged file as one Chrome/Perfetto JSON trace"},
    {"diff", cli_diff, "compare two runs; exit 1 when the new one is slower (for CI)"},
    {"capture", cli_capture, "ask a running job to record the next N steps in full on every rank"},
};


const char *cli_command_line(int argc, char **argv)
{
    static char buf[4096];
    size_t n = 0;

    buf[0] = '\0';
    for (int i = 0; i < argc && n < sizeof buf - 1; i++) {
        int w = snprintf(buf + n, sizeof buf - n, i ? " %s" : "%s", argv[i]);
        if (w < 0)
            break;
        n += (size_t)w;
    }
    return buf;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: htamerge COMMAND [ARGS...]\n"
            "\n"
            "Merges the profiles of every rank of a distributed training job into one\n"
            "SQLite file and answers: which rank is the straggler, how well communication\n"
            "overlaps compute, and where GPUs sit idle.\n"
            "\n"
            "  htamerge [run options] [--] PROGRAM [ARGS...]   (under mpirun: every rank)\n"
            "\n"
            "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
            "  help     this text, or `htamerge help COMMAND` (also `help run`)\n"
            "  --version  version, database schema version, GPU capture built in\n"
            "\n"
            "examples:\n"
            "  mpirun -n 8 htamerge -o run.db train.py    # run, capture, merge\n"
            "  mpirun -n 4 htamerge -o demo.db htamerge-synth --steps 8 --straggler 2:20\n"
            "                                             # the same without a GPU\n"
            "  htamerge ingest -o run.db traces/          # a folder of rank-N.pt.trace.json.gz\n"
            "  htamerge report run.db temporal            # GPU time: idle / compute / other\n"
            "  htamerge report run.db overlap --format json\n"
            "  htamerge sql run.db 'SELECT * FROM v_temporal'\n"
            "  htamerge serve run.db                      # http://127.0.0.1:8080\n"
            "\n"
            "Run `htamerge COMMAND --help` for a command's options and exit codes,\n"
            "`htamerge help run` for the main job's; `man htamerge` for all of it.\n");
}

static int version(void)
{
    printf("htamerge %s\n"
           "database schema version %s\n"
           "gpu capture: %s\n",
           HTAMERGE_VERSION, HTAMERGE_SCHEMA_VERSION, HTAMERGE_GPU_CAPTURE);
    return CLI_EXIT_OK;
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : NULL;

    /* Batches and JSON buffers are tens of MB, allocated and freed per file:
     * keep glibc from unmapping them each time (page faults were a sixth of
     * parse time). */
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);

    if (!cmd || !strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
        usage(cmd ? stdout : stderr);
        return cmd ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version"))
        return version();
    if (!strcmp(cmd, "help")) {
        if (argc > 2 && !strcmp(argv[2], "run")) {
            char help[] = "--help";
            char *sub[] = {argv[0], help, NULL};
            return cli_run(2, sub);
        }
        if (argc > 2 && strcmp(argv[2], "help") != 0) {
            char help[] = "--help";
            char *sub[] = {argv[2], help, NULL};
            for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
                if (!strcmp(commands[i].name, argv[2]))
                    return commands[i].run(2, sub);
            hm_say("no such command: %s", argv[2]);
            return CLI_EXIT_USAGE;
        }
        usage(stdout);
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(commands[i].name, cmd))
            return commands[i].run(argc - 1, argv + 1);
    /* Not a subcommand: run options or PROGRAM, the main job. */
    return cli_run(argc, argv);
}
