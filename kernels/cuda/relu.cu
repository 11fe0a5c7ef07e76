// ReLU kernels: kernels/elementwise_math.h's Relu through launch_map (kernels/cuda/elementwise.cuh), bitwise
// equal to kernels/cpu/relu.cpp.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/relu.h"
#include "kernels/elementwise_math.h"

namespace engine::cuda {
using elementwise::Relu;

void relu_forward(cudaStream_t stream, const float* x, float* y, std::int64_t n) {
  ENGINE_NVTX_RANGE("relu_forward");
  detail::launch_map("relu_forward", stream, Relu{}, x, y, n);
}

void relu_backward(cudaStream_t stream, const float* x, const float* dy, float* dx, std::int64_t n) {
  ENGINE_NVTX_RANGE("relu_backward");
  detail::launch_map("relu_backward", stream, Relu{}, x, dy, dx, n);
}

void relu_forward(cudaStream_t stream, const bfloat16* x, bfloat16* y, std::int64_t n) {
  ENGINE_NVTX_RANGE("relu_forward_bf16");
  detail::launch_map("relu_forward", stream, Relu{}, detail::device_ptr(x), detail::device_ptr(y), n);
}

void relu_backward(cudaStream_t stream, const bfloat16* x, const bfloat16* dy, bfloat16* dx, std::int64_t n) {
  ENGINE_NVTX_RANGE("relu_backward_bf16");
  detail::launch_map("relu_backward", stream, Relu{}, detail::device_ptr(x), detail::device_ptr(dy),
                     detail::device_ptr(dx), n);
}

}  // namespace engine::cuda
