// Tests of the conv2d CPU reference: hand-computed values (forward and backward), gradient checks over
// strides, paddings, non-square kernels and odd sizes, geometry errors, and float against double.

#include "kernels/cpu/conv2d.h"

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

Conv2dShape make_shape(int n, int c, int h, int w, int k, int r, int s, int stride_h, int stride_w, int pad_h,
                       int pad_w) {
  return Conv2dShape{.n = n,
                     .c = c,
                     .h = h,
                     .w = w,
                     .k = k,
                     .r = r,
                     .s = s,
                     .stride_h = stride_h,
                     .stride_w = stride_w,
                     .pad_h = pad_h,
                     .pad_w = pad_w};
}

void expect_values(const std::vector<double>& actual, const std::vector<double>& expected, const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t i = 0; i < expected.size(); ++i)
    EXPECT_DOUBLE_EQ(actual[i], expected[i]) << what << "[" << i << "]";
}

struct Grads {
  std::vector<double> dx, dw, db;
};

Grads backward(const Conv2dShape& g, const std::vector<double>& x, const std::vector<double>& w,
               const std::vector<double>& dy) {
  Grads out{std::vector<double>(g.x_size()), std::vector<double>(g.w_size()),
            std::vector<double>(static_cast<std::size_t>(g.k))};
  conv2d_backward(g, x.data(), w.data(), dy.data(), out.dx.data(), out.dw.data(), out.db.data());
  return out;
}

// The 3x3 input and 2x2 kernel of the known-value tests:
//   x = | 1 2 3 |     w = | 1 2 |     b = 0.5     dy = |  1 -1 |
//       | 4 5 6 |         | 3 4 |                      |  2  3 |
//       | 7 8 9 |
const std::vector<double> kX = {1, 2, 3, 4, 5, 6, 7, 8, 9};
const std::vector<double> kW = {1, 2, 3, 4};
const std::vector<double> kB = {0.5};
const std::vector<double> kDy = {1, -1, 2, 3};

TEST(Conv2dReference, KnownValuesStride1NoPadding) {
  const Conv2dShape g = make_shape(1, 1, 3, 3, 1, 2, 2, 1, 1, 0, 0);
  ASSERT_EQ(g.p(), 2);
  ASSERT_EQ(g.q(), 2);
  // y[p][q] = sum w[r][s] x[p+r][q+s] + 0.5:
  //   y00 = 1*1 + 2*2 + 3*4 + 4*5 = 37    y01 = 1*2 + 2*3 + 3*5 + 4*6 = 47
  //   y10 = 1*4 + 2*5 + 3*7 + 4*8 = 67    y11 = 1*5 + 2*6 + 3*8 + 4*9 = 77
  std::vector<double> y(4);
  conv2d_forward(g, kX.data(), kW.data(), kB.data(), y.data());
  expect_values(y, {37.5, 47.5, 67.5, 77.5}, "y");

  // db = 1 - 1 + 2 + 3 = 5.
  // dw[r][s] = sum dy[p][q] x[p+r][q+s]:
  //   dw00 = 1*1 - 1*2 + 2*4 + 3*5 = 22   dw01 = 1*2 - 1*3 + 2*5 + 3*6 = 27
  //   dw10 = 1*4 - 1*5 + 2*7 + 3*8 = 37   dw11 = 1*5 - 1*6 + 2*8 + 3*9 = 42
  // dx[i][j] = sum dy[p][q] w[i-p][j-q] (the full correlation):
  //   dx00 = 1*1 = 1          dx01 = 1*2 + (-1)*1 = 1            dx02 = (-1)*2 = -2
  //   dx10 = 1*3 + 2*1 = 5    dx11 = 1*4 - 1*3 + 2*2 + 3*1 = 8   dx12 = (-1)*4 + 3*2 = 2
  //   dx20 = 2*3 = 6          dx21 = 2*4 + 3*3 = 17              dx22 = 3*4 = 12
  // (check: sum dx = sum dy * sum w = 5 * 10 = 50.)
  const Grads d = backward(g, kX, kW, kDy);
  expect_values(d.db, {5}, "db");
  expect_values(d.dw, {22, 27, 37, 42}, "dw");
  expect_values(d.dx, {1, 1, -2, 5, 8, 2, 6, 17, 12}, "dx");
}

TEST(Conv2dReference, KnownValuesStride2Padding1) {
  const Conv2dShape g = make_shape(1, 1, 3, 3, 1, 2, 2, 2, 2, 1, 1);
  ASSERT_EQ(g.p(), 2);  // (3 + 2 - 2) / 2 + 1
  ASSERT_EQ(g.q(), 2);
  // Output (p,q) reads input rows 2p-1..2p and columns 2q-1..2q; index -1 is padding (zero).
  //   y00 = w11*x00 = 4*1 = 4                         y01 = w10*x01 + w11*x02 = 3*2 + 4*3 = 18
  //   y10 = w01*x10 + w11*x20 = 2*4 + 4*7 = 36        y11 = 1*5 + 2*6 + 3*8 + 4*9 = 77
  std::vector<double> y(4);
  conv2d_forward(g, kX.data(), kW.data(), kB.data(), y.data());
  expect_values(y, {4.5, 18.5, 36.5, 77.5}, "y");

  // db = 5. dw[r][s] = sum dy[p][q] x[2p-1+r][2q-1+s], padding terms dropped:
  //   dw00 = 3*x11 = 15                 dw01 = 2*x10 + 3*x12 = 8 + 18 = 26
  //   dw10 = -1*x01 + 3*x21 = -2 + 24 = 22
  //   dw11 = 1*x00 - 1*x02 + 2*x20 + 3*x22 = 1 - 3 + 14 + 27 = 39
  // Stride 2 = kernel 2, so windows do not overlap: input row i belongs to (p, r) = (0,1), (1,0), (1,1) for
  // i = 0, 1, 2, and likewise columns. dx[i][j] = dy[p][q] * w[r][s]:
  //   dx00 = dy00*w11 = 4    dx01 = dy01*w10 = -3   dx02 = dy01*w11 = -4
  //   dx10 = dy10*w01 = 4    dx11 = dy11*w00 = 3    dx12 = dy11*w01 = 6
  //   dx20 = dy10*w11 = 8    dx21 = dy11*w10 = 9    dx22 = dy11*w11 = 12
  const Grads d = backward(g, kX, kW, kDy);
  expect_values(d.db, {5}, "db");
  expect_values(d.dw, {15, 26, 22, 39}, "dw");
  expect_values(d.dx, {4, -3, -4, 4, 3, 6, 8, 9, 12}, "dx");
}

TEST(Conv2dReference, KnownValuesNonSquareKernel) {
  // 3x3 input, 3x2 kernel w = [[1,2],[3,4],[5,6]] (R = 3 rows, S = 2 columns), no bias: P = 1, Q = 2.
  const Conv2dShape g = make_shape(1, 1, 3, 3, 1, 3, 2, 1, 1, 0, 0);
  ASSERT_EQ(g.p(), 1);
  ASSERT_EQ(g.q(), 2);
  const std::vector<double> w = {1, 2, 3, 4, 5, 6};
  //   y0 = 1*1 + 2*2 + 3*4 + 4*5 + 5*7 + 6*8 = 120      y1 = 1*2 + 2*3 + 3*5 + 4*6 + 5*8 + 6*9 = 141
  std::vector<double> y(2);
  conv2d_forward(g, kX.data(), w.data(), static_cast<const double*>(nullptr), y.data());
  expect_values(y, {120, 141}, "y");

  // dy = [1, 1]: dw[r][s] = x[r][s] + x[r][s+1]; dx[i][j] = w[i][j] (from q=0) + w[i][j-1] (from q=1).
  //   dw = [[3,5],[9,11],[15,17]]      dx = [[1,3,2],[3,7,4],[5,11,6]]
  std::vector<double> dx(9), dw(6);
  const std::vector<double> dy = {1, 1};
  conv2d_backward(g, kX.data(), w.data(), dy.data(), dx.data(), dw.data(), static_cast<double*>(nullptr));
  expect_values(dw, {3, 5, 9, 11, 15, 17}, "dw");
  expect_values(dx, {1, 3, 2, 3, 7, 4, 5, 11, 6}, "dx");
}

TEST(Conv2dReference, KnownValuesChannelAndBatchLayout) {
  // 1x1 kernels, N = 2, C = 2, K = 2: y[n][k] = sum_c w[k][c] x[n][c], so a swapped weight layout ([C,K]
  // instead of [K,C]) or a swapped batch/channel index shows. x = [[1,2],[3,4]], w = [[1,10],[100,1000]]:
  //   y[0] = [1*1 + 10*2, 100*1 + 1000*2] = [21, 2100]    y[1] = [3 + 40, 300 + 4000] = [43, 4300]
  const Conv2dShape g = make_shape(2, 2, 1, 1, 2, 1, 1, 1, 1, 0, 0);
  const std::vector<double> x = {1, 2, 3, 4}, w = {1, 10, 100, 1000};
  std::vector<double> y(4);
  conv2d_forward(g, x.data(), w.data(), static_cast<const double*>(nullptr), y.data());
  expect_values(y, {21, 2100, 43, 4300}, "y");
  // dy = [[1,0],[0,1]] (n0 -> k0, n1 -> k1): dw[k][c] = sum_n dy[n][k] x[n][c] = [[1,2],[3,4]];
  // dx[n][c] = sum_k dy[n][k] w[k][c] = [[1,10],[100,1000]]; db = [1, 1].
  const Grads d = backward(g, x, w, {1, 0, 0, 1});
  expect_values(d.dw, {1, 2, 3, 4}, "dw");
  expect_values(d.dx, {1, 10, 100, 1000}, "dx");
  expect_values(d.db, {1, 1}, "db");
}

// Gradient check of x, w and (when with_bias) b, in double.
void check_conv_gradients(const Conv2dShape& g, bool with_bias) {
  g.validate();
  std::vector<double> x = random_values(g.x_size(), 11);
  std::vector<double> w = random_values(g.w_size(), 12);
  std::vector<double> b = random_values(static_cast<std::size_t>(g.k), 13);
  GradCheckCase c;
  c.inputs = {{"x", &x}, {"w", &w}};
  if (with_bias) c.inputs.push_back({"b", &b});
  c.forward = [&](std::uint64_t) {
    std::vector<double> y(g.y_size());
    conv2d_forward(g, x.data(), w.data(), with_bias ? b.data() : nullptr, y.data());
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

// Odd sizes throughout: batch 3, 5 input channels, 7x9 images, 4 output channels.
TEST(Conv2dReference, GradientCheckStride1Pad0WithBias) {
  check_conv_gradients(make_shape(3, 5, 7, 9, 4, 3, 3, 1, 1, 0, 0), true);
}
TEST(Conv2dReference, GradientCheckStride1Pad1NoBias) {
  check_conv_gradients(make_shape(3, 5, 7, 9, 4, 3, 3, 1, 1, 1, 1), false);
}
TEST(Conv2dReference, GradientCheckStride2Pad1WithBias) {
  check_conv_gradients(make_shape(3, 5, 7, 9, 4, 3, 3, 2, 2, 1, 1), true);
}
TEST(Conv2dReference, GradientCheckStride2Pad2Kernel3x2WithBias) {
  check_conv_gradients(make_shape(3, 5, 7, 9, 4, 3, 2, 2, 2, 2, 2), true);
}
TEST(Conv2dReference, GradientCheckMixedStridePadKernel3x2NoBias) {
  // Different stride and padding per axis, so swapped h/w indexing shows.
  check_conv_gradients(make_shape(3, 5, 7, 9, 4, 3, 2, 1, 2, 2, 0), false);
}

TEST(Conv2dReference, BackwardWithoutDxGivesSameWeightGradients) {
  const Conv2dShape g = make_shape(2, 3, 5, 6, 2, 3, 2, 2, 1, 1, 0);
  const std::vector<double> x = random_values(g.x_size(), 1), w = random_values(g.w_size(), 2);
  const std::vector<double> dy = random_values(g.y_size(), 3);
  const Grads full = backward(g, x, w, dy);
  std::vector<double> dw(g.w_size(), 7.0), db(static_cast<std::size_t>(g.k), 7.0);  // garbage: overwritten
  conv2d_backward(g, x.data(), w.data(), dy.data(), static_cast<double*>(nullptr), dw.data(), db.data());
  EXPECT_EQ(dw, full.dw);
  EXPECT_EQ(db, full.db);
}

TEST(Conv2dReference, RejectsInvalidGeometry) {
  const Conv2dShape ok = make_shape(1, 2, 5, 5, 3, 3, 3, 1, 1, 0, 0);
  EXPECT_NO_THROW(ok.validate());
  Conv2dShape g = ok;
  g.r = 6;  // kernel taller than the (unpadded) input
  EXPECT_THROW(g.validate(), Error);
  g.pad_h = 1;  // padded height 7 >= 6: fits now
  EXPECT_NO_THROW(g.validate());
  g = ok;
  g.s = 8;
  g.pad_w = 1;  // padded width 7 < 8
  EXPECT_THROW(g.validate(), Error);
  g = ok;
  g.stride_w = 0;
  EXPECT_THROW(g.validate(), Error);
  g = ok;
  g.pad_h = -1;
  EXPECT_THROW(g.validate(), Error);
  g = ok;
  g.c = 0;
  EXPECT_THROW(g.validate(), Error);
  // Channel mismatch between input and weight.
  EXPECT_THROW(conv2d_shape({1, 3, 5, 5}, {4, 2, 3, 3}, 1, 1, 0, 0), Error);
  EXPECT_NO_THROW(conv2d_shape({1, 3, 5, 5}, {4, 3, 3, 3}, 1, 1, 0, 0));
  // The kernels validate too.
  g = ok;
  g.stride_h = 0;
  std::vector<double> buf(1000);
  EXPECT_THROW(conv2d_forward(g, buf.data(), buf.data(), static_cast<const double*>(nullptr), buf.data()),
               Error);
  // The message names the problem and the values.
  try {
    conv2d_shape({1, 3, 5, 5}, {4, 2, 3, 3}, 1, 1, 0, 0);
    ADD_FAILURE() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2 input channels, input x has 3"), std::string::npos) << e.what();
  }
}

TEST(Conv2dReference, FloatMatchesDouble) {
  // Inputs are float values, so the products are exact in double and both instantiations run the same double
  // sums; the float result is the double one rounded once: |f - d| <= 2^-24 |d| (half an ulp).
  const Conv2dShape g = make_shape(3, 5, 7, 9, 4, 3, 2, 2, 1, 1, 2);
  const std::vector<float> xf = as_floats(random_values(g.x_size(), 21)),
                           wf = as_floats(random_values(g.w_size(), 22));
  const std::vector<float> bf = as_floats(random_values(static_cast<std::size_t>(g.k), 23));
  const std::vector<float> dyf = as_floats(random_values(g.y_size(), 24));
  const std::vector<double> xd(xf.begin(), xf.end()), wd(wf.begin(), wf.end()), bd(bf.begin(), bf.end()),
      dyd(dyf.begin(), dyf.end());

  std::vector<float> yf(g.y_size()), dxf(g.x_size()), dwf(g.w_size()), dbf(bf.size());
  std::vector<double> yd(g.y_size());
  conv2d_forward(g, xf.data(), wf.data(), bf.data(), yf.data());
  conv2d_forward(g, xd.data(), wd.data(), bd.data(), yd.data());
  conv2d_backward(g, xf.data(), wf.data(), dyf.data(), dxf.data(), dwf.data(), dbf.data());
  const Grads d = backward(g, xd, wd, dyd);

  expect_rounded_once(yf, yd, "y");
  expect_rounded_once(dxf, d.dx, "dx");
  expect_rounded_once(dwf, d.dw, "dw");
  expect_rounded_once(dbf, d.db, "db");
}

}  // namespace
}  // namespace engine::cpu
