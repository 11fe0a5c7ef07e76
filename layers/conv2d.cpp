#include "layers/conv2d.h"

#include "kernels/ops/conv2d.h"
#include "layers/detail.h"

namespace engine::layers {

std::string kernel_str(const Conv2dOptions& o) {
  return fmt::format("{}x{}", o.kernel_height(), o.kernel_width());
}
std::string stride_str(const Conv2dOptions& o) {
  return o.stride_width() == o.stride ? fmt::format("{}", o.stride)
                                      : fmt::format("({}, {})", o.stride, o.stride_width());
}
std::string padding_str(const Conv2dOptions& o) {
  return o.padding_width() == o.padding ? fmt::format("{}", o.padding)
                                        : fmt::format("({}, {})", o.padding, o.padding_width());
}

Conv2d::Conv2d(const Conv2dOptions& options) : options_(options) {
  const Conv2dOptions& o = options_;
  LAYER_CHECK(o.in_channels > 0 && o.out_channels > 0 && o.kernel_height() > 0 && o.kernel_width() > 0 &&
                  o.stride_height() > 0 && o.stride_width() > 0 && o.padding_height() >= 0 &&
                  o.padding_width() >= 0 && o.dilation > 0 && o.groups > 0 && o.in_channels % o.groups == 0 &&
                  o.out_channels % o.groups == 0,
              "bad options: in_channels {}, out_channels {}, kernel {}, stride {}, padding {}, dilation {}, "
              "groups {} (groups must divide both channel counts)",
              o.in_channels, o.out_channels, kernel_str(o), stride_str(o), padding_str(o), o.dilation,
              o.groups);
  LAYER_CHECK(!o.identity_init || (o.groups == 1 && o.square()),
              "identity_init is for dense convolutions with square kernels (groups {}, kernel {})", o.groups,
              kernel_str(o));
  const int in_per_group = o.in_channels / o.groups;
  const std::int64_t fan_in = static_cast<std::int64_t>(in_per_group) * o.kernel_height() * o.kernel_width();
  weight_ = add_parameter("weight", {o.out_channels, in_per_group, o.kernel_height(), o.kernel_width()},
                          o.identity_init ? ParamInit::FanInUniformDirac : ParamInit::FanInUniform, fan_in);
  if (o.bias) {
    bias_ = add_parameter("bias", {o.out_channels},
                          o.identity_init ? ParamInit::Zeros : ParamInit::FanInUniform, fan_in);
  }
}

void Conv2d::set_bias_folded(bool folded) {
  LAYER_CHECK(!finalized(), "the bias fold is decided before the model is finalized");
  LAYER_CHECK(!folded || options_.bias, "has no bias to fold");
  bias_folded_ = folded;
}

namespace {

Conv2dShape geometry(const Conv2dOptions& o, const Shape& x) {
  Conv2dShape s;
  s.n = detail::to_int(x[0]);
  s.c = detail::to_int(x[1]);
  s.h = detail::to_int(x[2]);
  s.w = detail::to_int(x[3]);
  s.k = o.out_channels;
  s.r = o.kernel_height();
  s.s = o.kernel_width();
  s.stride_h = o.stride_height();
  s.stride_w = o.stride_width();
  s.pad_h = o.padding_height();
  s.pad_w = o.padding_width();
  s.groups = o.groups;
  s.dilation_h = s.dilation_w = o.dilation;
  return s;
}

}  // namespace

Shape Conv2d::output_shape_impl(const Shape& in) const {
  LAYER_CHECK(in.size() == 4, "expects an input [N, C, H, W], got {}", shape_str(in));
  LAYER_CHECK(in[1] == options_.in_channels, "expects {} input channels, got an input {}",
              options_.in_channels, shape_str(in));
  LAYER_CHECK(in[0] > 0 && in[2] > 0 && in[3] > 0, "empty input {}", shape_str(in));
  const Conv2dOptions& o = options_;
  const std::int64_t span_h = o.dilation * (o.kernel_height() - 1) + 1 - 2 * o.padding_height();
  const std::int64_t span_w = o.dilation * (o.kernel_width() - 1) + 1 - 2 * o.padding_width();
  LAYER_CHECK(in[2] >= span_h && in[3] >= span_w,
              "a {} kernel (dilation {}) with padding {} does not fit in the input {}", kernel_str(o),
              o.dilation, padding_str(o), shape_str(in));
  const Conv2dShape s = geometry(options_, in);
  return {in[0], options_.out_channels, s.p(), s.q()};
}

Tensor Conv2d::forward_impl(const Tensor& x, Mode mode) {
  const Conv2dShape s = geometry(options_, x.shape());
  Tensor y = new_tensor({s.n, s.k, s.p(), s.q()}, autocast_output_dtype());
  const Tensor& w = param(weight_).value;
  bias_left_out_ = bias_folded_ && mode == Mode::Train;
  const bool add_bias = options_.bias && !bias_left_out_;
  const bool keep = keeps_for_backward(mode);
  ops::conv2d_forward(context(), s, x, w, add_bias ? param(bias_).value : Tensor(), y,
                      param(weight_).value_bf16, keep ? &x_saved_ : nullptr);
  x_ = keep ? x : Tensor();
  return y;
}

Tensor Conv2d::backward_impl(const Tensor& dy, Mode) {
  const Conv2dShape s = geometry(options_, x_.shape());
  Tensor dx = needs_input_grad() ? new_input_grad() : Tensor();
  const Tensor& w = param(weight_).value;
  const Tensor& dw = param(weight_).grad;
  const bool bias_grad = options_.bias && !bias_left_out_;
  ops::conv2d_backward(context(), s, x_, w, dy, dx, dw, bias_grad ? param(bias_).grad : Tensor(),
                       param(weight_).value_bf16, &x_saved_);
  if (bias_left_out_) {  // the loss does not depend on a bias a training-mode BatchNorm follows: exactly 0
    Tensor db = param(bias_).grad;
    db.fill_bytes(0, context().stream);
  }
  x_ = Tensor();  // one backward per forward: the saved input is released as soon as it is used
  return dx;
}

}  // namespace engine::layers
