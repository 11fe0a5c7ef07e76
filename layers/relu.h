#pragma once
// ReLU: y = max(x, 0); dx = dy where x > 0, else 0 (the subgradient 0 at the kink, as PyTorch). No state
// besides the input it keeps for backward. CPU: kernels/cpu/relu.h; CUDA: kernels/cuda.

#include "layers/layer.h"

namespace engine::layers {

class ReLU final : public Layer {
 public:
  ReLU() = default;
  std::string_view kind() const override { return "ReLU"; }

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override { return input_shape; }

 private:
  Tensor x_;
};

}  // namespace engine::layers
