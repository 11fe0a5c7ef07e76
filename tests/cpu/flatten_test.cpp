// Flatten reference: gradient check, known values (a copy both ways), in place, float vs double.

#include "kernels/cpu/flatten.h"

#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/common/gradcheck.h"

namespace engine::cpu {
namespace {

constexpr int kN = 3, kC = 5, kH = 7, kW = 9;

TEST(FlattenReference, GradientCheck) {
  std::vector<double> x = testing::random_values(kN * kC * kH * kW, 41);
  testing::GradCheckCase c{{{"x", &x}},
                           [&](std::uint64_t) {
                             std::vector<double> y(x.size());
                             flatten_forward(kN, kC, kH, kW, x.data(), y.data());
                             return y;
                           },
                           [&](const std::vector<double>& dy, std::uint64_t) {
                             std::vector<double> dx(x.size(), 123.0);
                             flatten_backward(kN, kC, kH, kW, dy.data(), dx.data());
                             return std::vector<std::vector<double>>{dx};
                           }};
  EXPECT_GRADIENTS_MATCH(c);
}

TEST(FlattenReference, KnownValues) {
  // [1, 2, 1, 2] -> [1, 4]: element (0, c, 0, w) sits at c*2 + w in both layouts, so y is x and backward
  // returns dy unchanged.
  const std::vector<double> x = {1, 2, 3, 4};
  std::vector<double> y(4, 0.0), dx(4, 0.0);
  flatten_forward(1, 2, 1, 2, x.data(), y.data());
  EXPECT_EQ(y, x);
  const std::vector<double> dy = {-1, 5, 7, 0.5};
  flatten_backward(1, 2, 1, 2, dy.data(), dx.data());
  EXPECT_EQ(dx, dy);
  // In place is a no-op.
  std::vector<double> z = {9, 8, 7, 6};
  flatten_forward(1, 2, 1, 2, z.data(), z.data());
  EXPECT_EQ(z, (std::vector<double>{9, 8, 7, 6}));
}

TEST(FlattenReference, RejectsEmptyShape) {
  std::vector<double> x(4), y(4);
  EXPECT_THROW(flatten_forward(0, 2, 1, 2, x.data(), y.data()), Error);
}

TEST(FlattenReference, FloatMatchesDouble) {
  // A copy: float equals double exactly on the same float-representable values.
  const std::vector<double> x0 = testing::random_values(kN * kC * kH * kW, 42);
  const std::vector<float> xf(x0.begin(), x0.end());
  std::vector<float> yf(xf.size()), dxf(xf.size());
  flatten_forward(kN, kC, kH, kW, xf.data(), yf.data());
  flatten_backward(kN, kC, kH, kW, yf.data(), dxf.data());
  EXPECT_EQ(yf, xf);
  EXPECT_EQ(dxf, xf);
}

}  // namespace
}  // namespace engine::cpu
