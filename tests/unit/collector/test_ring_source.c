/* The live ring source: records written by a producer (as the injection
 * library writes them) become a batch. Mangled C++ kernel names are stored
 * demangled, and the NCCL plugin's GPU-side span is a collective on the GPU
 * stream, not a second kernel. The Python hooks' records: an NVTX range
 * keeps its args, a CPU collective is a CPU slice with a (pg, seq) keyed
 * collective, and a trace file's path is handed out once. */
#include <unistd.h>

#include "collector/ring_source.h"
#include "common/batch.h"
#include "common/record.h"
#include "common/shm_ring.h"
#include "test.h"

static void put_string(struct hm_ring *w, uint32_t id, const char *text)
{
    struct hm_ring_string h = {.id = id, .len = (uint32_t)strlen(text)};
    CHECK_EQ_INT(hm_ring_write2(w, HM_RING_STRING, &h, sizeof h, text, h.len), 0);
}

int main(void)
{
    char name[128];
    struct hm_err err;
    struct col_ring *r;
    struct hm_ring *w;
    struct hm_batch *b;

    hm_err_clear(&err);
    snprintf(name, sizeof name, "/hm-test-ringsrc-%d", (int)getpid());
    r = col_ring_new(name, 1 << 20, 0, &err);
    CHECK(r != NULL);
    w = r ? hm_ring_attach(name, &err) : NULL;
    CHECK(w != NULL);
    if (!r || !w)
        return hm_test_done();

    put_string(w, 1, "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE");
    put_string(w, 2, "_Znot a mangled name");
    put_string(w, 3, "AllReduce");
    put_string(w, 4, "ncclFloat32");
    struct hm_ring_slice k = {.ts = 1000, .dur = 500, .correlation = 7, .bytes = HM_NONE, .tid = 13,
                              .pid = 0, .name = 1, .kind = HM_TRACK_GPU_STREAM, .cat = HM_CAT_KERNEL};
    CHECK_EQ_INT(hm_ring_write(w, HM_RING_SLICE, &k, sizeof k), 0);
    k.ts = 2000, k.name = 2;
    CHECK_EQ_INT(hm_ring_write(w, HM_RING_SLICE, &k, sizeof k), 0);
    /* A launch rebuilt from a queued time: thread 0, whose track is named. */
    struct hm_ring_slice l = {.ts = 900, .dur = 0, .correlation = 7, .bytes = HM_NONE, .tid = 0, .pid = 1234,
                              .name = 2, .kind = HM_TRACK_CPU_THREAD, .cat = HM_CAT_CUDA_RUNTIME};
    CHECK_EQ_INT(hm_ring_write(w, HM_RING_SLICE, &l, sizeof l), 0);
    l.tid = 1234;   /* a real thread keeps no name of ours */
    CHECK_EQ_INT(hm_ring_write(w, HM_RING_SLICE, &l, sizeof l), 0);
    struct hm_ring_nccl_coll c = {.ts = 1100, .dur = 300, .seq = 5, .count = 1024, .comm_id = 42,
                                  .stream = 13, .device = 0, .rank = 0, .nranks = 2, .func = 3, .dtype = 4};
    CHECK_EQ_INT(hm_ring_write(w, HM_RING_NCCL_COLL, &c, sizeof c), 0);

    b = col_ring_drain(r, 1, &err);
    CHECK(b != NULL);
    if (b) {
        CHECK_EQ_INT(b->slices.n, 5);
        for (size_t i = 0; i < b->tracks.n; i++) {
            const struct hm_track *t = &b->tracks.v[i];
            if (t->kind == HM_TRACK_CPU_THREAD)
                CHECK_STR(hm_batch_str(b, t->name), t->tid == 0 ? COL_RING_LAUNCH_TRACK : "");
        }
        CHECK_STR(hm_batch_str(b, b->slices.v[0].name),
                  "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
        CHECK_STR(hm_batch_str(b, b->slices.v[1].name), "_Znot a mangled name");
        CHECK_EQ_INT(b->slices.v[0].cat, HM_CAT_KERNEL);
        CHECK_EQ_INT(b->slices.v[4].cat, HM_CAT_COLLECTIVE_COMM);
        CHECK_EQ_INT(b->collectives.n, 1);
        if (b->collectives.n == 1) {
            CHECK_EQ_INT(b->collectives.v[0].seq, 5);
            CHECK_STR(hm_batch_str(b, b->collectives.v[0].comms_id), "42");
        }
        CHECK_STR(hm_batch_str(b, b->info.backend), "nccl");   /* ranks.backend of a live run */
        hm_batch_free(b);
    }

    put_string(w, 10, "step");
    put_string(w, 11, "{\"domain\":\"htamerge\",\"step\":3}");
    put_string(w, 12, "gloo:all_reduce");
    put_string(w, 13, "allreduce");
    put_string(w, 14, "0");
    put_string(w, 15, "[0, 1, 2, 3]");
    put_string(w, 16, "mesh_tp");
    struct hm_ring_nvtx n = {.ts = 5000, .dur = 900, .tid = 77, .pid = 1234, .name = 10, .args = 11};
    CHECK_EQ_INT(hm_ring_write(w, HM_RING_NVTX, &n, sizeof n), 0);
    struct hm_ring_cpu_coll g = {.ts = 5100, .dur = 200, .seq = 1804289390, .bytes = 4096, .nelems = 1024,
                                 .tid = 77, .pid = 1234, .slice_name = 12, .op = 13, .pg_name = 14,
                                 .pg_ranks = 15, .group_rank = 1, .group_size = 4, .pg_desc = 16};
    CHECK_EQ_INT(hm_ring_write(w, HM_RING_CPU_COLL, &g, sizeof g), 0);
    const char *path = "/tmp/somewhere/rank-0.pt.trace.json";
    struct hm_ring_trace_file f = {.len = (uint32_t)strlen(path)};
    CHECK_EQ_INT(hm_ring_write2(w, HM_RING_TRACE_FILE, &f, sizeof f, path, f.len), 0);
    b = col_ring_drain(r, 1, &err);
    CHECK(b != NULL);
    if (b) {
        CHECK_EQ_INT(b->slices.n, 2);
        CHECK_EQ_INT(b->slices.v[0].cat, HM_CAT_NVTX);
        CHECK_STR(hm_batch_str(b, b->slices.v[0].args), "{\"domain\":\"htamerge\",\"step\":3}");
        CHECK_STR(hm_batch_str(b, b->slices.v[1].name), "gloo:all_reduce");
        CHECK_EQ_INT(b->slices.v[1].cat, HM_CAT_COLLECTIVE_COMM);
        CHECK_EQ_INT(b->slices.v[1].bytes, 4096);
        CHECK_EQ_INT(b->tracks.v[b->slices.v[1].track].tid, 77);
        CHECK_EQ_INT(b->collectives.n, 1);
        if (b->collectives.n == 1) {
            const struct hm_collective *c1 = &b->collectives.v[0];
            CHECK_EQ_INT(c1->slice, 1);
            CHECK_STR(hm_batch_str(b, c1->op), "allreduce");
            CHECK_STR(hm_batch_str(b, c1->pg_name), "0");
            CHECK_STR(hm_batch_str(b, c1->pg_ranks), "[0, 1, 2, 3]");
            CHECK_STR(hm_batch_str(b, c1->pg_desc), "mesh_tp");
            CHECK_EQ_INT(c1->seq, 1804289390);
            CHECK_EQ_INT(c1->in_nelems, 1024);
            CHECK_EQ_INT(c1->group_size, 4);
        }
        CHECK_STR(hm_batch_str(b, b->info.backend), "gloo");
        hm_batch_free(b);
    }
    char *got = col_ring_take_trace_file(r);
    CHECK_STR(got ? got : "", path);
    free(got);
    CHECK(col_ring_take_trace_file(r) == NULL);
    hm_ring_close(w);
    col_ring_free(r);
    return hm_test_done();
}
