#include "layers/flatten.h"

#include "kernels/ops/transpose.h"

namespace engine::layers {

Shape Flatten::output_shape_impl(const Shape& in) const {
  LAYER_CHECK(in.size() >= 2, "expects an input [N, ...] of rank 2 or more, got {}", shape_str(in));
  std::int64_t features = 1;
  for (std::size_t i = 1; i < in.size(); ++i) features *= in[i];
  return {in[0], features};
}

Tensor Flatten::forward_impl(const Tensor& x, Mode) {
  // NHWC: the features are PyTorch's (c, h, w) order, so an NCHW copy first.
  return ops::to_layout(context(), x, Layout::NCHW).view(output_shape_impl(x.shape()));
}

Tensor Flatten::backward_impl(const Tensor& dy, Mode) {
  if (!needs_input_grad()) return Tensor();
  const Tensor dx = dy.view(last_input_shape());  // NCHW
  return dx.ndim() == 4
             ? ops::to_layout(context(), dx,
                              activation_layout(context().layout, dx.dim(1), dx.dim(2) * dx.dim(3)))
             : dx;
}

}  // namespace engine::layers
