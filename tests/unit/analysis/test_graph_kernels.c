/* CUDA graph kernels attributed (analysis/cross_rank/graph_kernels.h), on
 * a batch shaped as live capture writes it: graph nodes made inside NVTX
 * ranges while a graph is captured, cloned at instantiation, and kernels
 * replayed by cudaGraphLaunch with the clones' node ids.
 *
 * Ranks 0 and 1 alike, each one thread, one stream (times in us from BASE):
 *   capture: "forward" [1000, 2000) > "capture_fwd" [1100, 1900): nodes 11
 *            (inside a captured cudaLaunchKernel [1190, 1210)) and 12;
 *            "backward" [2000, 3000) > "capture_bwd" [2100, 2900): node 13
 *            (graph 1); instantiated at 3100: clones 21, 22, 23 (graph 2).
 *   step 1 [4000, 6000): "replay" [4100, 5900) > cudaGraphLaunch 4200
 *            (corr 600): kernels k_fwd_a [4300, 4400) node 21, k_fwd_b
 *            [4400, 4500) node 22, k_bwd [4500, 4700) node 23.
 *   step 2 [6000, 8000): "forward" [6100, 6500) > cudaGraphLaunch 6200
 *            (corr 601): the same three kernels at 6300..6700.
 *   step 3 [8000, 9000): a graph kernel (node 99, made where capture was
 *            not recorded) launched at 8100 in no range.
 * Expected: step 1 charges forward 200 us and backward 200 us (where the
 * nodes were captured: the replay is in no phase); step 2 charges all
 * 400 us to forward (the replay's own phase wins); the node-99 kernel has
 * no capture context and stays "other" (its launch range is the step). */
#include "test.h"

#include <sqlite3.h>
#include <unistd.h>

#include "analysis/cross_rank.h"
#include "query/report.h"
#include "store/writer.h"
#include "test_batch_build.h"
#include "test_sql.h"

#define US INT64_C(1000)
#define BASE (INT64_C(1000000000) * 1000) /* ns */

static uint32_t cpu_track, gpu_track;

static void node_event(struct hm_batch *b, const char *what, int64_t us, const char *args)
{
    struct hm_slice *s = tb_slice(b, cpu_track, what, HM_CAT_CUDA_GRAPH, BASE + us * US, 0, HM_NONE, 0);
    s->args = tb_str(b, args);
}

static void range(struct hm_batch *b, const char *name, enum hm_cat cat, int64_t a_us, int64_t b_us)
{
    tb_slice(b, cpu_track, name, cat, BASE + a_us * US, (b_us - a_us) * US, HM_NONE, 0);
}

static void kernel(struct hm_batch *b, const char *name, int64_t a_us, int64_t b_us, int64_t corr, int node)
{
    char args[96];
    struct hm_slice *s = tb_slice(b, gpu_track, name, HM_CAT_KERNEL, BASE + a_us * US, (b_us - a_us) * US, corr,
                                  HM_SLICE_F_STREAM_ARG);
    snprintf(args, sizeof args, "{\"grid\":[1,1,1],\"graph id\":2,\"graph node id\":%d}", node);
    s->args = tb_str(b, args);
}

/* The three kernels of one replay, from us on, correlation corr. */
static void replay(struct hm_batch *b, int64_t us, int64_t corr)
{
    tb_slice(b, cpu_track, "cudaGraphLaunch", HM_CAT_CUDA_RUNTIME, BASE + (us - 100) * US, 50 * US, corr, 0);
    kernel(b, "k_fwd_a", us, us + 100, corr, 21);
    kernel(b, "k_fwd_b", us + 100, us + 200, corr, 22);
    kernel(b, "k_bwd", us + 200, us + 400, corr, 23);
}

static void step(struct hm_batch *b, int n, int64_t a_us, int64_t b_us)
{
    struct hm_step *st = HM_VEC_PUSH(b->steps);
    char name[32];

    snprintf(name, sizeof name, "ProfilerStep#%d", n);
    range(b, name, HM_CAT_USER_ANNOTATION, a_us, b_us);
    *st = (struct hm_step){.number = n, .ts = BASE + a_us * US, .dur = (b_us - a_us) * US,
                           .slice = (uint32_t)(b->slices.n - 1), .source = HM_STEP_PROFILER};
}

static struct hm_batch *make_batch(int rank)
{
    struct hm_batch *b = hm_batch_new();

    b->info.rank = rank;
    b->info.world_size = 2;
    b->info.pid = 100;
    b->info.hostname = tb_str(b, "node-a");
    cpu_track = (uint32_t)hm_batch_track(b, HM_TRACK_CPU_THREAD, 100, 1);
    gpu_track = (uint32_t)hm_batch_track(b, HM_TRACK_GPU_STREAM, 0, 7);
    range(b, "forward", HM_CAT_USER_ANNOTATION, 1000, 2000);
    range(b, "capture_fwd", HM_CAT_NVTX, 1100, 1900);
    tb_slice(b, cpu_track, "cudaLaunchKernel", HM_CAT_CUDA_RUNTIME, BASE + 1190 * US, 20 * US, 500, 0);
    node_event(b, "graph node created", 1200, "{\"graph id\":1,\"graph node id\":11,\"node type\":0}");
    node_event(b, "graph node created", 1300, "{\"graph id\":1,\"graph node id\":12,\"node type\":0}");
    range(b, "backward", HM_CAT_USER_ANNOTATION, 2000, 3000);
    range(b, "capture_bwd", HM_CAT_NVTX, 2100, 2900);
    node_event(b, "graph node created", 2200, "{\"graph id\":1,\"graph node id\":13,\"node type\":0}");
    for (int i = 0; i < 3; i++) {
        char args[160];
        /* As CUPTI 13 reports an instantiation on the H200: each node of the
         * executable graph made, then cloned from the captured one. */
        snprintf(args, sizeof args, "{\"graph id\":2,\"graph node id\":%d,\"node type\":0}", 21 + i);
        node_event(b, "graph node created", 3100 + i, args);
        snprintf(args, sizeof args,
                 "{\"graph id\":2,\"graph node id\":%d,\"original graph id\":1,\"original graph node id\":%d,"
                 "\"node type\":0}", 21 + i, 11 + i);
        node_event(b, "graph node cloned", 3100 + i, args);
    }
    node_event(b, "graph instantiated", 3110, "{\"graph id\":1,\"graph exec id\":1}");
    step(b, 1, 4000, 6000);
    range(b, "replay", HM_CAT_NVTX, 4100, 5900);
    replay(b, 4300, 600);
    step(b, 2, 6000, 8000);
    range(b, "forward", HM_CAT_USER_ANNOTATION, 6100, 6500);
    replay(b, 6300, 601);
    step(b, 3, 8000, 9000);
    tb_slice(b, cpu_track, "cudaGraphLaunch", HM_CAT_CUDA_RUNTIME, BASE + 8100 * US, 20 * US, 602, 0);
    kernel(b, "k_lone", 8200, 8300, 602, 99);
    return b;
}

/* The rows of sql joined by '|' and ';' (NULL as "-"), into buf. */
static const char *q_rows(sqlite3 *db, const char *sql, char *buf, size_t cap)
{
    sqlite3_stmt *st;
    size_t n = 0;

    buf[0] = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(buf, cap, "prepare failed: %s", sqlite3_errmsg(db));
        return buf;
    }
    while (sqlite3_step(st) == SQLITE_ROW && n < cap)
        for (int i = 0; i < sqlite3_column_count(st) && n < cap; i++) {
            const unsigned char *t = sqlite3_column_text(st, i);
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", t ? (const char *)t : "-",
                                  i + 1 < sqlite3_column_count(st) ? "|" : ";");
        }
    sqlite3_finalize(st);
    return buf;
}

/* Ranks 0 and 1 alike: the same correlation and node ids on both, which
 * must not meet. */
static int write_db(const char *path)
{
    struct hm_err err;
    struct mrg_writer *w;

    hm_err_clear(&err);
    unlink(path);
    w = mrg_writer_open(path, &err);
    CHECK(w != NULL);
    if (!w)
        return -1;
    for (int rank = 0; rank < 2; rank++) {
        struct hm_batch *b = make_batch(rank);
        CHECK_EQ_INT(mrg_writer_add_batch(w, b, &err), 0);
        hm_batch_free(b);
    }
    return tw_finish(w);
}

static void check_attribution(sqlite3 *db)
{
    char buf[2048];

    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM graph_kernels"), 14);
    CHECK_EQ_INT(q_int(db, "SELECT count(*) FROM graph_kernels g JOIN slices s ON s.id = g.capture_slice "
                           "JOIN tracks t ON t.id = s.track WHERE t.rank <> g.rank"), 0);
    /* The first replay: capture ranges and phases from the nodes' making. */
    CHECK_STR(q_rows(db, "SELECT kernel, graph_id, node_id, capture_node, capture_graph, capture_range, "
                         "capture_call, capture_phase, launch, launch_range, launch_phase, phase "
                         "FROM v_graph_kernels WHERE rank = 1 ORDER BY ts LIMIT 3",
                     buf, sizeof buf),
              "k_fwd_a|2|21|11|1|capture_fwd|cudaLaunchKernel|forward|cudaGraphLaunch|replay|-|forward;"
              "k_fwd_b|2|22|12|1|capture_fwd|-|forward|cudaGraphLaunch|replay|-|forward;"
              "k_bwd|2|23|13|1|capture_bwd|-|backward|cudaGraphLaunch|replay|-|backward;");
    /* The second: launched inside forward, which wins. */
    CHECK_STR(q_rows(db, "SELECT kernel, capture_phase, launch_range, launch_phase, phase FROM v_graph_kernels "
                         "WHERE rank = 1 ORDER BY ts LIMIT 3 OFFSET 3",
                     buf, sizeof buf),
              "k_fwd_a|forward|forward|forward|forward;k_fwd_b|forward|forward|forward|forward;"
              "k_bwd|backward|forward|forward|forward;");
    /* A node whose making was not recorded: no capture context. */
    CHECK_STR(q_rows(db, "SELECT kernel, capture_node, capture_range, capture_phase, launch_range, phase "
                         "FROM v_graph_kernels WHERE node_id = 99 ORDER BY rank", buf, sizeof buf),
              "k_lone|-|-|-|ProfilerStep#3|-;k_lone|-|-|-|ProfilerStep#3|-;");
    /* The step breakdown charges graph kernels by capture where the replay is in no phase. */
    CHECK_STR(q_rows(db, "SELECT rank, step, forward_gpu_ns / 1000, backward_gpu_ns / 1000, optimizer_gpu_ns / 1000 "
                         "FROM step_breakdown ORDER BY rank, step", buf, sizeof buf),
              "0|1|200|200|0;0|2|400|0|0;0|3|0|0|0;1|1|200|200|0;1|2|400|0|0;1|3|0|0|0;");
}

static void check_report(const char *path)
{
    struct hm_err err;
    struct qry_report_opts o = {.topic = "kernels", .by = "graph"};
    sqlite3 *db;
    cJSON *doc = NULL, *g;

    hm_err_clear(&err);
    db = qry_open(path, &err);
    CHECK(db != NULL);
    if (!db)
        return;
    CHECK_EQ_INT(qry_report_build(db, &o, &doc, &err), 0);
    g = cJSON_GetObjectItemCaseSensitive(doc, "graphs");
    CHECK_EQ_INT(cJSON_GetArraySize(g), 2);   /* one graph on each rank */
    if (cJSON_GetArraySize(g) == 2) {
        cJSON *r = cJSON_GetArrayItem(g, 1);
        CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(r, "rank")->valueint, 1);
        CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(r, "graph")->valueint, 2);
        CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(r, "launches")->valueint, 3);
        CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(r, "kernels")->valueint, 7);
        CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(r, "nodes")->valueint, 4);
        CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(r, "captured")->valueint, 6);
        CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(r, "gpu_us")->valuedouble, 900.0, 1e-6);
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "capture_ranges")),
                  "capture_fwd, capture_bwd");
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "capture_phases")),
                  "forward, backward");
    }
    /* The table a user reads names the graph's capture ranges. */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f != NULL);
    if (f) {
        qry_report_render(doc, QRY_FORMAT_TABLE, 0, f);
        fclose(f);
        CHECK_CONTAINS(text, "capture_ranges");
        CHECK_CONTAINS(text, "capture_fwd, capture_bwd");
    }
    free(text);
    cJSON_Delete(doc);
    /* --by is the kernels topic's only. */
    o.topic = "temporal";
    doc = NULL;
    CHECK_EQ_INT(qry_report_build(db, &o, &doc, &err), HM_EINVAL);
    cJSON_Delete(doc);
    sqlite3_close(db);
}

int main(void)
{
    char path[4096];
    sqlite3 *db = NULL;

    snprintf(path, sizeof path, "%s", hm_tmpfile("graph_kernels.db"));
    if (write_db(path) == 0 && sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK)
        check_attribution(db);
    sqlite3_close(db);
    check_report(path);
    if (!getenv("HM_KEEP_DB"))   /* kept: a file to try report and SQL on by hand */
        unlink(path);
    return hm_test_done();
}
