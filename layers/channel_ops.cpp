#include "layers/channel_ops.h"

#include "kernels/ops/channel_copy.h"

namespace engine::layers {

ChannelSlice::ChannelSlice(std::int64_t begin, std::int64_t end) : begin_(begin), end_(end) {
  ENGINE_CHECK(begin >= 0 && end > begin, "ChannelSlice: channels [{}, {}) is empty or negative", begin, end);
}

Shape ChannelSlice::output_shape_impl(const Shape& in) const {
  LAYER_CHECK(in.size() >= 2 && in[1] >= end_, "channels [{}, {}) of an input {}", begin_, end_,
              shape_str(in));
  Shape y = in;
  y[1] = end_ - begin_;
  return y;
}

Tensor ChannelSlice::forward_impl(const Tensor& x, Mode) {
  Tensor y = new_tensor(output_shape_impl(x.shape()), x.dtype());
  ops::copy_from_channels(context(), x, begin_, y);
  return y;
}

Tensor ChannelSlice::backward_impl(const Tensor& dy, Mode) {
  if (!needs_input_grad()) return Tensor();
  Tensor dx = new_tensor(last_input_shape(), dy.dtype());
  dx.fill_bytes(0, context().stream);
  ops::copy_into_channels(context(), dy, dx, begin_);
  return dx;
}

ChannelShuffle::ChannelShuffle(std::int64_t groups, std::int64_t channels)
    : groups_(groups), channels_(channels) {
  ENGINE_CHECK(groups >= 1 && channels >= groups && channels % groups == 0,
               "ChannelShuffle: {} groups do not divide {} channels", groups, channels);
}

Shape ChannelShuffle::output_shape_impl(const Shape& in) const {
  LAYER_CHECK(in.size() >= 2 && in[1] == channels_, "expects an input [N, {}, ...], got {}", channels_,
              shape_str(in));
  return in;
}

Tensor ChannelShuffle::forward_impl(const Tensor& x, Mode) {
  Tensor y = new_tensor(x.shape(), x.dtype());
  ops::channel_shuffle(context(), x, groups_, y);
  return y;
}

Tensor ChannelShuffle::backward_impl(const Tensor& dy, Mode) {
  if (!needs_input_grad()) return Tensor();
  Tensor dx = new_tensor(dy.shape(), dy.dtype());
  ops::channel_shuffle(context(), dy, dy.shape()[1] / groups_, dx);
  return dx;
}

}  // namespace engine::layers
