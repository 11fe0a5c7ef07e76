#pragma once
// Inputs shared by the float32 kernel tests: uniform random floats, and convolution shapes with a square
// kernel and equal strides and padding.

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/shapes.h"

namespace engine::testing {

// n floats uniform in [lo, hi) from mt19937(seed): the same sequence for the same seed on every platform's
// libstdc++ (the tests' expected values do not depend on it, only their reproducibility does).
inline std::vector<float> uniform_floats(std::size_t n, std::uint32_t seed, float lo = -1.0f,
                                         float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// An r x r kernel with the same stride and padding in both directions.
inline Conv2dShape square_conv(int n, int c, int h, int w, int k, int r, int stride, int pad) {
  return {.n = n,
          .c = c,
          .h = h,
          .w = w,
          .k = k,
          .r = r,
          .s = r,
          .stride_h = stride,
          .stride_w = stride,
          .pad_h = pad,
          .pad_w = pad};
}

}  // namespace engine::testing
