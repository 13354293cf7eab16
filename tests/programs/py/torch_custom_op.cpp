// A custom PyTorch operator built with debug info by tests/programs/py/torch_custom_op.py.
#include <torch/extension.h>

at::Tensor scale_add(at::Tensor x, double k) {
    at::Tensor t = x.t();
    at::Tensor y = x * k;
    at::Tensor part = x.slice(0, 1, 3);
    return y + t.t() + 0 * part.sum();  // MARK:op_line
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("scale_add", &scale_add, "x * k + x");
}
