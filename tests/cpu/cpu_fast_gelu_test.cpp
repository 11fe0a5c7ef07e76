// The fast float32 GELU (kernels/cpu_fast/gelu) against the double reference (kernels/cpu/gelu) on odd sizes
// (below and above the threading threshold), outputs poisoned with NaN first so a skipped element shows.
// Tolerance: float arithmetic against double rounded once, per element (tests/common/gelu_tolerance.h has the
// derivation: (x^2/4 + 14) eps relative, x^2/2 u being e^(-x^2/2)'s own rounding of x^2 in the left tail).

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/gelu.h"
#include "kernels/cpu_fast/gelu.h"
#include "tests/common/elementwise_inputs.h"
#include "tests/common/gelu_tolerance.h"

namespace engine {
namespace {

TEST(CpuFastGelu, WithinFloatRoundingOfTheReference) {
  for (const std::int64_t n : {std::int64_t{1}, std::int64_t{7}, std::int64_t{1001}, std::int64_t{40001}}) {
    const auto size = static_cast<std::size_t>(n);
    std::vector<float> x = testing::elementwise_inputs(size, 41), dy = testing::elementwise_inputs(size, 42);
    const float specials[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 0.5f, -0.5f, 3.0f, -3.0f, 12.0f, -12.0f};
    for (std::size_t i = 0; i < std::min(size, std::size(specials)); ++i) x[i] = specials[i];
    std::vector<double> xd(x.begin(), x.end()), dyd(dy.begin(), dy.end()), y_ref(size), dx_ref(size);
    cpu::gelu_forward(xd.data(), y_ref.data(), n);
    cpu::gelu_backward(xd.data(), dyd.data(), dx_ref.data(), n);
    std::vector<float> y(size, NAN), dx(size, NAN);
    cpu_fast::gelu_forward(x.data(), y.data(), n);
    cpu_fast::gelu_backward(x.data(), dy.data(), dx.data(), n);
    int bad = 0;
    for (std::size_t i = 0; i < size && bad < 5; ++i) {
      const double ey = std::fabs(static_cast<double>(y[i]) - y_ref[i]),
                   edx = std::fabs(static_cast<double>(dx[i]) - dx_ref[i]);
      if (!(ey <= testing::gelu_forward_tolerance(xd[i], y_ref[i])) ||
          !(edx <= testing::gelu_backward_tolerance(xd[i], dyd[i]))) {
        ADD_FAILURE() << "n " << n << " [" << i << "] x " << x[i] << ": y " << y[i] << " vs " << y_ref[i]
                      << ", dx " << dx[i] << " vs " << dx_ref[i];
        ++bad;
      }
    }
  }
}

// Every 1/64 from -20 to 20, with the branch points of the former Cephes erfc (|x/sqrt 2| = 1 and 2), the
// tail where e^(-x^2/2) leaves float's normal range (x below -13.2: GELU and x phi(x) still normal or
// subnormal floats), and gaussian_float's cut to +0 (x^2/2 = 172, |x| = 18.547).
TEST(CpuFastGelu, AcrossTheRangeIntoTheSubnormalTail) {
  std::vector<float> x;
  for (int i = -1280; i <= 1280; ++i) x.push_back(static_cast<float>(i) / 64.0f);
  for (const float b : {1.41421356f, 2.82842712f, 13.2f, 13.25f, 13.5f, 14.0f, 18.547f})
    for (const float d : {-1e-6f, 0.0f, 1e-6f}) {
      x.push_back(b + d);
      x.push_back(-b - d);
    }
  const auto n = static_cast<std::int64_t>(x.size());
  const std::vector<float> dy(x.size(), 1.0f);
  std::vector<double> xd(x.begin(), x.end()), dyd(dy.begin(), dy.end()), y_ref(x.size()), dx_ref(x.size());
  cpu::gelu_forward(xd.data(), y_ref.data(), n);
  cpu::gelu_backward(xd.data(), dyd.data(), dx_ref.data(), n);
  std::vector<float> y(x.size(), NAN), dx(x.size(), NAN);
  cpu_fast::gelu_forward(x.data(), y.data(), n);
  cpu_fast::gelu_backward(x.data(), dy.data(), dx.data(), n);
  int bad = 0;
  for (std::size_t i = 0; i < x.size() && bad < 5; ++i) {
    const double ey = std::fabs(static_cast<double>(y[i]) - y_ref[i]),
                 edx = std::fabs(static_cast<double>(dx[i]) - dx_ref[i]);
    if (!(ey <= testing::gelu_forward_tolerance(xd[i], y_ref[i])) ||
        !(edx <= testing::gelu_backward_tolerance(xd[i], dyd[i]))) {
      ADD_FAILURE() << "x " << x[i] << ": y " << y[i] << " vs " << y_ref[i] << ", dx " << dx[i] << " vs "
                    << dx_ref[i];
      ++bad;
    }
  }
}

TEST(CpuFastGelu, NanAndInfinityAsTheReference) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {nan, inf, -inf};
  const std::vector<float> dy = {1.0f, 1.0f, 1.0f};
  std::vector<float> y(3, 0.0f), dx(3, 0.0f);
  cpu_fast::gelu_forward(x.data(), y.data(), 3);
  cpu_fast::gelu_backward(x.data(), dy.data(), dx.data(), 3);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], inf);
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_TRUE(std::isnan(dx[0]));
  EXPECT_TRUE(std::isnan(dx[1])) << "PyTorch too: x phi(x) is inf * 0 at +inf";
}

}  // namespace
}  // namespace engine
