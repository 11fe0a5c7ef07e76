#pragma once
// Layers that move whole channels of [N, C, ...] (any rank from 2; 4-d in the context's layout):
//   ChannelSlice    channels [begin, end) (ONNX's Slice on axis 1 with step 1: x[:, begin:end]); backward
//                   scatters dy into zeros.
//   ChannelShuffle  ShuffleNet's channel_shuffle: view as [N, g, C/g, ...], swap the two group axes, view
//                   back (ONNX: Reshape, Transpose perm [0, 2, 1, 3, 4], Reshape); output channel c is input
//                   channel (c % g) * (C/g) + c / g. Backward: the shuffle with C/g groups (its inverse).
// No parameters.

#include "layers/layer.h"

namespace engine::layers {

class ChannelSlice final : public Layer {
 public:
  ChannelSlice(std::int64_t begin, std::int64_t end);
  std::string_view kind() const override { return "ChannelSlice"; }
  std::int64_t begin() const { return begin_; }
  std::int64_t end() const { return end_; }

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override;

 private:
  std::int64_t begin_, end_;
};

class ChannelShuffle final : public Layer {
 public:
  // `channels`: the input's C (the ONNX writer's Reshape needs it), a multiple of `groups`.
  ChannelShuffle(std::int64_t groups, std::int64_t channels);
  std::string_view kind() const override { return "ChannelShuffle"; }
  std::int64_t groups() const { return groups_; }
  std::int64_t channels() const { return channels_; }

 protected:
  Tensor forward_impl(const Tensor& x, Mode mode) override;
  Tensor backward_impl(const Tensor& dy, Mode mode) override;
  Shape output_shape_impl(const Shape& input_shape) const override;

 private:
  std::int64_t groups_, channels_;
};

}  // namespace engine::layers
