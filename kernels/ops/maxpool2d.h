#pragma once
// Max pooling; argmax (int32, the forward's) routes the gradient to the first maximum of each window.

#include "core/execution_context.h"
#include "core/tensor.h"
#include "kernels/cpu/maxpool2d.h"

namespace engine::ops {

void maxpool2d_forward(const ExecutionContext& ctx, const Pool2dShape& s, const Tensor& x, const Tensor& y,
                       const Tensor& argmax);
void maxpool2d_backward(const ExecutionContext& ctx, const Pool2dShape& s, const Tensor& dy,
                        const Tensor& argmax, const Tensor& dx);

}  // namespace engine::ops
