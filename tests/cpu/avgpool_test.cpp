// Global average pool reference: gradient check, hand-computed values, float vs double.

#include "kernels/cpu/avgpool.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/common/gradcheck.h"

namespace engine::cpu {
namespace {

constexpr int kN = 3, kC = 5, kH = 7, kW = 9;

TEST(GlobalAvgPoolReference, GradientCheck) {
  std::vector<double> x = testing::random_values(kN * kC * kH * kW, 31);
  testing::GradCheckCase c{{{"x", &x}},
                           [&](std::uint64_t) {
                             std::vector<double> y(kN * kC);
                             global_avgpool_forward(kN, kC, kH, kW, x.data(), y.data());
                             return y;
                           },
                           [&](const std::vector<double>& dy, std::uint64_t) {
                             std::vector<double> dx(x.size(), 123.0);
                             global_avgpool_backward(kN, kC, kH, kW, dy.data(), dx.data());
                             return std::vector<std::vector<double>>{dx};
                           }};
  EXPECT_GRADIENTS_MATCH(c);
}

TEST(GlobalAvgPoolReference, KnownValues) {
  // n=1, c=2, 2x2 planes: [1,2,3,4] -> 10/4 = 2.5; [-1,-1,5,9] -> 12/4 = 3.
  // Backward spreads dy / 4: dy = [4, -8] -> 1 on every cell of plane 0, -2 on every cell of plane 1.
  const std::vector<double> x = {1, 2, 3, 4, -1, -1, 5, 9};
  std::vector<double> y(2);
  global_avgpool_forward(1, 2, 2, 2, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<double>{2.5, 3.0}));
  const std::vector<double> dy = {4, -8};
  std::vector<double> dx(8, 99.0);
  global_avgpool_backward(1, 2, 2, 2, dy.data(), dx.data());
  EXPECT_EQ(dx, (std::vector<double>{1, 1, 1, 1, -2, -2, -2, -2}));
}

TEST(GlobalAvgPoolReference, RejectsEmptyShape) {
  std::vector<double> x(4), y(4);
  EXPECT_THROW(global_avgpool_forward(1, 0, 2, 2, x.data(), y.data()), Error);
  EXPECT_THROW(global_avgpool_backward(1, 1, 2, -1, y.data(), x.data()), Error);
}

TEST(GlobalAvgPoolReference, FloatMatchesDouble) {
  // On the same float-representable inputs both instantiations do identical double arithmetic; float then
  // rounds once, so |float - double| <= 2^-24 |double| (round to nearest).
  const std::size_t in = kN * kC * kH * kW, out = kN * kC;
  const std::vector<double> x0 = testing::random_values(in, 32), dy0 = testing::random_values(out, 33);
  const std::vector<float> xf(x0.begin(), x0.end()), dyf(dy0.begin(), dy0.end());
  const std::vector<double> xd(xf.begin(), xf.end()), dyd(dyf.begin(), dyf.end());
  std::vector<double> yd(out), dxd(in);
  std::vector<float> yf(out), dxf(in);
  global_avgpool_forward(kN, kC, kH, kW, xd.data(), yd.data());
  global_avgpool_forward(kN, kC, kH, kW, xf.data(), yf.data());
  global_avgpool_backward(kN, kC, kH, kW, dyd.data(), dxd.data());
  global_avgpool_backward(kN, kC, kH, kW, dyf.data(), dxf.data());
  for (std::size_t i = 0; i < out; ++i)
    EXPECT_NEAR(static_cast<double>(yf[i]), yd[i], 0x1p-24 * std::abs(yd[i]));
  for (std::size_t i = 0; i < in; ++i)
    EXPECT_NEAR(static_cast<double>(dxf[i]), dxd[i], 0x1p-24 * std::abs(dxd[i]));
}

}  // namespace
}  // namespace engine::cpu
