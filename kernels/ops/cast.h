#pragma once
// float32 <-> bfloat16 casts of whole tensors (the Reducer's gradient compression); the same bits on every
// device. The float32 side selects the path; float64 is refused.

#include "core/execution_context.h"
#include "core/tensor.h"

namespace engine::ops {

// dst (BF16) = bf16(src (F32)), nearest even.
void cast_to_bf16(const ExecutionContext& ctx, const Tensor& src, const Tensor& dst);
// dst (F32) = float(src (BF16)) * scale.
void cast_from_bf16_scaled(const ExecutionContext& ctx, const Tensor& src, const Tensor& dst, float scale);

// dst (F32) = the nearest bf16 value of each src (F32) element, kept in float32; src may be dst.
void round_to_bf16_values(const ExecutionContext& ctx, const Tensor& src, const Tensor& dst);

}  // namespace engine::ops
