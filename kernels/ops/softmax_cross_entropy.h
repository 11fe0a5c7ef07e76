#pragma once
// Softmax cross-entropy over logits [N, K] and int32 labels [N] (mean over the batch, label smoothing as
// PyTorch). The forward gives the loss, adds the metrics to the accumulators (device memory on CUDA, host on
// the CPU; null skips) and, when dlogits is defined, the gradient for dloss = 1. step_losses/loss_slot/slots:
// CUDA only, the loss also written at a slot read on the device (kernels/cuda/softmax_cross_entropy.h).

#include <cstdint>

#include "core/execution_context.h"
#include "core/tensor.h"

namespace engine::ops {

void softmax_cross_entropy_forward(const ExecutionContext& ctx, const Tensor& logits, const Tensor& labels,
                                   double label_smoothing, const Tensor& loss, const Tensor& dlogits,
                                   double* loss_sum, std::int64_t* correct, float* step_losses = nullptr,
                                   const std::int64_t* loss_slot = nullptr, std::int64_t slots = 0);
void softmax_cross_entropy_backward(const ExecutionContext& ctx, const Tensor& logits, const Tensor& labels,
                                    double label_smoothing, double dloss, const Tensor& dlogits);

}  // namespace engine::ops
