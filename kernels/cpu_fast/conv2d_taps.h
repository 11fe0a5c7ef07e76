#pragma once
// Which outputs of a convolution one kernel tap reads inside the input, along one axis: shared by the
// engine's direct grouped loops (conv2d_grouped.cpp) and the weight gradient's im2col
// (conv2d_weights_gemm.cpp).

#include <algorithm>

namespace engine::cpu_fast::conv_taps {

// The outputs [lo, hi) along one axis whose tap at `offset` (tap index x dilation - padding) reads inside
// [0, size): out x stride + offset in [0, size).
struct Range {
  int lo, hi;
};

inline int ceil_div(int a, int b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
inline int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

inline Range valid(int offset, int stride, int size, int outputs) {
  const int lo = std::max(0, ceil_div(-offset, stride));
  const int hi = std::min(outputs, floor_div(size - 1 - offset, stride) + 1);
  return {lo, std::max(lo, hi)};
}

}  // namespace engine::cpu_fast::conv_taps
