/* Kineto reader on real traces (tests/fixtures/hta, from HTA's test suite)
 * and on small synthetic ones: event counts per category, exact ns times,
 * tracks, collectives, steps, counters, rank detection, file listing.
 * Expected numbers were computed independently with Python's json module
 * (floats parsed as Decimal). Bad input is tested in the fault twin. */
#include "test.h"

#include <sys/stat.h>
#include <unistd.h>

#include "collector/sources/kineto_json/kineto_json.h"

static struct hm_batch *read_fixture(const char *rel, int keep_args)
{
    struct src_kineto_opts opts = {.keep_args = keep_args};
    struct hm_batch *b = NULL;
    struct hm_err err;
    char line[1200];
    int rc;

    hm_err_clear(&err);
    rc = src_kineto_read(hm_fixture(rel), &opts, &b, &err);
    if (rc != 0)
        fprintf(stderr, "%s: %s\n", rel, hm_err_line(&err, line, sizeof line));
    CHECK_EQ_INT(rc, 0);
    return b;
}

static struct hm_batch *read_text(const char *name, const char *text)
{
    const char *path = hm_tmpfile(name);
    struct hm_batch *b = NULL;
    struct hm_err err;
    FILE *f = fopen(path, "wb");

    CHECK(f != NULL);
    if (!f)
        return NULL;
    fputs(text, f);
    fclose(f);
    CHECK_EQ_INT(src_kineto_read(path, NULL, &b, &err), 0);
    return b;
}

static size_t count_cat(const struct hm_batch *b, enum hm_cat cat)
{
    size_t n = 0;
    for (size_t i = 0; i < b->slices.n; i++)
        n += b->slices.v[i].cat == cat;
    return n;
}

/* Sums of ts and dur in ns, modulo 2^64 (as Python computed them). */
static void time_sums(const struct hm_batch *b, uint64_t *ts, uint64_t *dur)
{
    *ts = *dur = 0;
    for (size_t i = 0; i < b->slices.n; i++) {
        *ts += (uint64_t)b->slices.v[i].ts;
        *dur += (uint64_t)b->slices.v[i].dur;
    }
}

static const char *str(const struct hm_batch *b, hm_strid id)
{
    return hm_batch_str(b, id);
}

static const struct hm_slice *find_slice(const struct hm_batch *b, const char *name)
{
    for (size_t i = 0; i < b->slices.n; i++)
        if (strcmp(str(b, b->slices.v[i].name), name) == 0)
            return &b->slices.v[i];
    return NULL;
}

/* Every GPU-category slice is on a GPU-stream track, every other on a
 * CPU-thread track; returns the number of misplaced slices. */
static size_t misplaced(const struct hm_batch *b)
{
    size_t bad = 0;
    for (size_t i = 0; i < b->slices.n; i++) {
        const struct hm_slice *s = &b->slices.v[i];
        uint32_t want = hm_cat_is_gpu(s->cat) ? HM_TRACK_GPU_STREAM : HM_TRACK_CPU_THREAD;
        bad += s->track >= b->tracks.n || b->tracks.v[s->track].kind != want;
    }
    return bad;
}

static size_t count_flag(const struct hm_batch *b, unsigned flag)
{
    size_t n = 0;
    for (size_t i = 0; i < b->slices.n; i++)
        n += (b->slices.v[i].flags & flag) != 0;
    return n;
}

static void count_ids(const struct hm_batch *b, size_t *corr, size_t *ext, size_t *bytes)
{
    *corr = *ext = *bytes = 0;
    for (size_t i = 0; i < b->slices.n; i++) {
        *corr += b->slices.v[i].correlation != HM_NONE;
        *ext += b->slices.v[i].external_id != HM_NONE;
        *bytes += b->slices.v[i].bytes != HM_NONE;
    }
}

static int64_t find_track(const struct hm_batch *b, uint32_t kind, int64_t pid, int64_t tid)
{
    for (size_t i = 0; i < b->tracks.n; i++)
        if (b->tracks.v[i].kind == kind && b->tracks.v[i].pid == pid && b->tracks.v[i].tid == tid)
            return (int64_t)i;
    return -1;
}

static void test_nccl_data(void)
{
    struct hm_batch *b = read_fixture("hta/nccl_parser_config/nccl_data.json.gz", 1);
    const struct hm_collective *c;
    const struct hm_slice *s;
    size_t corr, ext, bytes, with_pg = 0;
    uint64_t ts, dur;
    int64_t t;

    if (!b)
        return;
    CHECK_EQ_INT(b->slices.n, 26933);
    CHECK_EQ_INT(count_cat(b, HM_CAT_CPU_OP), 14346);
    CHECK_EQ_INT(count_cat(b, HM_CAT_USER_ANNOTATION), 42);
    CHECK_EQ_INT(count_cat(b, HM_CAT_CUDA_RUNTIME), 8740);
    CHECK_EQ_INT(count_cat(b, HM_CAT_KERNEL), 2700);
    CHECK_EQ_INT(count_cat(b, HM_CAT_GPU_MEMSET), 114);
    CHECK_EQ_INT(count_cat(b, HM_CAT_GPU_MEMCPY), 960);
    CHECK_EQ_INT(count_cat(b, HM_CAT_GPU_USER_ANNOTATION), 30);
    CHECK_EQ_INT(count_cat(b, HM_CAT_TRACE), 1);
    CHECK_EQ_INT(b->info.skipped[HM_SKIP_UNSUPPORTED_PH], 2);  /* f, s, i */
    CHECK_EQ_INT(b->info.skipped[HM_SKIP_NO_DUR] + b->info.skipped[HM_SKIP_NO_CAT] +
                 b->info.skipped[HM_SKIP_BAD_VALUE] + b->info.skipped[HM_SKIP_NEGATIVE_DUR], 0);
    CHECK_EQ_INT(misplaced(b), 0);
    CHECK_EQ_INT(count_flag(b, HM_SLICE_F_STREAM_ARG), 3774);
    count_ids(b, &corr, &ext, &bytes);
    CHECK_EQ_INT(corr, 12514);
    CHECK_EQ_INT(ext, 26932);
    CHECK_EQ_INT(bytes, 1074);

    /* Times: exact ns from the decimal text, never through a double. */
    time_sums(b, &ts, &dur);
    CHECK(ts == 9405076654760619226ull);
    CHECK(dur == 4383359174ull);
    s = &b->slices.v[0];   /* "ts": 4458676522690.655, "dur": 156.777 */
    CHECK_EQ_INT(s->ts, 4458676522690655LL);
    CHECK_EQ_INT(s->dur, 156777);
    CHECK_STR(str(b, s->name), "autograd::engine::evaluate_function: DivBackward1");
    CHECK_STR(str(b, s->args),
              "{\"External id\":2049,\"Record function id\":1909,\"Sequence number\":1080,"
              "\"Fwd thread id\":1,\"Ev Idx\":0}");
    CHECK(b->info.flags & HM_INFO_F_FRACTIONAL_TS);

    /* Rank info and the top level. */
    CHECK_EQ_INT(b->info.rank, 0);
    CHECK_STR(str(b, b->info.rank_source), "distributedInfo");
    CHECK_EQ_INT(b->info.world_size, 2);
    CHECK_EQ_INT(b->info.base_time_ns, 1711964646000000000LL);
    CHECK_STR(str(b, b->info.backend), "nccl");
    CHECK_STR(str(b, b->info.nccl_version), "2.17.1");
    CHECK_STR(str(b, b->info.pg_config), "[{\"pg_name\":\"0\",\"pg_desc\":\"default_pg\","
              "\"backend_config\":\"cuda:nccl\",\"pg_size\":2,\"ranks\":[0,1]}]");
    CHECK_STR(str(b, b->info.trace_meta), "{\"schemaVersion\":1,\"traceName\":\"/tmp/tmpu3g3sevh.json\"}");
    CHECK(strncmp(str(b, b->info.device_props), "[{\"id\":0,\"name\":\"NVIDIA A100-PG509-200\"", 38) == 0);
    CHECK_CONTAINS(str(b, b->info.source_file), "nccl_data.json.gz");
    CHECK_EQ_INT(b->source_bytes, 9778890);

    /* Tracks: two streams on device 0, CPU threads named by M events. */
    CHECK_EQ_INT(b->tracks.n, 6);
    t = find_track(b, HM_TRACK_GPU_STREAM, 0, 7);
    CHECK(t >= 0);
    if (t >= 0)
        CHECK_STR(str(b, b->tracks.v[t].name), "stream 7");
    CHECK(find_track(b, HM_TRACK_GPU_STREAM, 0, 40) >= 0);
    t = find_track(b, HM_TRACK_CPU_THREAD, 2910249, 2910249);
    CHECK(t >= 0);
    if (t >= 0)
        CHECK_STR(str(b, b->tracks.v[t].name), "thread 2910249 (pt_main_thread)");

    /* Collectives: 48 record_param_comms/kernels with "Collective name"
     * (all but the 6 "wait" ops name their process group), 21 nccl:*
     * annotations. */
    CHECK_EQ_INT(b->collectives.n, 69);
    for (size_t i = 0; i < b->collectives.n; i++)
        with_pg += b->collectives.v[i].pg_name != 0;
    CHECK_EQ_INT(with_pg, 42);
    c = &b->collectives.v[0];
    s = &b->slices.v[c->slice];
    CHECK_STR(str(b, s->name), "record_param_comms");
    CHECK_EQ_INT(s->ts, 4458676524648797LL);
    CHECK_EQ_INT(s->dur, 189626);
    CHECK_STR(str(b, c->op), "allreduce");
    CHECK_STR(str(b, c->pg_name), "0");
    CHECK_STR(str(b, c->pg_desc), "default_pg");
    CHECK_STR(str(b, c->pg_ranks), "[0, 1]");
    CHECK_STR(str(b, c->dtype), "Float");
    CHECK_EQ_INT(c->comms_id, 0);
    CHECK_EQ_INT(c->seq, HM_NONE);
    CHECK_EQ_INT(c->in_nelems, 2049000);
    CHECK_EQ_INT(c->out_nelems, 2049000);
    CHECK_EQ_INT(c->group_size, 2);
    c = &b->collectives.v[1];
    CHECK_STR(str(b, b->slices.v[c->slice].name), "nccl:all_reduce");
    CHECK_STR(str(b, c->op), "all_reduce");
    CHECK_EQ_INT(c->pg_name, 0);
    CHECK_EQ_INT(c->in_nelems, HM_NONE);

    /* Steps 4, 5, 6. */
    CHECK_EQ_INT(b->steps.n, 3);
    for (size_t i = 0; i < b->steps.n && i < 3; i++) {
        char want[32];
        snprintf(want, sizeof want, "ProfilerStep#%zu", i + 4);
        CHECK_EQ_INT(b->steps.v[i].number, (int64_t)i + 4);
        CHECK_STR(str(b, b->slices.v[b->steps.v[i].slice].name), want);
        CHECK_EQ_INT(b->steps.v[i].ts, b->slices.v[b->steps.v[i].slice].ts);
    }
    if (b->steps.n == 3) {
        CHECK_EQ_INT(b->steps.v[0].ts, 4458676416788066LL);
        CHECK_EQ_INT(b->steps.v[0].dur, 222442191);
    }
    hm_batch_free(b);
}

static void test_nccl_data_without_args(void)
{
    struct hm_batch *b = read_fixture("hta/nccl_parser_config/nccl_data.json.gz", 0);
    size_t with_args = 0;

    if (!b)
        return;
    for (size_t i = 0; i < b->slices.n; i++)
        with_args += b->slices.v[i].args != 0;
    CHECK_EQ_INT(with_args, 0);
    CHECK_EQ_INT(b->slices.n, 26933);
    CHECK_EQ_INT(b->collectives.n, 69);
    hm_batch_free(b);
}

static void test_trace_filter(void)
{
    struct hm_batch *b = read_fixture("hta/trace_filter/sampled_rank-0.json.gz", 1);
    uint64_t ts, dur;
    size_t corr, ext, bytes;

    if (!b)
        return;
    CHECK_EQ_INT(b->slices.n, 4811);
    CHECK_EQ_INT(count_cat(b, HM_CAT_CPU_OP), 2329);
    CHECK_EQ_INT(count_cat(b, HM_CAT_USER_ANNOTATION), 73);
    CHECK_EQ_INT(count_cat(b, HM_CAT_KERNEL), 1154);
    CHECK_EQ_INT(count_cat(b, HM_CAT_CUDA_RUNTIME), 1204);
    CHECK_EQ_INT(count_cat(b, HM_CAT_GPU_MEMCPY), 40);
    CHECK_EQ_INT(count_cat(b, HM_CAT_GPU_MEMSET), 10);
    CHECK_EQ_INT(count_cat(b, HM_CAT_TRACE), 1);
    CHECK_EQ_INT(b->info.skipped[HM_SKIP_UNSUPPORTED_PH], 0);
    CHECK_EQ_INT(misplaced(b), 0);
    CHECK_EQ_INT(count_flag(b, HM_SLICE_F_STREAM_ARG), 1204);
    count_ids(b, &corr, &ext, &bytes);
    CHECK_EQ_INT(corr, 2408);
    CHECK_EQ_INT(ext, 4810);
    CHECK_EQ_INT(bytes, 50);
    time_sums(b, &ts, &dur);
    CHECK(ts == 15920393907568508192ull);
    CHECK(dur == 7917027000ull);
    CHECK_EQ_INT(b->info.flags & HM_INFO_F_FRACTIONAL_TS, 0);   /* integer ts (dur is 68.0) */
    CHECK_EQ_INT(b->info.rank, 0);
    CHECK_EQ_INT(b->info.world_size, 128);
    CHECK_STR(str(b, b->info.backend), "nccl");
    CHECK_EQ_INT(b->info.base_time_ns, HM_NONE);
    CHECK_STR(str(b, b->info.trace_meta), "{\"schemaVersion\":1,\"record_shapes\":1}");
    CHECK_EQ_INT(b->info.device_props, 0);
    CHECK_EQ_INT(b->tracks.n, 8);   /* 2 threads, 5 streams, the "PyTorch Profiler" span */
    for (int64_t stream = 0; stream < 300; stream++)
        if (stream == 7 || stream == 23 || stream == 25 || stream == 84 || stream == 203)
            CHECK(find_track(b, HM_TRACK_GPU_STREAM, 0, stream) >= 0);
    CHECK_EQ_INT(b->steps.n, 2);
    if (b->steps.n == 2) {
        CHECK_EQ_INT(b->steps.v[0].number, 551);
        CHECK_EQ_INT(b->steps.v[0].ts, 1682725898079292000LL);
        CHECK_EQ_INT(b->steps.v[0].dur, 607312000);
        CHECK_EQ_INT(b->steps.v[1].number, 552);
        CHECK_EQ_INT(b->steps.v[1].ts, 1682725898686653000LL);
        CHECK_EQ_INT(b->steps.v[1].dur, 622928000);
    }
    CHECK_EQ_INT(b->collectives.n, 10);   /* nccl:* annotations only */
    if (b->collectives.n > 0)
        CHECK_STR(str(b, b->collectives.v[0].op), "all_reduce");
    hm_batch_free(b);

    b = read_fixture("hta/trace_filter/sampled_rank-1.json.gz", 1);
    if (!b)
        return;
    CHECK_EQ_INT(b->slices.n, 4676);
    CHECK_EQ_INT(b->info.rank, 1);
    CHECK_STR(str(b, b->info.rank_source), "distributedInfo");
    time_sums(b, &ts, &dur);
    CHECK(ts == 10113326468722749584ull);
    CHECK(dur == 8020966000ull);
    CHECK(find_track(b, HM_TRACK_GPU_STREAM, 1, 7) >= 0);   /* rank 1 uses device 1 */
    CHECK_EQ_INT(b->steps.n, 2);
    if (b->steps.n == 2) {
        CHECK_EQ_INT(b->steps.v[0].number, 551);
        CHECK_EQ_INT(b->steps.v[0].slice, 0);
        CHECK_EQ_INT(b->steps.v[1].number, 552);
    }
    hm_batch_free(b);
}

static void test_large_integer(void)
{
    struct hm_batch *b = read_fixture(
        "hta/large_integer_trace/rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz", 1);
    const struct hm_slice *s;

    if (!b)
        return;
    CHECK_EQ_INT(b->slices.n, 2);
    CHECK_EQ_INT(b->info.rank, 70);   /* no distributedInfo: from the file name */
    CHECK_STR(str(b, b->info.rank_source), "file name");
    CHECK_EQ_INT(b->collectives.n, 0);   /* a Comms Id alone is not a collective */
    s = find_slice(b, "record_param_comms");
    CHECK(s != NULL);
    if (s)
        CHECK_STR(str(b, s->args), "{\"Comms Id\":10159970886766084423}");
    s = find_slice(b, "ncclKernel_AllReduce");
    CHECK(s != NULL);
    if (s) {
        CHECK_EQ_INT(s->args, 0);
        CHECK_EQ_INT(s->ts, 100000);
        CHECK_EQ_INT(s->dur, 50000);
        CHECK_EQ_INT(b->tracks.v[s->track].kind, HM_TRACK_GPU_STREAM);
    }
    hm_batch_free(b);
}

static void test_no_distributed_info(void)
{
    struct hm_batch *b = read_fixture("hta/distributed_info_unavailable/distributed_info_not_found.json.gz", 1);
    uint64_t ts, dur;

    if (!b)
        return;
    CHECK_EQ_INT(b->slices.n, 2467);
    CHECK_EQ_INT(count_cat(b, HM_CAT_CPU_OP), 2424);
    CHECK_EQ_INT(count_cat(b, HM_CAT_USER_ANNOTATION), 43);
    CHECK_EQ_INT(b->info.rank, HM_NONE);
    CHECK_STR(str(b, b->info.rank_source), "none");
    CHECK_EQ_INT(b->info.world_size, HM_NONE);
    CHECK_STR(str(b, b->info.trace_meta), "{\"schemaVersion\":1}");
    time_sums(b, &ts, &dur);
    CHECK(ts == 3011757924902111248ull);
    CHECK(dur == 250549000ull);
    CHECK_EQ_INT(b->collectives.n, 6);
    for (size_t i = 0; i < b->collectives.n; i++)
        CHECK_STR(str(b, b->collectives.v[i].op), "all_to_all");
    CHECK_EQ_INT(b->steps.n, 1);
    if (b->steps.n)
        CHECK_EQ_INT(b->steps.v[0].number, 1009);
    hm_batch_free(b);

    b = read_fixture("hta/rank_non_gpu/rank_non_gpu.json.gz", 1);
    if (!b)
        return;
    CHECK_EQ_INT(b->slices.n, 2467);
    CHECK_EQ_INT(b->info.rank, 0);
    CHECK_EQ_INT(b->info.trace_meta, 0);   /* no top-level scalars at all */
    CHECK_EQ_INT(b->tracks.n, 1);
    hm_batch_free(b);
}

static void test_alexnet(void)
{
    struct hm_batch *b = read_fixture(
        "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz", 1);
    uint64_t ts, dur;
    int64_t t;

    if (!b)
        return;
    CHECK_EQ_INT(b->slices.n, 868);
    CHECK_EQ_INT(count_cat(b, HM_CAT_CUDA_SYNC), 41);
    CHECK_EQ_INT(count_cat(b, HM_CAT_KERNEL), 79);
    CHECK_EQ_INT(b->info.skipped[HM_SKIP_UNSUPPORTED_PH], 2);
    CHECK_EQ_INT(misplaced(b), 0);
    time_sums(b, &ts, &dur);
    CHECK(ts == 14692500394738961336ull);
    CHECK(dur == 307784449000ull);
    /* Device-wide syncs: args.stream 4294967295 (-1 as uint32), kept as is. */
    t = find_track(b, HM_TRACK_GPU_STREAM, 0, 4294967295ll);
    CHECK(t >= 0);
    if (t >= 0)
        CHECK_STR(str(b, b->tracks.v[t].name), "stream 4294967295");
    t = find_track(b, HM_TRACK_GPU_STREAM, 0, 20);
    CHECK(t >= 0);
    if (t >= 0)
        CHECK_STR(str(b, b->tracks.v[t].name), "stream 20");
    CHECK_STR(str(b, b->info.trace_meta),
              "{\"schemaVersion\":1,\"traceName\":\"benchmark_result_2869224_1695835535_trace.json\"}");
    hm_batch_free(b);
}

/* A synthetic trace with what the real ones lack: Seq and Comms Id,
 * [memory] counters, gloo annotations, exponents, text ids, metadata
 * after the events and distributedInfo after traceEvents. */
static const char synthetic[] =
    "{\"schemaVersion\": 42, \"baseTimeNanoseconds\": 1700000000000000000,\n"
    " \"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": 10, \"tid\": 11,"
    "   \"ts\": 1.0005, \"dur\": 2.0004, \"args\": {\"Collective name\": \"allreduce\", \"Seq\": 17,"
    "   \"Comms Id\": 10159970886766084423, \"Process Group Name\": \"3\","
    "   \"Process Group Description\": \"tp\", \"Process Group Ranks\": [0, 1, 2, 3],"
    "   \"dtype\": \"BFloat16\", \"In msg nelems\": 1024, \"Out msg nelems\": 4096, \"Group size\": 4}},\n"
    "  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"gloo:all_reduce\", \"pid\": 10, \"tid\": 11,"
    "   \"ts\": 1.5e3, \"dur\": 25E-1},\n"
    "  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"nccl:broadcast\", \"pid\": 10, \"tid\": 11,"
    "   \"ts\": 2000, \"dur\": 1, \"args\": {\"Collective name\": \"broadcast\", \"Seq\": 3}},\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"ProfilerStep#12\", \"pid\": 10, \"tid\": 11,"
    "   \"ts\": 0, \"dur\": 5000},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k_text_tid\", \"pid\": 2, \"tid\": \"stream 9\","
    "   \"ts\": 3, \"dur\": 0.0005, \"args\": {\"correlation\": 77, \"External id\": 5}},\n"
    "  {\"ph\": \"X\", \"cat\": \"my_gpu_op\", \"name\": \"k_stream_arg\", \"pid\": 3, \"tid\": 99,"
    "   \"ts\": 4, \"dur\": 1, \"args\": {\"stream\": 12, \"device\": 3}},\n"
    "  {\"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": \"Device Synchronize\", \"pid\": 0, \"tid\": -1,"
    "   \"ts\": 5, \"dur\": 1, \"args\": {\"stream\": 4294967295, \"device\": 0}},\n"
    "  {\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD\", \"pid\": 0, \"tid\": 7,"
    "   \"ts\": 6, \"dur\": 1, \"args\": {\"stream\": 7, \"device\": 0, \"bytes\": 4096}},\n"
    "  {\"ph\": \"X\", \"cat\": \"Trace\", \"name\": \"PyTorch Profiler (0)\", \"pid\": \"Spans\","
    "   \"tid\": \"PyTorch Profiler\", \"ts\": 0, \"dur\": 9},\n"
    "  {\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"esc\\\"aped \\u00e9\", \"pid\": 10,"
    "   \"tid\": 12, \"ts\": 7, \"dur\": 1},\n"
    "  {\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"name\": \"[memory]\", \"pid\": 10, \"tid\": 11,"
    "   \"ts\": 8.25, \"s\": \"t\", \"args\": {\"Device Type\": 1, \"Device Id\": 0, \"Addr\": 1234,"
    "   \"Bytes\": 512, \"Total Allocated\": 1048576, \"Total Reserved\": 2097152}},\n"
    "  {\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"name\": \"[memory]\", \"pid\": 10, \"tid\": 11,"
    "   \"ts\": 9, \"s\": \"t\", \"args\": {\"Device Type\": 0, \"Device Id\": -1,"
    "   \"Total Allocated\": 4.5e3, \"Total Reserved\": 8192}},\n"
    "  {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 10, \"tid\": 11, \"args\": {\"name\": \"main \"}},\n"
    "  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 10, \"tid\": 0, \"args\": {\"name\": \"python3\"}},\n"
    "  {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": 7, \"args\": {\"name\": \"stream 7 \"}}\n"
    " ],\n"
    " \"distributedInfo\": {\"backend\": \"gloo\", \"rank\": 5, \"world_size\": 8},\n"
    " \"traceName\": \"syn\\\"thetic\", \"trace_id\": \"ABC\", \"cupti_version\": 18, \"INFO\": [\"x\"]\n"
    "}\n";

static void progress_cb(void *ctx, uint64_t done)
{
    uint64_t *last = ctx;
    CHECK(done >= *last);
    *last = done;
}

static void test_synthetic(void)
{
    /* The name says rank 3; distributedInfo (after traceEvents) says 5. */
    struct hm_batch *b = read_text("rank-3.synthetic.json", synthetic);
    const struct hm_collective *c;
    const struct hm_slice *s;
    int64_t t;

    if (!b)
        return;
    CHECK_EQ_INT(b->slices.n, 10);
    CHECK_EQ_INT(b->info.rank, 5);
    CHECK_STR(str(b, b->info.rank_source), "distributedInfo");
    CHECK_EQ_INT(b->info.world_size, 8);
    CHECK_STR(str(b, b->info.backend), "gloo");
    CHECK_EQ_INT(b->info.base_time_ns, 1700000000000000000LL);
    CHECK_STR(str(b, b->info.trace_meta),
              "{\"schemaVersion\":42,\"traceName\":\"syn\\\"thetic\",\"trace_id\":\"ABC\",\"cupti_version\":18}");
    CHECK(b->info.flags & HM_INFO_F_FRACTIONAL_TS);
    CHECK_EQ_INT(misplaced(b), 1);   /* my_gpu_op: a GPU stream by its stream arg */

    /* Rounding to the nearest ns, halves away from zero; exponents. */
    s = find_slice(b, "record_param_comms");
    CHECK(s && s->ts == 1001 && s->dur == 2000);
    s = find_slice(b, "gloo:all_reduce");
    CHECK(s && s->ts == 1500000 && s->dur == 2500);
    s = find_slice(b, "k_text_tid");
    CHECK(s && s->dur == 1 && s->correlation == 77 && s->external_id == 5);
    if (s) {
        CHECK_EQ_INT(b->tracks.v[s->track].kind, HM_TRACK_GPU_STREAM);
        CHECK_EQ_INT(b->tracks.v[s->track].pid, 2);
        CHECK_EQ_INT(b->tracks.v[s->track].tid, 9);   /* digits of "stream 9" */
        CHECK_EQ_INT(s->flags & HM_SLICE_F_STREAM_ARG, 0);
    }
    s = find_slice(b, "esc\"aped \xc3\xa9");
    CHECK(s != NULL);
    s = find_slice(b, "Memcpy HtoD");
    CHECK(s && s->bytes == 4096 && (s->flags & HM_SLICE_F_STREAM_ARG));

    /* Tracks. */
    CHECK(find_track(b, HM_TRACK_GPU_STREAM, 3, 12) >= 0);
    CHECK(find_track(b, HM_TRACK_GPU_STREAM, 0, 4294967295ll) >= 0);
    t = find_track(b, HM_TRACK_CPU_THREAD, 10, 11);
    CHECK(t >= 0);
    if (t >= 0)
        CHECK_STR(str(b, b->tracks.v[t].name), "main");
    t = find_track(b, HM_TRACK_CPU_THREAD, 10, 12);
    CHECK(t >= 0);
    if (t >= 0)
        CHECK_STR(str(b, b->tracks.v[t].name), "python3");   /* no thread_name: process_name */
    t = find_track(b, HM_TRACK_GPU_STREAM, 0, 7);
    CHECK(t >= 0);
    if (t >= 0)
        CHECK_STR(str(b, b->tracks.v[t].name), "stream 7");
    s = find_slice(b, "PyTorch Profiler (0)");
    CHECK(s != NULL);
    if (s)
        CHECK_STR(str(b, b->tracks.v[s->track].name), "PyTorch Profiler");

    /* Collectives: full metadata, a gloo annotation, and an annotation
     * that carries "Collective name" (counted once). */
    CHECK_EQ_INT(b->collectives.n, 3);
    if (b->collectives.n == 3) {
        c = &b->collectives.v[0];
        CHECK_STR(str(b, c->op), "allreduce");
        CHECK_EQ_INT(c->seq, 17);
        CHECK_STR(str(b, c->comms_id), "10159970886766084423");
        CHECK_STR(str(b, c->pg_name), "3");
        CHECK_STR(str(b, c->pg_desc), "tp");
        CHECK_STR(str(b, c->pg_ranks), "[0,1,2,3]");
        CHECK_STR(str(b, c->dtype), "BFloat16");
        CHECK_EQ_INT(c->in_nelems, 1024);
        CHECK_EQ_INT(c->out_nelems, 4096);
        CHECK_EQ_INT(c->group_size, 4);
        c = &b->collectives.v[1];
        CHECK_STR(str(b, c->op), "all_reduce");
        CHECK_EQ_INT(c->seq, HM_NONE);
        CHECK_EQ_INT(c->comms_id, 0);
        c = &b->collectives.v[2];
        CHECK_STR(str(b, c->op), "broadcast");
        CHECK_EQ_INT(c->seq, 3);
    }

    /* Step from a cpu_op, counters from [memory] instants. */
    CHECK_EQ_INT(b->steps.n, 1);
    if (b->steps.n == 1) {
        CHECK_EQ_INT(b->steps.v[0].number, 12);
        CHECK_EQ_INT(b->steps.v[0].dur, 5000000);
    }
    CHECK_EQ_INT(b->counters.n, 4);
    if (b->counters.n == 4) {
        CHECK_STR(str(b, b->counters.v[0].name), "Total Allocated");
        CHECK_EQ_INT(b->counters.v[0].ts, 8250);
        CHECK_EQ_INT(b->counters.v[0].device, 0);
        CHECK_NEAR(b->counters.v[0].value, 1048576.0, 0);
        CHECK_STR(str(b, b->counters.v[1].name), "Total Reserved");
        CHECK_NEAR(b->counters.v[1].value, 2097152.0, 0);
        CHECK_EQ_INT(b->counters.v[2].device, -1);
        CHECK_NEAR(b->counters.v[2].value, 4500.0, 0);
        CHECK_NEAR(b->counters.v[3].value, 8192.0, 0);
    }
    CHECK_EQ_INT(b->info.skipped[HM_SKIP_UNSUPPORTED_PH], 0);
    hm_batch_free(b);
}

static void test_progress(void)
{
    uint64_t last = 0;
    struct src_kineto_opts opts = {.keep_args = 1, .progress = progress_cb, .progress_ctx = &last};
    struct hm_batch *b = NULL;
    struct hm_err err;

    CHECK_EQ_INT(src_kineto_read(hm_fixture("hta/nccl_parser_config/nccl_data.json.gz"), &opts, &b, &err), 0);
    CHECK_EQ_INT(last, 9778890);
    hm_batch_free(b);
}

static void test_rank_from_name(void)
{
    CHECK_EQ_INT(src_kineto_rank_from_name("rank-3.json"), 3);
    CHECK_EQ_INT(src_kineto_rank_from_name("/x/y/trace_RANK_12.pt.trace.json.gz"), 12);
    CHECK_EQ_INT(src_kineto_rank_from_name("host1_Rank7_step3.json"), 7);
    CHECK_EQ_INT(src_kineto_rank_from_name("rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz"), 70);
    CHECK_EQ_INT(src_kineto_rank_from_name("/runs/rank-4/trace.json"), -1);   /* base name only */
    CHECK_EQ_INT(src_kineto_rank_from_name("ranks.json"), -1);
    CHECK_EQ_INT(src_kineto_rank_from_name("rank-.json"), -1);
    CHECK_EQ_INT(src_kineto_rank_from_name("frankly_rank_2.json"), 2);
    CHECK_EQ_INT(src_kineto_rank_from_name("rank99999999999.json"), -1);   /* > INT32_MAX */
    CHECK_EQ_INT(src_kineto_rank_from_name(""), -1);
}

static void touch(const char *path)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f)
        fclose(f);
}

static void test_list(void)
{
    char root[3000], p[3200], q[3200];
    const char *paths[3];
    char **files = NULL;
    size_t n = 0;
    struct hm_err err;
    int rc;

    snprintf(root, sizeof root, "%s", hm_tmpfile("kineto_list"));
    snprintf(p, sizeof p, "rm -rf '%s'", root);
    CHECK_EQ_INT(system(p), 0);
    mkdir(root, 0755);
#define MK(rel) (snprintf(p, sizeof p, "%s/%s", root, rel), p)
    mkdir(MK("b"), 0755);
    mkdir(MK("b/deeper"), 0755);
    mkdir(MK(".hidden"), 0755);
    mkdir(MK("empty"), 0755);
    touch(MK("z.pt.trace.json"));
    touch(MK("a.json.gz"));
    touch(MK("notes.txt"));
    touch(MK("b/deeper/rank-1.pt.trace.json.gz"));
    touch(MK("b/x.json.gzip"));
    touch(MK(".hidden/h.json"));
    touch(MK("explicit.log"));
    snprintf(q, sizeof q, "%s/z.pt.trace.json", root);
    CHECK_EQ_INT(symlink(q, MK("b/link.json")), 0);   /* the same file twice */

    /* The directory, plus one of its files again, plus a file with any name. */
    paths[0] = root;
    snprintf(q, sizeof q, "%s/a.json.gz", root);
    paths[1] = q;
    paths[2] = MK("explicit.log");
    rc = src_kineto_list(paths, 3, &files, &n, &err);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(n, 4);
    if (rc == 0 && n == 4) {
        CHECK_CONTAINS(files[0], "/a.json.gz");
        CHECK_CONTAINS(files[1], "/b/deeper/rank-1.pt.trace.json.gz");
        CHECK_CONTAINS(files[2], "/b/link.json");   /* sorted; z.pt.trace.json is the same file */
        CHECK_CONTAINS(files[3], "/explicit.log");
        for (size_t i = 1; i < n; i++)
            CHECK(strcmp(files[i - 1], files[i]) < 0);
    }
    src_kineto_list_free(files, n);

    paths[0] = MK("empty");
    rc = src_kineto_list(paths, 1, &files, &n, &err);
    CHECK_EQ_INT(rc, HM_EEMPTY);
    CHECK_EQ_INT(err.code, HM_EEMPTY);
    CHECK_CONTAINS(err.file, "/empty");
    CHECK(files == NULL && n == 0);

    paths[0] = MK("does-not-exist");
    rc = src_kineto_list(paths, 1, &files, &n, &err);
    CHECK_EQ_INT(rc, HM_EIO);
    CHECK_CONTAINS(err.file, "does-not-exist");
    CHECK(files == NULL && n == 0);
    src_kineto_list_free(NULL, 0);
#undef MK
}

int main(void)
{
    test_nccl_data();
    test_nccl_data_without_args();
    test_trace_filter();
    test_large_integer();
    test_no_distributed_info();
    test_alexnet();
    test_synthetic();
    test_progress();
    test_rank_from_name();
    test_list();
    return hm_test_done();
}
