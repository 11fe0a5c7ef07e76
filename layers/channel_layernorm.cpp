#include "layers/channel_layernorm.h"

#include <cmath>

#include "kernels/ops/channel_layernorm.h"

namespace engine::layers {

ChannelLayerNorm::ChannelLayerNorm(int channels, double eps) : channels_(channels), eps_(eps) {
  LAYER_CHECK(channels > 0, "bad channel count {}", channels);
  LAYER_CHECK(eps > 0.0 && std::isfinite(eps), "epsilon {} is not a positive number", eps);
  weight_ = add_parameter("weight", {channels}, ParamInit::Ones);
  bias_ = add_parameter("bias", {channels}, ParamInit::Zeros);
}

Shape ChannelLayerNorm::output_shape_impl(const Shape& in) const {
  LAYER_CHECK((in.size() == 4 || in.size() == 2) && in[1] == channels_,
              "expects an input [N, {}, H, W] or [N, {}], got {}", channels_, channels_, shape_str(in));
  return in;
}

Tensor ChannelLayerNorm::forward_impl(const Tensor& x, Mode mode) {
  Tensor y = new_tensor(x.shape(), x.dtype());
  ops::channel_layernorm_forward(context(), eps_, x, param(weight_).value, param(bias_).value, y);
  x_ = keeps_for_backward(mode) ? x : Tensor();
  return y;
}

Tensor ChannelLayerNorm::backward_impl(const Tensor& dy, Mode) {
  Tensor dx = needs_input_grad() ? new_input_grad() : Tensor();
  ops::channel_layernorm_backward(context(), eps_, x_, param(weight_).value, dy, dx, param(weight_).grad,
                                  param(bias_).grad);
  x_ = Tensor();
  return dx;
}

}  // namespace engine::layers
