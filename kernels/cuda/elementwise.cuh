#pragma once
// The elementwise launchers of float kernels that map one or two inputs to one output (relu, gelu and their
// gradients, residual_add): out[i] = f(a[i]) or f(a[i], b[i]), over float32 or bf16 storage (f computes in
// float either way; a bf16 result is rounded once, at the store). One grid-stride kernel per arity, 128-bit
// accesses (vector4.cuh) where every pointer is 16-byte aligned, else and for the tail one element at a
// time; the arithmetic is f's on each element either way, so both forms give the same bits. `f` is a
// trivially copyable functor with a __device__ operator() (a struct: no extended lambdas needed). No
// __restrict__: callers may pass out == a (in place).

#include <cstdint>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/vector4.cuh"

namespace engine::cuda::detail {

// T is the storage type (float, or __nv_bfloat16 under bf16 autocast: vector4.cuh); f computes on floats.
// A 128-bit access moves Vec16<T>::kCount elements (4 floats, 8 bf16).
template <bool kVector, typename F, typename T>
__global__ void map1_kernel(F f, const T* a, T* out, std::int64_t n) {
  constexpr int kCount = Vec16<T>::kCount;
  std::int64_t scalar_from = 0;
  if constexpr (kVector) {
    scalar_from = n / kCount * kCount;
    for (const std::int64_t g : grid_stride(n / kCount)) {
      Vec16<T> v = load16(a, g);
#pragma unroll
      for (T& e : v.v) e = from_float<T>(f(to_float(e)));
      store16(out, g, v);
    }
  }
  for (const std::int64_t i : grid_stride(scalar_from, n)) out[i] = from_float<T>(f(to_float(a[i])));
}

template <bool kVector, typename F, typename T>
__global__ void map2_kernel(F f, const T* a, const T* b, T* out, std::int64_t n) {
  constexpr int kCount = Vec16<T>::kCount;
  std::int64_t scalar_from = 0;
  if constexpr (kVector) {
    scalar_from = n / kCount * kCount;
    for (const std::int64_t g : grid_stride(n / kCount)) {
      Vec16<T> v = load16(a, g);
      const Vec16<T> w = load16(b, g);
#pragma unroll
      for (int k = 0; k < kCount; ++k) v.v[k] = from_float<T>(f(to_float(v.v[k]), to_float(w.v[k])));
      store16(out, g, v);
    }
  }
  for (const std::int64_t i : grid_stride(scalar_from, n)) {
    out[i] = from_float<T>(f(to_float(a[i]), to_float(b[i])));
  }
}

// out[i] = f(a[i]) for i in [0, n); `op` names the caller in errors. T: float or __nv_bfloat16.
template <typename F, typename T>
void launch_map(const char* op, cudaStream_t stream, F f, const T* a, T* out, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "{}: element count must be non-negative, got {}", op, n);
  if (n == 0) return;
  ENGINE_CHECK(a != nullptr && out != nullptr, "{}: null pointer", op);
  if (vector_aligned(a, out)) {
    map1_kernel<true><<<grid_for(ceil_div(n, Vec16<T>::kCount)), kBlock, 0, stream>>>(f, a, out, n);
  } else {
    map1_kernel<false><<<grid_for(n), kBlock, 0, stream>>>(f, a, out, n);
  }
  ENGINE_LAUNCH_CHECK();
}

// out[i] = f(a[i], b[i]) for i in [0, n).
template <typename F, typename T>
void launch_map(const char* op, cudaStream_t stream, F f, const T* a, const T* b, T* out, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "{}: element count must be non-negative, got {}", op, n);
  if (n == 0) return;
  ENGINE_CHECK(a != nullptr && b != nullptr && out != nullptr, "{}: null pointer", op);
  if (vector_aligned(a, b, out)) {
    map2_kernel<true><<<grid_for(ceil_div(n, Vec16<T>::kCount)), kBlock, 0, stream>>>(f, a, b, out, n);
  } else {
    map2_kernel<false><<<grid_for(n), kBlock, 0, stream>>>(f, a, b, out, n);
  }
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::cuda::detail
