// ReLU reference: gradient check, hand-computed values, float vs double.

#include "kernels/cpu/relu.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/gradcheck.h"

namespace engine::cpu {
namespace {

using testing::distinct_values;
using testing::GradCheckCase;

TEST(ReluReference, GradientCheck) {
  // 3*5*7*9 = 945 values 0.01 apart around 0; n is odd so none is exactly 0 (the kink).
  std::vector<double> x = distinct_values(3 * 5 * 7 * 9, 11);
  const auto n = static_cast<std::int64_t>(x.size());
  GradCheckCase c{{{"x", &x}},
                  [&](std::uint64_t) {
                    std::vector<double> y(x.size());
                    relu_forward(x.data(), y.data(), n);
                    return y;
                  },
                  [&](const std::vector<double>& dy, std::uint64_t) {
                    std::vector<double> dx(x.size(), 123.0);  // garbage: backward must overwrite
                    relu_backward(x.data(), dy.data(), dx.data(), n);
                    return std::vector<std::vector<double>>{dx};
                  }};
  EXPECT_GRADIENTS_MATCH(c);
}

TEST(ReluReference, KnownValues) {
  // y = max(x, 0); dx = dy where x > 0, and 0 at x == 0 exactly (PyTorch's rule).
  const std::vector<double> x = {-2.0, -0.5, 0.0, 0.5, 3.0};
  const std::vector<double> dy = {1.0, 2.0, 3.0, 4.0, 5.0};
  std::vector<double> y(5), dx(5, 99.0);
  relu_forward(x.data(), y.data(), 5);
  relu_backward(x.data(), dy.data(), dx.data(), 5);
  EXPECT_EQ(y, (std::vector<double>{0.0, 0.0, 0.0, 0.5, 3.0}));
  EXPECT_EQ(dx, (std::vector<double>{0.0, 0.0, 0.0, 4.0, 5.0}));
}

TEST(ReluReference, KnownValuesNaNPropagatesWithZeroGradient) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double x = nan, dy = 1.0;
  double y = 0.0, dx = 5.0;
  relu_forward(&x, &y, 1);
  relu_backward(&x, &dy, &dx, 1);
  EXPECT_TRUE(std::isnan(y));
  EXPECT_EQ(dx, 0.0);
}

TEST(ReluReference, FloatMatchesDouble) {
  // ReLU only selects and copies: the float result must equal the double result exactly.
  std::vector<double> xd = testing::random_values(945, 12);
  std::vector<float> xf(xd.begin(), xd.end());
  for (std::size_t i = 0; i < xd.size(); ++i) xd[i] = static_cast<double>(xf[i]);  // same inputs
  const std::vector<double> dyd = testing::random_values(945, 13);
  const std::vector<float> dyf(dyd.begin(), dyd.end());
  std::vector<double> yd(945), dxd(945);
  std::vector<float> yf(945), dxf(945);
  relu_forward(xd.data(), yd.data(), 945);
  relu_forward(xf.data(), yf.data(), 945);
  relu_backward(xd.data(), dyd.data(), dxd.data(), 945);
  relu_backward(xf.data(), dyf.data(), dxf.data(), 945);
  for (std::size_t i = 0; i < 945; ++i) {
    EXPECT_EQ(static_cast<double>(yf[i]), yd[i]) << i;
    EXPECT_EQ(dxf[i], static_cast<float>(dxd[i])) << i;
  }
}

}  // namespace
}  // namespace engine::cpu
