#pragma once
// Dropout: PyTorch's nn.Dropout(p), inverted: in training each element is kept with probability 1 - p and
// scaled by 1/(1 - p); in evaluation it is the identity (the output IS the input tensor, nothing is copied).
//
// The mask is philox(seed, offset, i) (kernels/cpu/dropout.h; the CUDA kernel draws the same bits). Each
// training-mode forward takes a fresh offset from the model's ExecutionContext (dropout_offset++), so every
// call of every step has a new mask, and the whole sequence follows from (dropout_seed, calls so far): set
// both in the context to replay a step exactly. Backward regenerates the mask from the saved (seed, offset);
// nothing else is stored. In a CUDA graph's step (ExecutionContext::dropout_offset_device) the kernels
// read the step's first offset from the device and get the call's index within the step.

#include <cstdint>

#include "layers/layer.h"

namespace engine::layers {

class Dropout final : public Layer {
 public:
  explicit Dropout(double p = 0.5);

  std::string_view kind() const override { return "Dropout"; }
  double p() const { return static_cast<double>(p_); }
  // The (seed, offset) of the last training-mode forward.
  std::uint64_t last_seed() const { return seed_; }
  std::uint64_t last_offset() const { return offset_; }

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override { return input_shape; }

 private:
  float p_;
  std::uint64_t seed_ = 0, offset_ = 0;
  std::uint64_t kernel_offset_ = 0;             // offset_, or its index within the step
  const std::uint64_t* offset_base_ = nullptr;  // the step's first offset on the device, or null
};

}  // namespace engine::layers
