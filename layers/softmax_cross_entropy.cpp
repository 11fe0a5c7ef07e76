#include "layers/softmax_cross_entropy.h"

#include <cmath>

#include "core/error.h"
#include "kernels/ops/softmax_cross_entropy.h"

namespace engine::layers {

namespace {

constexpr const char* kWho = "SoftmaxCrossEntropy";

}  // namespace

SoftmaxCrossEntropy::SoftmaxCrossEntropy(double label_smoothing) : label_smoothing_(label_smoothing) {
  ENGINE_CHECK(label_smoothing >= 0.0 && label_smoothing < 1.0,
               "{}: label_smoothing must be in [0, 1), got {}", kWho, label_smoothing);
}

Tensor SoftmaxCrossEntropy::forward(const ExecutionContext& context, const Tensor& logits,
                                    const Tensor& labels, const LossAccumulators& accumulators) {
  Tensor loss = run(context, logits, labels, accumulators, /*with_gradient=*/true);
  context_ = context;
  logits_ = logits;
  labels_ = labels;
  return loss;
}

Tensor SoftmaxCrossEntropy::evaluate(const ExecutionContext& context, const Tensor& logits,
                                     const Tensor& labels, const LossAccumulators& accumulators) {
  Tensor loss = run(context, logits, labels, accumulators, /*with_gradient=*/false);
  context_.reset();
  logits_ = labels_ = Tensor();
  return loss;
}

Tensor SoftmaxCrossEntropy::run(const ExecutionContext& context, const Tensor& logits, const Tensor& labels,
                                const LossAccumulators& accumulators, bool with_gradient) {
  ENGINE_CHECK(logits.defined() && logits.ndim() == 2 && logits.dim(0) > 0 && logits.dim(1) > 0,
               "{}: expects logits [N, K], got {}", kWho, logits.str());
  ENGINE_CHECK(labels.defined() && labels.ndim() == 1 && labels.dim(0) == logits.dim(0) &&
                   labels.dtype() == DType::I32,
               "{}: expects int32 labels [{}] for logits {}, got {}", kWho, logits.dim(0), logits.str(),
               labels.str());
  ENGINE_CHECK(logits.device() == context.device && labels.device() == context.device,
               "{}: logits {} and labels {} must be on the context's device {}", kWho, logits.str(),
               labels.str(), context.device.str());
  // The loss is the context's float type whatever the logits' storage (bf16 logits: an fp32 loss, as
  // autocast).
  Tensor loss = Tensor::empty({1}, context.dtype, context.device, context.stream);
  // Training: the gradient (for dloss = 1) comes from the same pass and is kept for backward.
  dlogits_ = with_gradient ? Tensor::empty(logits.shape(), logits.dtype(), context.device, context.stream)
                           : Tensor();
  ops::softmax_cross_entropy_forward(context, logits, labels, label_smoothing_, loss, dlogits_,
                                     accumulators.loss_sum, accumulators.correct, accumulators.step_losses,
                                     accumulators.loss_slot, accumulators.slots);
  return loss;
}

Tensor SoftmaxCrossEntropy::backward(double dloss) {
  ENGINE_CHECK(context_.has_value() && logits_.defined(),
               "{}: backward needs a forward first (evaluate keeps nothing)", kWho);
  const ExecutionContext& context = *context_;
  if (dlogits_.defined() && dloss == 1.0) return dlogits_;
  Tensor dlogits = Tensor::empty(logits_.shape(), logits_.dtype(), context.device, context.stream);
  ops::softmax_cross_entropy_backward(context, logits_, labels_, label_smoothing_, dloss, dlogits);
  return dlogits;
}

}  // namespace engine::layers
