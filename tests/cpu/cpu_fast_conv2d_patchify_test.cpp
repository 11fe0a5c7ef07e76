// Patch convolutions (kernel = stride, no padding) as GEMMs over the output's pixels
// (kernels/cpu_fast/conv2d_patchify.h) against the float64 reference, forward, backward-data and
// backward-weights, outputs poisoned with NaN, odd sizes and rectangles, maps that the patches do not cover
// whole (the rows and columns past the last patch get a zero dx), x and y each NCHW or blocked (nChw16c,
// nChw8c, mixed as convnext's stem is: a 3-channel NCHW x, a blocked y); and conv2d.h's choice of them
// exactly for the patch shapes, with the kernel's own bits.
//
// Bound (tests/common/float_checks.h, expect_float32_sum): float32 sums of m products in the GEMM's order:
// y sums C*R*S products and the bias (m = C*R*S + 1), dx sums K, dw sums N*P*Q; db is summed in double, then
// rounded once (m = 1 covers it).

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/layout.h"
#include "kernels/cpu_fast/conv2d.h"
#include "kernels/cpu_fast/conv2d_patchify.h"
#include "tests/common/blocked_data.h"
#include "tests/common/conv_reference.h"
#include "tests/common/float_checks.h"
#include "tests/common/test_data.h"

namespace engine {
namespace {

Conv2dShape patches(int n, int c, int h, int w, int k, int r, int s) {
  Conv2dShape g = testing::square_conv(n, c, h, w, k, r, r, 0);
  g.s = s;
  g.stride_w = s;
  return g;
}

void check(const Conv2dShape& g, bool bias, bool input_grad, cpu_fast::ConvLayouts layouts = {}) {
  SCOPED_TRACE(::testing::Message() << "n " << g.n << " c " << g.c << " k " << g.k << " " << g.h << "x" << g.w
                                    << " kernel " << g.r << "x" << g.s << (bias ? " bias" : "")
                                    << (input_grad ? " dx" : "") << " x " << layout_name(layouts.x) << " y "
                                    << layout_name(layouts.y));
  const testing::ConvReference ref(g, bias, 17);
  const int hw = g.h * g.w, pq = g.p() * g.q();
  const std::vector<float> x = testing::in_layout(ref.x, g.n, g.c, hw, layouts.x),
                           dy = testing::in_layout(ref.dy, g.n, g.k, pq, layouts.y);
  std::vector<float> y(g.y_size(), NAN);
  cpu_fast::conv2d_patchify_forward(g, x.data(), ref.w.data(), ref.bias(), y.data(), layouts);
  testing::expect_float32_sum(testing::from_layout(y, g.n, g.k, pq, layouts.y), ref.y, ref.y_mag,
                              static_cast<double>(g.c) * g.r * g.s + 1, "y");

  std::vector<float> dx(g.x_size(), NAN), dw(g.w_size(), NAN), db(static_cast<std::size_t>(g.k), NAN);
  cpu_fast::conv2d_patchify_backward(g, x.data(), ref.w.data(), dy.data(), input_grad ? dx.data() : nullptr,
                                     dw.data(), bias ? db.data() : nullptr, layouts);
  if (input_grad) {
    testing::expect_float32_sum(testing::from_layout(dx, g.n, g.c, hw, layouts.x), ref.dx, ref.dx_mag, g.k,
                                "dx");
  } else {
    for (const float v : dx) ASSERT_TRUE(std::isnan(v)) << "dx written though not asked for";
  }
  testing::expect_float32_sum(dw, ref.dw, ref.dw_mag, static_cast<double>(g.n) * pq, "dw");
  if (bias) testing::expect_float32_sum(db, ref.db, ref.db_mag, 1, "db");
}

TEST(CpuFastConv2dPatchify, MatchesTheFloat64Reference) {
  check(patches(3, 5, 4, 6, 7, 2, 2), true, true);   // 2x2 stride 2 (convnext's downsampling), odd channels
  check(patches(2, 3, 8, 8, 9, 4, 4), true, false);  // 4x4 stride 4 (its stem): no input gradient
  check(patches(3, 4, 7, 5, 5, 3, 2), false, true);  // a 3x2 kernel, rows and a column no patch reaches
  check(patches(1, 7, 2, 2, 3, 2, 2), true, true);   // one image, the whole map one patch (a 1x1 output)
  check(patches(2, 6, 5, 9, 4, 1, 3), true, true);   // 1x3: patches along the width only
}

TEST(CpuFastConv2dPatchify, BlockedLayoutsMatchTheFloat64Reference) {
  const Layout b16 = Layout::NCHW16c, b8 = Layout::NCHW8c, plain = Layout::NCHW;
  check(patches(3, 16, 4, 4, 32, 2, 2), true, true, {b16, b16});    // convnext's downsampling, blocked
  check(patches(2, 32, 5, 3, 16, 2, 2), false, true, {b16, b16});   // odd map: the last row and column
  check(patches(2, 3, 8, 8, 16, 4, 4), true, false, {plain, b16});  // the stem: 3-channel NCHW x
  check(patches(3, 16, 6, 6, 8, 3, 3), true, true, {b8, plain});    // blocked x, NCHW y
  check(patches(2, 8, 4, 6, 24, 2, 3), true, true, {b8, b8});       // nChw8c, a 2x3 kernel
}

// conv2d.h sends exactly the patch shapes here (the same bits as calling the kernel); others to oneDNN.
TEST(CpuFastConv2dPatchify, Conv2dTakesExactlyThePatchShapes) {
  EXPECT_TRUE(cpu_fast::patchify(patches(2, 3, 8, 8, 4, 2, 2)));
  EXPECT_TRUE(cpu_fast::patchify(patches(2, 3, 9, 8, 4, 3, 2)));
  EXPECT_FALSE(cpu_fast::patchify(testing::square_conv(2, 3, 8, 8, 4, 1, 1, 0)));  // 1x1: pointwise
  EXPECT_FALSE(cpu_fast::patchify(testing::square_conv(2, 3, 8, 8, 4, 1, 2, 0)));  // 1x1 stride 2: skips
  EXPECT_FALSE(cpu_fast::patchify(testing::square_conv(2, 3, 8, 8, 4, 3, 2, 1)));  // overlapping, padded
  EXPECT_FALSE(cpu_fast::patchify(testing::square_conv(2, 3, 8, 8, 4, 2, 2, 1)));  // padded
  Conv2dShape grouped = patches(2, 4, 8, 8, 4, 2, 2), dilated = grouped;
  grouped.groups = 2;
  dilated.dilation_h = 2;
  EXPECT_FALSE(cpu_fast::patchify(grouped));
  EXPECT_FALSE(cpu_fast::patchify(dilated));

  const Conv2dShape g = patches(3, 16, 4, 4, 32, 2, 2);
  for (const cpu_fast::ConvLayouts l :
       {cpu_fast::ConvLayouts{}, cpu_fast::ConvLayouts{Layout::NCHW16c, Layout::NCHW16c}}) {
    const auto x = testing::uniform_floats(g.x_size(), 41), w = testing::uniform_floats(g.w_size(), 42);
    const auto b = testing::uniform_floats(32, 43), dy = testing::uniform_floats(g.y_size(), 44);
    std::vector<float> y(g.y_size(), NAN), dx(g.x_size(), NAN), dw(g.w_size(), NAN), db(32, NAN);
    cpu_fast::conv2d_forward(g, x.data(), w.data(), b.data(), y.data(), nullptr, l);
    cpu_fast::conv2d_backward(g, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(), nullptr, l);
    for (const char* d : {"fwd", "bwd_data", "bwd_weights"})
      EXPECT_EQ(cpu_fast::conv2d_impl(g, true, d, false, l), "engine:patchify_gemm") << d;
    std::vector<float> y2(y.size(), NAN), dx2(dx.size(), NAN), dw2(dw.size(), NAN), db2(32, NAN);
    cpu_fast::conv2d_patchify_forward(g, x.data(), w.data(), b.data(), y2.data(), l);
    cpu_fast::conv2d_patchify_backward(g, x.data(), w.data(), dy.data(), dx2.data(), dw2.data(), db2.data(),
                                       l);
    testing::expect_bitwise(y, y2, "y");
    testing::expect_bitwise(dx, dx2, "dx");
    testing::expect_bitwise(dw, dw2, "dw");
    testing::expect_bitwise(db, db2, "db");
  }
  std::vector<float> x(48, 1.0f), w(48, 1.0f), y(16, NAN);
  EXPECT_THROW(cpu_fast::conv2d_patchify_forward(testing::square_conv(1, 3, 4, 4, 4, 3, 1, 1), x.data(),
                                                 w.data(), nullptr, y.data()),
               Error);
}

}  // namespace
}  // namespace engine
