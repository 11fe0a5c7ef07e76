#pragma once
// ChannelLinear: PyTorch's nn.Linear(in, out) applied to the channels of each pixel (convnext's pointwise
// layers, which PyTorch runs on an NHWC view: ONNX's Transpose, MatMul and Add on the last axis, Transpose
// back). Parameters "weight" [out, in] and "bias" [out] (optional), nn.Linear's names, shapes and
// initialization (U(-1/sqrt(in), 1/sqrt(in))), computed as the 1x1 convolution it is (kernels/ops/conv2d.h
// on the weight viewed as [out, in, 1, 1]: the same memory). Input [N, in, H, W], NCHW or NHWC.

#include "layers/layer.h"

namespace engine::layers {

class ChannelLinear final : public Layer {
 public:
  ChannelLinear(int in_features, int out_features, bool bias);

  std::string_view kind() const override { return "ChannelLinear"; }
  int in_features() const { return in_; }
  int out_features() const { return out_; }
  bool has_bias() const { return bias_on_; }

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override;

 private:
  int in_, out_;
  bool bias_on_;
  std::size_t weight_ = 0, bias_ = 0;
  Tensor x_;
};

}  // namespace engine::layers
