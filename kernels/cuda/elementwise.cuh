#pragma once
// The elementwise launchers of float kernels that map one or two inputs to one output (relu, gelu and their
// gradients, residual_add): out[i] = f(a[i]) or f(a[i], b[i]). One grid-stride kernel per arity, 128-bit
// accesses (vector4.cuh) where every pointer is 16-byte aligned, else and for the tail one element at a
// time; the arithmetic is f's on each element either way, so both forms give the same bits. `f` is a
// trivially copyable functor with a __device__ operator() (a struct: no extended lambdas needed). No
// __restrict__: callers may pass out == a (in place).

#include <cstdint>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/vector4.cuh"

namespace engine::cuda::detail {

template <bool kVector, typename F>
__global__ void map1_kernel(F f, const float* a, float* out, std::int64_t n) {
  std::int64_t scalar_from = 0;
  if constexpr (kVector) {
    scalar_from = n / 4 * 4;
    for (const std::int64_t g : grid_stride(n / 4)) {
      Float4 v = load4(a, g);
#pragma unroll
      for (float& e : v.v) e = f(e);
      store4(out, g, v);
    }
  }
  for (const std::int64_t i : grid_stride(scalar_from, n)) out[i] = f(a[i]);
}

template <bool kVector, typename F>
__global__ void map2_kernel(F f, const float* a, const float* b, float* out, std::int64_t n) {
  std::int64_t scalar_from = 0;
  if constexpr (kVector) {
    scalar_from = n / 4 * 4;
    for (const std::int64_t g : grid_stride(n / 4)) {
      Float4 v = load4(a, g);
      const Float4 w = load4(b, g);
#pragma unroll
      for (int k = 0; k < 4; ++k) v.v[k] = f(v.v[k], w.v[k]);
      store4(out, g, v);
    }
  }
  for (const std::int64_t i : grid_stride(scalar_from, n)) out[i] = f(a[i], b[i]);
}

// out[i] = f(a[i]) for i in [0, n); `op` names the caller in errors.
template <typename F>
void launch_map(const char* op, cudaStream_t stream, F f, const float* a, float* out, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "{}: element count must be non-negative, got {}", op, n);
  if (n == 0) return;
  ENGINE_CHECK(a != nullptr && out != nullptr, "{}: null pointer", op);
  if (vector_aligned(a, out)) {
    map1_kernel<true><<<grid_for(ceil_div(n, 4)), kBlock, 0, stream>>>(f, a, out, n);
  } else {
    map1_kernel<false><<<grid_for(n), kBlock, 0, stream>>>(f, a, out, n);
  }
  ENGINE_LAUNCH_CHECK();
}

// out[i] = f(a[i], b[i]) for i in [0, n).
template <typename F>
void launch_map(const char* op, cudaStream_t stream, F f, const float* a, const float* b, float* out,
                std::int64_t n) {
  ENGINE_CHECK(n >= 0, "{}: element count must be non-negative, got {}", op, n);
  if (n == 0) return;
  ENGINE_CHECK(a != nullptr && b != nullptr && out != nullptr, "{}: null pointer", op);
  if (vector_aligned(a, b, out)) {
    map2_kernel<true><<<grid_for(ceil_div(n, 4)), kBlock, 0, stream>>>(f, a, b, out, n);
  } else {
    map2_kernel<false><<<grid_for(n), kBlock, 0, stream>>>(f, a, b, out, n);
  }
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::cuda::detail
