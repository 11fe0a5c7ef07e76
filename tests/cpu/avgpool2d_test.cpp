// AvgPool2d reference (kernels/cpu/avgpool2d.h): known values with and without the padding counted, gradient
// checks over stride/padding/kernel variants (overlapping, rectangular, padding up to kernel - 1), bad
// shapes refused by name, float against double.

#include "kernels/cpu/avgpool2d.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/common/gradcheck.h"

namespace engine::cpu {
namespace {

using testing::GradCheckCase;

AvgPool2dShape avg(const Pool2dShape& window, bool count_include_pad) { return {window, count_include_pad}; }

std::vector<double> pool(const AvgPool2dShape& s, const std::vector<double>& x) {
  std::vector<double> y(static_cast<std::size_t>(s.output_size()), -77.0);
  avgpool2d_forward(s, x.data(), y.data());
  return y;
}

std::vector<double> pool_backward(const AvgPool2dShape& s, const std::vector<double>& dy) {
  std::vector<double> dx(static_cast<std::size_t>(s.input_size()), 123.0);  // garbage: must be overwritten
  avgpool2d_backward(s, dy.data(), dx.data());
  return dx;
}

void check_gradients(const AvgPool2dShape& s) {
  std::vector<double> x = testing::random_values(static_cast<std::size_t>(s.input_size()), 31);
  GradCheckCase c{{{"x", &x}},
                  [&](std::uint64_t) { return pool(s, x); },
                  [&](const std::vector<double>& dy, std::uint64_t) {
                    return std::vector<std::vector<double>>{pool_backward(s, dy)};
                  }};
  EXPECT_GRADIENTS_MATCH(c);  // linear: no kinks, nothing skipped
}

constexpr Pool2dShape kOverlapping{.n = 3,
                                   .c = 5,
                                   .h = 7,
                                   .w = 9,
                                   .kernel_h = 3,
                                   .kernel_w = 3,
                                   .stride_h = 2,
                                   .stride_w = 2,
                                   .pad_h = 1,
                                   .pad_w = 1};

TEST(AvgPool2dReference, GradientCheckKernel2Stride2OddSizes) {
  // 7x9 -> 3x4: the last row and column are in no window (floor mode) and get 0.
  check_gradients(avg(
      {.n = 3, .c = 5, .h = 7, .w = 9, .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2}, true));
}

TEST(AvgPool2dReference, GradientCheckOverlappingPaddedWindowsBothDivisors) {
  check_gradients(avg(kOverlapping, true));
  check_gradients(avg(kOverlapping, false));
}

TEST(AvgPool2dReference, GradientCheckRectangularKernelStrideAndPadding) {
  const Pool2dShape w{.n = 2,
                      .c = 3,
                      .h = 7,
                      .w = 9,
                      .kernel_h = 2,
                      .kernel_w = 3,
                      .stride_h = 1,
                      .stride_w = 2,
                      .pad_h = 1,
                      .pad_w = 1};
  check_gradients(avg(w, true));
  check_gradients(avg(w, false));
}

TEST(AvgPool2dReference, GradientCheckPaddingUpToKernelMinusOne) {
  // ONNX allows it (test_averagepool_2d_pads: kernel 3, pads 2): corner windows hold one real cell.
  check_gradients(avg({.n = 1,
                       .c = 2,
                       .h = 5,
                       .w = 6,
                       .kernel_h = 3,
                       .kernel_w = 3,
                       .stride_h = 1,
                       .stride_w = 1,
                       .pad_h = 2,
                       .pad_w = 2},
                      false));
}

TEST(AvgPool2dReference, KnownValuesCountIncludePadDividesByTheWholeWindow) {
  // One 3x3 plane 1..9, kernel 3, stride 2, padding 1 -> 2x2. The top-left window holds 1 2 / 4 5 (sum 12)
  // and five padding cells: 12/9 with the padding counted, 12/4 without.
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const Pool2dShape w{.n = 1,
                      .c = 1,
                      .h = 3,
                      .w = 3,
                      .kernel_h = 3,
                      .kernel_w = 3,
                      .stride_h = 2,
                      .stride_w = 2,
                      .pad_h = 1,
                      .pad_w = 1};
  const std::vector<double> with = pool(avg(w, true), x), without = pool(avg(w, false), x);
  const std::vector<double> sums = {12, 16, 24, 28};  // 1+2+4+5, 2+3+5+6, 4+5+7+8, 5+6+8+9
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(with[i], sums[i] / 9) << i;
    EXPECT_DOUBLE_EQ(without[i], sums[i] / 4) << i;
  }
  // Backward: the centre (5) is in all four windows; a corner in one.
  const std::vector<double> dx = pool_backward(avg(w, false), {1, 1, 1, 1});
  EXPECT_DOUBLE_EQ(dx[4], 1.0);   // 4 x 1/4
  EXPECT_DOUBLE_EQ(dx[0], 0.25);  // 1/4
  EXPECT_DOUBLE_EQ(dx[1], 0.5);   // 2 x 1/4
  const std::vector<double> dx_in = pool_backward(avg(w, true), {1, 1, 1, 1});
  EXPECT_DOUBLE_EQ(dx_in[4], 4.0 / 9);
  EXPECT_DOUBLE_EQ(dx_in[0], 1.0 / 9);
}

TEST(AvgPool2dReference, KnownValuesStrideAboveKernelSkipsCellsAndPlanesAreIndependent) {
  // Two planes of 1x5, kernel 1x2, stride 3: windows {0, 1} and {3, 4}; cell 2 gets no gradient.
  const std::vector<double> x = {1, 3, 100, 5, 7, -1, -3, 100, -5, -7};
  const AvgPool2dShape s =
      avg({.n = 1, .c = 2, .h = 1, .w = 5, .kernel_h = 1, .kernel_w = 2, .stride_h = 1, .stride_w = 3}, true);
  EXPECT_EQ(pool(s, x), (std::vector<double>{2, 6, -2, -6}));
  EXPECT_EQ(pool_backward(s, {2, 4, 6, 8}), (std::vector<double>{1, 1, 0, 2, 2, 3, 3, 0, 4, 4}));
}

TEST(AvgPool2dReference, OutputSizeAndDivisor) {
  const AvgPool2dShape s = avg(kOverlapping, false);
  EXPECT_EQ(s.p(), 4);  // (7 + 2 - 3) / 2 + 1
  EXPECT_EQ(s.q(), 5);  // (9 + 2 - 3) / 2 + 1
  EXPECT_EQ(s.divisor(0, 0), 4);
  EXPECT_EQ(s.divisor(1, 1), 9);
  EXPECT_EQ(s.divisor(3, 4), 4);  // rows 5..7 hold 5, 6; columns 7..9 hold 7, 8
  EXPECT_EQ(avg(kOverlapping, true).divisor(0, 0), 9);
}

std::string error_of(const AvgPool2dShape& s) {
  std::vector<double> x(1024), y(1024);
  try {
    avgpool2d_forward(s, x.data(), y.data());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(AvgPool2dReference, RejectsBadShapesNamingTheField) {
  const Pool2dShape ok{
      .n = 1, .c = 1, .h = 4, .w = 4, .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2};
  Pool2dShape pad = ok;
  pad.pad_h = 2;  // a window of padding only
  EXPECT_NE(error_of(avg(pad, false)).find("avgpool2d: padding 2x0 must be smaller than the kernel 2x2"),
            std::string::npos)
      << error_of(avg(pad, false));
  Pool2dShape big = ok;
  big.kernel_w = 5;
  EXPECT_NE(error_of(avg(big, true)).find("avgpool2d: kernel 2x5 is larger than the padded input"),
            std::string::npos);
  Pool2dShape stride = ok;
  stride.stride_w = 0;
  EXPECT_NE(error_of(avg(stride, true)).find("avgpool2d: stride must be positive"), std::string::npos);
  Pool2dShape empty = ok;
  empty.c = 0;
  EXPECT_NE(error_of(avg(empty, true)).find("avgpool2d: input sizes must be positive"), std::string::npos);
  EXPECT_EQ(error_of(avg(ok, true)), "");
}

TEST(AvgPool2dReference, FloatMatchesDouble) {
  const AvgPool2dShape s = avg(kOverlapping, false);
  const std::vector<double> xd = testing::random_values(static_cast<std::size_t>(s.input_size()), 5);
  const std::vector<double> dyd = testing::random_values(static_cast<std::size_t>(s.output_size()), 6);
  const std::vector<float> xf(xd.begin(), xd.end()), dyf(dyd.begin(), dyd.end());
  std::vector<float> yf(dyd.size()), dxf(xd.size());
  avgpool2d_forward(s, xf.data(), yf.data());
  avgpool2d_backward(s, dyf.data(), dxf.data());
  const std::vector<double> yd = pool(s, std::vector<double>(xf.begin(), xf.end()));
  const std::vector<double> dxd = pool_backward(s, std::vector<double>(dyf.begin(), dyf.end()));
  for (std::size_t i = 0; i < yd.size(); ++i) EXPECT_EQ(yf[i], static_cast<float>(yd[i])) << i;
  for (std::size_t i = 0; i < dxd.size(); ++i) EXPECT_EQ(dxf[i], static_cast<float>(dxd[i])) << i;
}

}  // namespace
}  // namespace engine::cpu
