// ReLU kernels: elementwise, grid-stride, bitwise equal to kernels/cpu/relu.cpp.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/relu.h"

namespace engine::cuda {
namespace {

__global__ void relu_forward_kernel(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float v = x[i];
    y[i] = (v > 0.0f || isnan(v)) ? v : 0.0f;  // NaN propagates, as the CPU reference
  }
}

__global__ void relu_backward_kernel(const float* x, const float* dy, float* dx, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;  // 0 at the kink and for NaN
  }
}

}  // namespace

void relu_forward(cudaStream_t stream, const float* x, float* y, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "relu_forward: element count must be non-negative, got {}", n);
  if (n == 0) return;
  ENGINE_CHECK(x != nullptr && y != nullptr, "relu_forward: null pointer");
  relu_forward_kernel<<<detail::grid_for(n), detail::kBlock, 0, stream>>>(x, y, n);
  ENGINE_LAUNCH_CHECK();
}

void relu_backward(cudaStream_t stream, const float* x, const float* dy, float* dx, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "relu_backward: element count must be non-negative, got {}", n);
  if (n == 0) return;
  ENGINE_CHECK(x != nullptr && dy != nullptr && dx != nullptr, "relu_backward: null pointer");
  relu_backward_kernel<<<detail::grid_for(n), detail::kBlock, 0, stream>>>(x, dy, dx, n);
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::cuda
