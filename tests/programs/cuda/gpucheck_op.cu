// The CUDA half of gpucheck_torch.py's custom operator (torch.utils.cpp_extension, built -g -G):
// a kernel and its launcher on raw pointers, so that this file needs no torch header (nvcc
// compiles it in seconds; scripts/gpu-check.sh --dry-run compiles it alone to catch mistakes).
#include <cuda_runtime.h>

__global__ void scale_kernel(const float *x, float *y, float k, long n)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i] * k; // MARK:op_kernel
        y[i] = v;
    }
}

// Returns the launch's error (cudaSuccess, or why it failed).
cudaError_t launch_scale(const float *x, float *y, float k, long n, cudaStream_t stream)
{
    int threads = 256;
    int blocks = (int)((n + threads - 1) / threads);
    scale_kernel<<<blocks, threads, 0, stream>>>(x, y, k, n); // MARK:op_launch
    return cudaGetLastError();
}
