// The CUDA programs of scripts/gpu-check.sh, one binary with a mode per run (built -g -G):
//
//   gpucheck grid   grid4x4<<<(4,4,1),(128,1,1)>>>: a breakpoint line, a __device__ function that
//                   even threads call (device frames two deep; the odd ones go the other way, so a
//                   warp diverges), then out[i]; the host checks every value and prints one line
//   gpucheck oob    oob_write<<<(2,1,1),(64,1,1)>>> writes far past its buffer: a CUDA exception
//
// Exit codes: 0 all went as expected, 1 a wrong value or a CUDA error (oob: the expected end),
// 2 no CUDA device (the dry run of scripts/gpu-check.sh stops there: nothing after needs faking).
// Lines marked MARK:name are found by name (scripts/gpucheck/programs.py); never by number.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

__device__ __noinline__ float scaled(float v, int k)
{
    float r = v * k; // MARK:device_fn
    return r;
}

__global__ void grid4x4(const float *in, float *out, int n)
{
    int block = blockIdx.y * gridDim.x + blockIdx.x;
    int i = block * blockDim.x + threadIdx.x; // MARK:kernel_bp
    float v = in[i]; // MARK:kernel_next
    if (threadIdx.x % 2 == 0) {
        v = scaled(v, 2); // MARK:kernel_call
    } else {
        v = v + 1.0f; // MARK:kernel_odd
    }
    if (i < n)
        out[i] = v; // MARK:kernel_store
}

__global__ void oob_write(int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // 64 GiB past a 512-byte buffer: an address no allocation of this program maps
    size_t far = ((size_t)1 << 36) / sizeof(int);
    out[i + far] = i + n; // MARK:oob_store
}

static int no_device(void)
{
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        printf("no CUDA device: %s\n", err != cudaSuccess ? cudaGetErrorString(err) : "none found");
        fflush(stdout);
        return 1;
    }
    return 0;
}

static int run_grid(void)
{
    const int n = 4 * 4 * 128;
    float host_in[n], host_out[n];
    for (int i = 0; i < n; i++)
        host_in[i] = 0.5f * i;
    float *in = nullptr, *out = nullptr;
    if (cudaMalloc(&in, n * sizeof(float)) != cudaSuccess || cudaMalloc(&out, n * sizeof(float)) != cudaSuccess) {
        printf("cudaMalloc failed\n");
        return 1;
    }
    cudaMemcpy(in, host_in, n * sizeof(float), cudaMemcpyHostToDevice);
    grid4x4<<<dim3(4, 4, 1), dim3(128, 1, 1)>>>(in, out, n); // MARK:launch_grid
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess) {
        printf("grid4x4: %s\n", cudaGetErrorString(err));
        return 1;
    }
    cudaMemcpy(host_out, out, n * sizeof(float), cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int i = 0; i < n; i++) {
        float want = (i % 128) % 2 == 0 ? host_in[i] * 2 : host_in[i] + 1.0f;
        if (host_out[i] != want)
            wrong++;
    }
    printf("grid4x4: %d threads, %d wrong, out[5]=%g\n", n, wrong, host_out[5]); // MARK:grid_done
    cudaFree(in);
    cudaFree(out);
    return wrong ? 1 : 0;
}

static int run_oob(void)
{
    const int n = 128;
    int *out = nullptr;
    if (cudaMalloc(&out, n * sizeof(int)) != cudaSuccess) {
        printf("cudaMalloc failed\n");
        return 1;
    }
    oob_write<<<2, 64>>>(out, n); // MARK:launch_oob
    cudaError_t err = cudaDeviceSynchronize();
    printf("oob_write: %s\n", cudaGetErrorString(err));
    return err == cudaSuccess ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "grid") != 0 && strcmp(mode, "oob") != 0) {
        fprintf(stderr, "usage: gpucheck grid|oob\n");
        return 64;
    }
    if (no_device())
        return 2;
    return strcmp(mode, "grid") == 0 ? run_grid() : run_oob();
}
