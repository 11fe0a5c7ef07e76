// Pointwise convolutions as GEMMs over the batch's pixels (kernels/cpu_fast/conv2d_pointwise.h) against the
// float64 reference, forward, backward-data and backward-weights, outputs poisoned with NaN, odd sizes, maps
// from 1x1 (NCHW read as rows in place) to 4x4 (through the reorders) and above (a GEMM per image); the
// same in the blocked layouts (nChw16c, nChw8c: always pixel rows, through the reorders); and conv2d.h's
// choice of them exactly for the pointwise shapes on maps of at most 4 pixels or of at most 2^24
// multiply-adds, in either layout.
//
// Bound (tests/common/float_checks.h, expect_float32_sum): float32 sums of m products in the GEMM's order:
// y sums C products and the bias (m = C + 1), dx sums K, dw sums N*H*W; db is summed in double, then rounded
// once (m = 1 covers it).

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/layout.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu_fast/conv2d.h"
#include "kernels/cpu_fast/conv2d_pointwise.h"
#include "tests/common/blocked_data.h"
#include "tests/common/conv_reference.h"
#include "tests/common/float_checks.h"
#include "tests/common/test_data.h"

namespace engine {
namespace {

Conv2dShape pointwise(int n, int c, int h, int w, int k) {
  return testing::square_conv(n, c, h, w, k, 1, 1, 0);
}

// x and dy are stored in `layout` (NCHW or blocked), y and dx read back from it.
void check(const Conv2dShape& g, bool bias, bool input_grad, Layout layout = Layout::NCHW) {
  SCOPED_TRACE(::testing::Message() << "n " << g.n << " c " << g.c << " k " << g.k << " " << g.h << "x" << g.w
                                    << (bias ? " bias" : "") << (input_grad ? " dx" : "") << " "
                                    << layout_name(layout));
  const testing::ConvReference ref(g, bias, 11);
  const int hw = g.h * g.w;
  const cpu_fast::ConvLayouts layouts{layout, layout};
  const std::vector<float> x = testing::in_layout(ref.x, g.n, g.c, hw, layout),
                           dy = testing::in_layout(ref.dy, g.n, g.k, hw, layout);
  std::vector<float> y(g.y_size(), NAN);
  cpu_fast::conv2d_pointwise_forward(g, x.data(), ref.w.data(), ref.bias(), y.data(), layouts);
  testing::expect_float32_sum(testing::from_layout(y, g.n, g.k, hw, layout), ref.y, ref.y_mag, g.c + 1, "y");

  std::vector<float> dx(g.x_size(), NAN), dw(g.w_size(), NAN), db(static_cast<std::size_t>(g.k), NAN);
  cpu_fast::conv2d_pointwise_backward(g, x.data(), ref.w.data(), dy.data(), input_grad ? dx.data() : nullptr,
                                      dw.data(), bias ? db.data() : nullptr, layouts);
  if (input_grad) {
    testing::expect_float32_sum(testing::from_layout(dx, g.n, g.c, hw, layout), ref.dx, ref.dx_mag, g.k,
                                "dx");
  } else {
    for (const float v : dx) ASSERT_TRUE(std::isnan(v)) << "dx written though not asked for";
  }
  testing::expect_float32_sum(dw, ref.dw, ref.dw_mag, static_cast<double>(g.n) * g.h * g.w, "dw");
  if (bias) testing::expect_float32_sum(db, ref.db, ref.db_mag, 1, "db");
}

TEST(CpuFastConv2dPointwise, MatchesTheFloat64Reference) {
  check(pointwise(5, 7, 1, 1, 9), true, true);      // 1x1 maps: NCHW is already [N, C] rows
  check(pointwise(3, 13, 2, 2, 11), true, true);    // convnext's 2x2 stage, odd channel counts
  check(pointwise(3, 5, 3, 5, 7), false, true);     // an odd rectangle, no bias
  check(pointwise(1, 17, 2, 1, 3), true, false);    // one image, no input gradient (the first layer)
  check(pointwise(4, 33, 4, 4, 31), false, false);  // 16 pixels: the last map read as pixel rows
  // Above 16 pixels a GEMM per image on its planes, images split between the threads and their dW sums added:
  check(pointwise(5, 7, 5, 7, 9), true, true);     // 35 pixels, odd everything
  check(pointwise(3, 12, 6, 6, 16), false, true);  // squeezenet1_0's 6x6 fire modules, small
  check(pointwise(1, 9, 3, 7, 5), true, false);    // one image: the other threads' dW sums are zeros
}

// Blocked activations (channels whole blocks) become pixel rows at every map size, 1x1 in place.
TEST(CpuFastConv2dPointwise, BlockedLayoutsMatchTheFloat64Reference) {
  const Layout b16 = Layout::NCHW16c, b8 = Layout::NCHW8c;
  check(pointwise(5, 32, 1, 1, 16), true, true, b16);   // 1x1: the same bytes as NCHW, read in place
  check(pointwise(3, 16, 2, 2, 48), true, true, b16);   // convnext's 2x2 stage
  check(pointwise(3, 48, 2, 2, 16), false, true, b16);  // the expansion's way back, no bias
  check(pointwise(2, 32, 3, 5, 16), true, false, b16);  // an odd rectangle, no input gradient
  check(pointwise(3, 16, 5, 7, 32), true, true, b16);   // 35 pixels: rows too (no per-image planes blocked)
  check(pointwise(3, 24, 3, 3, 8), true, true, b8);     // nChw8c, odd block counts
  check(pointwise(1, 8, 7, 3, 40), false, true, b8);    // one image, 21 pixels
}

// The two layouts of one call must agree: a mixed pair is refused (conv2d.h never routes one here).
TEST(CpuFastConv2dPointwise, RefusesMixedLayouts) {
  const Conv2dShape g = pointwise(2, 16, 2, 2, 16);
  std::vector<float> x(g.x_size(), 1.0f), w(g.w_size(), 1.0f), y(g.y_size(), NAN);
  EXPECT_FALSE(cpu_fast::pointwise_gemm(g, {Layout::NCHW, Layout::NCHW16c}));
  EXPECT_THROW(cpu_fast::conv2d_pointwise_forward(g, x.data(), w.data(), nullptr, y.data(),
                                                  {Layout::NCHW16c, Layout::NCHW}),
               Error);
}

// conv2d.h sends the float32 pointwise shapes on maps of at most 4 pixels, or (NCHW) of at most 2^24
// multiply-adds (N H W C K), here (the same bits as calling the kernel), and every other shape to oneDNN.
TEST(CpuFastConv2dPointwise, Conv2dTakesItOnSmallMapsOrSmallLayers) {
  const Conv2dShape small = pointwise(3, 6, 2, 2, 10);
  EXPECT_TRUE(cpu_fast::pointwise_gemm(small));
  EXPECT_TRUE(cpu_fast::pointwise_gemm(pointwise(3, 6, 1, 1, 10)));
  EXPECT_TRUE(cpu_fast::pointwise_gemm(pointwise(3, 6, 3, 2, 10)));        // 6 pixels, a small layer
  EXPECT_TRUE(cpu_fast::pointwise_gemm(pointwise(64, 256, 16, 16, 4)));    // 2^24 multiply-adds
  EXPECT_FALSE(cpu_fast::pointwise_gemm(pointwise(64, 256, 16, 16, 5)));   // past them, 16x16
  EXPECT_TRUE(cpu_fast::pointwise_gemm(pointwise(64, 4096, 2, 2, 4096)));  // 2x2: any size
  EXPECT_FALSE(cpu_fast::pointwise_gemm(testing::square_conv(3, 6, 2, 2, 10, 1, 2, 0)));  // strided
  EXPECT_FALSE(cpu_fast::pointwise_gemm(testing::square_conv(3, 6, 2, 2, 10, 3, 1, 1)));  // 3x3
  Conv2dShape grouped = small;
  grouped.groups = 2;
  EXPECT_FALSE(cpu_fast::pointwise_gemm(grouped));
  // Blocked maps: at most 4 pixels only (above, the two reorders cost more than the GEMM saves).
  for (const Layout b : {Layout::NCHW16c, Layout::NCHW8c}) {
    EXPECT_TRUE(cpu_fast::pointwise_gemm(pointwise(64, 4096, 2, 2, 4096), {b, b}));
    EXPECT_TRUE(cpu_fast::pointwise_gemm(pointwise(3, 16, 1, 1, 16), {b, b}));
    EXPECT_FALSE(cpu_fast::pointwise_gemm(pointwise(3, 16, 3, 2, 16), {b, b}));  // a small layer, 6 pixels
  }

  const auto x = testing::uniform_floats(small.x_size(), 21), w = testing::uniform_floats(small.w_size(), 22);
  const auto b = testing::uniform_floats(10, 23), dy = testing::uniform_floats(small.y_size(), 24);
  std::vector<float> y(small.y_size(), NAN), dx(small.x_size(), NAN), dw(small.w_size(), NAN), db(10, NAN);
  cpu_fast::conv2d_forward(small, x.data(), w.data(), b.data(), y.data());
  cpu_fast::conv2d_backward(small, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
  for (const char* d : {"fwd", "bwd_data", "bwd_weights"})
    EXPECT_EQ(cpu_fast::conv2d_impl(small, true, d), "engine:pointwise_gemm") << d;
  std::vector<float> y2(y.size(), NAN), dx2(dx.size(), NAN), dw2(dw.size(), NAN), db2(db.size(), NAN);
  cpu_fast::conv2d_pointwise_forward(small, x.data(), w.data(), b.data(), y2.data());
  cpu_fast::conv2d_pointwise_backward(small, x.data(), w.data(), dy.data(), dx2.data(), dw2.data(),
                                      db2.data());
  testing::expect_bitwise(y, y2, "y");
  testing::expect_bitwise(dx, dx2, "dx");
  testing::expect_bitwise(dw, dw2, "dw");
  testing::expect_bitwise(db, db2, "db");

  const Conv2dShape larger = pointwise(4, 6, 8, 8, 10923);  // 2^24 + 384 multiply-adds on 8x8: oneDNN's
  std::vector<float> y3(larger.y_size(), NAN);
  const auto x3 = testing::uniform_floats(larger.x_size(), 25);
  const auto w3 = testing::uniform_floats(larger.w_size(), 26);
  cpu_fast::conv2d_forward(larger, x3.data(), w3.data(), nullptr, y3.data());
  EXPECT_NE(cpu_fast::conv2d_impl(larger, false, "fwd"), "engine:pointwise_gemm");

  // Blocked: the same rule, and conv2d.h's blocked calls the same bits as the kernel's.
  const cpu_fast::ConvLayouts b16{Layout::NCHW16c, Layout::NCHW16c};
  const Conv2dShape blocked = pointwise(3, 16, 2, 2, 32);
  EXPECT_TRUE(cpu_fast::pointwise_gemm(blocked, b16));
  EXPECT_TRUE(cpu_fast::pointwise_gemm(pointwise(64, 4096, 2, 2, 4096), b16));
  EXPECT_FALSE(cpu_fast::pointwise_gemm(pointwise(64, 256, 16, 16, 16), b16));
  const auto xb = testing::uniform_floats(blocked.x_size(), 27),
             wb = testing::uniform_floats(blocked.w_size(), 28);
  const auto bb = testing::uniform_floats(32, 29), dyb = testing::uniform_floats(blocked.y_size(), 30);
  std::vector<float> yb(blocked.y_size(), NAN), dxb(blocked.x_size(), NAN), dwb(blocked.w_size(), NAN),
      dbb(32, NAN);
  cpu_fast::conv2d_forward(blocked, xb.data(), wb.data(), bb.data(), yb.data(), nullptr, b16);
  cpu_fast::conv2d_backward(blocked, xb.data(), wb.data(), dyb.data(), dxb.data(), dwb.data(), dbb.data(),
                            nullptr, b16);
  for (const char* d : {"fwd", "bwd_data", "bwd_weights"})
    EXPECT_EQ(cpu_fast::conv2d_impl(blocked, true, d, false, b16), "engine:pointwise_gemm") << d;
  std::vector<float> yb2(yb.size(), NAN), dxb2(dxb.size(), NAN), dwb2(dwb.size(), NAN), dbb2(32, NAN);
  cpu_fast::conv2d_pointwise_forward(blocked, xb.data(), wb.data(), bb.data(), yb2.data(), b16);
  cpu_fast::conv2d_pointwise_backward(blocked, xb.data(), wb.data(), dyb.data(), dxb2.data(), dwb2.data(),
                                      dbb2.data(), b16);
  testing::expect_bitwise(yb, yb2, "blocked y");
  testing::expect_bitwise(dxb, dxb2, "blocked dx");
  testing::expect_bitwise(dwb, dwb2, "blocked dw");
  testing::expect_bitwise(dbb, dbb2, "blocked db");
}

}  // namespace
}  // namespace engine
