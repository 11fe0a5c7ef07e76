#include "kernels/ops/softmax_cross_entropy.h"

#include "core/error.h"
#include "kernels/cpu/softmax_cross_entropy.h"
#include "kernels/cuda/softmax_cross_entropy.h"
#include "kernels/ops/bf16_storage.h"
#include "kernels/ops/dispatch.h"

namespace engine::ops {

void softmax_cross_entropy_forward(const ExecutionContext& ctx, const Tensor& logits, const Tensor& labels,
                                   double label_smoothing, const Tensor& loss, const Tensor& dlogits,
                                   double* loss_sum, std::int64_t* correct, float* step_losses,
                                   const std::int64_t* loss_slot, std::int64_t slots) {
  ENGINE_CHECK(step_losses == nullptr || ctx.device.is_cuda(),
               "softmax_cross_entropy: a device loss slot needs a CUDA device, not {}", ctx.device.str());
  if (bf16::on_float32(ctx, {logits}, {dlogits}, [&](const Tensor* in, const Tensor* out) {
        softmax_cross_entropy_forward(ctx, in[0], labels, label_smoothing, loss, out[0], loss_sum, correct,
                                      step_losses, loss_slot, slots);
      })) {
    return;
  }
  const int n = to_int(logits.dim(0)), k = to_int(logits.dim(1));
  const std::int32_t* y = labels.data<std::int32_t>();
  dispatch("softmax_cross_entropy", ctx, logits, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      // One fused pass: the loss, the metrics and the gradient, nothing copied to the host.
      cuda::softmax_cross_entropy(cuda_stream(ctx), logits.data<T>(), y, n, k, label_smoothing,
                                  loss.data<T>(), data_or_null<T>(dlogits), loss_sum, correct, 1.0,
                                  step_losses, loss_slot, slots);
    } else {
      const double value = cpu::softmax_cross_entropy_forward<T>(logits.data<T>(), y, n, k, label_smoothing);
      loss.data<T>()[0] = static_cast<T>(value);
      if (loss_sum != nullptr) *loss_sum += value * n;
      if (correct != nullptr) *correct += cpu::count_correct<T>(logits.data<T>(), y, n, k);
      if (dlogits.defined()) {
        cpu::softmax_cross_entropy_backward<T>(logits.data<T>(), y, n, k, label_smoothing, dlogits.data<T>(),
                                               1.0);
      }
    }
  });
}

void softmax_cross_entropy_backward(const ExecutionContext& ctx, const Tensor& logits, const Tensor& labels,
                                    double label_smoothing, double dloss, const Tensor& dlogits) {
  if (bf16::on_float32(ctx, {logits}, {dlogits}, [&](const Tensor* in, const Tensor* out) {
        softmax_cross_entropy_backward(ctx, in[0], labels, label_smoothing, dloss, out[0]);
      })) {
    return;
  }
  const int n = to_int(logits.dim(0)), k = to_int(logits.dim(1));
  const std::int32_t* y = labels.data<std::int32_t>();
  dispatch("softmax_cross_entropy", ctx, logits, [&]<Path P, typename T>() {
    if constexpr (P == Path::Cuda) {
      cuda::softmax_cross_entropy(cuda_stream(ctx), logits.data<T>(), y, n, k, label_smoothing, nullptr,
                                  dlogits.data<T>(), nullptr, nullptr, dloss);
    } else {
      cpu::softmax_cross_entropy_backward<T>(logits.data<T>(), y, n, k, label_smoothing, dlogits.data<T>(),
                                             dloss);
    }
  });
}

}  // namespace engine::ops
