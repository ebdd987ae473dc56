// Known GPU work for checking live capture (tests/gpu/run_device.sh): three
// kernel functions on two streams, host<->device copies, memsets and nested
// NVTX ranges, with the exact counts printed at the end as
// "EXPECT key=value ..." for the checker to compare with the database.
#include <cstdio>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

__global__ void scale(float *x, int n, float a)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= a;
}

__global__ void add(float *x, const float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] += y[i];
}

// Spins for about `ns` nanoseconds of GPU time (a kernel of known length).
__global__ void spin(long long ns)
{
    long long t0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (;;) {
        long long t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t - t0 >= ns)
            break;
    }
}

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); return 1; } } while (0)

int main()
{
    const int n = 1 << 20, steps = 20;
    float *h, *x, *y;
    cudaStream_t s[2];
    int kernels = 0, h2d = 0, d2h = 0, memsets = 0, ranges = 0, spins = 0;

    CK(cudaMallocHost(&h, n * sizeof(float)));
    for (int i = 0; i < n; i++)
        h[i] = 1.0f;
    CK(cudaMalloc(&x, n * sizeof(float)));
    CK(cudaMalloc(&y, n * sizeof(float)));
    CK(cudaStreamCreate(&s[0]));
    CK(cudaStreamCreate(&s[1]));
    nvtxRangePushA("program");
    ranges++;
    for (int step = 0; step < steps; step++) {
        nvtxRangePushA("step");
        ranges++;
        cudaStream_t st = s[step % 2];
        nvtxRangePushA("copy_in");
        ranges++;
        CK(cudaMemcpyAsync(x, h, n * sizeof(float), cudaMemcpyHostToDevice, st));
        h2d++;
        CK(cudaMemsetAsync(y, 0, n * sizeof(float), st));
        memsets++;
        nvtxRangePop();
        nvtxRangePushA("compute");
        ranges++;
        for (int k = 0; k < 5; k++) {
            scale<<<(n + 255) / 256, 256, 0, st>>>(x, n, 1.01f);
            add<<<(n + 255) / 256, 256, 0, st>>>(x, y, n);
            kernels += 2;
        }
        spin<<<1, 1, 0, st>>>(200000);   // 200 us
        kernels++;
        spins++;
        nvtxRangePop();
        nvtxMarkA("step done");
        CK(cudaMemcpyAsync(h, x, n * sizeof(float), cudaMemcpyDeviceToHost, st));
        d2h++;
        CK(cudaStreamSynchronize(st));
        nvtxRangePop();
    }
    nvtxRangePop();
    CK(cudaDeviceSynchronize());
    printf("EXPECT kernels=%d spin=%d spin_ns=200000 h2d=%d d2h=%d memset=%d nvtx_ranges=%d nvtx_marks=%d "
           "streams=2 check=%.3f\n", kernels, spins, h2d, d2h, memsets, ranges, steps, h[0]);
    return 0;
}
