// GELU reference (kernels/cpu/gelu.h): gradient check, hand-computed values, NaN/inf rules, float vs double;
// the GELU layer (layers/gelu.h) runs the op; the scale op and the Mul layer (airbench's output scaling).

#include "kernels/cpu/gelu.h"

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/scale.h"
#include "layers/gelu.h"
#include "layers/model.h"
#include "layers/mul.h"
#include "layers/sequential.h"
#include "tests/common/gradcheck.h"
#include "tests/cpu/layer_test_util.h"

namespace engine::cpu {
namespace {

using testing::distinct_values;
using testing::GradCheckCase;

TEST(GeluReference, GradientCheck) {
  // 945 distinct values 0.01 apart over about [-4.7, 4.7]: both tails and the bend. GELU is
  // smooth, so no element is a kink.
  std::vector<double> x = distinct_values(3 * 5 * 7 * 9, 21);
  const auto n = static_cast<std::int64_t>(x.size());
  GradCheckCase c{{{"x", &x}},
                  [&](std::uint64_t) {
                    std::vector<double> y(x.size());
                    gelu_forward(x.data(), y.data(), n);
                    return y;
                  },
                  [&](const std::vector<double>& dy, std::uint64_t) {
                    std::vector<double> dx(x.size(), 123.0);  // garbage: backward must overwrite
                    gelu_backward(x.data(), dy.data(), dx.data(), n);
                    return std::vector<std::vector<double>>{dx};
                  }};
  EXPECT_GRADIENTS_MATCH(c);
}

TEST(GeluReference, KnownValues) {
  // From the standard normal table: Phi(1) = 0.8413447460685429, Phi(2) = 0.9772498680518208,
  // Phi(-3) = 0.0013498980316301; phi(1) = 0.24197072451914337, phi(2) = 0.05399096651318806,
  // phi(3) = 0.0044318484119380. gelu(x) = x Phi(x), gelu'(x) = Phi(x) + x phi(x), dx = dy gelu'(x).
  const std::vector<double> x = {-3.0, -1.0, 0.0, 1.0, 2.0};
  const std::vector<double> dy = {1.0, 2.0, 3.0, 4.0, 5.0};
  const std::vector<double> y_expected = {-3.0 * 0.0013498980316301, -(1.0 - 0.8413447460685429), 0.0,
                                          0.8413447460685429, 2.0 * 0.9772498680518208};
  const std::vector<double> grad_expected = {
      0.0013498980316301 - 3.0 * 0.0044318484119380, (1.0 - 0.8413447460685429) - 0.24197072451914337, 0.5,
      0.8413447460685429 + 0.24197072451914337, 0.9772498680518208 + 2.0 * 0.05399096651318806};
  std::vector<double> y(5), dx(5, 99.0);
  gelu_forward(x.data(), y.data(), 5);
  gelu_backward(x.data(), dy.data(), dx.data(), 5);
  for (std::size_t i = 0; i < 5; ++i) {
    // The table values carry 13 to 16 significant digits.
    EXPECT_NEAR(y[i], y_expected[i], 1e-13) << "x = " << x[i];
    EXPECT_NEAR(dx[i], dy[i] * grad_expected[i], 1e-12) << "x = " << x[i];
  }
}

TEST(GeluReference, KnownValuesInTheTailsKeepTheirRelativeAccuracy) {
  // gelu(-10) = -10 Phi(-10), Phi(-10) = 7.619853024160527e-24: 1 + erf would give 0 here; erfc keeps it.
  const double x = -10.0;
  double y = 0.0;
  gelu_forward(&x, &y, 1);
  EXPECT_NEAR(y / (-10.0 * 7.619853024160527e-24), 1.0, 1e-13);
}

TEST(GeluReference, NanAndInfinityFollowPyTorch) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> x = {nan, inf, -inf};
  const std::vector<double> dy = {1.0, 1.0, 1.0};
  std::vector<double> y(3), dx(3);
  gelu_forward(x.data(), y.data(), 3);
  gelu_backward(x.data(), dy.data(), dx.data(), 3);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], inf);
  EXPECT_TRUE(std::isnan(y[2])) << "torch.nn.functional.gelu(-inf) is -inf * 0 = nan";
  EXPECT_TRUE(std::isnan(dx[0]));
  EXPECT_TRUE(std::isnan(dx[1])) << "PyTorch too: x phi(x) is inf * 0 at +inf";
}

TEST(GeluReference, FloatIsTheDoubleRoundedOnce) {
  // Both instantiations compute in double; the float one rounds the double result once.
  std::vector<double> xd = testing::random_values(945, 22, -6.0, 6.0);
  std::vector<float> xf(xd.begin(), xd.end());
  for (std::size_t i = 0; i < xd.size(); ++i) xd[i] = static_cast<double>(xf[i]);
  const std::vector<double> dyd = testing::random_values(945, 23);
  std::vector<float> dyf(dyd.begin(), dyd.end());
  std::vector<double> dyd_f(dyf.begin(), dyf.end());
  std::vector<double> yd(945), dxd(945);
  std::vector<float> yf(945), dxf(945);
  gelu_forward(xd.data(), yd.data(), 945);
  gelu_forward(xf.data(), yf.data(), 945);
  gelu_backward(xd.data(), dyd_f.data(), dxd.data(), 945);
  gelu_backward(xf.data(), dyf.data(), dxf.data(), 945);
  for (std::size_t i = 0; i < 945; ++i) {
    EXPECT_EQ(yf[i], static_cast<float>(yd[i])) << i;
    EXPECT_EQ(dxf[i], static_cast<float>(dxd[i])) << i;
  }
}

TEST(ScaleReference, KnownValuesAndRoundingOnce) {
  const std::vector<double> x = {9.0, -18.0, 0.0, 1.0};
  std::vector<double> y(4);
  scale(x.data(), 1.0 / 9.0, y.data(), 4);
  EXPECT_EQ(y, (std::vector<double>{1.0, -2.0, 0.0, 1.0 / 9.0}));
  // float: the double product rounded once (1/9 itself is not rounded to float first).
  const float xf = 3.0f;
  float yf = 0.0f;
  scale(&xf, 1.0 / 9.0, &yf, 1);
  EXPECT_EQ(yf, static_cast<float>(3.0 * (1.0 / 9.0)));
}

}  // namespace
}  // namespace engine::cpu

namespace engine::layers {
namespace {

using testing::cpu_context;
using testing::host_values;
using testing::random_tensor;

TEST(GeluLayer, ForwardAndBackwardAreTheReference) {
  auto net = std::make_unique<Sequential>();
  net->emplace<GELU>();
  net->emplace<Mul>(1.0 / 9.0);
  Model m("gelu_mul", std::move(net));
  m.set_needs_input_grad(true);
  m.finalize(cpu_context(DType::F64), 0);
  EXPECT_EQ(m.parameter_count(), 0) << "GELU and Mul are stateless";
  const Tensor x = random_tensor({3, 5, 7, 9}, DType::F64, 31, -4.0, 4.0);
  const Tensor dy = random_tensor({3, 5, 7, 9}, DType::F64, 32);
  const std::vector<double> y = host_values(m.forward(x, Mode::Train));
  const std::vector<double> dx = host_values(m.backward(dy));
  const std::vector<double> xv = host_values(x), dyv = host_values(dy);
  const auto n = static_cast<std::int64_t>(xv.size());
  std::vector<double> y_ref(xv.size()), dx_ref(xv.size()), dy_scaled(xv.size());
  cpu::gelu_forward(xv.data(), y_ref.data(), n);
  cpu::scale(y_ref.data(), 1.0 / 9.0, y_ref.data(), n);
  cpu::scale(dyv.data(), 1.0 / 9.0, dy_scaled.data(), n);
  cpu::gelu_backward(xv.data(), dy_scaled.data(), dx_ref.data(), n);
  EXPECT_EQ(y, y_ref);
  EXPECT_EQ(dx, dx_ref);
}

TEST(GeluLayer, MulRefusesANonFiniteScale) {
  // Braces: `Mul(std::numeric_limits<double>::infinity())` alone would parse as a declaration.
  EXPECT_THROW(Mul{std::numeric_limits<double>::infinity()}, Error);
}

}  // namespace
}  // namespace engine::layers
