// Grouped and dilated convolution (Conv2dShape::groups, dilation_h/w) on the CPU, each checked against
// something that does not share its code path:
//  - the float64 reference with G groups equals G dense reference convolutions on the groups' channel slices
//    (same sums in the same order: bit for bit), forward and backward;
//  - a dilated kernel equals the dense kernel with (dilation - 1) zeros inserted between its taps;
//  - gradient checks (central differences) of grouped + dilated + strided + padded shapes, depthwise too;
//  - the oneDNN float32 path (goihw weights, dilated descriptors) against the reference, outputs poisoned.

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu_fast/conv2d.h"
#include "tests/common/gradcheck.h"
#include "tests/common/test_data.h"

namespace engine {
namespace {

using testing::GradCheckCase;
using testing::random_values;

Conv2dShape grouped(int n, int c, int h, int w, int k, int r, int stride, int pad, int groups, int dilation) {
  Conv2dShape g = testing::square_conv(n, c, h, w, k, r, stride, pad);
  g.groups = groups;
  g.dilation_h = g.dilation_w = dilation;
  return g;
}

// Channels [first, first + count) of a [N, C, H*W] tensor.
std::vector<double> channels(const std::vector<double>& t, int n, int c, int plane, int first, int count) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) {
    const auto begin = t.begin() + (static_cast<std::ptrdiff_t>(i) * c + first) * plane;
    out.insert(out.end(), begin, begin + static_cast<std::ptrdiff_t>(count) * plane);
  }
  return out;
}

TEST(Conv2dGroupedReference, EqualsOneDenseConvolutionPerGroupBitForBit) {
  const Conv2dShape g = grouped(2, 6, 7, 8, 9, 3, 2, 1, 3, 2);  // 3 groups of 2 -> 3, dilation 2
  const int CG = g.c_per_group(), KG = g.k_per_group(), P = g.p(), Q = g.q();
  const auto x = random_values(g.x_size(), 1), w = random_values(g.w_size(), 2), b = random_values(9, 3);
  const auto dy = random_values(g.y_size(), 4);
  std::vector<double> y(g.y_size()), dx(g.x_size()), dw(g.w_size()), db(9);
  cpu::conv2d_forward(g, x.data(), w.data(), b.data(), y.data());
  cpu::conv2d_backward(g, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
  for (int group = 0; group < g.groups; ++group) {
    Conv2dShape d = g;
    d.groups = 1;
    d.c = CG;
    d.k = KG;
    const auto xg = channels(x, g.n, g.c, g.h * g.w, group * CG, CG);
    const auto dyg = channels(dy, g.n, g.k, P * Q, group * KG, KG);
    const std::vector<double> wg(w.begin() + group * static_cast<std::ptrdiff_t>(d.w_size()),
                                 w.begin() + (group + 1) * static_cast<std::ptrdiff_t>(d.w_size()));
    const std::vector<double> bg(b.begin() + group * KG, b.begin() + (group + 1) * KG);
    std::vector<double> yg(d.y_size()), dxg(d.x_size()), dwg(d.w_size()), dbg(KG);
    cpu::conv2d_forward(d, xg.data(), wg.data(), bg.data(), yg.data());
    cpu::conv2d_backward(d, xg.data(), wg.data(), dyg.data(), dxg.data(), dwg.data(), dbg.data());
    EXPECT_EQ(channels(y, g.n, g.k, P * Q, group * KG, KG), yg) << "y of group " << group;
    EXPECT_EQ(channels(dx, g.n, g.c, g.h * g.w, group * CG, CG), dxg) << "dx of group " << group;
    EXPECT_EQ(std::vector<double>(dw.begin() + group * static_cast<std::ptrdiff_t>(d.w_size()),
                                  dw.begin() + (group + 1) * static_cast<std::ptrdiff_t>(d.w_size())),
              dwg)
        << "dw of group " << group;
    EXPECT_EQ(std::vector<double>(db.begin() + group * KG, db.begin() + (group + 1) * KG), dbg);
  }
}

TEST(Conv2dDilatedReference, EqualsTheDenseConvolutionOfTheZeroInsertedKernel) {
  const Conv2dShape g = grouped(2, 3, 9, 10, 4, 3, 1, 2, 1, 3);  // 3x3 taps 3 apart: spans 7x7
  Conv2dShape d = g;
  d.dilation_h = d.dilation_w = 1;
  d.r = d.s = g.span_h();
  ASSERT_EQ(d.p(), g.p());
  const auto x = random_values(g.x_size(), 5), w = random_values(g.w_size(), 6),
             dy = random_values(g.y_size(), 7);
  std::vector<double> wd(d.w_size(), 0.0);  // the taps at multiples of 3, zeros between
  for (int k = 0; k < g.k; ++k)
    for (int c = 0; c < g.c; ++c)
      for (int r = 0; r < g.r; ++r)
        for (int s = 0; s < g.s; ++s)
          wd[((static_cast<std::size_t>(k) * g.c + c) * d.r + r * 3) * d.s + s * 3] =
              w[((static_cast<std::size_t>(k) * g.c + c) * g.r + r) * g.s + s];
  std::vector<double> y(g.y_size()), yd(d.y_size()), dx(g.x_size()), dxd(d.x_size()), dw(g.w_size()),
      dwd(d.w_size());
  cpu::conv2d_forward<double>(g, x.data(), w.data(), nullptr, y.data());
  cpu::conv2d_forward<double>(d, x.data(), wd.data(), nullptr, yd.data());
  cpu::conv2d_backward<double>(g, x.data(), w.data(), dy.data(), dx.data(), dw.data(), nullptr);
  cpu::conv2d_backward<double>(d, x.data(), wd.data(), dy.data(), dxd.data(), dwd.data(), nullptr);
  // The dense sums add exact zeros besides the same terms (in another order for dx): equal to 1e-12.
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], yd[i], 1e-12) << "y " << i;
  for (std::size_t i = 0; i < dx.size(); ++i) EXPECT_NEAR(dx[i], dxd[i], 1e-12) << "dx " << i;
  for (int k = 0; k < g.k; ++k)
    for (int c = 0; c < g.c; ++c)
      for (int r = 0; r < g.r; ++r)
        for (int s = 0; s < g.s; ++s)
          EXPECT_NEAR(dw[((static_cast<std::size_t>(k) * g.c + c) * g.r + r) * g.s + s],
                      dwd[((static_cast<std::size_t>(k) * g.c + c) * d.r + r * 3) * d.s + s * 3], 1e-12);
}

void check_gradients(const Conv2dShape& g) {
  std::vector<double> x = random_values(g.x_size(), 11), w = random_values(g.w_size(), 12),
                      b = random_values(static_cast<std::size_t>(g.k), 13);
  GradCheckCase c{{{"x", &x}, {"w", &w}, {"b", &b}},
                  [&](std::uint64_t) {
                    std::vector<double> y(g.y_size());
                    cpu::conv2d_forward(g, x.data(), w.data(), b.data(), y.data());
                    return y;
                  },
                  [&](const std::vector<double>& dy, std::uint64_t) {
                    std::vector<double> dx(x.size(), 7.0), dw(w.size(), 7.0), db(b.size(), 7.0);
                    cpu::conv2d_backward(g, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
                    return std::vector<std::vector<double>>{dx, dw, db};
                  }};
  EXPECT_GRADIENTS_MATCH(c);
}

TEST(Conv2dGroupedReference, GradientChecks) {
  check_gradients(grouped(2, 4, 7, 6, 6, 3, 2, 1, 2, 1));  // 2 groups, strided, padded
  check_gradients(grouped(2, 3, 7, 9, 3, 3, 1, 1, 3, 1));  // depthwise
  check_gradients(grouped(1, 4, 9, 8, 4, 3, 1, 2, 2, 2));  // grouped and dilated
  check_gradients(grouped(2, 2, 8, 7, 3, 2, 2, 0, 1, 3));  // dilated, even kernel, strided
}

TEST(Conv2dGroupedReference, BadGeometryIsRefusedByName) {
  auto message = [](const Conv2dShape& g) {
    try {
      g.validate();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message(grouped(1, 4, 5, 5, 6, 3, 1, 1, 3, 1))
                .find("conv2d: groups 3 must divide the input channels 4 and the output channels 6"),
            std::string::npos);
  EXPECT_NE(message(grouped(1, 4, 5, 5, 4, 3, 1, 0, 1, 3)).find("(dilation (3, 3): spans 7x7) is larger"),
            std::string::npos);
  EXPECT_NE(message(grouped(1, 4, 5, 5, 4, 3, 1, 0, 1, 0)).find("conv2d: dilation must be positive"),
            std::string::npos);
  try {
    cpu::conv2d_shape({1, 4, 5, 5}, {4, 4, 3, 3}, 1, 1, 0, 0, 2);  // the weight must hold C/G = 2 channels
    ADD_FAILURE() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("has 4 input channels per group (2 groups: 8 in all), input x has 4"),
        std::string::npos)
        << e.what();
  }
  EXPECT_EQ(cpu::conv2d_shape({1, 4, 5, 5}, {4, 2, 3, 3}, 1, 1, 0, 0, 2).w_size(), 4u * 2 * 3 * 3);
}

// The oneDNN path: |fast - reference| <= 1e-5 of the sum of |terms| (the same op on |inputs|) + 1e-6.
void expect_close(const std::vector<float>& fast, const std::vector<float>& ref,
                  const std::vector<float>& mag, const char* what) {
  ASSERT_EQ(fast.size(), ref.size());
  int bad = 0;
  for (std::size_t i = 0; i < fast.size() && bad < 5; ++i) {
    const double diff = std::fabs(static_cast<double>(fast[i]) - static_cast<double>(ref[i]));
    if (!(diff <= 1e-5 * static_cast<double>(mag[i]) + 1e-6)) {
      ADD_FAILURE() << what << "[" << i << "]: fast " << fast[i] << " vs reference " << ref[i];
      ++bad;
    }
  }
}

std::vector<float> absolute(std::vector<float> v) {
  for (float& x : v) x = std::fabs(x);
  return v;
}

TEST(CpuFastConv2dGrouped, MatchesTheReference) {
  for (const Conv2dShape& g :
       {grouped(3, 6, 9, 7, 9, 3, 1, 1, 3, 1), grouped(2, 8, 11, 9, 8, 3, 2, 1, 8, 1),
        grouped(2, 4, 10, 9, 6, 3, 1, 2, 1, 2), grouped(2, 6, 12, 11, 4, 3, 2, 3, 2, 3)}) {
    SCOPED_TRACE(::testing::Message() << "groups " << g.groups << " dilation " << g.dilation_h);
    const auto x = testing::uniform_floats(g.x_size(), 1), w = testing::uniform_floats(g.w_size(), 2);
    const auto b = testing::uniform_floats(static_cast<std::size_t>(g.k), 3),
               dy = testing::uniform_floats(g.y_size(), 4);
    const auto ax = absolute(x), aw = absolute(w), ab = absolute(b), ady = absolute(dy);
    std::vector<float> y(g.y_size(), NAN), y_ref(g.y_size()), y_mag(g.y_size());
    cpu_fast::conv2d_forward(g, x.data(), w.data(), b.data(), y.data());
    cpu::conv2d_forward<float>(g, x.data(), w.data(), b.data(), y_ref.data());
    cpu::conv2d_forward<float>(g, ax.data(), aw.data(), ab.data(), y_mag.data());
    expect_close(y, y_ref, y_mag, "y");
    std::vector<float> dx(g.x_size(), NAN), dw(g.w_size(), NAN), db(b.size(), NAN);
    std::vector<float> dx_ref(dx.size()), dw_ref(dw.size()), db_ref(db.size());
    std::vector<float> dx_mag(dx.size()), dw_mag(dw.size()), db_mag(db.size());
    cpu_fast::conv2d_backward(g, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
    cpu::conv2d_backward<float>(g, x.data(), w.data(), dy.data(), dx_ref.data(), dw_ref.data(),
                                db_ref.data());
    cpu::conv2d_backward<float>(g, ax.data(), aw.data(), ady.data(), dx_mag.data(), dw_mag.data(),
                                db_mag.data());
    expect_close(dx, dx_ref, dx_mag, "dx");
    expect_close(dw, dw_ref, dw_mag, "dw");
    expect_close(db, db_ref, db_mag, "db");
  }
}

}  // namespace
}  // namespace engine
