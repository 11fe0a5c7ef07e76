#pragma once
// GELU: PyTorch's nn.GELU() (approximate='none'): y = x * Phi(x), the exact erf form; dx = dy * (Phi(x) +
// x * phi(x)). No state besides the input it keeps for backward. Kernels: kernels/cpu/gelu.h (the
// reference), kernels/cpu_fast/gelu.h, kernels/cuda/gelu.h.

#include "layers/layer.h"

namespace engine::layers {

class GELU final : public Layer {
 public:
  GELU() = default;
  std::string_view kind() const override { return "GELU"; }

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override { return input_shape; }

 private:
  Tensor x_;
};

}  // namespace engine::layers
