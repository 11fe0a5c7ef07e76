#include "layers/mul.h"

#include <cmath>

#include "kernels/ops/scale.h"

namespace engine::layers {

Mul::Mul(double scale) : scale_(scale) {
  ENGINE_CHECK(std::isfinite(scale), "Mul: the scale must be finite, got {}", scale);
}

Tensor Mul::forward_impl(const Tensor& x, Mode) {
  Tensor y = new_tensor(x.shape(), x.dtype());
  ops::scale(context(), x, scale_, y);
  return y;
}

Tensor Mul::backward_impl(const Tensor& dy, Mode) {
  Tensor dx;
  if (needs_input_grad()) {
    dx = new_input_grad();
    ops::scale(context(), dy, scale_, dx);
  }
  return dx;
}

}  // namespace engine::layers
