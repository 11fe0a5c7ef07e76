#pragma once
// ReLU, one entry point per direction (kernels/ops/dispatch.h picks the kernel). dx may alias dy.

#include "core/execution_context.h"
#include "core/tensor.h"

namespace engine::ops {

void relu_forward(const ExecutionContext& ctx, const Tensor& x, const Tensor& y);
void relu_backward(const ExecutionContext& ctx, const Tensor& x, const Tensor& dy, const Tensor& dx);

}  // namespace engine::ops
