/* query/export_chrome.c on a small hand-made database: process and thread
 * names, exact timestamps, string escaping (quotes, control characters,
 * UTF-8, invalid bytes), stored args copied or kept as text, a partial
 * overlap moved to an overlap lane, launch and collective flows, counters,
 * --ranks and --steps, and the faults (unknown rank or step, write error). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "hm_sql.h"
#include "query/export.h"
#include "test.h"

#define T0 1000000000123LL   /* a time that is not a whole us */

static void exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "sql: %s\n%s\n", msg, sql);
        exit(2);
    }
}

/* A string row with arbitrary bytes (the SQL text cannot carry them). */
static void add_string(sqlite3 *db, int id, const char *bytes, int len)
{
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "INSERT INTO strings (id, str) VALUES (?1, ?2)", -1, &st, NULL);
    sqlite3_bind_int(st, 1, id);
    sqlite3_bind_text(st, 2, bytes, len, SQLITE_TRANSIENT);
    CHECK(sqlite3_step(st) == SQLITE_DONE);
    sqlite3_finalize(st);
}

/* id, track, ts offset, dur, name, cat, correlation, args (SQL literal). */
static void add_slice(sqlite3 *db, int id, int track, long long at, long long dur, int name, int cat,
                      const char *corr, const char *args)
{
    char sql[1024];
    snprintf(sql, sizeof sql,
             "INSERT INTO slices (id, track, ts, dur, name, cat, correlation, args) "
             "VALUES (%d, %d, %lld, %lld, %d, %d, %s, %s)",
             id, track, T0 + at, dur, name, cat, corr, args);
    exec(db, sql);
}

static sqlite3 *make_db(void)
{
    sqlite3 *db;
    static const char weird[] = "a\"b\\c\x01\n\xc3\xa9\xff!";

    sqlite3_open(":memory:", &db);
    exec(db, hm_sql_schema);
    exec(db, "INSERT INTO categories (id, name) VALUES (0,'other'),(1,'cpu_op'),(4,'kernel'),(7,'cuda_runtime');"
             "INSERT INTO ranks (rank, host) VALUES (0, 'node\"0'), (1, NULL);"
             "INSERT INTO strings (id, str) VALUES (1,'thread 11 (py)'),(2,'stream 7'),(3,'B'),(4,'C'),"
             "(5,'cudaLaunchKernel'),(6,'gemm'),(7,'ncclAllReduce'),(8,'Total Allocated'),(9,'mycat');"
             "INSERT INTO tracks (id, rank, kind, pid, tid, name) VALUES (1,0,'cpu_thread',11,11,1),"
             "(2,0,'gpu_stream',0,7,2),(3,1,'cpu_thread',12,12,NULL),(4,1,'gpu_stream',1,7,2);");
    add_string(db, 10, weird, (int)sizeof weird - 1);
    /* Track 1: A contains B and L; C starts inside A and B and ends after A. */
    add_slice(db, 1, 1, 0, 10000, 10, 1, "NULL",
              "'{\"x\":\"q\\\"\\u00e9\\ud83d\\ude00\",\"n\":[1,2.5e3,{\"k\":null}],\"correlation\":7}'");
    add_slice(db, 2, 1, 1000, 4000, 3, 1, "NULL", "'{\"a\":1,'");
    add_slice(db, 3, 1, 2000, 100, 5, 7, "42", "'{\"correlation\":42}'");
    add_slice(db, 4, 1, 3000, 9000, 4, 0, "NULL", "'[1,2]'");
    add_slice(db, 5, 1, 10000, 0, 3, 1, "NULL", "'{\"s\":\"\\u0000x\"}'");
    exec(db, "UPDATE slices SET cat_name = 9 WHERE id = 4");
    /* GPU: the launched kernel; one collective on both ranks. */
    add_slice(db, 6, 2, 5000, 1000, 6, 4, "42", "NULL");
    add_slice(db, 7, 2, 8000, 1000, 7, 4, "NULL", "NULL");
    add_slice(db, 8, 4, 8500, 1000, 7, 4, "NULL", "NULL");
    add_slice(db, 9, 3, 20000, 500, 3, 1, "NULL", "NULL");
    add_slice(db, 10, 2, 12500, 100, 6, 4, "43", "NULL");   /* launched by C */
    exec(db, "UPDATE slices SET correlation = 43 WHERE id = 4");
    exec(db, "INSERT INTO collectives (id, rank, slice, op) VALUES (1, 0, 7, 'allreduce'), (2, 1, 8, 'allreduce');"
             "INSERT INTO collective_instances (id, op, ranks) VALUES (1, 'allreduce', 2);"
             "INSERT INTO collective_instance_ranks (instance, rank, collective) VALUES (1, 0, 1), (1, 1, 2);");
    exec(db, "INSERT INTO counters (rank, device, name, ts, value) VALUES "
             "(0, -1, 8, 1000000001623, 1024), (1, 3, 8, 1000000009623, 2.5);"
             "INSERT INTO steps (rank, number, ts, dur) VALUES (0, 5, 1000000000123, 5000),"
             "(1, 5, 1000000008123, 1000);");
    return db;
}

/* Runs the export into memory; returns the code, *text owned by the caller. */
static int export_text(sqlite3 *db, const struct qry_export_opts *o, char **text, struct qry_export_stats *st,
                       struct hm_err *err)
{
    size_t len = 0;
    FILE *f = open_memstream(text, &len);
    int rc = qry_export_chrome(db, o, f, st, err);
    fclose(f);
    return rc;
}

/* The event of phase ph with args.slice_id == id (or the n-th M event of
 * name `meta` when ph is "M"). */
static const cJSON *find_event(const cJSON *doc, const char *ph, int id)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(doc, "traceEvents"))
    {
        const cJSON *p = cJSON_GetObjectItem(e, "ph"), *a = cJSON_GetObjectItem(e, "args");
        if (!strcmp(p->valuestring, ph) && cJSON_GetObjectItem(a, "slice_id") &&
            cJSON_GetObjectItem(a, "slice_id")->valueint == id)
            return e;
    }
    return NULL;
}

static int count_ph(const cJSON *doc, const char *ph)
{
    const cJSON *e;
    int n = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(doc, "traceEvents")) n +=
        !strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, ph);
    return n;
}

static int num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return v ? v->valueint : -999;
}

static void test_full(sqlite3 *db)
{
    struct qry_export_opts o = {.producer = "test"};
    struct qry_export_stats st;
    struct hm_err err;
    char *text = NULL;
    cJSON *doc;
    const cJSON *a, *c, *s, *f;

    hm_err_clear(&err);
    CHECK_EQ_INT(export_text(db, &o, &text, &st, &err), 0);
    doc = cJSON_Parse(text);
    CHECK(doc != NULL);
    if (!doc) {
        fprintf(stderr, "%s\n", text);
        free(text);
        return;
    }
    /* Processes: rank 0 host, rank 0 GPU 0, rank 1 host, rank 1 GPU 1, rank 1 GPU 3 (counter only). */
    CHECK_EQ_INT(st.processes, 5);
    CHECK_CONTAINS(text, "\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":\"rank 0 \xc2\xb7 node\\\"0 \xc2\xb7 CPU\"}");
    CHECK_CONTAINS(text, "\"pid\":2,\"name\":\"process_name\",\"args\":{\"name\":\"rank 0 \xc2\xb7 GPU 0\"}");
    CHECK_CONTAINS(text, "\"name\":\"rank 1 \xc2\xb7 host \xc2\xb7 CPU\"");
    CHECK_CONTAINS(text, "\"pid\":5,\"name\":\"process_name\",\"args\":{\"name\":\"rank 1 \xc2\xb7 GPU 3\"}");
    CHECK_CONTAINS(text, "\"pid\":3,\"tid\":8,\"name\":\"thread_name\",\"args\":{\"name\":\"thread 12\"}");
    /* Exact times relative to the floored origin: T0 is 123 ns past a whole us. */
    CHECK_EQ_INT(st.origin_ns, T0 - 123);
    CHECK_CONTAINS(text, "\"ts\":0.123,\"dur\":10.000,");
    CHECK_CONTAINS(text, "\"ts\":10.123,\"dur\":0.000,");
    /* Escaping: quote, backslash, \u0001, newline, UTF-8 kept, invalid byte replaced. */
    CHECK_CONTAINS(text, "\"name\":\"a\\\"b\\\\c\\u0001\\n\xc3\xa9\\ufffd!\"");
    a = cJSON_GetObjectItem(find_event(doc, "X", 1), "args");
    CHECK_STR(cJSON_GetObjectItem(a, "x")->valuestring, "q\"\xc3\xa9\xf0\x9f\x98\x80");
    CHECK_EQ_INT(num(a, "correlation"), 7);   /* no correlation column: the stored one stays */
    CHECK_CONTAINS(text, "\"n\":[1,2.5e3,{\"k\":null}]");
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(find_event(doc, "X", 2), "args"), "args_text")->valuestring,
              "{\"a\":1,");
    CHECK_CONTAINS(text, "\"s\":\"\\u0000x\"");
    CHECK(strstr(text, "\"correlation\":42,\"correlation\"") == NULL);
    /* C partly overlaps A and B: on an overlap lane of its own, category from cat_name. */
    c = find_event(doc, "X", 4);
    CHECK_EQ_INT(st.moved_slices, 1);
    CHECK_EQ_INT(num(c, "tid"), 10);   /* tids: track id + 5 processes, then new ones */
    CHECK_EQ_INT(num(cJSON_GetObjectItem(c, "args"), "overlap_lane"), 1);
    CHECK_STR(cJSON_GetObjectItem(c, "cat")->valuestring, "mycat");
    CHECK_CONTAINS(text, "\"tid\":10,\"name\":\"thread_name\",\"args\":{\"name\":\"thread 11 (py) \xc2\xb7 overlap 1\"}");
    CHECK_EQ_INT(num(find_event(doc, "X", 3), "tid"), 6);
    /* Flows: launch 3 -> 6, collective 7 -> 8, unique ids, finish bound with bp e. */
    CHECK_EQ_INT(st.launch_flows, 2);
    CHECK(find_event(doc, "s", 4) && num(find_event(doc, "s", 4), "tid") == 10);   /* from the moved slice */
    CHECK_EQ_INT(st.collective_flows, 1);
    s = find_event(doc, "s", 3);
    f = find_event(doc, "f", 6);
    CHECK(s && f && num(s, "id") == num(f, "id"));
    CHECK(f && !strcmp(cJSON_GetObjectItem(f, "bp")->valuestring, "e") && num(f, "pid") == 2);
    s = find_event(doc, "s", 7);
    f = find_event(doc, "f", 8);
    CHECK(s && f && num(s, "id") == num(f, "id") && num(s, "id") != num(find_event(doc, "s", 3), "id"));
    CHECK(f && num(f, "pid") == 4 && num(cJSON_GetObjectItem(f, "args"), "instance") == 1);
    /* Counters on the rank's host and on the counter-only GPU. */
    CHECK_EQ_INT(count_ph(doc, "C"), 2);
    CHECK_CONTAINS(text, "{\"ph\":\"C\",\"pid\":1,\"ts\":1.623,\"name\":\"Total Allocated\",\"args\":{\"value\":1024}}");
    CHECK_CONTAINS(text, "{\"ph\":\"C\",\"pid\":5,\"ts\":9.623,\"name\":\"Total Allocated\",\"args\":{\"value\":2.5}}");
    CHECK_EQ_INT(count_ph(doc, "X"), 10);
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "otherData"), "origin_ns")->valuestring, "1000000000000");
    cJSON_Delete(doc);
    free(text);
}

static void test_filters(sqlite3 *db)
{
    int r1[] = {1}, r0[] = {0};
    int64_t s5[] = {5}, s6[] = {6};
    struct qry_export_opts o = {.ranks = r1, .nranks = 1};
    struct qry_export_stats st;
    struct hm_err err;
    char *text = NULL;
    cJSON *doc;

    hm_err_clear(&err);
    CHECK_EQ_INT(export_text(db, &o, &text, &st, &err), 0);
    doc = cJSON_Parse(text);
    CHECK(doc && count_ph(doc, "X") == 2 && st.processes == 3 && st.collective_flows == 0 && st.counters == 1);
    CHECK(strstr(text, "rank 0") == NULL);
    cJSON_Delete(doc);
    free(text);

    /* Step 5 spans [T0, T0 + 9000) over both ranks: slice 5 (at 10000) and 9 (at 20000) fall out. */
    o = (struct qry_export_opts){.steps = s5, .nsteps = 1};
    CHECK_EQ_INT(export_text(db, &o, &text, &st, &err), 0);
    doc = cJSON_Parse(text);
    CHECK(doc && count_ph(doc, "X") == 7 && !find_event(doc, "X", 5) && !find_event(doc, "X", 9));
    CHECK(doc && find_event(doc, "X", 8) && st.collective_flows == 1 && st.counters == 1);
    cJSON_Delete(doc);
    free(text);

    /* Rank 0 alone: step 5 is [T0, T0 + 5000): the kernel at 5000 is out, so no launch flow. */
    o = (struct qry_export_opts){.ranks = r0, .nranks = 1, .steps = s5, .nsteps = 1};
    CHECK_EQ_INT(export_text(db, &o, &text, &st, &err), 0);
    CHECK(st.slices == 4 && st.launch_flows == 0);
    free(text);

    o = (struct qry_export_opts){.steps = s6, .nsteps = 1};
    CHECK_EQ_INT(export_text(db, &o, &text, &st, &err), HM_EINVAL);
    CHECK_CONTAINS(err.msg, "ProfilerStep 6 is not in the file (it has steps 5 to 5)");
    free(text);
    r1[0] = 7;
    o = (struct qry_export_opts){.ranks = r1, .nranks = 1};
    CHECK_EQ_INT(export_text(db, &o, &text, &st, &err), HM_EINVAL);
    CHECK_CONTAINS(err.msg, "rank 7 is not in the file (it has ranks 0 to 1)");
    free(text);
}

static void test_write_error(sqlite3 *db)
{
    struct qry_export_opts o = {0};
    struct hm_err err;
    FILE *f = fopen("/dev/full", "w");

    if (!f)
        return;
    setvbuf(f, NULL, _IONBF, 0);
    hm_err_clear(&err);
    CHECK_EQ_INT(qry_export_chrome(db, &o, f, NULL, &err), HM_EIO);
    CHECK_CONTAINS(err.msg, "write failed");
    fclose(f);
}

int main(void)
{
    sqlite3 *db = make_db();
    test_full(db);
    test_filters(db);
    test_write_error(db);
    sqlite3_close(db);
    return hm_test_done();
}
