#include "layers/softmax.h"

#include "core/error.h"
#include "kernels/ops/softmax.h"

namespace engine::layers {

Shape Softmax::output_shape_impl(const Shape& input_shape) const {
  ENGINE_CHECK(input_shape.size() == 2 && input_shape[1] >= 1,
               "Softmax: input {} is not supported: only 2-d [N, classes] (softmax over the classes)",
               shape_str(input_shape));
  return input_shape;
}

Tensor Softmax::forward_impl(const Tensor& x, Mode mode) {
  output_shape_impl(x.shape());
  Tensor y = new_tensor(x.shape(), x.dtype());
  ops::softmax_forward(context(), x, y);
  y_ = keeps_for_backward(mode) ? y : Tensor();
  return y;
}

Tensor Softmax::backward_impl(const Tensor& dy, Mode) {
  Tensor dx;
  if (needs_input_grad()) {
    dx = new_input_grad();
    ops::softmax_backward(context(), y_, dy, dx);
  }
  y_ = Tensor();
  return dx;
}

}  // namespace engine::layers
