#pragma once
// float32 <-> bfloat16 casts on the host, for the Reducer's bf16 gradient compression (dist/reducer.h); the
// same rounding (core/dtype.h's to_bfloat16, nearest even) as kernels/cuda/cast.h, so both send the same
// bits.

#include <cstdint>

#include "core/dtype.h"

namespace engine::cpu {

// dst[i] = to_bfloat16(src[i]).
void cast_f32_to_bf16(const float* src, bfloat16* dst, std::int64_t n);
// dst[i] = from_bfloat16(src[i]) * scale (one float multiplication).
void cast_bf16_to_f32_scaled(const bfloat16* src, float* dst, std::int64_t n, float scale);
// dst[i] = from_bfloat16(to_bfloat16(src[i])): the nearest bf16 value, kept in float32 (bf16 autocast's
// rounding, kernels/ops/autocast_bf16.h). src == dst is allowed.
void round_to_bf16_values(const float* src, float* dst, std::int64_t n);

}  // namespace engine::cpu
