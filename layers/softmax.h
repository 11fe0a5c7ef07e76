#pragma once
// Softmax over the classes of a classifier's [N, classes]: ONNX's Softmax (axis -1, or 1), PyTorch's
// nn.Softmax(dim=1). y = e^(x - max) / sum e^(x - max) per row; backward by hand from the output it keeps,
// dx = y (dy - sum(dy y)). No parameters. Any other rank is refused. Kernels: kernels/cpu/softmax.h (the
// reference), kernels/cpu_fast/softmax.h, kernels/cuda/softmax.h.
//
// A model ending in Softmax trains on probabilities under the engine's softmax cross-entropy loss (the loss
// takes them as logits), as PyTorch's CrossEntropyLoss after an nn.Softmax does: what the file says.

#include "layers/layer.h"

namespace engine::layers {

class Softmax final : public Layer {
 public:
  Softmax() = default;
  std::string_view kind() const override { return "Softmax"; }

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override;

 private:
  Tensor y_;  // the output, for backward
};

}  // namespace engine::layers
