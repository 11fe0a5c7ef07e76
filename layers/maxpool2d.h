#pragma once
// MaxPool2d: PyTorch's nn.MaxPool2d(kernel_size, stride=kernel_size, padding=0, ceil_mode) with square
// windows. Forward keeps the argmax (int32, the flat index of the winner in its input plane) for backward,
// which routes each output gradient to that one cell; ties go to the first cell in scan order, as PyTorch.

#include "layers/layer.h"

namespace engine::layers {

class MaxPool2d final : public Layer {
 public:
  // stride 0 means stride = kernel_size (PyTorch's default).
  explicit MaxPool2d(int kernel_size, int stride = 0, int padding = 0, bool ceil_mode = false);

  std::string_view kind() const override { return "MaxPool2d"; }
  int kernel_size() const { return kernel_; }
  int stride() const { return stride_; }
  int padding() const { return padding_; }
  bool ceil_mode() const { return ceil_mode_; }
  // The last forward's argmax [N, C, P, Q] (int32); undefined before one, and after its backward.
  const Tensor& saved_argmax() const { return argmax_; }

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override;

 private:
  int kernel_, stride_, padding_;
  bool ceil_mode_;
  Tensor argmax_;
};

}  // namespace engine::layers
