#pragma once
// Flatten: x[N, d1, d2, ...] -> y[N, d1*d2*...], PyTorch's nn.Flatten() (start_dim=1). NCHW tensors are
// contiguous, so forward and backward are views of the same bytes on every device: nothing is copied and no
// kernel runs (kernels/cpu/flatten.h documents the same op as a copy, for the reference's completeness).
// An NHWC input is transposed to NCHW first (and the gradient back to NHWC), so the features come in
// PyTorch's (c, h, w) order whatever the layout: the Linear that follows, its checkpoint and PyTorch agree.

#include "layers/layer.h"

namespace engine::layers {

class Flatten final : public Layer {
 public:
  Flatten() = default;
  std::string_view kind() const override { return "Flatten"; }

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override;
};

}  // namespace engine::layers
