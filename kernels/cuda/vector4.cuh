#pragma once
// 128-bit loads and stores for the elementwise kernels (relu, residual_add, dropout, sgd, cast): element
// group g is elements [4g, 4g + 4), read or written with one float4 (or 64-bit, for bfloat16) access. The
// launcher picks this form only where detail::vector_aligned holds for every pointer (kernels/cuda/launch.h);
// the arithmetic on each element is the scalar kernel's, lane by lane, so both forms give the same bits.

#include <cstdint>
#include <cstring>

#include <cuda_runtime.h>

#include "core/dtype.h"

namespace engine::cuda::detail {

struct Float4 {
  float v[4];
};

__device__ __forceinline__ Float4 load4(const float* p, std::int64_t g) {
  const float4 t = reinterpret_cast<const float4*>(p)[g];
  return {{t.x, t.y, t.z, t.w}};
}

__device__ __forceinline__ void store4(float* p, std::int64_t g, const Float4& a) {
  reinterpret_cast<float4*>(p)[g] = make_float4(a.v[0], a.v[1], a.v[2], a.v[3]);
}

struct Bf16x4 {
  bfloat16 v[4];
};

// 4 bfloat16 are 8 bytes: one 64-bit access (16-byte alignment of the base implies the 8 this needs).
__device__ __forceinline__ Bf16x4 load4(const bfloat16* p, std::int64_t g) {
  const uint2 t = reinterpret_cast<const uint2*>(p)[g];
  Bf16x4 a;
  static_assert(sizeof(a) == sizeof(t));
  std::memcpy(&a, &t, sizeof(t));
  return a;
}

__device__ __forceinline__ void store4(bfloat16* p, std::int64_t g, const Bf16x4& a) {
  uint2 t;
  std::memcpy(&t, &a, sizeof(t));
  reinterpret_cast<uint2*>(p)[g] = t;
}

}  // namespace engine::cuda::detail
