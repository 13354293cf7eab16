// The C++ half of gpucheck_torch.py's custom operator: y = x * k on a CUDA float tensor, through
// the kernel in gpucheck_op.cu (built with -g -O0; the .cu with -g -G).
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

cudaError_t launch_scale(const float *x, float *y, float k, long n, cudaStream_t stream);

torch::Tensor scale(torch::Tensor x, double k)
{
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "scale: a CUDA float32 tensor");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    cudaError_t err = launch_scale(xc.data_ptr<float>(), y.data_ptr<float>(), (float)k, xc.numel(),
                                   c10::cuda::getCurrentCUDAStream().stream()); // MARK:op_host
    TORCH_CHECK(err == cudaSuccess, "scale: ", cudaGetErrorString(err));
    return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
    m.def("scale", &scale, "y = x * k on the GPU (a kernel built with -g -G)");
}
