#pragma once
// Conv2d: PyTorch's nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
// bias) with square kernels and zero padding. Parameters "weight" [out, in / groups, k, k] and, when bias is
// on, "bias" [out], both initialized U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in / groups * k * k, as
// PyTorch (identity_init: airbench94's, see Conv2dOptions; dense convolutions only).
//
// CPU: kernels/cpu_fast/conv2d.h in float32, kernels/cpu/conv2d.h (the reference) in float64. CUDA: cuDNN or
// the implicit-GEMM convolution of kernels/cuda (conv2d_implicit_gemm), chosen by the context's
// conv_algorithm. Keeps the input for backward. Under bf16 autocast (kernels/ops/autocast_bf16.h) the weight
// is read from the model's bf16 mirror.
//
// Folded bias (layers/fusion.h, a float32 model whose conv feeds a BatchNorm2d): training-mode forwards do
// not add the bias — the BatchNorm's normalization removes any per-channel constant, so its output is the
// same — and the BatchNorm adds it to its running mean instead, the one place it shows. Its gradient in
// training mode is then exactly 0 (the loss does not depend on it), written as such. Eval and inference add
// it as usual.

#include "layers/layer.h"

namespace engine::layers {

struct Conv2dOptions {
  int in_channels = 0;
  int out_channels = 0;
  int kernel_size = 0;
  int stride = 1;
  int padding = 0;
  bool bias = true;
  // airbench94's Conv: the bias starts at 0 and the first min(out, in) filters at the identity (dirac_), the
  // rest of the weight as PyTorch's default.
  bool identity_init = false;
  int groups = 1;    // in and out channels split into independent groups (in_channels: depthwise)
  int dilation = 1;  // the kernel's taps dilation cells apart, along both axes
};

class Conv2d final : public Layer {
 public:
  explicit Conv2d(const Conv2dOptions& options);

  std::string_view kind() const override { return "Conv2d"; }
  const Conv2dOptions& options() const { return options_; }
  const Tensor& weight() const { return param(weight_).value; }
  bool has_bias() const { return options_.bias; }
  const Tensor& bias() const { return param(bias_).value; }  // has_bias() only

  // Leaves the bias out of training-mode forwards (see above). Before the model is finalized, with a bias.
  void set_bias_folded(bool folded);
  bool bias_folded() const { return bias_folded_; }

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override;

 private:
  Conv2dOptions options_;
  std::size_t weight_ = 0, bias_ = 0;
  Tensor x_;  // the last forward's input
  bool bias_folded_ = false;
  bool bias_left_out_ = false;  // the last forward left the bias out (folded, training mode)
};

}  // namespace engine::layers
