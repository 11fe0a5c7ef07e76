#include "layers/gelu.h"

#include "kernels/ops/gelu.h"

namespace engine::layers {

Tensor GELU::forward_impl(const Tensor& x, Mode mode) {
  Tensor y = new_tensor(x.shape(), x.dtype());
  ops::gelu_forward(context(), x, y);
  x_ = keeps_for_backward(mode) ? x : Tensor();
  return y;
}

Tensor GELU::backward_impl(const Tensor& dy, Mode) {
  Tensor dx;
  if (needs_input_grad()) {
    dx = new_input_grad();
    ops::gelu_backward(context(), x_, dy, dx);
  }
  x_ = Tensor();
  return dx;
}

}  // namespace engine::layers
