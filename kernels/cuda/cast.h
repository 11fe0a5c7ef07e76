#pragma once
// float32 <-> bfloat16 casts on the GPU, for the Reducer's bf16 gradient compression (dist/reducer.h).
// Both use the host's own conversions from core/dtype.h (to_bfloat16, from_bfloat16: one definition,
// compiled for both sides), so a CUDA cast gives exactly the bits the CPU cast gives: round to nearest even,
// NaN stays NaN, values past the largest finite bfloat16 round to infinity.

#include <cstdint>

#include "core/dtype.h"
#include "kernels/cuda_api.h"

namespace engine::cuda {

// dst[i] = to_bfloat16(src[i]). src and dst must not overlap.
void cast_f32_to_bf16(cudaStream_t stream, const float* src, bfloat16* dst, std::int64_t n);

// dst[i] = from_bfloat16(src[i]) * scale, one float multiplication rounded to nearest (as the host's; a NaN
// stays NaN, though its payload is the GPU's). src and dst must not overlap.
void cast_bf16_to_f32_scaled(cudaStream_t stream, const bfloat16* src, float* dst, std::int64_t n,
                             float scale);

// dst[i] = from_bfloat16(to_bfloat16(src[i])): the nearest bf16 value kept in float32 (bf16 autocast's
// rounding, kernels/ops/autocast_bf16.h). src == dst is allowed (each element is read once, then written).
void round_to_bf16_values(cudaStream_t stream, const float* src, float* dst, std::int64_t n);

}  // namespace engine::cuda
