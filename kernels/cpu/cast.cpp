#include "kernels/cpu/cast.h"

namespace engine::cpu {

void cast_f32_to_bf16(const float* src, bfloat16* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = to_bfloat16(src[i]);
}

void cast_bf16_to_f32_scaled(const bfloat16* src, float* dst, std::int64_t n, float scale) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = from_bfloat16(src[i]) * scale;
}

void round_to_bf16_values(const float* src, float* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = from_bfloat16(to_bfloat16(src[i]));
}

}  // namespace engine::cpu
