#pragma once
// A pointwise activation of kernels/activation_kind.h as a layer: Sigmoid, Tanh, SiLU, HardSigmoid (alpha,
// beta), HardSwish, Clip (min, max: nn.ReLU6 is Clip(0, 6)) and LeakyRelu (alpha); PyTorch's nn.Sigmoid,
// nn.Tanh, nn.SiLU, nn.Hardsigmoid, nn.Hardswish, nn.ReLU6 / nn.Hardtanh, nn.LeakyReLU. Backward by hand:
// dx = dy f'(x) from the input it keeps (the output, for Sigmoid and Tanh). No parameters. Kernels:
// kernels/cpu/activation.h (the reference), kernels/cpu_fast/activation.h, kernels/cuda/activation.h.

#include "kernels/activation_kind.h"
#include "layers/layer.h"

namespace engine::layers {

class Activation final : public Layer {
 public:
  // Refuses parameters a kind cannot take (a Clip whose min is above its max, a NaN bound or slope).
  explicit Activation(const ActivationParams& params);
  std::string_view kind() const override { return activation_name(params_.kind); }
  const ActivationParams& params() const { return params_; }

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override { return input_shape; }

 private:
  ActivationParams params_;
  Tensor saved_;  // what backward reads: the input, or the output (activation_backward_reads_output)
};

}  // namespace engine::layers
