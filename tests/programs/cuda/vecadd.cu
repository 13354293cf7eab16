// vecAdd for cuda-gdb: a kernel breakpoint must be accepted (pending on the device
// until the module loads). Without a GPU the runtime fails and main returns 0.
#include <cstdio>
#include <cuda_runtime.h>

__device__ int twice(int v) { return 2 * v; }

__global__ void vecAdd(const int *a, const int *b, int *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x; // MARK:kernel_first
    if (i < n) {
        int s = a[i] + b[i];
        c[i] = twice(s); // MARK:kernel_store
    }
}

int main()
{
    const int n = 128; // MARK:main_first
    int *a, *b, *c;
    cudaError_t err = cudaMallocManaged(&a, n * sizeof(int));
    printf("cudaMallocManaged -> %d\n", (int)err);
    if (err != cudaSuccess)
        return 0;
    cudaMallocManaged(&b, n * sizeof(int));
    cudaMallocManaged(&c, n * sizeof(int));
    for (int i = 0; i < n; i++) {
        a[i] = i;
        b[i] = 2 * i;
    }
    vecAdd<<<2, 64>>>(a, b, c, n); // MARK:launch
    cudaDeviceSynchronize();
    printf("c[5]=%d\n", c[5]);
    return 0;
}
