// Softmax over the last axis of [rows, k] (a classifier's [N, classes]):
//  - the float64 reference (kernels/cpu/softmax.h): gradient check on odd sizes (outputs poisoned with NaN
//    before each call), hand-computed values, no overflow on large logits (the max subtracted), NaN rows;
//  - the fast float32 path (kernels/cpu_fast/softmax.h, kernels/softmax_math.h's formulas, the GPU's) against
//    the reference on odd sizes below and above the threading threshold, outputs poisoned, within the
//    per-element bounds of tests/common/softmax_tolerance.h, in place too;
//  - the Softmax layer (layers/softmax.h) runs the op in float64 and float32, and refuses another rank.

#include "kernels/cpu/softmax.h"

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu_fast/softmax.h"
#include "layers/model.h"
#include "layers/sequential.h"
#include "layers/softmax.h"
#include "tests/common/gradcheck.h"
#include "tests/common/softmax_tolerance.h"
#include "tests/cpu/layer_test_util.h"

namespace engine {
namespace {

namespace lt = layers::testing;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Size {
  std::int64_t rows, k;
};

TEST(SoftmaxReference, GradientCheck) {
  for (const Size s : {Size{7, 13}, Size{3, 1}, Size{1, 33}, Size{5, 10}}) {
    SCOPED_TRACE(::testing::Message() << s.rows << " x " << s.k);
    std::vector<double> x = testing::random_values(static_cast<std::size_t>(s.rows * s.k), 41, -3.0, 3.0);
    testing::GradCheckCase c{{{"x", &x}},
                             [&](std::uint64_t) {
                               std::vector<double> y(x.size(), kNaN);
                               cpu::softmax_forward(x.data(), y.data(), s.rows, s.k);
                               return y;
                             },
                             [&](const std::vector<double>& dy, std::uint64_t) {
                               std::vector<double> y(x.size(), kNaN), dx(x.size(), kNaN);
                               cpu::softmax_forward(x.data(), y.data(), s.rows, s.k);
                               cpu::softmax_backward(y.data(), dy.data(), dx.data(), s.rows, s.k);
                               return std::vector<std::vector<double>>{dx};
                             }};
    EXPECT_GRADIENTS_MATCH(c);
  }
}

TEST(SoftmaxReference, KnownValues) {
  // softmax(0, ln 2, ln 5) = (1, 2, 5) / 8; a row of one value is 1 with a zero gradient.
  const std::vector<double> x = {0.0, std::log(2.0), std::log(5.0), 4.0};
  std::vector<double> y(4, kNaN);
  cpu::softmax_forward(x.data(), y.data(), 1, 3);
  cpu::softmax_forward(x.data() + 3, y.data() + 3, 1, 1);
  EXPECT_NEAR(y[0], 1.0 / 8.0, 1e-16);
  EXPECT_NEAR(y[1], 2.0 / 8.0, 1e-16);
  EXPECT_NEAR(y[2], 5.0 / 8.0, 1e-16);
  EXPECT_EQ(y[3], 1.0);
  // dx = y (dy - sum dy y): dy = (1, 0, 0) gives d = 1/8, dx = (1/8 * 7/8, -2/8 * 1/8, -5/8 * 1/8).
  const std::vector<double> dy = {1.0, 0.0, 0.0, 3.0};
  std::vector<double> dx(4, kNaN);
  cpu::softmax_backward(y.data(), dy.data(), dx.data(), 1, 3);
  cpu::softmax_backward(y.data() + 3, dy.data() + 3, dx.data() + 3, 1, 1);
  EXPECT_NEAR(dx[0], 7.0 / 64.0, 1e-16);
  EXPECT_NEAR(dx[1], -2.0 / 64.0, 1e-16);
  EXPECT_NEAR(dx[2], -5.0 / 64.0, 1e-16);
  EXPECT_EQ(dx[3], 0.0);
}

TEST(SoftmaxReference, LargeLogitsDoNotOverflowAndNanSpreadsOverItsRow) {
  // e^1000 overflows double and e^100 float: the max subtracted, both paths give (1, e, e^2) / (1 + e + e^2).
  const double e = std::exp(1.0), s = 1.0 + e + e * e;
  for (const double base : {1000.0, 100.0}) {
    const std::vector<double> x = {base, base + 1.0, base + 2.0};
    std::vector<double> y(3, kNaN);
    cpu::softmax_forward(x.data(), y.data(), 1, 3);
    EXPECT_NEAR(y[0], 1.0 / s, 1e-15);
    EXPECT_NEAR(y[2], e * e / s, 1e-15);
  }
  const std::vector<float> xf = {100.0F, 101.0F, 102.0F};
  std::vector<float> yf(3, NAN);
  cpu_fast::softmax_forward(xf.data(), yf.data(), 1, 3);
  EXPECT_NEAR(yf[0], 1.0 / s, 1e-6);
  EXPECT_NEAR(yf[2], e * e / s, 1e-6);
  // A NaN anywhere in a row makes that row NaN (as PyTorch), and leaves the next row alone.
  const std::vector<double> xn = {1.0, kNaN, 2.0, 0.0, 0.0};
  std::vector<double> yn(5, 7.0);
  cpu::softmax_forward(xn.data(), yn.data(), 1, 3);
  cpu::softmax_forward(xn.data() + 3, yn.data() + 3, 1, 2);
  const std::vector<float> xnf(xn.begin(), xn.end());
  std::vector<float> ynf(5, 7.0F);
  cpu_fast::softmax_forward(xnf.data(), ynf.data(), 1, 3);
  cpu_fast::softmax_forward(xnf.data() + 3, ynf.data() + 3, 1, 2);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(std::isnan(yn[i])) << i;
    EXPECT_TRUE(std::isnan(ynf[i])) << i << " (fast path)";
  }
  EXPECT_EQ(yn[3], 0.5);
  EXPECT_EQ(ynf[4], 0.5F);
}

// The fast path against the reference (tests/common/softmax_tolerance.h's inputs and bounds), outputs
// poisoned with NaN first; backward from the fast forward's y.
void check_fast(std::int64_t rows, std::int64_t k, bool in_place) {
  SCOPED_TRACE(::testing::Message() << rows << " x " << k << (in_place ? " in place" : ""));
  const testing::SoftmaxInputs in = testing::softmax_inputs(rows, k, 43);
  std::vector<float> y = in_place ? in.x : std::vector<float>(in.x.size(), NAN);
  cpu_fast::softmax_forward(in_place ? y.data() : in.x.data(), y.data(), rows, k);
  std::vector<float> dx = in_place ? in.dy : std::vector<float>(in.dy.size(), NAN);
  cpu_fast::softmax_backward(y.data(), in_place ? dx.data() : in.dy.data(), dx.data(), rows, k);
  EXPECT_EQ(testing::softmax_mismatches(in, y, dx, rows, k), "");
}

// The fast path's row max runs 16 lanes over the row's first k - k mod 16 values and the rest in order: a NaN
// in either part makes the row NaN, -inf values give e = +0, and the max may sit in either part.
TEST(SoftmaxCpuFast, NaNAndInfinitiesInTheVectorBodyAndTheTail) {
  constexpr std::int64_t k = 37;  // two 16-lane steps and a tail of 5
  for (const std::int64_t at : {std::int64_t{3}, std::int64_t{20}, std::int64_t{34}}) {
    SCOPED_TRACE(at);
    std::vector<float> x(k, 0.0F), y(k, 7.0F);
    x[static_cast<std::size_t>(at)] = NAN;
    cpu_fast::softmax_forward(x.data(), y.data(), 1, k);
    for (const float v : y) EXPECT_TRUE(std::isnan(v));
    x[static_cast<std::size_t>(at)] = 5.0F;  // the max, then -inf beside it: e = +0 there
    x[static_cast<std::size_t>((at + 1) % k)] = -INFINITY;
    std::vector<float> yf(k, NAN);
    cpu_fast::softmax_forward(x.data(), yf.data(), 1, k);
    const std::vector<double> xd(x.begin(), x.end());
    std::vector<double> yd(k, kNaN);
    cpu::softmax_forward(xd.data(), yd.data(), 1, k);
    EXPECT_EQ(yf[static_cast<std::size_t>((at + 1) % k)], 0.0F);
    for (std::int64_t j = 0; j < k; ++j) {
      const auto i = static_cast<std::size_t>(j);
      EXPECT_NEAR(yf[i], yd[i], testing::kSoftmaxEps * std::fabs(yd[i]) * (5.0 + 5.0 + k + 9.0)) << j;
    }
  }
}

TEST(SoftmaxCpuFast, WithinFloatRoundingOfTheReference) {
  check_fast(7, 13, false);
  check_fast(3, 1, false);
  check_fast(37, 1001, false);  // 37037 values: above the threading threshold
  check_fast(7, 13, true);
  check_fast(37, 1001, true);
}

TEST(SoftmaxLayer, ForwardAndBackwardAreTheReference) {
  auto net = std::make_unique<layers::Sequential>();
  net->emplace<layers::Softmax>();
  layers::Model m("softmax", std::move(net));
  m.set_needs_input_grad(true);
  m.finalize(lt::cpu_context(DType::F64), 0);
  EXPECT_EQ(m.parameter_count(), 0);
  const Tensor x = lt::random_tensor({5, 11}, DType::F64, 31, -4.0, 4.0);
  const Tensor dy = lt::random_tensor({5, 11}, DType::F64, 32);
  const std::vector<double> y = lt::host_values(m.forward(x, layers::Mode::Train));
  const std::vector<double> dx = lt::host_values(m.backward(dy));
  const std::vector<double> xv = lt::host_values(x), dyv = lt::host_values(dy);
  std::vector<double> y_ref(xv.size(), kNaN), dx_ref(xv.size(), kNaN);
  cpu::softmax_forward(xv.data(), y_ref.data(), 5, 11);
  cpu::softmax_backward(y_ref.data(), dyv.data(), dx_ref.data(), 5, 11);
  EXPECT_EQ(y, y_ref);
  EXPECT_EQ(dx, dx_ref);
}

TEST(SoftmaxLayer, Float32RunsTheFastPath) {
  auto net = std::make_unique<layers::Sequential>();
  net->emplace<layers::Softmax>();
  layers::Model m("softmax", std::move(net));
  m.set_needs_input_grad(true);
  m.finalize(lt::cpu_context(DType::F32), 0);
  const Tensor x = lt::random_tensor({3, 7}, DType::F32, 33, -4.0, 4.0);
  const Tensor dy = lt::random_tensor({3, 7}, DType::F32, 34);
  const std::vector<double> y = lt::host_values(m.forward(x, layers::Mode::Train));
  const std::vector<double> dx = lt::host_values(m.backward(dy));
  std::vector<float> xv(21), dyv(21), y_fast(21, NAN), dx_fast(21, NAN);
  for (std::size_t i = 0; i < 21; ++i) {
    xv[i] = static_cast<float>(lt::host_values(x)[i]);
    dyv[i] = static_cast<float>(lt::host_values(dy)[i]);
  }
  cpu_fast::softmax_forward(xv.data(), y_fast.data(), 3, 7);
  cpu_fast::softmax_backward(y_fast.data(), dyv.data(), dx_fast.data(), 3, 7);
  EXPECT_EQ(y, std::vector<double>(y_fast.begin(), y_fast.end()));
  EXPECT_EQ(dx, std::vector<double>(dx_fast.begin(), dx_fast.end()));
}

TEST(SoftmaxLayer, RefusesAnInputThatIsNotNByClasses) {
  auto net = std::make_unique<layers::Sequential>();
  net->emplace<layers::Softmax>();
  layers::Model m("softmax", std::move(net));
  m.finalize(lt::cpu_context(DType::F64), 0);
  const Tensor x = lt::random_tensor({2, 3, 4, 4}, DType::F64, 35);
  try {
    m.forward(x, layers::Mode::Train);
    ADD_FAILURE() << "a 4-d input was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("only 2-d [N, classes]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace engine
