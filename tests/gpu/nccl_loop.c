/* A one-rank NCCL communicator driven directly (tests/gpu/run_device.sh):
 * 50 plain all-reduces, then 10 groups of all-reduce + broadcast, so the
 * profiler plugin sees both ungrouped and grouped API calls. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>

#define CK(x) do { int e_ = (int)(x); if (e_) { fprintf(stderr, "%s:%d: error %d\n", __FILE__, __LINE__, e_); return 1; } } while (0)

int main(void)
{
    const size_t n = 1 << 20;
    ncclUniqueId id;
    ncclComm_t comm;
    cudaStream_t s;
    float *a, *b;
    int plain = 50, groups = 10;

    CK(cudaSetDevice(0));
    CK(cudaMalloc((void **)&a, n * sizeof(float)));
    CK(cudaMalloc((void **)&b, n * sizeof(float)));
    CK(cudaStreamCreate(&s));
    CK(ncclGetUniqueId(&id));
    CK(ncclCommInitRank(&comm, 1, id, 0));
    for (int i = 0; i < plain; i++)
        CK(ncclAllReduce(a, b, n, ncclFloat, ncclSum, comm, s));
    for (int i = 0; i < groups; i++) {
        CK(ncclGroupStart());
        CK(ncclAllReduce(a, b, n, ncclFloat, ncclSum, comm, s));
        CK(ncclBroadcast(a, b, n, ncclFloat, 0, comm, s));
        CK(ncclGroupEnd());
    }
    CK(cudaStreamSynchronize(s));
    CK(ncclCommDestroy(comm));
    printf("EXPECT allreduce=%d broadcast=%d nranks=1\n", plain + groups, groups);
    return 0;
}
