#include "layers/global_avgpool.h"

#include "kernels/ops/global_avgpool.h"
#include "kernels/ops/transpose.h"

namespace engine::layers {

Shape GlobalAvgPool::output_shape_impl(const Shape& in) const {
  LAYER_CHECK(in.size() == 4, "expects an input [N, C, H, W], got {}", shape_str(in));
  LAYER_CHECK(in[0] > 0 && in[1] > 0 && in[2] > 0 && in[3] > 0, "empty input {}", shape_str(in));
  if (keep_dims_) return {in[0], in[1], 1, 1};
  return {in[0], in[1]};
}

Tensor GlobalAvgPool::forward_impl(const Tensor& x, Mode) {
  const Shape& s = x.shape();
  Tensor y = new_tensor({s[0], s[1]}, x.dtype());
  ops::global_avgpool_forward(context(), x, y);
  // [N, C] and [N, C, 1, 1] hold the same values in the same order in either layout.
  return keep_dims_ ? ops::to_layout(context(), y.view({s[0], s[1], 1, 1}),
                                     activation_layout(context().layout, s[1], 1))
                    : y;
}

Tensor GlobalAvgPool::backward_impl(const Tensor& dy, Mode) {
  if (!needs_input_grad()) return Tensor();
  Tensor dx = new_input_grad();
  ops::global_avgpool_backward(
      context(),
      keep_dims_ ? ops::to_layout(context(), dy, Layout::NCHW).view({dy.shape()[0], dy.shape()[1]}) : dy, dx);
  return dx;
}

}  // namespace engine::layers
