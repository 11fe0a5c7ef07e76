// float32 <-> bfloat16 cast kernels. The rounding rule is core/dtype.h's to_bfloat16, compiled here for the
// device, and the widening multiplication is __fmul_rn, so neither can differ from the host's. 128-bit
// float accesses (64-bit for the 4 bfloat16) where the pointers allow (kernels/cuda/vector4.cuh).
#include "kernels/cuda/cast.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/vector4.cuh"

namespace engine::cuda {
namespace {

__device__ __forceinline__ float widen_scaled(bfloat16 b, float scale) {
  return __fmul_rn(from_bfloat16(b), scale);
}

template <bool kVector>
__global__ void cast_f32_to_bf16_kernel(const float* src, bfloat16* dst, std::int64_t n) {
  std::int64_t scalar_from = 0;
  if constexpr (kVector) {
    scalar_from = n / 4 * 4;
    for (const std::int64_t g : detail::grid_stride(n / 4)) {
      const detail::Float4 v = detail::load4(src, g);
      detail::Bf16x4 out;
#pragma unroll
      for (int k = 0; k < 4; ++k) out.v[k] = to_bfloat16(v.v[k]);
      detail::store4(dst, g, out);
    }
  }
  for (const std::int64_t i : detail::grid_stride(scalar_from, n)) dst[i] = to_bfloat16(src[i]);
}

template <bool kVector>
__global__ void cast_bf16_to_f32_scaled_kernel(const bfloat16* src, float* dst, std::int64_t n, float scale) {
  std::int64_t scalar_from = 0;
  if constexpr (kVector) {
    scalar_from = n / 4 * 4;
    for (const std::int64_t g : detail::grid_stride(n / 4)) {
      const detail::Bf16x4 v = detail::load4(src, g);
      detail::Float4 out;
#pragma unroll
      for (int k = 0; k < 4; ++k) out.v[k] = widen_scaled(v.v[k], scale);
      detail::store4(dst, g, out);
    }
  }
  for (const std::int64_t i : detail::grid_stride(scalar_from, n)) dst[i] = widen_scaled(src[i], scale);
}

// A float map (kernels/cuda/elementwise.cuh, which allows src == dst): the nearest bf16 value, as a float.
struct RoundToBf16 {
  __device__ float operator()(float v) const { return from_bfloat16(to_bfloat16(v)); }
};

}  // namespace

void round_to_bf16_values(cudaStream_t stream, const float* src, float* dst, std::int64_t n) {
  ENGINE_NVTX_RANGE("round_to_bf16_values");
  detail::launch_map("round_to_bf16_values", stream, RoundToBf16{}, src, dst, n);
}

void cast_f32_to_bf16(cudaStream_t stream, const float* src, bfloat16* dst, std::int64_t n) {
  ENGINE_NVTX_RANGE("cast_f32_to_bf16");
  ENGINE_CHECK(n >= 0, "cast_f32_to_bf16: element count must be non-negative, got {}", n);
  if (n == 0) return;
  ENGINE_CHECK(src != nullptr && dst != nullptr, "cast_f32_to_bf16: null pointer");
  if (detail::vector_aligned(src, dst)) {
    cast_f32_to_bf16_kernel<true>
        <<<detail::grid_for(detail::ceil_div(n, 4)), detail::kBlock, 0, stream>>>(src, dst, n);
  } else {
    cast_f32_to_bf16_kernel<false><<<detail::grid_for(n), detail::kBlock, 0, stream>>>(src, dst, n);
  }
  ENGINE_LAUNCH_CHECK();
}

void cast_bf16_to_f32_scaled(cudaStream_t stream, const bfloat16* src, float* dst, std::int64_t n,
                             float scale) {
  ENGINE_NVTX_RANGE("cast_bf16_to_f32_scaled");
  ENGINE_CHECK(n >= 0, "cast_bf16_to_f32_scaled: element count must be non-negative, got {}", n);
  if (n == 0) return;
  ENGINE_CHECK(src != nullptr && dst != nullptr, "cast_bf16_to_f32_scaled: null pointer");
  if (detail::vector_aligned(src, dst)) {
    cast_bf16_to_f32_scaled_kernel<true>
        <<<detail::grid_for(detail::ceil_div(n, 4)), detail::kBlock, 0, stream>>>(src, dst, n, scale);
  } else {
    cast_bf16_to_f32_scaled_kernel<false>
        <<<detail::grid_for(n), detail::kBlock, 0, stream>>>(src, dst, n, scale);
  }
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::cuda
