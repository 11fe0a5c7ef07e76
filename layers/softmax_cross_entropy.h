#pragma once
// SoftmaxCrossEntropy: the training loss, torch.nn.CrossEntropyLoss(reduction='mean', label_smoothing=eps) on
// logits. Not a Layer (it takes labels and ends the graph), but it follows the same pattern: forward keeps
// what backward needs, backward returns the gradient of its input.
//
//   loss = forward(context, logits[N, K], labels[N] int32)   the mean loss, a 1-element tensor of the logits'
//                                                            dtype ON THEIR DEVICE: a training loop can sum
//                                                            it on the GPU and read it once per log interval
//   dlogits = backward()                                     d(loss)/d(logits) = (softmax - q) / N
//
// CPU: kernels/cpu/softmax_cross_entropy.h; CUDA: kernels/cuda. Labels outside [0, K) are an engine::Error on
// the CPU (the GPU kernel cannot report them without a synchronization).

#include <cstdint>
#include <optional>

#include "core/tensor.h"
#include "layers/execution_context.h"

namespace engine::layers {

// Optional running metrics, accumulated where the logits live without any synchronization (device memory for
// CUDA logits, host memory for CPU logits): loss_sum += the sum of the row losses (not divided by N),
// correct += the rows whose argmax is the label (first maximum wins; a NaN row is never correct).
struct LossAccumulators {
  double* loss_sum = nullptr;
  std::int64_t* correct = nullptr;
  // CUDA: the batch's mean loss also goes to step_losses[*loss_slot] (device memory, `slots` entries), the
  // slot read on the device: a CUDA graph's step state (apps/train/step_state.h). Null: not written.
  float* step_losses = nullptr;
  const std::int64_t* loss_slot = nullptr;
  std::int64_t slots = 0;
};

class SoftmaxCrossEntropy {
 public:
  explicit SoftmaxCrossEntropy(double label_smoothing = 0.0);

  double label_smoothing() const { return label_smoothing_; }

  Tensor forward(const ExecutionContext& context, const Tensor& logits, const Tensor& labels,
                 const LossAccumulators& accumulators = {});
  // Evaluation: the loss and the metrics only. No gradient is computed or allocated and nothing is kept, so
  // a backward after it is an error.
  Tensor evaluate(const ExecutionContext& context, const Tensor& logits, const Tensor& labels,
                  const LossAccumulators& accumulators = {});
  // The gradient of the last forward's loss times `dloss` (1 for training; the gradient checker passes its
  // probe). Needs a forward first.
  Tensor backward(double dloss = 1.0);

 private:
  double label_smoothing_;
  Tensor run(const ExecutionContext& context, const Tensor& logits, const Tensor& labels,
             const LossAccumulators& accumulators, bool with_gradient);

  std::optional<ExecutionContext> context_;  // a copy of the last forward's (device, stream, handles)
  Tensor logits_, labels_;
  Tensor dlogits_;  // CUDA: the fused kernel's gradient for dloss = 1, made by forward
};

}  // namespace engine::layers
