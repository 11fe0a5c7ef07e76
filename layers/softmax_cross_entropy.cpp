#include "layers/softmax_cross_entropy.h"

#include <cmath>

#include "core/error.h"
#include "kernels/cpu/softmax_cross_entropy.h"

#if ENGINE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/softmax_cross_entropy.h"
#endif

namespace engine::layers {

namespace {

constexpr const char* kWho = "SoftmaxCrossEntropy";

template <typename Fn>
void with_cpu_scalar(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::F32: fn.template operator()<float>(); return;
    case DType::F64: fn.template operator()<double>(); return;
    default: ENGINE_FAIL("{}: the CPU device runs float32 and float64, not {}", kWho, dtype_name(dtype));
  }
}

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

Tensor SoftmaxCrossEntropy::run(
    const ExecutionContext& context, const Tensor& logits, const Tensor& labels,
    const LossAccumulators& accumulators,
    [[maybe_unused]] bool with_gradient) {  // the CPU computes dlogits in backward
  ENGINE_CHECK(logits.defined() && logits.ndim() == 2 && logits.dim(0) > 0 && logits.dim(1) > 0,
               "{}: expects logits [N, K], got {}", kWho, logits.str());
  ENGINE_CHECK(labels.defined() && labels.ndim() == 1 && labels.dim(0) == logits.dim(0) &&
                   labels.dtype() == DType::I32,
               "{}: expects int32 labels [{}] for logits {}, got {}", kWho, logits.dim(0), logits.str(),
               labels.str());
  ENGINE_CHECK(logits.device() == context.device && labels.device() == context.device,
               "{}: logits {} and labels {} must be on the context's device {}", kWho, logits.str(),
               labels.str(), context.device.str());
  const int n = static_cast<int>(logits.dim(0)), k = static_cast<int>(logits.dim(1));
  Tensor loss = Tensor::empty({1}, logits.dtype(), context.device, context.stream);
  dlogits_ = Tensor();
  if (logits.is_cuda()) {
#if ENGINE_HAVE_CUDA
    ENGINE_CHECK(logits.dtype() == DType::F32, "{}: the CUDA device runs float32, not {}", kWho,
                 dtype_name(logits.dtype()));
    // One fused pass gives the loss, the metrics and, for training, the gradient (for dloss = 1), kept for
    // backward.
    if (with_gradient)
      dlogits_ = Tensor::empty(logits.shape(), logits.dtype(), context.device, context.stream);
    cuda::softmax_cross_entropy(static_cast<cudaStream_t>(context.stream), logits.data<float>(),
                                labels.data<std::int32_t>(), n, k, label_smoothing_, loss.data<float>(),
                                with_gradient ? dlogits_.data<float>() : nullptr, accumulators.loss_sum,
                                accumulators.correct, 1.0);
#else
    ENGINE_FAIL("{}: a CUDA tensor, but this build has no CUDA device", kWho);
#endif
  } else {
    with_cpu_scalar(logits.dtype(), [&]<typename T>() {
      const double value = cpu::softmax_cross_entropy_forward<T>(
          logits.data<T>(), labels.data<std::int32_t>(), n, k, label_smoothing_);
      loss.data<T>()[0] = static_cast<T>(value);
      if (accumulators.loss_sum != nullptr) *accumulators.loss_sum += value * n;
      if (accumulators.correct != nullptr) {
        *accumulators.correct += cpu::count_correct<T>(logits.data<T>(), labels.data<std::int32_t>(), n, k);
      }
    });
  }
  return loss;
}

Tensor SoftmaxCrossEntropy::backward(double dloss) {
  ENGINE_CHECK(context_.has_value() && logits_.defined(),
               "{}: backward needs a forward first (evaluate keeps nothing)", kWho);
  const ExecutionContext& context = *context_;
  const int n = static_cast<int>(logits_.dim(0)), k = static_cast<int>(logits_.dim(1));
  if (dlogits_.defined() && dloss == 1.0) return dlogits_;
  Tensor dlogits = Tensor::empty(logits_.shape(), logits_.dtype(), context.device, context.stream);
  if (logits_.is_cuda()) {
#if ENGINE_HAVE_CUDA
    cuda::softmax_cross_entropy(static_cast<cudaStream_t>(context.stream), logits_.data<float>(),
                                labels_.data<std::int32_t>(), n, k, label_smoothing_, nullptr,
                                dlogits.data<float>(), nullptr, nullptr, dloss);
#else
    ENGINE_FAIL("{}: a CUDA tensor, but this build has no CUDA device", kWho);
#endif
  } else {
    with_cpu_scalar(logits_.dtype(), [&]<typename T>() {
      cpu::softmax_cross_entropy_backward<T>(logits_.data<T>(), labels_.data<std::int32_t>(), n, k,
                                             label_smoothing_, dlogits.data<T>(), dloss);
    });
  }
  return dlogits;
}

}  // namespace engine::layers
