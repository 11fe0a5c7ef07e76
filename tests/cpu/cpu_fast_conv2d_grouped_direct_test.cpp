// The direct grouped/depthwise loops (kernels/cpu_fast/conv2d_grouped.h) against the float64 reference,
// forward, backward-data and backward-weights, outputs poisoned with NaN; and conv2d.cpp's choice of them
// exactly where oneDNN 2.6.3 offers its gemm fallback (the zoo's depthwise 7x7 on a 2x2 map). Taps that read
// only padding (a 7x7 on 2x2 or 1x1 maps) are skipped by backward-weights: their gradient must be exact
// zeros.
//
// Bound: every output is a sum of m products of floats, formed in float32 in some order (with or without
// fused multiply-adds); each product and each addition rounds once, so |fast - exact| <= (m + 1) u sum|terms|
// with u = 2^-24 (Higham's gamma_m, first order). sum|terms| is the reference run on |inputs|.
// backward-weights sums in float32 over up to 16 samples (per vector lane on large planes, in order per
// weight in the column form of planes under 16 outputs), then in double: within the same bound with m = 16
// planes' count (16 P Q) + 1.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/conv2d.h"
#include "kernels/cpu_fast/conv2d.h"
#include "kernels/cpu_fast/conv2d_grouped.h"
#include "tests/common/conv_reference.h"
#include "tests/common/float_checks.h"
#include "tests/common/test_data.h"

namespace engine {
namespace {

Conv2dShape grouped(int n, int c, int hw, int k, int r, int stride, int pad, int groups, int dilation) {
  Conv2dShape g = testing::square_conv(n, c, hw, hw + 1, k, r, stride, pad);
  g.groups = groups;
  g.dilation_h = g.dilation_w = dilation;
  return g;
}

void check(const Conv2dShape& g, bool bias) {
  SCOPED_TRACE(::testing::Message() << "c " << g.c << " k " << g.k << " groups " << g.groups << " " << g.h
                                    << "x" << g.w << " kernel " << g.r << " stride " << g.stride_h << " pad "
                                    << g.pad_h << " dilation " << g.dilation_h << (bias ? " bias" : ""));
  const testing::ConvReference ref(g, bias, 1);
  std::vector<float> y(g.y_size(), NAN);
  cpu_fast::grouped_conv2d_forward(g, ref.x.data(), ref.w.data(), ref.bias(), y.data());
  testing::expect_float32_sum(y, ref.y, ref.y_mag, g.c_per_group() * g.r * g.s + 1, "y");

  std::vector<float> dx(g.x_size(), NAN), dw(g.w_size(), NAN), db(static_cast<std::size_t>(g.k), NAN);
  cpu_fast::grouped_conv2d_backward_data(g, ref.w.data(), ref.dy.data(), dx.data());
  cpu_fast::grouped_conv2d_backward_weights(g, ref.x.data(), ref.dy.data(), dw.data(),
                                            bias ? db.data() : nullptr);
  testing::expect_float32_sum(dx, ref.dx, ref.dx_mag, g.k_per_group() * g.r * g.s, "dx");
  testing::expect_float32_sum(dw, ref.dw, ref.dw_mag, std::min(g.n, 16) * g.p() * g.q() + 1, "dw");
  if (bias) testing::expect_float32_sum(db, ref.db, ref.db_mag, g.p() * g.q() + 1, "db");
}

TEST(CpuFastConv2dGroupedDirect, MatchesTheFloat64Reference) {
  check(grouped(3, 7, 9, 7, 7, 1, 3, 7, 1), true);    // depthwise 7x7, odd sizes
  check(grouped(2, 6, 2, 6, 7, 1, 3, 6, 1), true);    // padding larger than the map (convnext's 2x2 stage)
  check(grouped(2, 5, 1, 5, 5, 1, 2, 5, 1), false);   // a 1x1 map: only the centre tap reads it
  check(grouped(2, 12, 9, 12, 3, 2, 1, 3, 1), true);  // grouped 4 -> 4, strided (regnet's)
  check(grouped(2, 6, 11, 9, 3, 2, 3, 3, 2), false);  // grouped 2 -> 3, strided, dilated
  check(grouped(1, 4, 8, 8, 5, 3, 2, 4, 1), true);    // depthwise multiplier 2, stride 3
  check(grouped(3, 4, 3, 4, 5, 3, 2, 4, 1), true);    // strided 5x5 on 3x4: two tap rows read only padding
  // Planes under 16 outputs with several channels a group: backward-weights' column form, over more than 16
  // samples (a fold into double between them).
  check(grouped(20, 16, 2, 16, 3, 1, 1, 2, 1), true);  // groups of 8 -> 8 on 2x3 (regnet_y_400mf's 2x2)
  check(grouped(17, 6, 5, 9, 3, 2, 2, 3, 2), false);   // 2 -> 3, strided, dilated, 3x3 outputs
  check(grouped(18, 16, 1, 32, 3, 1, 1, 4, 1), true);  // 4 -> 8 on 1x2 (regnet_y_400mf's 1x1)
}

TEST(CpuFastConv2dGroupedDirect, Conv2dTakesItWhereOneDnnOffersItsGemmFallback) {
  Conv2dShape g = testing::square_conv(4, 16, 2, 2, 16, 7, 1, 3);  // convnext_tiny's depthwise 7x7 on 2x2
  g.groups = 16;
  const auto x = testing::uniform_floats(g.x_size(), 5), w = testing::uniform_floats(g.w_size(), 6);
  const auto b = testing::uniform_floats(16, 7), dy = testing::uniform_floats(g.y_size(), 8);
  std::vector<float> y(g.y_size(), NAN), dx(g.x_size(), NAN), dw(g.w_size(), NAN), db(16, NAN);
  cpu_fast::conv2d_forward(g, x.data(), w.data(), b.data(), y.data());
  cpu_fast::conv2d_backward(g, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
  for (const char* d : {"fwd", "bwd_data", "bwd_weights"}) {
    const std::string impl = cpu_fast::conv2d_impl(g, true, d);
    EXPECT_EQ(impl.find("gemm"), std::string::npos) << d << " runs " << impl;
  }
  // Through conv2d, the same values as the direct loops (the same code, called).
  std::vector<float> y2(y.size(), NAN), dx2(dx.size(), NAN), dw2(dw.size(), NAN), db2(db.size(), NAN);
  cpu_fast::grouped_conv2d_forward(g, x.data(), w.data(), b.data(), y2.data());
  cpu_fast::grouped_conv2d_backward_data(g, w.data(), dy.data(), dx2.data());
  cpu_fast::grouped_conv2d_backward_weights(g, x.data(), dy.data(), dw2.data(), db2.data());
  if (cpu_fast::conv2d_impl(g, true, "fwd") == "engine:grouped_direct") {
    EXPECT_EQ(y, y2);
  }
  if (cpu_fast::conv2d_impl(g, true, "bwd_data") == "engine:grouped_direct") {
    EXPECT_EQ(dx, dx2);
  }
  if (cpu_fast::conv2d_impl(g, true, "bwd_weights") == "engine:grouped_direct") {
    EXPECT_EQ(dw, dw2);
    EXPECT_EQ(db, db2);
  }
}

}  // namespace
}  // namespace engine
