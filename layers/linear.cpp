#include "layers/linear.h"

#include "kernels/ops/linear.h"
#include "layers/detail.h"

namespace engine::layers {

Linear::Linear(int in_features, int out_features, bool bias)
    : in_(in_features), out_(out_features), bias_on_(bias) {
  LAYER_CHECK(in_ > 0 && out_ > 0, "bad sizes: in_features {}, out_features {}", in_, out_);
  weight_ = add_parameter("weight", {out_, in_}, ParamInit::FanInUniform, in_);
  if (bias_on_) bias_ = add_parameter("bias", {out_}, ParamInit::FanInUniform, in_);
}

Shape Linear::output_shape_impl(const Shape& in) const {
  LAYER_CHECK(in.size() == 2, "expects an input [N, {}], got {} (flatten it first)", in_, shape_str(in));
  LAYER_CHECK(in[1] == in_, "expects {} input features, got an input {}", in_, shape_str(in));
  LAYER_CHECK(in[0] > 0, "empty input {}", shape_str(in));
  return {in[0], out_};
}

Tensor Linear::forward_impl(const Tensor& x, Mode mode) {
  const LinearShape s{.n = detail::to_int(x.dim(0)), .in_features = in_, .out_features = out_};
  Tensor y = new_tensor({x.dim(0), out_}, autocast_output_dtype());
  const Tensor& w = param(weight_).value;
  ops::linear_forward(context(), s, x, w, bias_on_ ? param(bias_).value : Tensor(), y,
                      param(weight_).value_bf16);
  x_ = keeps_for_backward(mode) ? x : Tensor();
  return y;
}

Tensor Linear::backward_impl(const Tensor& dy, Mode) {
  const LinearShape s{.n = detail::to_int(x_.dim(0)), .in_features = in_, .out_features = out_};
  Tensor dx = needs_input_grad() ? new_input_grad() : Tensor();
  const Tensor& w = param(weight_).value;
  const Tensor& dw = param(weight_).grad;
  ops::linear_backward(context(), s, x_, w, dy, dx, dw, bias_on_ ? param(bias_).grad : Tensor(),
                       param(weight_).value_bf16);
  x_ = Tensor();
  return dx;
}

}  // namespace engine::layers
