#pragma once
// 128-bit loads and stores for the elementwise kernels (relu, residual_add, dropout, sgd, cast): element
// group g is elements [4g, 4g + 4), read or written with one float4 (or 64-bit, for bfloat16) access. The
// launcher picks this form only where detail::vector_aligned holds for every pointer (kernels/cuda/launch.h);
// the arithmetic on each element is the scalar kernel's, lane by lane, so both forms give the same bits.

#include <cstdint>
#include <cstring>

#include <cuda_bf16.h>
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

// Activation storage types (bf16 autocast keeps activations in bf16, kernels/ops/autocast_bf16.h): kernels
// templated on the storage type T (float, or __nv_bfloat16 in device code; the host passes core/dtype.h's
// bfloat16, the same bits, and the launcher reinterprets it with device_ptr) load to float, compute in float
// and store through these, so one kernel serves both. The bf16 store rounds to nearest even (the bits of
// core/dtype.h's to_bfloat16 for every non-NaN value).
template <typename T>
struct DeviceType {
  using type = T;
};
template <>
struct DeviceType<bfloat16> {
  using type = __nv_bfloat16;
};
template <typename T>
using device_t = typename DeviceType<T>::type;

template <typename T>
__host__ __device__ __forceinline__ device_t<T>* device_ptr(T* p) {
  static_assert(sizeof(device_t<T>) == sizeof(T));
  return reinterpret_cast<device_t<T>*>(p);
}
template <typename T>
__host__ __device__ __forceinline__ const device_t<T>* device_ptr(const T* p) {
  static_assert(sizeof(device_t<T>) == sizeof(T));
  return reinterpret_cast<const device_t<T>*>(p);
}

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// 16 bytes of T: 4 floats or 8 bf16, one 128-bit access (group g is elements [g * kCount, (g + 1) * kCount)).
template <typename T>
struct Vec16 {
  static constexpr int kCount = static_cast<int>(16 / sizeof(T));
  T v[kCount];
};

template <typename T>
__device__ __forceinline__ Vec16<T> load16(const T* p, std::int64_t g) {
  const uint4 t = reinterpret_cast<const uint4*>(p)[g];
  Vec16<T> a;
  static_assert(sizeof(a) == sizeof(t));
  std::memcpy(&a, &t, sizeof(t));
  return a;
}

template <typename T>
__device__ __forceinline__ void store16(T* p, std::int64_t g, const Vec16<T>& a) {
  uint4 t;
  std::memcpy(&t, &a, sizeof(t));
  reinterpret_cast<uint4*>(p)[g] = t;
}

}  // namespace engine::cuda::detail
