#pragma once
// ReLU: y = max(x, 0); dx = dy where x > 0, else 0 (the subgradient 0 at the kink, as PyTorch). No state
// besides the input it keeps for backward. CPU: kernels/cpu/relu.h; CUDA: kernels/cuda.
//
// Fused (layers/fusion.h): when the BatchNorm2d before it carries the ReLU, this layer is a pass-through:
// forward returns its input (already relu'd) and backward returns dy unchanged (BatchNorm's backward applies
// the mask). It refuses any input but that BatchNorm's latest output, so it cannot silently skip a ReLU.

#include "layers/layer.h"

namespace engine::layers {

class BatchNorm2d;

class ReLU final : public Layer {
 public:
  ReLU() = default;
  std::string_view kind() const override { return "ReLU"; }

  // Makes this ReLU a pass-through whose work `producer` does (null: a plain ReLU again). Before the model
  // is finalized only; `producer` must have set_fused_relu(true) and outlive this layer.
  void set_fused_into(const BatchNorm2d* producer);
  const BatchNorm2d* fused_into() const { return fused_into_; }

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override { return input_shape; }

 private:
  Tensor x_;
  const BatchNorm2d* fused_into_ = nullptr;
};

}  // namespace engine::layers
