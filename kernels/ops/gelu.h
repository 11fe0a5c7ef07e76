#pragma once
// GELU, one entry point per direction (kernels/ops/dispatch.h picks the kernel). dx may alias dy.

#include "core/execution_context.h"
#include "core/tensor.h"

namespace engine::ops {

void gelu_forward(const ExecutionContext& ctx, const Tensor& x, const Tensor& y);
void gelu_backward(const ExecutionContext& ctx, const Tensor& x, const Tensor& dy, const Tensor& dx);

}  // namespace engine::ops
