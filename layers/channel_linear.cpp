#include "layers/channel_linear.h"

#include "kernels/ops/conv2d.h"
#include "layers/detail.h"

namespace engine::layers {

ChannelLinear::ChannelLinear(int in_features, int out_features, bool bias)
    : in_(in_features), out_(out_features), bias_on_(bias) {
  LAYER_CHECK(in_features > 0 && out_features > 0, "bad sizes: in {}, out {}", in_features, out_features);
  weight_ = add_parameter("weight", {out_features, in_features}, ParamInit::FanInUniform, in_features);
  if (bias) bias_ = add_parameter("bias", {out_features}, ParamInit::FanInUniform, in_features);
}

namespace {

Conv2dShape pointwise(const Shape& x, int out) {
  Conv2dShape s;
  s.n = detail::to_int(x[0]);
  s.c = detail::to_int(x[1]);
  s.h = detail::to_int(x[2]);
  s.w = detail::to_int(x[3]);
  s.k = out;
  s.r = s.s = 1;
  return s;
}

}  // namespace

Shape ChannelLinear::output_shape_impl(const Shape& in) const {
  LAYER_CHECK(in.size() == 4 && in[1] == in_, "expects an input [N, {}, H, W], got {}", in_, shape_str(in));
  LAYER_CHECK(in[0] > 0 && in[2] > 0 && in[3] > 0, "empty input {}", shape_str(in));
  return {in[0], out_, in[2], in[3]};
}

Tensor ChannelLinear::forward_impl(const Tensor& x, Mode mode) {
  const Conv2dShape s = pointwise(x.shape(), out_);
  Tensor y = new_tensor({s.n, s.k, s.h, s.w}, autocast_output_dtype());
  const ParamSlot& w = param(weight_);
  const Tensor w_bf16 = w.value_bf16.defined() ? w.value_bf16.view({out_, in_, 1, 1}) : Tensor();
  ops::conv2d_forward(context(), s, x, w.value.view({out_, in_, 1, 1}),
                      bias_on_ ? param(bias_).value : Tensor(), y, w_bf16);
  x_ = keeps_for_backward(mode) ? x : Tensor();
  return y;
}

Tensor ChannelLinear::backward_impl(const Tensor& dy, Mode) {
  const Conv2dShape s = pointwise(x_.shape(), out_);
  Tensor dx = needs_input_grad() ? new_input_grad() : Tensor();
  const ParamSlot& w = param(weight_);
  const Tensor w_bf16 = w.value_bf16.defined() ? w.value_bf16.view({out_, in_, 1, 1}) : Tensor();
  ops::conv2d_backward(context(), s, x_, w.value.view({out_, in_, 1, 1}), dy, dx,
                       w.grad.view({out_, in_, 1, 1}), bias_on_ ? param(bias_).grad : Tensor(), w_bf16);
  x_ = Tensor();
  return dx;
}

}  // namespace engine::layers
