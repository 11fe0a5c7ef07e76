#include "layers/channel_affine.h"

#include "kernels/ops/channel_affine.h"

namespace engine::layers {

namespace {

std::int64_t count(const Shape& s) {
  std::int64_t n = 1;
  for (const std::int64_t d : s) n *= d;
  return n;
}

}  // namespace

ChannelAffine::ChannelAffine(ChannelAffineOptions options) : options_(std::move(options)) {
  LAYER_CHECK(options_.scale.on || options_.shift.on, "needs a scale or a shift");
  for (const ChannelValue* v : {&options_.scale, &options_.shift}) {
    if (!v->on) continue;
    for (const std::int64_t d : v->shape) LAYER_CHECK(d > 0, "bad value shape {}", shape_str(v->shape));
    LAYER_CHECK(!v->name.empty(), "a value needs a name");
    LAYER_CHECK(values_ == 0 || values_ == count(v->shape), "scale {} and shift {} differ in size",
                shape_str(options_.scale.shape), shape_str(options_.shift.shape));
    values_ = count(v->shape);
  }
  if (options_.scale.on) scale_slot_ = add_value(options_.scale, 1.0);
  if (options_.shift.on) shift_slot_ = add_value(options_.shift, 0.0);
}

std::size_t ChannelAffine::add_value(const ChannelValue& v, double fill) {
  if (v.trainable) return add_parameter(v.name, v.shape, fill == 1.0 ? ParamInit::Ones : ParamInit::Zeros);
  return add_buffer(v.name, v.shape, fill);
}

void ChannelAffine::check_broadcast(const ChannelValue& v, const Shape& in) const {
  // numpy's broadcasting (ONNX's) aligns the last axes: the value's axis that meets the channel axis holds
  // C, every other axis 1.
  const auto channel =
      static_cast<std::ptrdiff_t>(v.shape.size()) - static_cast<std::ptrdiff_t>(in.size()) + 1;
  bool per_channel = v.shape.size() <= in.size() && channel >= 0;
  for (std::size_t i = 0; per_channel && i < v.shape.size(); ++i)
    per_channel = v.shape[i] == (static_cast<std::ptrdiff_t>(i) == channel ? in[1] : 1);
  LAYER_CHECK(per_channel,
              "its {} {} does not broadcast one value per channel over the input {} (the last axes align: "
              "[C, 1, 1] for [N, C, H, W], [C] for [N, C])",
              v.name, shape_str(v.shape), shape_str(in));
}

Shape ChannelAffine::output_shape_impl(const Shape& in) const {
  LAYER_CHECK(!in.empty(), "expects an input [N, ...], got a scalar");
  if (values_ == 1) {
    for (const ChannelValue* v : {&options_.scale, &options_.shift})
      LAYER_CHECK(!v->on || v->shape.size() <= in.size(), "its {} {} has more axes than the input {}",
                  v->name, shape_str(v->shape), shape_str(in));
    return in;  // one value for every element
  }
  LAYER_CHECK(in.size() == 2 || in.size() == 4, "expects an input [N, C, H, W] or [N, C], got {}",
              shape_str(in));
  if (options_.scale.on) check_broadcast(options_.scale, in);
  if (options_.shift.on) check_broadcast(options_.shift, in);
  return in;
}

const Tensor& ChannelAffine::value(const ChannelValue& v, std::size_t slot) const {
  return v.trainable ? param(slot).value : buffer_slots().at(slot).value;
}

Tensor ChannelAffine::grad(const ChannelValue& v, std::size_t slot) const {
  return v.on && v.trainable ? param(slot).grad : Tensor();
}

Tensor ChannelAffine::forward_impl(const Tensor& x, Mode mode) {
  const ChannelValue &s = options_.scale, &t = options_.shift;
  Tensor y = new_tensor(x.shape(), x.dtype());
  ops::channel_affine_forward(context(), x, s.on ? value(s, scale_slot_) : Tensor(),
                              t.on ? value(t, shift_slot_) : Tensor(), y);
  // Only a trained scale's gradient reads x.
  x_ = s.on && s.trainable && keeps_for_backward(mode) ? x : Tensor();
  return y;
}

Tensor ChannelAffine::backward_impl(const Tensor& dy, Mode) {
  const ChannelValue &s = options_.scale, &t = options_.shift;
  Tensor dx = needs_input_grad() ? new_input_grad() : Tensor();
  const Tensor ds = grad(s, scale_slot_), dt = grad(t, shift_slot_);
  if (dx.defined() || ds.defined() || dt.defined()) {
    ops::channel_affine_backward(context(), x_, s.on ? value(s, scale_slot_) : Tensor(), dy, dx, ds, dt);
  }
  x_ = Tensor();
  return dx;
}

}  // namespace engine::layers
