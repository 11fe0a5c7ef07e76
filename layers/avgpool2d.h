#pragma once
// AvgPool2d: PyTorch's nn.AvgPool2d(kernel_size, stride=kernel_size, padding=0, count_include_pad=True,
// ceil_mode), and ONNX's AveragePool with symmetric pads. In ceil mode a last window overhanging the right
// padding divides, with the padding counted, by its cells inside the padded input (PyTorch and ONNX's
// reference). Kernels, strides
// and padding may differ between the two axes. Padding may reach kernel - 1 (ONNX's range; PyTorch allows at
// most half the kernel). Backward spreads each output gradient over its window's real cells, divided as the
// forward divides. No parameters, nothing saved but the input's shape.

#include "kernels/shapes.h"
#include "layers/layer.h"

namespace engine::layers {

struct AvgPool2dOptions {
  int kernel_h = 0, kernel_w = 0;
  int stride_h = 0, stride_w = 0;  // 0: the kernel's size along that axis (PyTorch's default)
  int pad_h = 0, pad_w = 0;
  bool count_include_pad = true;  // divide by the whole window (padding included) or by its real cells
  bool ceil_mode = false;         // the output size rounds up (kernels/shapes.h, Pool2dShape::ceil_mode)
};

class AvgPool2d final : public Layer {
 public:
  // A square window; stride 0 means stride = kernel_size.
  explicit AvgPool2d(int kernel_size, int stride = 0, int padding = 0, bool count_include_pad = true);
  explicit AvgPool2d(const AvgPool2dOptions& options);

  std::string_view kind() const override { return "AvgPool2d"; }
  // With the strides resolved (never 0).
  const AvgPool2dOptions& options() const { return options_; }

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override;

 private:
  AvgPool2dShape geometry(const Shape& x) const;

  AvgPool2dOptions options_;
};

}  // namespace engine::layers
