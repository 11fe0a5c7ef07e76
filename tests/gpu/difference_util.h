#pragma once
// What a failing GPU-vs-CPU comparison prints about a tensor's difference (tests/gpu/layers_gpu_test.cpp).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace engine::testing {

// Where the largest |a - b| over [begin, end) sits, and the largest at any other element (a ReLU flip moves
// one channel's BatchNorm gradient far more than rounding moves the others).
inline std::string describe_difference(const std::vector<double>& a, const std::vector<double>& b,
                                       std::size_t begin, std::size_t end) {
  double worst = 0.0, runner_up = 0.0;
  std::size_t at = begin;
  for (std::size_t i = begin; i < end; ++i) {
    const double d = std::abs(a[i] - b[i]);
    if (d > worst) {
      runner_up = worst;
      worst = d;
      at = i;
    } else {
      runner_up = std::max(runner_up, d);
    }
  }
  return fmt::format(" (largest difference {:.3g} at element {}, {:.3g} elsewhere)", worst, at - begin,
                     runner_up);
}

}  // namespace engine::testing
