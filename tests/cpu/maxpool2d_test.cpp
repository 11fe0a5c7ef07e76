// MaxPool2d reference: gradient checks over stride/padding/kernel variants, the tie rule, padding as -inf,
// overlapping windows accumulating, bad shapes, float vs double.

#include "kernels/cpu/maxpool2d.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/common/gradcheck.h"

namespace engine::cpu {
namespace {

using testing::GradCheckCase;

struct Pooled {
  std::vector<double> y;
  std::vector<std::int32_t> argmax;
};

Pooled pool(const Pool2dShape& s, const std::vector<double>& x) {
  Pooled r{std::vector<double>(static_cast<std::size_t>(s.output_size())),
           std::vector<std::int32_t>(static_cast<std::size_t>(s.output_size()))};
  maxpool2d_forward(s, x.data(), r.y.data(), r.argmax.data());
  return r;
}

void check_gradients(const Pool2dShape& s) {
  // Distinct values 0.01 apart: no tie, and a 1e-5 perturbation never changes a window's winner.
  std::vector<double> x = testing::distinct_values(static_cast<std::size_t>(s.input_size()), 21);
  GradCheckCase c{{{"x", &x}},
                  [&](std::uint64_t) { return pool(s, x).y; },
                  [&](const std::vector<double>& dy, std::uint64_t) {
                    const Pooled r = pool(s, x);
                    std::vector<double> dx(x.size(), 123.0);  // garbage: backward must overwrite
                    maxpool2d_backward(s, dy.data(), r.argmax.data(), dx.data());
                    return std::vector<std::vector<double>>{dx};
                  }};
  // Cells that win no window have zero gradient, which is no kink; none is skipped.
  EXPECT_GRADIENTS_MATCH(c);
}

TEST(MaxPool2dReference, GradientCheckKernel2Stride2OddSizes) {
  // 7x9 -> 3x4: the last row and column are never in a window (floor mode).
  check_gradients(
      {.n = 3, .c = 5, .h = 7, .w = 9, .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2});
}

TEST(MaxPool2dReference, GradientCheckKernel3Stride2Pad1Overlapping) {
  check_gradients({.n = 3,
                   .c = 5,
                   .h = 7,
                   .w = 9,
                   .kernel_h = 3,
                   .kernel_w = 3,
                   .stride_h = 2,
                   .stride_w = 2,
                   .pad_h = 1,
                   .pad_w = 1});
}

TEST(MaxPool2dReference, GradientCheckNonSquareKernelStrideAndPadding) {
  check_gradients({.n = 2,
                   .c = 3,
                   .h = 7,
                   .w = 9,
                   .kernel_h = 2,
                   .kernel_w = 3,
                   .stride_h = 1,
                   .stride_w = 2,
                   .pad_h = 1,
                   .pad_w = 1});
}

TEST(MaxPool2dReference, KnownValuesTieGoesToFirstInRowMajorOrder) {
  // One 4x4 plane, kernel 2 stride 2, every window with a tie:
  //   5 5 | 1 2      window (0,0): four 5s          -> first is (0,0), index 0
  //   5 5 | 3 3      window (0,1): 3 at (1,2),(1,3) -> first is (1,2), index 6
  //   ----+----
  //   0 7 | 9 8      window (1,0): 7 at (2,1),(3,0) -> first is (2,1), index 9
  //   7 0 | 9 9      window (1,1): 9 at (2,2),(3,2),(3,3) -> first is (2,2), index 10
  const Pool2dShape s{
      .n = 1, .c = 1, .h = 4, .w = 4, .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2};
  const std::vector<double> x = {5, 5, 1, 2, 5, 5, 3, 3, 0, 7, 9, 8, 7, 0, 9, 9};
  const Pooled r = pool(s, x);
  EXPECT_EQ(r.y, (std::vector<double>{5, 3, 7, 9}));
  EXPECT_EQ(r.argmax, (std::vector<std::int32_t>{0, 6, 9, 10}));
  // The whole gradient of each window goes to that one cell.
  const std::vector<double> dy = {1, 2, 3, 4};
  std::vector<double> dx(16, -1.0);
  maxpool2d_backward(s, dy.data(), r.argmax.data(), dx.data());
  std::vector<double> expected(16, 0.0);
  expected[0] = 1;
  expected[6] = 2;
  expected[9] = 3;
  expected[10] = 4;
  EXPECT_EQ(dx, expected);
}

TEST(MaxPool2dReference, KnownValuesPaddingCountsAsMinusInfinity) {
  // 3x3 plane of negatives, kernel 3 stride 2 pad 1 -> 2x2. Were padding 0, every max would be 0.
  //   -1 -2 -3     window (0,0) covers (0..1, 0..1): -1,-2,-4,-5 -> -1 at index 0
  //   -4 -5 -6     window (0,1) covers (0..1, 1..2): -2,-3,-5,-6 -> -2 at index 1
  //   -7 -8 -9     window (1,0): -4 at index 3;  window (1,1): -5 at index 4
  const Pool2dShape s{.n = 1,
                      .c = 1,
                      .h = 3,
                      .w = 3,
                      .kernel_h = 3,
                      .kernel_w = 3,
                      .stride_h = 2,
                      .stride_w = 2,
                      .pad_h = 1,
                      .pad_w = 1};
  const Pooled r = pool(s, {-1, -2, -3, -4, -5, -6, -7, -8, -9});
  EXPECT_EQ(r.y, (std::vector<double>{-1, -2, -4, -5}));
  EXPECT_EQ(r.argmax, (std::vector<std::int32_t>{0, 1, 3, 4}));
}

TEST(MaxPool2dReference, KnownValuesOverlappingWindowsAccumulate) {
  // Same geometry; the 9 at the centre (index 4) is in all four windows, so it collects 1+2+3+4 = 10.
  const Pool2dShape s{.n = 1,
                      .c = 1,
                      .h = 3,
                      .w = 3,
                      .kernel_h = 3,
                      .kernel_w = 3,
                      .stride_h = 2,
                      .stride_w = 2,
                      .pad_h = 1,
                      .pad_w = 1};
  const Pooled r = pool(s, {1, 2, 3, 4, 9, 5, 6, 7, 8});
  EXPECT_EQ(r.y, (std::vector<double>{9, 9, 9, 9}));
  const std::vector<double> dy = {1, 2, 3, 4};
  std::vector<double> dx(9, -1.0);
  maxpool2d_backward(s, dy.data(), r.argmax.data(), dx.data());
  EXPECT_EQ(dx, (std::vector<double>{0, 0, 0, 0, 10, 0, 0, 0, 0}));
}

TEST(MaxPool2dReference, KnownValuesPlanesAreIndependent) {
  // n=1, c=2, 2x2 planes, kernel 2: each plane has its own argmax, indexed within the plane.
  const Pool2dShape s{
      .n = 1, .c = 2, .h = 2, .w = 2, .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2};
  const Pooled r = pool(s, {1, 4, 2, 3, 8, 5, 6, 7});
  EXPECT_EQ(r.y, (std::vector<double>{4, 8}));
  EXPECT_EQ(r.argmax, (std::vector<std::int32_t>{1, 0}));
  const std::vector<double> dy = {10, 20};
  std::vector<double> dx(8, -1.0);
  maxpool2d_backward(s, dy.data(), r.argmax.data(), dx.data());
  EXPECT_EQ(dx, (std::vector<double>{0, 10, 0, 0, 20, 0, 0, 0}));
}

TEST(MaxPool2dReference, OutputSize) {
  // floor((h + 2p - k) / s) + 1
  const Pool2dShape a{
      .n = 1, .c = 1, .h = 7, .w = 9, .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2};
  EXPECT_EQ(a.p(), 3);  // floor(5/2)+1
  EXPECT_EQ(a.q(), 4);  // floor(7/2)+1
  const Pool2dShape b{.n = 1,
                      .c = 1,
                      .h = 7,
                      .w = 9,
                      .kernel_h = 3,
                      .kernel_w = 3,
                      .stride_h = 2,
                      .stride_w = 2,
                      .pad_h = 1,
                      .pad_w = 1};
  EXPECT_EQ(b.p(), 4);  // floor(6/2)+1
  EXPECT_EQ(b.q(), 5);  // floor(8/2)+1
}

std::string error_of(const Pool2dShape& s) {
  try {
    s.validate();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(MaxPool2dReference, RejectsBadShapes) {
  // Kernel 4 on a 1x1 input padded by 1 on each side (3x3): larger than the padded input.
  Pool2dShape big{.n = 1, .c = 1, .h = 1, .w = 1, .kernel_h = 4, .kernel_w = 4, .stride_h = 1, .stride_w = 1};
  big.pad_h = big.pad_w = 1;
  EXPECT_NE(error_of(big).find("larger than the padded input"), std::string::npos) << error_of(big);
  std::vector<double> x(1), y(1);
  std::vector<std::int32_t> am(1);
  EXPECT_THROW(maxpool2d_forward(big, x.data(), y.data(), am.data()), Error);

  Pool2dShape pad = {
      .n = 1, .c = 1, .h = 4, .w = 4, .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2};
  pad.pad_h = 2;  // more than half the kernel
  EXPECT_NE(error_of(pad).find("at most half the kernel"), std::string::npos) << error_of(pad);

  Pool2dShape stride0 = {
      .n = 1, .c = 1, .h = 4, .w = 4, .kernel_h = 2, .kernel_w = 2, .stride_h = 0, .stride_w = 2};
  EXPECT_THROW(stride0.validate(), Error);
  Pool2dShape empty = {
      .n = 0, .c = 1, .h = 4, .w = 4, .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2};
  EXPECT_THROW(empty.validate(), Error);
}

TEST(MaxPool2dReference, RejectsArgmaxOutsideThePlane) {
  const Pool2dShape s{
      .n = 1, .c = 1, .h = 2, .w = 2, .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2};
  const double dy = 1.0;
  const std::int32_t bad = 4;
  std::vector<double> dx(4);
  EXPECT_THROW(maxpool2d_backward(s, &dy, &bad, dx.data()), Error);
}

TEST(MaxPool2dReference, FloatMatchesDouble) {
  // Max selects an input and the scatter adds at most 4 gradients in double, rounded once: on the same
  // float-representable inputs, float agrees with double within one rounding (2^-24 relative); the argmax
  // is identical.
  const Pool2dShape s{.n = 3,
                      .c = 5,
                      .h = 7,
                      .w = 9,
                      .kernel_h = 3,
                      .kernel_w = 3,
                      .stride_h = 2,
                      .stride_w = 2,
                      .pad_h = 1,
                      .pad_w = 1};
  const auto in = static_cast<std::size_t>(s.input_size()), out = static_cast<std::size_t>(s.output_size());
  const std::vector<double> xd0 = testing::random_values(in, 22), dyd0 = testing::random_values(out, 23);
  const std::vector<float> xf(xd0.begin(), xd0.end()), dyf(dyd0.begin(), dyd0.end());
  const std::vector<double> xd(xf.begin(), xf.end()), dyd(dyf.begin(), dyf.end());
  std::vector<double> yd(out), dxd(in);
  std::vector<float> yf(out), dxf(in);
  std::vector<std::int32_t> amd(out), amf(out);
  maxpool2d_forward(s, xd.data(), yd.data(), amd.data());
  maxpool2d_forward(s, xf.data(), yf.data(), amf.data());
  maxpool2d_backward(s, dyd.data(), amd.data(), dxd.data());
  maxpool2d_backward(s, dyf.data(), amf.data(), dxf.data());
  EXPECT_EQ(amf, amd);
  for (std::size_t i = 0; i < out; ++i) EXPECT_EQ(static_cast<double>(yf[i]), yd[i]) << i;
  for (std::size_t i = 0; i < in; ++i) {
    EXPECT_NEAR(static_cast<double>(dxf[i]), dxd[i], 0x1p-24 * std::abs(dxd[i])) << i;
  }
}

}  // namespace
}  // namespace engine::cpu
