/* The fuzz targets' database (fuzz_db.h). */
#include "fuzz_db.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "hm_sql.h"

/* Rows enough for joins, views, reports, timelines and recursion. */
static const char *const rows_sql =
    "INSERT OR REPLACE INTO meta VALUES ('status','complete'),('created_by','fuzz');"
    "INSERT INTO ranks (rank, host, pid, world_size, backend, rank_source, base_time_ns,"
    " clock_offset_ns, clock_drift_ppm) VALUES (0,'h0',11,2,'nccl','fuzz',1700000000000000000,0,0),"
    " (1,'h1',12,2,'nccl','fuzz',1700000000000000000,1500,0.5);"
    "INSERT INTO strings VALUES (1,'ProfilerStep#1'),(2,'ncclKernel_AllReduce'),(3,'aten::mm'),"
    " (4,'{\"stream\":7}'),(5,'Total Allocated'),(6,'nccl:all_reduce');"
    "INSERT INTO tracks VALUES (1,0,'cpu_thread',11,11,NULL),(2,0,'gpu_stream',0,7,NULL),"
    " (3,1,'cpu_thread',12,12,NULL),(4,1,'gpu_stream',1,7,NULL);"
    /* a step per rank, then 4 x 1000 slices: long and short, nested on CPU */
    "INSERT INTO slices (id, track, ts, dur, name, cat, depth, iteration, flags) VALUES"
    " (1,1,1000,9000000,1,0,0,1,0),(2,3,1100,9000000,1,0,0,1,0);"
    "WITH RECURSIVE i(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM i WHERE n < 3999)"
    " INSERT INTO slices (id, track, ts, dur, name, cat, depth, parent, correlation, args, iteration, flags)"
    " SELECT 10 + n, 1 + n % 4, 2000 + (n / 4) * 8000 + (n % 3) * 100, 50 + (n * 7919) % 20000,"
    " 2 + n % 2, 0, CASE WHEN n % 4 IN (0, 2) THEN 1 ELSE 0 END,"
    " CASE n % 4 WHEN 0 THEN 1 WHEN 2 THEN 2 END, n, CASE WHEN n % 5 = 0 THEN '{\"x\":1}' END, 1,"
    " n % 4 % 2 FROM i;"
    "INSERT INTO counters (id, rank, device, name, ts, value) VALUES (1,0,0,5,1200,1e9),(2,1,0,5,1300,2e9);";

static void exec_or_die(sqlite3 *db, const char *sql)
{
    char *msg = NULL;

    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "fuzz database: %s\n", msg ? msg : "?");
        abort();
    }
}

/* The folder made, for removal at exit: atexit takes no argument. */
static char made_dir[32];

static void remove_db(void)
{
    char path[64];

    snprintf(path, sizeof path, "%s/run.db", made_dir);
    unlink(path);
    rmdir(made_dir);
}

void fuzz_db_make(char *path, size_t len)
{
    char dir[] = "/tmp/hm-fuzz-db-XXXXXX";
    sqlite3 *db = NULL;

    FUZZ_ASSERT(mkdtemp(dir) != NULL);
    memcpy(made_dir, dir, sizeof dir);
    atexit(remove_db);   /* a crash leaves it behind: a few hundred KB in /tmp */
    snprintf(path, len, "%s/run.db", dir);
    FUZZ_ASSERT(sqlite3_open(path, &db) == SQLITE_OK);
    exec_or_die(db, hm_sql_schema);
    exec_or_die(db, rows_sql);
    exec_or_die(db, hm_sql_indexes);
    exec_or_die(db, hm_sql_views);
    sqlite3_close(db);
}
