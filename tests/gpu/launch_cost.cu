// CPU cost of one CUDA launch, the number capture overhead is made of
// (issue 6): after a warm-up, N launches of an empty kernel (and N small
// cudaMemsetAsync, N small pinned cudaMemcpyAsync) on one stream, timed with
// CLOCK_MONOTONIC around the launch loop ("launch": what the launching
// thread pays) and up to the stream's completion ("total"). Launches go in
// batches of B with a synchronize between batches (outside the launch
// timing), so the launch queue never fills and the launch time is CPU cost,
// not GPU throughput; --batch 0 launches all N in one loop. The median
// over a repetition's batches ("batch_median") leaves out the batches a
// preemption or page fault hit. --cpu K pins the launching thread (only it:
// CUDA's, CUPTI's and htamerge's threads started earlier stay free), so
// every run launches from the same core.
//
// Output, one line per op and repetition, then the medians:
//   launch_cost mode=M op=kernel rep=K n=N batch=B cpu=C launch_ns_per_call=X
//               launch_ns_batch_median=Z total_ns_per_call=Y          (one line)
//   launch_cost_median mode=M op=kernel reps=R n=N batch=B cpu=C launch_ns_per_call=X
//               launch_ns_batch_median=Z total_ns_per_call=Y          (one line)
//   EXPECT kernels=.. memsets=.. memcpys=..   (warm-up included: what a capture must hold)
// M is --label, else HTAMERGE_CUPTI_KINDS, else "none". Each op runs inside
// one NVTX range named after it (pushed and popped outside the timed loops),
// so that every capture has a CPU record. Run by tests/gpu/launch_cost.sh,
// plain and under htamerge.
#include <sched.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

__global__ void empty_kernel(void) {}

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "launch_cost: %s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

enum op { OP_KERNEL, OP_MEMSET, OP_MEMCPY, OP__COUNT };
static const char *const op_names[OP__COUNT] = {"kernel", "memset", "memcpy"};
enum { SMALL_BYTES = 64, MAX_REPS = 1000 };

struct opts {
    long n, reps, warmup, batch, cpu;   // cpu -1: not pinned
    const char *label;
    int ops[OP__COUNT];          // 1: measure this op
};

struct bufs {
    cudaStream_t stream;
    void *dev;                   // SMALL_BYTES of device memory
    void *host;                  // SMALL_BYTES of pinned host memory
};

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void launch_one(enum op op, const struct bufs *b)
{
    switch (op) {
    case OP_KERNEL: empty_kernel<<<1, 1, 0, b->stream>>>(); break;
    case OP_MEMSET: cudaMemsetAsync(b->dev, 0, SMALL_BYTES, b->stream); break;
    case OP_MEMCPY: cudaMemcpyAsync(b->dev, b->host, SMALL_BYTES, cudaMemcpyHostToDevice, b->stream); break;
    default: break;
    }
}

struct timing {
    long long launch, total;     // ns in the launch loops; ns to completion
    double batch_median;         // median ns per launch over the full batches
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, long n)
{
    if (n <= 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Launches n ops in batches; per_batch has room for n / batch + 1 values.
static struct timing measure(enum op op, const struct bufs *b, long n, long batch, double *per_batch)
{
    long step = batch > 0 ? batch : n, nb = 0;
    long long t0 = now_ns(), in_loops = 0;
    struct timing t;

    for (long done = 0; done < n; done += step) {
        long k = n - done < step ? n - done : step;
        long long l0 = now_ns();
        for (long i = 0; i < k; i++)
            launch_one(op, b);
        long long dt = now_ns() - l0;
        in_loops += dt;
        if (k == step)
            per_batch[nb++] = (double)dt / (double)k;
        if (done + k < n)
            CK(cudaStreamSynchronize(b->stream));
    }
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(b->stream));
    t.launch = in_loops;
    t.total = now_ns() - t0;
    t.batch_median = median(per_batch, nb);
    return t;
}

static void run_op(enum op op, const struct opts *o, const struct bufs *b, long *count)
{
    static double launch_ns[MAX_REPS], batch_ns[MAX_REPS], total_ns[MAX_REPS];
    long most = (o->n > o->warmup ? o->n : o->warmup) / (o->batch > 0 ? o->batch : 1) + 1;
    double *per_batch = (double *)malloc((size_t)most * sizeof *per_batch);

    if (!per_batch) {
        fprintf(stderr, "launch_cost: out of memory\n");
        exit(1);
    }
    nvtxRangePushA(op_names[op]);
    measure(op, b, o->warmup, o->batch, per_batch);
    *count += o->warmup;
    for (long r = 0; r < o->reps; r++) {
        struct timing t = measure(op, b, o->n, o->batch, per_batch);
        *count += o->n;
        launch_ns[r] = (double)t.launch / (double)o->n;
        batch_ns[r] = t.batch_median;
        total_ns[r] = (double)t.total / (double)o->n;
        printf("launch_cost mode=%s op=%s rep=%ld n=%ld batch=%ld cpu=%ld launch_ns_per_call=%.1f "
               "launch_ns_batch_median=%.1f total_ns_per_call=%.1f\n",
               o->label, op_names[op], r + 1, o->n, o->batch, o->cpu, launch_ns[r], batch_ns[r], total_ns[r]);
    }
    nvtxRangePop();
    printf("launch_cost_median mode=%s op=%s reps=%ld n=%ld batch=%ld cpu=%ld launch_ns_per_call=%.1f "
           "launch_ns_batch_median=%.1f total_ns_per_call=%.1f\n",
           o->label, op_names[op], o->reps, o->n, o->batch, o->cpu, median(launch_ns, o->reps),
           median(batch_ns, o->reps), median(total_ns, o->reps));
    fflush(stdout);
    free(per_batch);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: launch_cost [-n N] [-r REPS] [-w WARMUP] [-b BATCH] [--ops kernel,memset,memcpy] [--cpu K]\n"
            "                   [--label M]\n"
            "  -n N        launches per repetition (default 200000)\n"
            "  -r REPS     repetitions (default 5, at most %d)\n"
            "  -w WARMUP   launches before the first repetition, per op (default 2000)\n"
            "  -b BATCH    launches between two synchronizes (default 256; 0: one loop of N)\n"
            "  --ops LIST  which ops to measure (default all three)\n"
            "  --cpu K     pin the launching thread to CPU K (after CUDA started its threads)\n"
            "  --label M   the mode= text (default HTAMERGE_CUPTI_KINDS, else none)\n",
            MAX_REPS);
}

// Parses a positive count (or >= 0 when zero_ok); exits on bad input.
static long count_arg(const char *opt, const char *s, int zero_ok)
{
    char *end;
    long v = strtol(s ? s : "", &end, 10);
    if (!s || *end || end == s || v < (zero_ok ? 0 : 1)) {
        fprintf(stderr, "launch_cost: %s: '%s' is not a %s count\n", opt, s ? s : "", zero_ok ? "non-negative" : "positive");
        usage();
        exit(2);
    }
    return v;
}

static void parse_ops(const char *list, struct opts *o)
{
    memset(o->ops, 0, sizeof o->ops);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ","), i;
        for (i = 0; i < OP__COUNT; i++)
            if (strlen(op_names[i]) == len && !strncmp(p, op_names[i], len))
                break;
        if (i == OP__COUNT) {
            fprintf(stderr, "launch_cost: --ops: unknown op '%.*s' (known: kernel, memset, memcpy)\n", (int)len, p);
            exit(2);
        }
        o->ops[i] = 1;
        p += len + (p[len] == ',');
    }
}

static void parse_args(int argc, char **argv, struct opts *o)
{
    const char *kinds = getenv("HTAMERGE_CUPTI_KINDS");

    *o = (struct opts){200000, 5, 2000, 256, -1, kinds && *kinds ? kinds : "none", {1, 1, 1}};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            exit(0);
        }
        if (!v) {
            fprintf(stderr, "launch_cost: %s: missing value or unknown option\n", a);
            usage();
            exit(2);
        }
        i++;
        if (!strcmp(a, "-n")) o->n = count_arg(a, v, 0);
        else if (!strcmp(a, "-r")) o->reps = count_arg(a, v, 0);
        else if (!strcmp(a, "-w")) o->warmup = count_arg(a, v, 1);
        else if (!strcmp(a, "-b")) o->batch = count_arg(a, v, 1);
        else if (!strcmp(a, "--ops")) parse_ops(v, o);
        else if (!strcmp(a, "--cpu")) o->cpu = count_arg(a, v, 1);
        else if (!strcmp(a, "--label")) o->label = v;
        else {
            fprintf(stderr, "launch_cost: unknown option %s\n", a);
            usage();
            exit(2);
        }
    }
    if (o->reps > MAX_REPS) {
        fprintf(stderr, "launch_cost: -r: at most %d repetitions\n", MAX_REPS);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    struct opts o;
    struct bufs b;
    long count[OP__COUNT] = {0};

    parse_args(argc, argv, &o);
    CK(cudaSetDevice(0));
    CK(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
    CK(cudaMalloc(&b.dev, SMALL_BYTES));
    CK(cudaMallocHost(&b.host, SMALL_BYTES));
    if (o.cpu >= 0) {   // pid 0: this thread only
        cpu_set_t set;
        CPU_ZERO(&set);
        if (o.cpu < CPU_SETSIZE)
            CPU_SET((int)o.cpu, &set);
        if (o.cpu >= CPU_SETSIZE || sched_setaffinity(0, sizeof set, &set) != 0) {
            fprintf(stderr, "launch_cost: --cpu %ld: cannot pin to that CPU\n", o.cpu);
            return 2;
        }
    }
    memset(b.host, 1, SMALL_BYTES);
    for (int op = 0; op < OP__COUNT; op++)
        if (o.ops[op])
            run_op((enum op)op, &o, &b, &count[op]);
    printf("EXPECT kernels=%ld memsets=%ld memcpys=%ld\n", count[OP_KERNEL], count[OP_MEMSET], count[OP_MEMCPY]);
    CK(cudaFreeHost(b.host));
    CK(cudaFree(b.dev));
    CK(cudaStreamDestroy(b.stream));
    return 0;
}
