/* One step of one rank as Kineto (torch.profiler) trace events, appended as
 * JSON text to the cycle's buffer. It lays events out inside the phases the
 * schedule (synth_sched.c) planned and never decides timing across ranks.
 *
 * CPU side (one thread): ProfilerStep#k > train_step > forward | backward |
 * optimizer_step (user_annotation), cpu_op ranges inside them, and inside
 * those the cuda_runtime launch (cudaLaunchKernel, cudaMemcpyAsync,
 * cudaMemsetAsync) with a correlation id; allreduces as nccl:all_reduce >
 * record_param_comms > cudaLaunchKernel, then cudaStreamSynchronize.
 * GPU side: kernels, one memcpy and one memset on stream 7, allreduce kernels
 * on stream 20 (pid = device = LOCAL_RANK, tid = stream); an ac2g s/f flow
 * pair per launch; one [memory] instant per step. */
#include "synth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define US SYN_NS_PER_US

enum op_kind { OP_KERNEL, OP_MEMCPY, OP_MEMSET };

/* One CPU operator: outer > inner (optional) cpu_op, launching up to two
 * GPU ops on the compute stream. */
struct op {
    const char *outer, *inner;
    enum op_kind kind;
    const char *k1, *k2;    /* GPU op names; k2 may be NULL */
    int64_t bytes;          /* memcpy / memset size */
};

#define GEMM_TN "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
#define GEMM_NN "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
#define GEMM_NT "sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x64x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
#define ELEMWISE(f, n) "void at::native::vectorized_elementwise_kernel<4, " f ", at::detail::Array<char*, " n "> >(int, " f ", at::detail::Array<char*, " n ">)"
#define ANON "at::native::(anonymous namespace)::"
#define NCCL_KERNEL "ncclDevKernel_AllReduce_Sum_f32_RING_LL"

static const struct op fwd_ops[] = {
    {"aten::linear", "aten::addmm", OP_KERNEL, GEMM_TN, NULL, 0},
    {"aten::relu", "aten::clamp_min", OP_KERNEL, ELEMWISE(ANON "launch_clamp_scalar<float>", "2"), NULL, 0},
    {"aten::linear", "aten::addmm", OP_KERNEL, GEMM_TN, NULL, 0},
    {"aten::layer_norm", "aten::native_layer_norm", OP_KERNEL,
     "void " ANON "vectorized_layer_norm_kernel<float, float>(int, float, float const*, float const*, float const*, float*, float*, float*)", NULL, 0},
    {"aten::linear", "aten::addmm", OP_KERNEL, GEMM_TN, NULL, 0},
    {"aten::gelu", NULL, OP_KERNEL, ELEMWISE("at::native::GeluCUDAKernelImpl<float>", "2"), NULL, 0},
    {"aten::linear", "aten::addmm", OP_KERNEL, GEMM_TN, NULL, 0},
    {"aten::cross_entropy_loss", "aten::_log_softmax", OP_KERNEL,
     "void " ANON "cunn_SoftMaxForward<4, float, float, float, " ANON "LogSoftMaxForwardEpilogue>(float*, float const*, int)", NULL, 0},
};

static const struct op bwd_ops[] = {
    {"autograd::engine::evaluate_function: NllLossBackward0", "aten::nll_loss_backward", OP_KERNEL,
     "void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, long>(float*, float const*, long const*, float const*, float const*, bool, int, int, long, long)", NULL, 0},
    {"autograd::engine::evaluate_function: AddmmBackward0", "aten::mm", OP_KERNEL, GEMM_NN, GEMM_NT, 0},
    {"autograd::engine::evaluate_function: GeluBackward0", "aten::gelu_backward", OP_KERNEL,
     ELEMWISE("at::native::GeluBackwardCUDAKernelImpl<float>", "3"), NULL, 0},
    {"autograd::engine::evaluate_function: AddmmBackward0", "aten::mm", OP_KERNEL, GEMM_NN, GEMM_NT, 0},
    {"autograd::engine::evaluate_function: NativeLayerNormBackward0", "aten::native_layer_norm_backward", OP_KERNEL,
     "void " ANON "layer_norm_grad_input_kernel_vectorized<float, float>(float const*, float const*, float const*, float const*, float const*, float*, int)",
     "void " ANON "GammaBetaBackwardCUDAKernel<float, float>(long, long, float const*, float const*, float const*, float const*, float*, float*)", 0},
    {"autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", "aten::add_", OP_KERNEL,
     ELEMWISE("at::native::CUDAFunctor_add<float>", "3"), NULL, 0},
};

#define FOREACH_KERNEL "void " ANON "multi_tensor_apply_kernel<" ANON "TensorListMetadata<2>, " ANON "BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float>(" ANON "TensorListMetadata<2>, " ANON "BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float)"
static const struct op opt_ops[] = {
    {"aten::_foreach_mul_", NULL, OP_KERNEL, FOREACH_KERNEL, NULL, 0},
    {"aten::_foreach_add_", NULL, OP_KERNEL, FOREACH_KERNEL, FOREACH_KERNEL, 0},
    {"aten::_foreach_add_", NULL, OP_KERNEL, FOREACH_KERNEL, NULL, 0},
};
static const struct op load_op = {"aten::to", "aten::copy_", OP_MEMCPY, "Memcpy HtoD (Pageable -> Device)", NULL, 8388608};
static const struct op zero_op = {"aten::zero_", "aten::fill_", OP_MEMSET, "Memset (Device)", NULL, 33554432};

static const int64_t bucket_nelems[SYN_NCOLL] = {6553600, 4194304};

#define NOPS(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* Where one phase's operators go: [t, t + dur) split into equal slots. The
 * last GPU op may run on for tail ns past the phase's end (backward work
 * still running when the allreduce starts: communication overlaps it). */
struct phase {
    int step, id;
    int64_t t, dur;
    int64_t tail;
};

int syn_cpu_pid(const struct syn_cfg *cfg)
{
    return 10000 + cfg->rank;   /* fixed, not getpid(): reproducible traces */
}

int syn_emit_init(struct syn_emit *e, const struct syn_cfg *cfg)
{
    struct syn_buf r = {0};

    memset(e, 0, sizeof *e);
    e->cfg = cfg;
    e->next_corr = 1;
    e->next_ext = 1;
    syn_buf_printf(&r, "[");
    for (int i = 0; i < cfg->world; i++)
        syn_buf_printf(&r, "%s%d", i ? ", " : "", i);
    syn_buf_printf(&r, "]");
    if (r.oom) {
        syn_buf_free(&r);
        return -1;
    }
    e->pg_ranks = r.p;   /* ownership moves to e */
    return 0;
}

void syn_emit_fini(struct syn_emit *e)
{
    syn_buf_free(&e->ev);
    free(e->pg_ranks);
    e->pg_ranks = NULL;
}

/* Starts one event: the separator, then the count. */
static struct syn_buf *ev_begin(struct syn_emit *e)
{
    syn_buf_printf(&e->ev, "%s", e->nev ? ",\n  " : "  ");
    e->nev++;
    return &e->ev;
}

/* Opens an X event up to and including `"args": {`; x_close ends it. */
static struct syn_buf *x_open(struct syn_emit *e, const char *cat, const char *name, int pid, int tid,
                              int64_t t, int64_t dur)
{
    struct syn_buf *b = ev_begin(e);

    syn_buf_printf(b, "{\"ph\": \"X\", \"cat\": \"%s\", \"name\": ", cat);
    syn_buf_json_str(b, name);
    syn_buf_printf(b, ", \"pid\": %d, \"tid\": %d, \"ts\": ", pid, tid);
    syn_buf_us(b, t - e->cfg->base_ns);
    syn_buf_printf(b, ", \"dur\": ");
    syn_buf_us(b, dur);
    syn_buf_printf(b, ", \"args\": {");
    return b;
}

static void x_close(struct syn_buf *b)
{
    syn_buf_printf(b, "}}");
}

/* A CPU range (cpu_op or user_annotation) on the main thread; returns its
 * External id. */
static int64_t cpu_range(struct syn_emit *e, const char *cat, const char *name, int64_t t, int64_t dur)
{
    int pid = syn_cpu_pid(e->cfg);
    int64_t ext = e->next_ext++;
    struct syn_buf *b = x_open(e, cat, name, pid, pid, t, dur);

    syn_buf_printf(b, "\"External id\": %lld", (long long)ext);
    x_close(b);
    return ext;
}

static void flow(struct syn_emit *e, char ph, int64_t id, int pid, int tid, int64_t t)
{
    struct syn_buf *b = ev_begin(e);

    syn_buf_printf(b, "{\"ph\": \"%c\", \"id\": %lld, \"pid\": %d, \"tid\": %d, \"ts\": ", ph,
                   (long long)id, pid, tid);
    syn_buf_us(b, t - e->cfg->base_ns);
    syn_buf_printf(b, ", \"cat\": \"ac2g\", \"name\": \"ac2g\"%s}", ph == 'f' ? ", \"bp\": \"e\"" : "");
}

/* One GPU op and what it needs beyond the common args. */
struct gpu_op {
    enum op_kind kind;
    const char *name;
    int stream;
    int64_t t, dur;
    int64_t bytes;
    const char *coll_args;  /* collective args (already JSON), or NULL */
};

static const char *const launch_api[] = {"cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync"};
static const int launch_cbid[] = {211, 41, 51};
static const char *const gpu_cat[] = {"kernel", "gpu_memcpy", "gpu_memset"};

/* The launch call [tl, tl + ld) on the CPU, the GPU op it starts, and the
 * flow joining them; all share one new correlation id. */
static void launch(struct syn_emit *e, int64_t ext, int64_t tl, int64_t ld, const struct gpu_op *g)
{
    int pid = syn_cpu_pid(e->cfg), dev = e->cfg->local_rank;
    int64_t corr = e->next_corr++;
    struct syn_buf *b = x_open(e, "cuda_runtime", launch_api[g->kind], pid, pid, tl, ld);

    syn_buf_printf(b, "\"External id\": %lld, \"cbid\": %d, \"correlation\": %lld", (long long)ext,
                   launch_cbid[g->kind], (long long)corr);
    x_close(b);
    flow(e, 's', corr, pid, pid, tl);
    b = x_open(e, gpu_cat[g->kind], g->name, dev, g->stream, g->t, g->dur);
    syn_buf_printf(b, "\"External id\": %lld, \"queued\": 0, \"device\": %d, \"context\": 1, "
                   "\"stream\": %d, \"correlation\": %lld", (long long)ext, dev, g->stream, (long long)corr);
    if (g->kind == OP_KERNEL)
        syn_buf_printf(b, ", \"registers per thread\": %d, \"shared memory\": %d, \"grid\": [%d, 1, 1], "
                       "\"block\": [%d, 1, 1]", g->coll_args ? 96 : 128, g->coll_args ? 87568 : 0,
                       g->coll_args ? 16 : 528, g->coll_args ? 640 : 256);
    else
        syn_buf_printf(b, ", \"bytes\": %lld", (long long)g->bytes);
    if (g->coll_args)
        syn_buf_printf(b, ", %s", g->coll_args);
    x_close(b);
    flow(e, 'f', corr, dev, g->stream, g->t);
}

/* Lets the phase's last GPU op end tail ns after the phase. */
static void stretch_last(const struct phase *ph, int i, int n, struct gpu_op *g)
{
    int64_t end = ph->t + ph->dur + ph->tail;

    if (i == n - 1 && ph->tail > 0 && g->t + g->dur < end)
        g->dur = end - g->t;
}

/* Operator i of a phase: cpu ranges, then one or two launches whose GPU ops
 * run in the rest of the slot (55-80% of it busy, so the stream idles
 * between operators while the CPU catches up). */
static void emit_op(struct syn_emit *e, const struct phase *ph, int i, int n, const struct op *o)
{
    uint64_t rnd = syn_rand(e->cfg->rank, ph->step, ph->id, i + 1);
    int64_t slot = ph->dur / n, t = ph->t + (int64_t)i * slot + MIN(US, slot / 100);
    int64_t cpu_d = MIN(slot * 3 / 10, 60 * US + (int64_t)(rnd % (40 * US))), ext, t_in = t, d_in = cpu_d;
    int64_t ld, tl, kd = slot * (55 + (int64_t)((rnd >> 20) % 25)) / 100, k1d = o->k2 ? kd * 6 / 10 : kd;
    struct gpu_op g = {o->kind, o->k1, SYN_STREAM_COMPUTE, 0, k1d, o->bytes, NULL};

    ext = cpu_range(e, "cpu_op", o->outer, t, cpu_d);
    if (o->inner) {
        t_in = t + cpu_d / 10;
        d_in = cpu_d * 8 / 10;
        ext = cpu_range(e, "cpu_op", o->inner, t_in, d_in);
    }
    tl = t_in + d_in / 4;
    ld = MIN(d_in / 4, 7 * US);
    g.t = tl + MIN(5 * US, slot / 20);
    if (!o->k2) {
        stretch_last(ph, i, n, &g);
        launch(e, ext, tl, ld, &g);
        return;
    }
    launch(e, ext, tl, ld, &g);
    g.name = o->k2;
    g.t += k1d + MIN(2 * US, slot / 100);   /* queued behind the first */
    g.dur = kd - k1d - MIN(2 * US, slot / 100);
    stretch_last(ph, i, n, &g);
    launch(e, ext, tl + ld + ld / 2, ld, &g);
}

static void emit_ops(struct syn_emit *e, const struct phase *ph, const struct op *ops, int n)
{
    for (int i = 0; i < n; i++)
        emit_op(e, ph, i, n, &ops[i]);
}

/* The args every allreduce's record_param_comms and kernel carry. */
static void coll_args(struct syn_emit *e, struct syn_buf *b, int k, int bucket)
{
    long long n = (long long)bucket_nelems[bucket];
    struct syn_group g;

    syn_group_of(e->cfg, e->cfg->rank, bucket, &g);
    syn_buf_printf(b, "\"Collective name\": \"allreduce\", \"In msg nelems\": %lld, \"Out msg nelems\": %lld, "
                   "\"Group size\": %d, \"dtype\": \"Float\", \"In split size\": \"[]\", \"Out split size\": \"[]\", "
                   "\"Global rank start\": %d, \"Global rank stride\": %d, \"Process Group Name\": \"%d\", "
                   "\"Process Group Description\": \"%s\", \"Process Group Ranks\": ",
                   n, n, g.size, g.start, g.stride, g.pg, g.desc);
    if (e->cfg->tp < 2) {
        syn_buf_json_str(b, e->pg_ranks);
    } else {   /* as text, like torch's */
        struct syn_buf r = {0};
        syn_buf_printf(&r, "[");
        for (int i = 0; i < g.size; i++)
            syn_buf_printf(&r, "%s%d", i ? ", " : "", g.start + i * g.stride);
        syn_buf_printf(&r, "]");
        syn_buf_json_str(b, r.p ? r.p : "[]");
        b->oom |= r.oom;
        syn_buf_free(&r);
    }
    /* One call a step on a group of its own: sequence k + 1 there. */
    syn_buf_printf(b, ", \"Seq\": %d", e->cfg->tp < 2 ? k * SYN_NCOLL + bucket + 1 : k + 1);
}

/* Allreduce of gradient bucket `bucket`: issue on the CPU, the NCCL kernel
 * from the schedule's enter to its exit, and the CPU waiting for it. */
static void emit_allreduce(struct syn_emit *e, int k, int bucket, const struct syn_plan *p)
{
    int pid = syn_cpu_pid(e->cfg);
    int64_t t = p->issue[bucket], ext;
    struct syn_buf args = {0}, *b;
    struct gpu_op g = {OP_KERNEL, e->cfg->nccl_kernel ? e->cfg->nccl_kernel : NCCL_KERNEL, SYN_STREAM_COMM, p->enter[bucket],
                       p->exit[bucket] - p->enter[bucket], 0, NULL};

    coll_args(e, &args, k, bucket);
    if (args.oom) {
        e->ev.oom = true;
        return;
    }
    cpu_range(e, "user_annotation", "nccl:all_reduce", t, 30 * US);
    ext = e->next_ext++;
    b = x_open(e, "cpu_op", "record_param_comms", pid, pid, t + 2 * US, 26 * US);
    syn_buf_printf(b, "\"External id\": %lld, %s", (long long)ext, args.p);
    x_close(b);
    g.coll_args = args.p;
    launch(e, ext, t + 10 * US, 8 * US, &g);
    b = x_open(e, "cuda_runtime", "cudaStreamSynchronize", pid, pid, t + 31 * US,
               p->exit[bucket] + 5 * US - (t + 31 * US));
    syn_buf_printf(b, "\"cbid\": 131, \"correlation\": %lld", (long long)e->next_corr++);
    x_close(b);
    syn_buf_free(&args);
}

/* One [memory] instant: the batch's activations allocated at step start. */
static void emit_memory(struct syn_emit *e, int k, int64_t t)
{
    int pid = syn_cpu_pid(e->cfg);
    struct syn_buf *b = ev_begin(e);
    long long alloc = 2147483648LL + (long long)(k % 4) * 8388608LL;

    syn_buf_printf(b, "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", "
                   "\"pid\": %d, \"tid\": %d, \"ts\": ", pid, pid);
    syn_buf_us(b, t - e->cfg->base_ns);
    syn_buf_printf(b, ", \"args\": {\"Device Type\": 1, \"Device Id\": %d, \"Addr\": %lld, \"Bytes\": 8388608, "
                   "\"Total Allocated\": %lld, \"Total Reserved\": 4294967296}}",
                   e->cfg->local_rank, 139637976727552LL + (long long)(k % 4) * 8388608LL, alloc);
}

/* Data loading [start, fwd) and the optimizer step. */
static void emit_load(struct syn_emit *e, int k, const struct syn_plan *p)
{
    int64_t len = p->fwd - p->start;
    struct phase copy = {k, 10, p->start + len * 6 / 10, len * 4 / 10, 0};

    cpu_range(e, "user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
              p->start + MIN(US, len / 100), len * 55 / 100);
    emit_ops(e, &copy, &load_op, 1);
}

static void emit_optimizer(struct syn_emit *e, int k, const struct syn_plan *p)
{
    struct phase step = {k, 11, p->opt + MIN(US, p->opt_dur / 100), p->opt_dur * 7 / 10, 0};
    struct phase zero = {k, 12, p->opt + p->opt_dur * 75 / 100, p->opt_dur / 5, 0};

    cpu_range(e, "user_annotation", "optimizer_step", p->opt, p->opt_dur);
    cpu_range(e, "user_annotation", "Optimizer.step#SGD.step", step.t, step.dur);
    emit_ops(e, &step, opt_ops, NOPS(opt_ops));
    cpu_range(e, "user_annotation", "Optimizer.zero_grad#SGD.zero_grad", zero.t, zero.dur);
    emit_ops(e, &zero, &zero_op, 1);
}

void syn_emit_step(struct syn_emit *e, int k, const struct syn_plan *p)
{
    char name[32];
    int64_t tail = e->cfg->period_ns * 15 / 1000;   /* < 25 us + the shortest transfer */
    struct phase fwd = {k, 1, p->fwd, p->fwd_dur, 0};
    struct phase bwd1 = {k, 2, p->bwd1, p->bwd1_dur, tail};
    struct phase bwd2 = {k, 3, p->bwd2, p->bwd2_dur, tail};
    int64_t work_end = p->opt + p->opt_dur;

    snprintf(name, sizeof name, "ProfilerStep#%d", k);
    cpu_range(e, "user_annotation", name, p->start, p->end - p->start);
    emit_load(e, k, p);
    cpu_range(e, "user_annotation", "train_step", p->fwd - 2 * US, work_end + 4 * US - p->fwd);
    emit_memory(e, k, p->fwd);
    cpu_range(e, "user_annotation", "forward", fwd.t, fwd.dur);
    emit_ops(e, &fwd, fwd_ops, NOPS(fwd_ops));
    cpu_range(e, "user_annotation", "backward", p->bwd1, p->exit[1] + 6 * US - p->bwd1);
    emit_ops(e, &bwd1, bwd_ops, NOPS(bwd_ops));
    emit_allreduce(e, k, 0, p);
    emit_ops(e, &bwd2, bwd_ops, NOPS(bwd_ops));
    emit_allreduce(e, k, 1, p);
    emit_optimizer(e, k, p);
}

/* process_name / process_labels / process_sort_index for one pid. */
static void meta_process(struct syn_emit *e, int64_t t, int pid, const char *name, const char *label, int sort)
{
    static const char *const key[3] = {"process_name", "process_labels", "process_sort_index"};

    for (int i = 0; i < 3; i++) {
        struct syn_buf *b = ev_begin(e);
        syn_buf_printf(b, "{\"name\": \"%s\", \"ph\": \"M\", \"ts\": ", key[i]);
        syn_buf_us(b, t - e->cfg->base_ns);
        syn_buf_printf(b, ", \"pid\": %d, \"tid\": 0, \"args\": {", pid);
        if (i == 0)
            syn_buf_printf(b, "\"name\": \"%s\"}}", name);
        else if (i == 1)
            syn_buf_printf(b, "\"labels\": \"%s\"}}", label);
        else
            syn_buf_printf(b, "\"sort_index\": %d}}", sort);
    }
}

static void meta_thread(struct syn_emit *e, int64_t t, int pid, int tid, const char *name)
{
    struct syn_buf *b = ev_begin(e);

    syn_buf_printf(b, "{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": ");
    syn_buf_us(b, t - e->cfg->base_ns);
    syn_buf_printf(b, ", \"pid\": %d, \"tid\": %d, \"args\": {\"name\": ", pid, tid);
    syn_buf_json_str(b, name);
    syn_buf_printf(b, "}}");
}

void syn_emit_meta(struct syn_emit *e, int64_t t)
{
    int pid = syn_cpu_pid(e->cfg), dev = e->cfg->local_rank;
    char name[64];

    meta_process(e, t, pid, "htamerge-synth", "CPU", pid);
    snprintf(name, sizeof name, "thread %d (htamerge-synth)", pid);
    meta_thread(e, t, pid, pid, name);
    snprintf(name, sizeof name, "GPU %d", dev);
    meta_process(e, t, dev, name, "NVIDIA H200", 0x1000000 + dev);
    meta_thread(e, t, dev, SYN_STREAM_COMPUTE, "stream 7 ");
    meta_thread(e, t, dev, SYN_STREAM_COMM, "stream 20 ");
}
