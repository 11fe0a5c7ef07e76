#pragma once
// GlobalAvgPool: x[N, C, H, W] -> y[N, C], the mean over each plane. It also flattens: the output is ready
// for a Linear layer. PyTorch equivalent: nn.AdaptiveAvgPool2d(1) followed by flatten(1) (kuangliu's ResNet
// writes F.avg_pool2d(out, 4) + view, the same thing on 32x32 inputs, whose last stage is 4x4). No
// parameters.

#include "layers/layer.h"

namespace engine::layers {

class GlobalAvgPool final : public Layer {
 public:
  GlobalAvgPool() = default;
  std::string_view kind() const override { return "GlobalAvgPool"; }

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override;
};

}  // namespace engine::layers
