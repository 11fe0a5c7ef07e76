#pragma once
// Mul: multiplies by a constant, y = scale * x, dx = scale * dy (airbench94's `Mul(1/9)` after its final
// linear layer). No parameters, no buffers, nothing kept for backward. Kernels: kernels/ops/scale.h.

#include "layers/layer.h"

namespace engine::layers {

class Mul final : public Layer {
 public:
  explicit Mul(double scale);
  std::string_view kind() const override { return "Mul"; }
  double scale() const { return scale_; }

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override { return input_shape; }

 private:
  double scale_;
};

}  // namespace engine::layers
