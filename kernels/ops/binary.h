#pragma once
// y = a op b (Add, Sub, Mul, Div) with numpy broadcasting (shapes aligned at the last axis, a size-1 axis
// stretched), and the gradients dL/da, dL/db summed over the axes each operand was stretched along. Any
// layout: a 4-d operand in the context's layout, the others (scalars, [C, 1, 1] constants) row-major; the
// kernels walk y in its memory order (kernels/broadcast.h).

#include "core/execution_context.h"
#include "core/tensor.h"
#include "kernels/broadcast.h"

namespace engine::ops {

// The broadcast shape of a and b; throws naming `who` and both shapes when they do not broadcast, or the
// rank passes kMaxBroadcastRank.
Shape broadcast_shape(const std::string& who, const Shape& a, const Shape& b);

void binary_forward(const ExecutionContext& ctx, BinaryOp op, const Tensor& a, const Tensor& b,
                    const Tensor& y);
// da, db: either may be undefined (not wanted). OVERWRITTEN.
void binary_backward(const ExecutionContext& ctx, BinaryOp op, const Tensor& dy, const Tensor& a,
                     const Tensor& b, const Tensor& da, const Tensor& db);

}  // namespace engine::ops
