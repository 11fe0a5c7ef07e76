#pragma once
// One SGD step over flat buffers (torch.optim.SGD's semantics, kernels/cpu/sgd.h). momentum may be undefined
// (momentum 0); first_step sets the buffer to the gradient, as PyTorch.

#include "core/execution_context.h"
#include "core/tensor.h"
#include "kernels/cpu/sgd.h"

namespace engine::ops {

void sgd_step(const ExecutionContext& ctx, const cpu::SgdOptions& options, const Tensor& params,
              const Tensor& grads, const Tensor& momentum, bool first_step);

}  // namespace engine::ops
