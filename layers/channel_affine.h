#pragma once
// ChannelAffine: y = x * scale[c] + shift[c], either half optional: ONNX's Mul and Add by a constant that
// broadcasts per channel ([C, 1, 1], [1, C, 1, 1] on [N, C, H, W]; [C] on [N, C]) or as a scalar, and the Mul
// then Add that PyTorch writes for `x * scale + shift` (one layer, so both keep their module's state-dict
// names). Input [N, C, H, W] (NCHW or NHWC) or [N, C]; one value for every element fits any input.
//
// Each value is a trainable parameter (gradients sum(dy * x) and sum(dy) per channel), or, when not
// trainable, a buffer: kept in the state dict and checkpoints, never trained. Its shape is the one given
// (the ONNX initializer's) and must broadcast per channel by numpy's rule, which aligns the LAST axes, so
// the shape written back to ONNX means what the layer computes. Kernels: kernels/ops/channel_affine.h.

#include <string>

#include "layers/layer.h"

namespace engine::layers {

struct ChannelValue {
  bool on = false;
  Shape shape;       // C values ([C], [C, 1, 1], [1, C, 1, 1], ...) or one ([1])
  std::string name;  // the local state-dict name ("weight", "scale")
  bool trainable = true;
};

struct ChannelAffineOptions {
  ChannelValue scale, shift;  // at least one on; both on: the same number of values
};

class ChannelAffine final : public Layer {
 public:
  explicit ChannelAffine(ChannelAffineOptions options);

  std::string_view kind() const override { return "ChannelAffine"; }
  const ChannelAffineOptions& options() const { return options_; }

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override;

 private:
  std::size_t add_value(const ChannelValue& v, double fill);
  const Tensor& value(const ChannelValue& v, std::size_t slot) const;
  Tensor grad(const ChannelValue& v, std::size_t slot) const;
  void check_broadcast(const ChannelValue& v, const Shape& in) const;

  ChannelAffineOptions options_;
  std::int64_t values_ = 0;
  std::size_t scale_slot_ = 0, shift_slot_ = 0;
  Tensor x_;
};

}  // namespace engine::layers
