#pragma once
// ChannelLayerNorm: layer normalization over the channels of each pixel, convnext's LayerNorm2d (PyTorch's
// nn.LayerNorm(C) applied to an NHWC view: permute, normalize the last axis, permute back; ONNX's
// Transpose, LayerNormalization(axis -1), Transpose). Parameters "weight" [C] (ones) and "bias" [C] (zeros),
// PyTorch's names and shapes; the biased variance, eps inside the square root. Input [N, C, H, W] (NCHW or
// NHWC) or [N, C]. Keeps the input for backward (the pixels' moments are recomputed from it). Kernels:
// kernels/ops/channel_layernorm.h.

#include "layers/layer.h"

namespace engine::layers {

class ChannelLayerNorm final : public Layer {
 public:
  ChannelLayerNorm(int channels, double eps);

  std::string_view kind() const override { return "ChannelLayerNorm"; }
  int channels() const { return channels_; }
  double eps() const { return eps_; }

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override;

 private:
  int channels_;
  double eps_;
  std::size_t weight_ = 0, bias_ = 0;
  Tensor x_;
};

}  // namespace engine::layers
