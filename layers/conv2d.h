#pragma once
// Conv2d: PyTorch's nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
// bias) with zero padding, square kernels or rectangular ones (kernel_size=(1, 7), padding=(0, 3):
// inception_v3, see Conv2dOptions::kernel_w). Parameters "weight" [out, in / groups, kh, kw] and, when bias
// is on, "bias" [out], both initialized U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in / groups * kh *
// kw, as PyTorch (identity_init: airbench94's, see Conv2dOptions; dense square convolutions only).
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

#include <optional>
#include <string>

#include "kernels/ops/conv2d.h"
#include "layers/layer.h"

namespace engine::layers {

struct Conv2dOptions {
  int in_channels = 0;
  int out_channels = 0;
  int kernel_size = 0;  // the kernel's height and width (kernel_w set: its height only)
  int stride = 1;       // along both axes (stride_w set: along the height only)
  int padding = 0;      // on every side (padding_w set: top and bottom only)
  bool bias = true;
  // airbench94's Conv: the bias starts at 0 and the first min(out, in) filters at the identity (dirac_), the
  // rest of the weight as PyTorch's default.
  bool identity_init = false;
  int groups = 1;    // in and out channels split into independent groups (in_channels: depthwise)
  int dilation = 1;  // the kernel's taps dilation cells apart, along both axes
  // Rectangular kernels, per-axis strides and paddings, as nn.Conv2d(kernel_size=(1, 7), padding=(0, 3)):
  // the width's kernel, stride and padding (left and right) where they differ from the height's. Unset, the
  // width takes the height's: a square convolution.
  std::optional<int> kernel_w = std::nullopt, stride_w = std::nullopt, padding_w = std::nullopt;

  int kernel_height() const { return kernel_size; }
  int kernel_width() const { return kernel_w.value_or(kernel_size); }
  int stride_height() const { return stride; }
  int stride_width() const { return stride_w.value_or(stride); }
  int padding_height() const { return padding; }
  int padding_width() const { return padding_w.value_or(padding); }
  // Same kernel, stride and padding along both axes.
  bool square() const {
    return kernel_width() == kernel_size && stride_width() == stride && padding_width() == padding;
  }
};

// "3x3", "1x7"; the stride and the padding as "2" or "(2, 1)" (height, width): for messages and printouts.
std::string kernel_str(const Conv2dOptions& o);
std::string stride_str(const Conv2dOptions& o);
std::string padding_str(const Conv2dOptions& o);

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
  Tensor x_;                  // the last forward's input
  ops::Conv2dSaved x_saved_;  // the kernels' copy of it for backward (kernels/ops/conv2d.h), this layer's own
  bool bias_folded_ = false;
  bool bias_left_out_ = false;  // the last forward left the bias out (folded, training mode)
};

}  // namespace engine::layers
