#pragma once
// Softmax along the last axis of a 2-d [rows, k] tensor (a classifier's [N, classes]), one entry point per
// direction (kernels/ops/dispatch.h picks the kernel; BF16 storage runs the float kernel on widened copies).
// Backward takes the forward output y; dx may alias dy.

#include "core/execution_context.h"
#include "core/tensor.h"

namespace engine::ops {

void softmax_forward(const ExecutionContext& ctx, const Tensor& x, const Tensor& y);
void softmax_backward(const ExecutionContext& ctx, const Tensor& y, const Tensor& dy, const Tensor& dx);

}  // namespace engine::ops
