#pragma once
// Scale by a constant, y = a * x (kernels/ops/dispatch.h picks the kernel; float32 CPU tensors run the
// reference's float instantiation). The backward of a scaling is the same call on dy.

#include "core/execution_context.h"
#include "core/tensor.h"

namespace engine::ops {

void scale(const ExecutionContext& ctx, const Tensor& x, double a, const Tensor& y);

}  // namespace engine::ops
