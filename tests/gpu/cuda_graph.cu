// CUDA graphs of known kernels, for checking that live capture attributes
// every graph kernel (issue 19; tests/gpu/graph_proof.sh):
//   graph 1, by stream capture: graph_fwd_a and graph_fwd_b launched inside
//     the NVTX range "capture_fwd", graph_bwd inside "capture_bwd";
//   graph 2, by explicit node creation (cudaGraphAddKernelNode) inside
//     "build_explicit": one kernel, graph_explicit;
// both instantiated, then each replayed REPLAYS times (argv[1], default 10)
// inside the NVTX range "replay". The kernels are extern "C" so that their
// names in the database are exactly these. Prints what the database must
// hold as one JSON line: {"expect": {...}}.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

// Spins for about ns nanoseconds of GPU time, then touches x (so that each
// kernel has a known, visible length).
__device__ void spin_ns(long long ns)
{
    long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

extern "C" __global__ void graph_fwd_a(float *x) { spin_ns(20000); x[threadIdx.x] += 1.0f; }
extern "C" __global__ void graph_fwd_b(float *x) { spin_ns(30000); x[threadIdx.x] *= 2.0f; }
extern "C" __global__ void graph_bwd(float *x) { spin_ns(40000); x[threadIdx.x] -= 1.0f; }
extern "C" __global__ void graph_explicit(float *x) { spin_ns(10000); x[threadIdx.x] += 0.5f; }

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); return 1; } } while (0)

int main(int argc, char **argv)
{
    int replays = argc > 1 ? atoi(argv[1]) : 10;
    float *x;
    cudaStream_t s;
    cudaGraph_t captured, built;
    cudaGraphExec_t exec_captured, exec_built;
    cudaGraphNode_t node;

    if (replays < 1)
        replays = 1;
    CK(cudaMalloc(&x, 32 * sizeof(float)));
    CK(cudaMemset(x, 0, 32 * sizeof(float)));
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaDeviceSynchronize());

    // Graph 1: stream capture, two ranges.
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    nvtxRangePushA("capture_fwd");
    graph_fwd_a<<<1, 32, 0, s>>>(x);
    graph_fwd_b<<<1, 32, 0, s>>>(x);
    nvtxRangePop();
    nvtxRangePushA("capture_bwd");
    graph_bwd<<<1, 32, 0, s>>>(x);
    nvtxRangePop();
    CK(cudaStreamEndCapture(s, &captured));
    CK(cudaGraphInstantiate(&exec_captured, captured, 0));

    // Graph 2: one kernel node made explicitly.
    nvtxRangePushA("build_explicit");
    CK(cudaGraphCreate(&built, 0));
    void *args[] = {&x};
    cudaKernelNodeParams p = {};
    p.func = (void *)graph_explicit;
    p.gridDim = dim3(1);
    p.blockDim = dim3(32);
    p.kernelParams = args;
    CK(cudaGraphAddKernelNode(&node, built, NULL, 0, &p));
    nvtxRangePop();
    CK(cudaGraphInstantiate(&exec_built, built, 0));

    nvtxRangePushA("replay");
    for (int i = 0; i < replays; i++) {
        CK(cudaGraphLaunch(exec_captured, s));
        CK(cudaGraphLaunch(exec_built, s));
    }
    CK(cudaStreamSynchronize(s));
    nvtxRangePop();

    CK(cudaGraphExecDestroy(exec_captured));
    CK(cudaGraphExecDestroy(exec_built));
    CK(cudaGraphDestroy(captured));
    CK(cudaGraphDestroy(built));
    CK(cudaFree(x));
    CK(cudaStreamDestroy(s));
    printf("{\"expect\": {\"program\": \"cuda_graph\", \"replays\": %d, \"graph_launches\": %d, "
           "\"kernels\": {\"graph_fwd_a\": %d, \"graph_fwd_b\": %d, \"graph_bwd\": %d, \"graph_explicit\": %d}, "
           "\"capture_range\": {\"graph_fwd_a\": \"capture_fwd\", \"graph_fwd_b\": \"capture_fwd\", "
           "\"graph_bwd\": \"capture_bwd\", \"graph_explicit\": \"build_explicit\"}, "
           "\"launch_range\": \"replay\", \"graphs\": 2}}\n",
           replays, 2 * replays, replays, replays, replays, replays);
    return 0;
}
