#include "layers/relu.h"

#include "kernels/ops/relu.h"

namespace engine::layers {

Tensor ReLU::forward_impl(const Tensor& x, Mode mode) {
  Tensor y = new_tensor(x.shape());
  ops::relu_forward(context(), x, y);
  x_ = keeps_for_backward(mode) ? x : Tensor();
  return y;
}

Tensor ReLU::backward_impl(const Tensor& dy, Mode) {
  Tensor dx;
  if (needs_input_grad()) {
    dx = new_tensor(dy.shape());
    ops::relu_backward(context(), x_, dy, dx);
  }
  x_ = Tensor();
  return dx;
}

}  // namespace engine::layers
