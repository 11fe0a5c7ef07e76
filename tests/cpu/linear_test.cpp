// Tests of the linear CPU reference: hand-computed values (forward and backward), gradient checks with and
// without bias, shape errors, and float against double.

#include "kernels/cpu/linear.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/common/float_checks.h"
#include "tests/common/gradcheck.h"

namespace engine::cpu {
namespace {

using engine::testing::as_floats;
using engine::testing::expect_rounded_once;
using engine::testing::GradCheckCase;
using engine::testing::random_values;

void expect_values(const std::vector<double>& actual, const std::vector<double>& expected, const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t i = 0; i < expected.size(); ++i)
    EXPECT_DOUBLE_EQ(actual[i], expected[i]) << what << "[" << i << "]";
}

struct Grads {
  std::vector<double> dx, dw, db;
};

Grads backward(const LinearShape& g, const std::vector<double>& x, const std::vector<double>& w,
               const std::vector<double>& dy) {
  Grads out{std::vector<double>(g.x_size()), std::vector<double>(g.w_size()),
            std::vector<double>(static_cast<std::size_t>(g.out_features))};
  linear_backward(g, x.data(), w.data(), dy.data(), out.dx.data(), out.dw.data(), out.db.data());
  return out;
}

TEST(LinearReference, KnownValuesForwardBackward) {
  // x[2,3] = [[1,2,3],[4,5,6]], w[out=2, in=3] = [[1,0,-1],[2,1,0]], b = [0.5,-1]. y = x w^T + b:
  //   y00 = 1 - 3 + 0.5 = -1.5     y01 = 2 + 2 - 1 = 3
  //   y10 = 4 - 6 + 0.5 = -1.5     y11 = 8 + 5 - 1 = 12
  const LinearShape g = linear_shape({2, 3}, {2, 3});
  const std::vector<double> x = {1, 2, 3, 4, 5, 6}, w = {1, 0, -1, 2, 1, 0}, b = {0.5, -1};
  std::vector<double> y(4);
  linear_forward(g, x.data(), w.data(), b.data(), y.data());
  expect_values(y, {-1.5, 3, -1.5, 12}, "y");

  // dy = [[1,2],[3,-1]]:
  //   dx = dy w:    dx0 = 1*[1,0,-1] + 2*[2,1,0] = [5,2,-1]     dx1 = 3*[1,0,-1] - [2,1,0] = [1,-1,-3]
  //   dw = dy^T x:  dw0 = 1*[1,2,3] + 3*[4,5,6] = [13,17,21]    dw1 = 2*[1,2,3] - [4,5,6] = [-2,-1,0]
  //   db = column sums of dy = [4, 1]
  const Grads d = backward(g, x, w, {1, 2, 3, -1});
  expect_values(d.dx, {5, 2, -1, 1, -1, -3}, "dx");
  expect_values(d.dw, {13, 17, 21, -2, -1, 0}, "dw");
  expect_values(d.db, {4, 1}, "db");
}

void check_linear_gradients(const LinearShape& g, bool with_bias) {
  std::vector<double> x = random_values(g.x_size(), 31);
  std::vector<double> w = random_values(g.w_size(), 32);
  std::vector<double> b = random_values(static_cast<std::size_t>(g.out_features), 33);
  GradCheckCase c;
  c.inputs = {{"x", &x}, {"w", &w}};
  if (with_bias) c.inputs.push_back({"b", &b});
  c.forward = [&](std::uint64_t) {
    std::vector<double> y(g.y_size());
    linear_forward(g, x.data(), w.data(), with_bias ? b.data() : nullptr, y.data());
    return y;
  };
  c.backward = [&](const std::vector<double>& dy, std::uint64_t) {
    Grads d = backward(g, x, w, dy);
    std::vector<std::vector<double>> grads = {d.dx, d.dw};
    if (with_bias) grads.push_back(d.db);
    return grads;
  };
  EXPECT_GRADIENTS_MATCH(c);
}

TEST(LinearReference, GradientCheckWithBias) { check_linear_gradients(linear_shape({5, 7}, {3, 7}), true); }
TEST(LinearReference, GradientCheckNoBias) { check_linear_gradients(linear_shape({3, 11}, {6, 11}), false); }

TEST(LinearReference, BackwardWithoutDxGivesSameWeightGradients) {
  const LinearShape g = linear_shape({4, 5}, {3, 5});
  const std::vector<double> x = random_values(g.x_size(), 1), w = random_values(g.w_size(), 2);
  const std::vector<double> dy = random_values(g.y_size(), 3);
  const Grads full = backward(g, x, w, dy);
  std::vector<double> dw(g.w_size(), 7.0), db(3, 7.0);  // garbage: must be overwritten
  linear_backward(g, x.data(), w.data(), dy.data(), static_cast<double*>(nullptr), dw.data(), db.data());
  EXPECT_EQ(dw, full.dw);
  EXPECT_EQ(db, full.db);
}

TEST(LinearReference, RejectsInvalidShapes) {
  EXPECT_THROW(linear_shape({2, 3}, {4, 5}), Error);  // in_features mismatch
  EXPECT_THROW(linear_shape({0, 3}, {4, 3}), Error);
  EXPECT_THROW(linear_shape({2, 3}, {0, 3}), Error);
  const LinearShape bad{.n = 2, .in_features = -1, .out_features = 3};
  std::vector<double> buf(16);
  EXPECT_THROW(linear_forward(bad, buf.data(), buf.data(), static_cast<const double*>(nullptr), buf.data()),
               Error);
  try {
    linear_shape({2, 3}, {4, 5});
    ADD_FAILURE() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has 3 features, weight [4, 5] expects 5"), std::string::npos)
        << e.what();
  }
}

TEST(LinearReference, FloatMatchesDouble) {
  // Float inputs make every product exact in double, and both instantiations run the same double sums, so
  // the float result is the double one rounded once: |f - d| <= 2^-24 |d| (half an ulp).
  const LinearShape g = linear_shape({9, 100}, {7, 100});
  const std::vector<float> xf = as_floats(random_values(g.x_size(), 41)),
                           wf = as_floats(random_values(g.w_size(), 42));
  const std::vector<float> bf = as_floats(random_values(7, 43)),
                           dyf = as_floats(random_values(g.y_size(), 44));
  const std::vector<double> xd(xf.begin(), xf.end()), wd(wf.begin(), wf.end()), bd(bf.begin(), bf.end()),
      dyd(dyf.begin(), dyf.end());

  std::vector<float> yf(g.y_size()), dxf(g.x_size()), dwf(g.w_size()), dbf(7);
  std::vector<double> yd(g.y_size());
  linear_forward(g, xf.data(), wf.data(), bf.data(), yf.data());
  linear_forward(g, xd.data(), wd.data(), bd.data(), yd.data());
  linear_backward(g, xf.data(), wf.data(), dyf.data(), dxf.data(), dwf.data(), dbf.data());
  const Grads d = backward(g, xd, wd, dyd);

  expect_rounded_once(yf, yd, "y");
  expect_rounded_once(dxf, d.dx, "dx");
  expect_rounded_once(dwf, d.dw, "dw");
  expect_rounded_once(dbf, d.db, "db");
}

}  // namespace
}  // namespace engine::cpu
