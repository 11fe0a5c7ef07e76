#pragma once
// A small net of rectangular convolutions (inception_v3's 1x7 and 7x1, a 3x1 with stride (2, 1)) for the
// CPU and GPU tests of Conv2d's rectangular kernels (tests/cpu/conv2d_rect_layer_test.cpp,
// tests/gpu/conv2d_rect_gpu_test.cpp).

#include <memory>

#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "layers/sequential.h"

namespace engine::layers::testing {

inline const Conv2dOptions k1x7{
    .in_channels = 3, .out_channels = 4, .kernel_size = 1, .kernel_w = 7, .padding_w = 3};
inline const Conv2dOptions k7x1{.in_channels = 4,
                                .out_channels = 5,
                                .kernel_size = 7,
                                .padding = 3,
                                .bias = false,
                                .kernel_w = 1,
                                .padding_w = 0};
inline const Conv2dOptions k3x1{.in_channels = 5,
                                .out_channels = 4,
                                .kernel_size = 3,
                                .stride = 2,
                                .padding = 1,
                                .kernel_w = 1,
                                .stride_w = 1,
                                .padding_w = 0};

// x [N, 3, 9, 11] -> 1x7 pad (0, 3) -> 9x11 -> 7x1 pad (3, 0) -> 9x11 -> 3x1 stride (2, 1) pad (1, 0) -> 5x11
// -> flatten -> 3 classes.
inline std::unique_ptr<Sequential> rect_net() {
  auto net = std::make_unique<Sequential>();
  net->emplace_named<Conv2d>("conv1x7", k1x7);
  net->emplace_named<ReLU>("relu");
  net->emplace_named<Conv2d>("conv7x1", k7x1);
  net->emplace_named<Conv2d>("conv3x1", k3x1);
  net->emplace_named<Flatten>("flatten");
  net->emplace_named<Linear>("fc", 4 * 5 * 11, 3);
  return net;
}

}  // namespace engine::layers::testing
