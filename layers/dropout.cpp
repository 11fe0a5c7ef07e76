#include "layers/dropout.h"

#include "kernels/ops/dropout.h"

namespace engine::layers {

Dropout::Dropout(double p) : p_(static_cast<float>(p)) {
  LAYER_CHECK(p >= 0.0 && p <= 1.0, "p must be in [0, 1], got {}", p);
}

Tensor Dropout::forward_impl(const Tensor& x, Mode mode) {
  if (mode != Mode::Train) return x;
  ExecutionContext& ctx = context();
  seed_ = ctx.dropout_seed;
  offset_ = ctx.dropout_offset++;
  offset_base_ = ctx.dropout_offset_device;
  kernel_offset_ = offset_base_ != nullptr ? offset_ - ctx.dropout_step_base : offset_;
  Tensor y = new_tensor(x.shape(), x.dtype());
  ops::dropout_forward(ctx, static_cast<double>(p_), seed_, kernel_offset_, x, y, offset_base_);
  return y;
}

Tensor Dropout::backward_impl(const Tensor& dy, Mode mode) {
  if (!needs_input_grad()) return Tensor();
  if (mode != Mode::Train) return dy;
  Tensor dx = new_input_grad();
  ops::dropout_backward(context(), static_cast<double>(p_), seed_, kernel_offset_, dy, dx, offset_base_);
  return dx;
}

}  // namespace engine::layers
