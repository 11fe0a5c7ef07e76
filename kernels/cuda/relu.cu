// ReLU kernels: elementwise, grid-stride, bitwise equal to kernels/cpu/relu.cpp. 128-bit loads and stores
// where the pointers allow (kernels/cuda/vector4.cuh), else one element at a time.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/relu.h"
#include "kernels/cuda/vector4.cuh"

namespace engine::cuda {
namespace {

__device__ __forceinline__ float relu_value(float v) {
  return (v > 0.0f || isnan(v)) ? v : 0.0f;  // NaN propagates, as the CPU reference
}

__device__ __forceinline__ float relu_grad(float x, float dy) {
  return x > 0.0f ? dy : 0.0f;  // 0 at the kink and for NaN
}

template <bool kVector>
__global__ void relu_forward_kernel(const float* x, float* y, std::int64_t n) {
  std::int64_t scalar_from = 0;
  if constexpr (kVector) {
    scalar_from = n / 4 * 4;
    for (const std::int64_t g : detail::grid_stride(n / 4)) {
      detail::Float4 v = detail::load4(x, g);
#pragma unroll
      for (float& e : v.v) e = relu_value(e);
      detail::store4(y, g, v);
    }
  }
  for (const std::int64_t i : detail::grid_stride(scalar_from, n)) y[i] = relu_value(x[i]);
}

template <bool kVector>
__global__ void relu_backward_kernel(const float* x, const float* dy, float* dx, std::int64_t n) {
  std::int64_t scalar_from = 0;
  if constexpr (kVector) {
    scalar_from = n / 4 * 4;
    for (const std::int64_t g : detail::grid_stride(n / 4)) {
      const detail::Float4 xv = detail::load4(x, g);
      detail::Float4 d = detail::load4(dy, g);
#pragma unroll
      for (int k = 0; k < 4; ++k) d.v[k] = relu_grad(xv.v[k], d.v[k]);
      detail::store4(dx, g, d);
    }
  }
  for (const std::int64_t i : detail::grid_stride(scalar_from, n)) dx[i] = relu_grad(x[i], dy[i]);
}

}  // namespace

void relu_forward(cudaStream_t stream, const float* x, float* y, std::int64_t n) {
  ENGINE_NVTX_RANGE("relu_forward");
  ENGINE_CHECK(n >= 0, "relu_forward: element count must be non-negative, got {}", n);
  if (n == 0) return;
  ENGINE_CHECK(x != nullptr && y != nullptr, "relu_forward: null pointer");
  if (detail::vector_aligned(x, y)) {
    relu_forward_kernel<true>
        <<<detail::grid_for(detail::ceil_div(n, 4)), detail::kBlock, 0, stream>>>(x, y, n);
  } else {
    relu_forward_kernel<false><<<detail::grid_for(n), detail::kBlock, 0, stream>>>(x, y, n);
  }
  ENGINE_LAUNCH_CHECK();
}

void relu_backward(cudaStream_t stream, const float* x, const float* dy, float* dx, std::int64_t n) {
  ENGINE_NVTX_RANGE("relu_backward");
  ENGINE_CHECK(n >= 0, "relu_backward: element count must be non-negative, got {}", n);
  if (n == 0) return;
  ENGINE_CHECK(x != nullptr && dy != nullptr && dx != nullptr, "relu_backward: null pointer");
  if (detail::vector_aligned(x, dy, dx)) {
    relu_backward_kernel<true>
        <<<detail::grid_for(detail::ceil_div(n, 4)), detail::kBlock, 0, stream>>>(x, dy, dx, n);
  } else {
    relu_backward_kernel<false><<<detail::grid_for(n), detail::kBlock, 0, stream>>>(x, dy, dx, n);
  }
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::cuda
