// GELU kernels: elementwise, grid-stride; 128-bit loads and stores where the pointers allow
// (kernels/cuda/vector4.cuh), else one element at a time. The same float formulas as kernels/cpu_fast/gelu.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/gelu.h"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/vector4.cuh"

namespace engine::cuda {
namespace {

constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

__device__ __forceinline__ float gelu_value(float v) { return 0.5f * v * erfcf(-v * kInvSqrt2); }

__device__ __forceinline__ float gelu_grad(float x, float dy) {
  return dy * (0.5f * erfcf(-x * kInvSqrt2) + x * kInvSqrt2Pi * expf(-0.5f * x * x));
}

template <bool kVector>
__global__ void gelu_forward_kernel(const float* x, float* y, std::int64_t n) {
  std::int64_t scalar_from = 0;
  if constexpr (kVector) {
    scalar_from = n / 4 * 4;
    for (const std::int64_t g : detail::grid_stride(n / 4)) {
      detail::Float4 v = detail::load4(x, g);
#pragma unroll
      for (float& e : v.v) e = gelu_value(e);
      detail::store4(y, g, v);
    }
  }
  for (const std::int64_t i : detail::grid_stride(scalar_from, n)) y[i] = gelu_value(x[i]);
}

template <bool kVector>
__global__ void gelu_backward_kernel(const float* x, const float* dy, float* dx, std::int64_t n) {
  std::int64_t scalar_from = 0;
  if constexpr (kVector) {
    scalar_from = n / 4 * 4;
    for (const std::int64_t g : detail::grid_stride(n / 4)) {
      const detail::Float4 xv = detail::load4(x, g);
      detail::Float4 d = detail::load4(dy, g);
#pragma unroll
      for (int k = 0; k < 4; ++k) d.v[k] = gelu_grad(xv.v[k], d.v[k]);
      detail::store4(dx, g, d);
    }
  }
  for (const std::int64_t i : detail::grid_stride(scalar_from, n)) dx[i] = gelu_grad(x[i], dy[i]);
}

}  // namespace

void gelu_forward(cudaStream_t stream, const float* x, float* y, std::int64_t n) {
  ENGINE_NVTX_RANGE("gelu_forward");
  ENGINE_CHECK(n >= 0, "gelu_forward: element count must be non-negative, got {}", n);
  if (n == 0) return;
  ENGINE_CHECK(x != nullptr && y != nullptr, "gelu_forward: null pointer");
  if (detail::vector_aligned(x, y)) {
    gelu_forward_kernel<true>
        <<<detail::grid_for(detail::ceil_div(n, 4)), detail::kBlock, 0, stream>>>(x, y, n);
  } else {
    gelu_forward_kernel<false><<<detail::grid_for(n), detail::kBlock, 0, stream>>>(x, y, n);
  }
  ENGINE_LAUNCH_CHECK();
}

void gelu_backward(cudaStream_t stream, const float* x, const float* dy, float* dx, std::int64_t n) {
  ENGINE_NVTX_RANGE("gelu_backward");
  ENGINE_CHECK(n >= 0, "gelu_backward: element count must be non-negative, got {}", n);
  if (n == 0) return;
  ENGINE_CHECK(x != nullptr && dy != nullptr && dx != nullptr, "gelu_backward: null pointer");
  if (detail::vector_aligned(x, dy, dx)) {
    gelu_backward_kernel<true>
        <<<detail::grid_for(detail::ceil_div(n, 4)), detail::kBlock, 0, stream>>>(x, dy, dx, n);
  } else {
    gelu_backward_kernel<false><<<detail::grid_for(n), detail::kBlock, 0, stream>>>(x, dy, dx, n);
  }
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::cuda
