#pragma once
// Windowed average pooling (kernels/cpu/avgpool2d.h has the rules); every path, both layouts (CUDA runs
// NHWC natively, the CPU paths through the NCHW fallback), bf16 on CUDA.

#include "core/execution_context.h"
#include "core/tensor.h"
#include "kernels/shapes.h"

namespace engine::ops {

void avgpool2d_forward(const ExecutionContext& ctx, const AvgPool2dShape& s, const Tensor& x,
                       const Tensor& y);
void avgpool2d_backward(const ExecutionContext& ctx, const AvgPool2dShape& s, const Tensor& dy,
                        const Tensor& dx);

}  // namespace engine::ops
