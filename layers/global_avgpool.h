#pragma once
// GlobalAvgPool: x[N, C, H, W] -> y[N, C], the mean over each plane. It also flattens: the output is ready
// for a Linear layer. PyTorch equivalent: nn.AdaptiveAvgPool2d(1) followed by flatten(1) (kuangliu's ResNet
// writes F.avg_pool2d(out, 4) + view, the same thing on 32x32 inputs, whose last stage is 4x4). With
// keep_dims the output is [N, C, 1, 1] (in the context's layout), as ONNX's GlobalAveragePool and
// ReduceMean over axes [2, 3] with keepdims 1 give it: squeeze-excite's 1x1 convolutions read it. No
// parameters.

#include "layers/layer.h"

namespace engine::layers {

class GlobalAvgPool final : public Layer {
 public:
  explicit GlobalAvgPool(bool keep_dims = false) : keep_dims_(keep_dims) {}
  std::string_view kind() const override { return "GlobalAvgPool"; }
  bool keep_dims() const { return keep_dims_; }

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override;

 private:
  bool keep_dims_ = false;
};

}  // namespace engine::layers
