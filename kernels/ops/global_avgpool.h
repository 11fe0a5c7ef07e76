#pragma once
// Global average pooling: [N, C, H, W] -> [N, C]. Path::CpuFast runs kernels/cpu_fast/global_avgpool.h.

#include "core/execution_context.h"
#include "core/tensor.h"

namespace engine::ops {

void global_avgpool_forward(const ExecutionContext& ctx, const Tensor& x, const Tensor& y);
// dx has the forward input's shape [N, C, H, W].
void global_avgpool_backward(const ExecutionContext& ctx, const Tensor& dy, const Tensor& dx);

}  // namespace engine::ops
