#pragma once
// One SGD step over flat buffers (torch.optim.SGD's semantics, kernels/cpu/sgd.h). momentum may be undefined
// (momentum 0); first_step sets the buffer to the gradient, as PyTorch. With parameter groups, `tiles` is
// cpu::tile_sgd_groups(...)'s output and, for CUDA tensors, `device_tiles` the same bytes in device memory
// (one launch either way); frozen tiles stay untouched. bf16_mirror (optional, bf16 autocast) is a BF16
// tensor of params' size that receives every updated parameter's bf16 rounding in the same pass.
// `device_lr` (CUDA only): read the rate from this device address instead of options.lr (a captured
// graph's step state, kernels/cuda/sgd.h).

#include <span>

#include "core/execution_context.h"
#include "core/tensor.h"
#include "kernels/cpu/sgd.h"

namespace engine::ops {

void sgd_step(const ExecutionContext& ctx, const cpu::SgdOptions& options, const Tensor& params,
              const Tensor& grads, const Tensor& momentum, bool first_step,
              std::span<const cpu::SgdGroup> tiles = {}, const Tensor& device_tiles = Tensor(),
              const Tensor& bf16_mirror = Tensor(), const double* device_lr = nullptr);

}  // namespace engine::ops
