#pragma once
// Linear: PyTorch's nn.Linear(in_features, out_features, bias): y = x w^T + b on x[N, in]. Parameters
// "weight" [out, in] and "bias" [out], both U(-1/sqrt(in), 1/sqrt(in)), as PyTorch. The input must be 2-D
// (put a Flatten or GlobalAvgPool before it). CPU: kernels/cpu_fast (float32), kernels/cpu (float64). CUDA:
// cuBLAS through kernels/cuda.

#include "layers/layer.h"

namespace engine::layers {

class Linear final : public Layer {
 public:
  Linear(int in_features, int out_features, bool bias = true);

  std::string_view kind() const override { return "Linear"; }
  int in_features() const { return in_; }
  int out_features() const { return out_; }

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
