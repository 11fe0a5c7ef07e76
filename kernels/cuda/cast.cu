// float32 <-> bfloat16 cast kernels. The rounding rule is core/dtype.h's to_bfloat16, compiled here for the
// device, and the widening multiplication is __fmul_rn, so neither can differ from the host's.
#include "kernels/cuda/cast.h"
#include "kernels/cuda/common.cuh"

namespace engine::cuda {
namespace {

__global__ void cast_f32_to_bf16_kernel(const float* src, bfloat16* dst, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = to_bfloat16(src[i]);
  }
}

__global__ void cast_bf16_to_f32_scaled_kernel(const bfloat16* src, float* dst, std::int64_t n, float scale) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = __fmul_rn(from_bfloat16(src[i]), scale);
  }
}

}  // namespace

void cast_f32_to_bf16(cudaStream_t stream, const float* src, bfloat16* dst, std::int64_t n) {
  ENGINE_CHECK(n >= 0, "cast_f32_to_bf16: element count must be non-negative, got {}", n);
  if (n == 0) return;
  ENGINE_CHECK(src != nullptr && dst != nullptr, "cast_f32_to_bf16: null pointer");
  cast_f32_to_bf16_kernel<<<detail::grid_for(n), detail::kBlock, 0, stream>>>(src, dst, n);
  ENGINE_LAUNCH_CHECK();
}

void cast_bf16_to_f32_scaled(cudaStream_t stream, const bfloat16* src, float* dst, std::int64_t n,
                             float scale) {
  ENGINE_CHECK(n >= 0, "cast_bf16_to_f32_scaled: element count must be non-negative, got {}", n);
  if (n == 0) return;
  ENGINE_CHECK(src != nullptr && dst != nullptr, "cast_bf16_to_f32_scaled: null pointer");
  cast_bf16_to_f32_scaled_kernel<<<detail::grid_for(n), detail::kBlock, 0, stream>>>(src, dst, n, scale);
  ENGINE_LAUNCH_CHECK();
}

}  // namespace engine::cuda
