#include "layers/relu.h"

#include "kernels/ops/relu.h"
#include "layers/batchnorm2d.h"

namespace engine::layers {

void ReLU::set_fused_into(const BatchNorm2d* producer) {
  LAYER_CHECK(!finalized(), "the ReLU fusion is decided before the model is finalized");
  LAYER_CHECK(producer == nullptr || producer->fused_relu(), "fused into {}, which does not apply the ReLU",
              producer == nullptr ? std::string() : producer->describe());
  fused_into_ = producer;
}

Tensor ReLU::forward_impl(const Tensor& x, Mode mode) {
  if (fused_into_ != nullptr) {
    // The ReLU was applied by the BatchNorm2d; only its own latest output has it.
    LAYER_CHECK(fused_into_->fused_relu() && x.raw_data() == fused_into_->last_output_data(),
                "is fused into {} and passes its output through, but was given another tensor {}",
                fused_into_->describe(), x.str());
    return x;
  }
  Tensor y = new_tensor(x.shape(), x.dtype());
  ops::relu_forward(context(), x, y);
  x_ = keeps_for_backward(mode) ? x : Tensor();
  return y;
}

Tensor ReLU::backward_impl(const Tensor& dy, Mode) {
  Tensor dx;
  if (fused_into_ != nullptr) {  // the mask is applied in the BatchNorm2d's backward
    if (needs_input_grad()) dx = dy;
    return dx;
  }
  if (needs_input_grad()) {
    dx = new_input_grad();
    ops::relu_backward(context(), x_, dy, dx);
  }
  x_ = Tensor();
  return dx;
}

}  // namespace engine::layers
