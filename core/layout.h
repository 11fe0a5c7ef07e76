#pragma once
// The memory order of a 4-d tensor. The shape is always the logical [N, C, H, W] (PyTorch's channels_last
// works the same way); the layout says where element (n, c, h, w) lives:
//   NCHW  ((n * C + c) * H + h) * W + w   (row-major in the shape's order: every tensor of another rank)
//   NHWC  ((n * H + h) * W + w) * C + c   (channels innermost: what cuDNN's tensor-core kernels prefer)

#include <string_view>

namespace engine {

enum class Layout { NCHW, NHWC };

constexpr std::string_view layout_name(Layout l) { return l == Layout::NHWC ? "NHWC" : "NCHW"; }

}  // namespace engine
