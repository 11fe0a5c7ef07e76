#pragma once
// y = a + b, elementwise (the residual block's join; its backward is the same add of two gradients).

#include "core/execution_context.h"
#include "core/tensor.h"

namespace engine::ops {

void residual_add(const ExecutionContext& ctx, const Tensor& a, const Tensor& b, const Tensor& y);

}  // namespace engine::ops
