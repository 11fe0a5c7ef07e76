// The CPU device's Winograd convolutions (kernels/cpu_fast/conv2d_algo.h: oneDNN 2.x's jit_wino_4x3, AVX-512
// only) against the float64-accumulating reference, forward, backward-data and backward-weights; skipped
// visibly on a host whose oneDNN has none.
//
// Tolerance, derived (not fitted). F(4x4, 3x3) computes each 4x4 output tile of one output channel as
//   Y = A^T [ sum_c (G g_c G^T) .* (B^T d_c B) ] A
// with d_c the tile's 6x6 input window of channel c, g_c the 3x3 filter, and oneDNN's matrices (interpolation
// points 0, +-5/8, +-3/2; benchdnn's reference of jit_wino_4x3 spells them out, copied below). In float each
// 1-D transform pass forms an entry from at most 4 terms by at most 4 roundings, a constant of G is itself
// rounded once, and the channel sum has C terms, so to first order (Higham's componentwise bounds,
// |fl(Mv) - Mv| <= gamma_k |M||v|, gamma_k = k u / (1 - k u), u = 2^-24):
//   |Y^ - Y| <= gamma_{C + 2*5 + 2*5 + 2*5 + 2} |A^T| [ sum_c (|G||g_c||G^T|) .* (|B^T||d_c||B|) ] |A|
// (two passes per transform, 5 roundings each counting G's constants, and the bias add's rounding 2 more).
// That bound is what each output is checked against: it holds for any summation order oneDNN uses, and a
// wrong index (a missing or misplaced term, |g||d| ~ 0.25 on average here) exceeds it: the tolerances of
// these sizes stay under 0.02 absolute (the errors measured: under 0.5% of them, printed per direction).
// Backward-data is the forward of dy with the flipped, transposed filter and padding 2 - pad;
// backward-weights is F(3x3, 4x4) over the dy tiles (oneDNN's "wu" transforms: the 6x4 matrix Wt for a 4x4 dy
// tile, B^T for the 6x6 input window, the 3x6 matrix O out), summed over the batch and the tiles (N * tiles
// terms). The bias gradient is a plain sum: gamma_{N P Q} sum |dy|.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "kernels/cpu/conv2d.h"
#include "kernels/cpu_fast/conv2d.h"
#include "kernels/cpu_fast/conv2d_algo.h"
#include "kernels/cpu_fast/conv2d_weights_gemm.h"
#include "tests/common/bf16_tolerance.h"
#include "tests/common/test_data.h"

namespace engine {
namespace {

template <std::size_t Rows, std::size_t Cols>
using Mat = std::array<std::array<double, Cols>, Rows>;

// oneDNN 2.x jit_wino_4x3 (benchdnn's ref_winograd.cpp: trans_I_4x4_3x3, trans_W_4x4_3x3, trans_O_4x4_3x3,
// trans_W_3x3_4x4_wu, trans_O_3x3_4x4_wu), as matrices acting on a column.
constexpr Mat<6, 6> kBt = {{{0.87890625, 0, -2.640625, 0, 1, 0},
                            {0, -1.40625, -2.25, 0.625, 1, 0},
                            {0, 1.40625, -2.25, -0.625, 1, 0},
                            {0, -0.5859375, -0.390625, 1.5, 1, 0},
                            {0, 0.5859375, -0.390625, -1.5, 1, 0},
                            {0, 0.87890625, 0, -2.640625, 0, 1}}};
constexpr Mat<6, 3> kG = {{{1.13777777777778, 0, 0},
                           {-0.688403361344538, -0.430252100840336, -0.26890756302521},
                           {-0.688403361344538, 0.430252100840336, -0.26890756302521},
                           {0.119514472455649, 0.179271708683473, 0.26890756302521},
                           {0.119514472455649, -0.179271708683473, 0.26890756302521},
                           {0, 0, 1}}};
constexpr Mat<4, 6> kAt = {{{1, 1, 1, 1, 1, 0},
                            {0, 0.625, -0.625, 1.5, -1.5, 0},
                            {0, 0.390625, 0.390625, 2.25, 2.25, 0},
                            {0, 0.244140625, -0.244140625, 3.375, -3.375, 1}}};
constexpr Mat<6, 4> kWu = {{{1.13777777777778, 0, 0, 0},
                            {-0.688403361344538, -0.430252100840336, -0.26890756302521, -0.168067226890756},
                            {-0.688403361344538, 0.430252100840336, -0.26890756302521, 0.168067226890756},
                            {0.119514472455649, 0.179271708683473, 0.26890756302521, 0.403361344537815},
                            {0.119514472455649, -0.179271708683473, 0.26890756302521, -0.403361344537815},
                            {0, 0, 0, 1}}};
constexpr Mat<3, 6> kOu = {
    {{1, 1, 1, 1, 1, 0}, {0, 0.625, -0.625, 1.5, -1.5, 0}, {0, 0.390625, 0.390625, 2.25, 2.25, 1}}};

double gamma(double k) {
  const double u = std::ldexp(1.0, -24);
  return k * u / (1.0 - k * u);
}

// |M| X |M|^T for an In x In block X: the absolute transform of a tile (both dimensions).
template <std::size_t Out, std::size_t In>
Mat<Out, Out> abs_transform(const Mat<Out, In>& m, const Mat<In, In>& x) {
  Mat<Out, In> t{};
  for (std::size_t i = 0; i < Out; ++i)
    for (std::size_t j = 0; j < In; ++j)
      for (std::size_t a = 0; a < In; ++a) t[i][j] += std::fabs(m[i][a]) * x[a][j];
  Mat<Out, Out> r{};
  for (std::size_t i = 0; i < Out; ++i)
    for (std::size_t j = 0; j < Out; ++j)
      for (std::size_t b = 0; b < In; ++b) r[i][j] += t[i][b] * std::fabs(m[j][b]);
  return r;
}

// |x| over a window of one plane, zero outside it (the padding).
template <std::size_t S>
Mat<S, S> abs_window(const float* plane, int h, int w, int row0, int col0) {
  Mat<S, S> m{};
  for (std::size_t i = 0; i < S; ++i)
    for (std::size_t j = 0; j < S; ++j) {
      const int r = row0 + static_cast<int>(i), c = col0 + static_cast<int>(j);
      if (r >= 0 && r < h && c >= 0 && c < w) m[i][j] = std::fabs(static_cast<double>(plane[r * w + c]));
    }
  return m;
}

// The forward bound |A^T| [sum_c (|G||g||G^T|) .* (|B^T||d||B|)] |A| of every output of a 3x3 stride-1
// convolution x [n, c, h, w] * w [k, c, 3, 3] with padding `pad` (output oh x ow, 4x4 tiles from the origin).
std::vector<double> forward_bound(int n, int c, int h, int w, int k, int pad, const std::vector<float>& x,
                                  const std::vector<float>& wt, int oh, int ow) {
  std::vector<double> out(static_cast<std::size_t>(n) * k * oh * ow, 0.0);
  std::vector<Mat<6, 6>> ug(static_cast<std::size_t>(k) * c);
  for (int kk = 0; kk < k; ++kk)
    for (int cc = 0; cc < c; ++cc)
      ug[static_cast<std::size_t>(kk) * c + cc] =
          abs_transform(kG, abs_window<3>(&wt[(static_cast<std::size_t>(kk) * c + cc) * 9], 3, 3, 0, 0));
  for (int nn = 0; nn < n; ++nn)
    for (int ty = 0; ty * 4 < oh; ++ty)
      for (int tx = 0; tx * 4 < ow; ++tx) {
        std::vector<Mat<6, 6>> vd(static_cast<std::size_t>(c));
        for (int cc = 0; cc < c; ++cc)
          vd[static_cast<std::size_t>(cc)] =
              abs_transform(kBt, abs_window<6>(&x[(static_cast<std::size_t>(nn) * c + cc) * h * w], h, w,
                                               ty * 4 - pad, tx * 4 - pad));
        for (int kk = 0; kk < k; ++kk) {
          Mat<6, 6> p{};
          for (int cc = 0; cc < c; ++cc)
            for (std::size_t i = 0; i < 6; ++i)
              for (std::size_t j = 0; j < 6; ++j)
                p[i][j] +=
                    ug[static_cast<std::size_t>(kk) * c + cc][i][j] * vd[static_cast<std::size_t>(cc)][i][j];
          const Mat<4, 4> y = abs_transform(kAt, p);
          for (int i = 0; i < 4 && ty * 4 + i < oh; ++i)
            for (int j = 0; j < 4 && tx * 4 + j < ow; ++j)
              out[((static_cast<std::size_t>(nn) * k + kk) * oh + ty * 4 + i) * ow + tx * 4 + j] =
                  y[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
        }
      }
  return out;
}

// The backward-weights bound |O| [sum_{n, tiles} (|B^T||x||B|) .* (|Wt||dy||Wt^T|)] |O^T| of every dW entry.
std::vector<double> weights_bound(const Conv2dShape& g, const std::vector<float>& x,
                                  const std::vector<float>& dy) {
  const int oh = g.p(), ow = g.q();
  std::vector<double> out(g.w_size(), 0.0);
  for (int kk = 0; kk < g.k; ++kk)
    for (int cc = 0; cc < g.c; ++cc) {
      Mat<6, 6> p{};
      for (int nn = 0; nn < g.n; ++nn)
        for (int ty = 0; ty * 4 < oh; ++ty)
          for (int tx = 0; tx * 4 < ow; ++tx) {
            const auto vx =
                abs_transform(kBt, abs_window<6>(&x[(static_cast<std::size_t>(nn) * g.c + cc) * g.h * g.w],
                                                 g.h, g.w, ty * 4 - g.pad_h, tx * 4 - g.pad_w));
            const auto vy =
                abs_transform(kWu, abs_window<4>(&dy[(static_cast<std::size_t>(nn) * g.k + kk) * oh * ow], oh,
                                                 ow, ty * 4, tx * 4));
            for (std::size_t i = 0; i < 6; ++i)
              for (std::size_t j = 0; j < 6; ++j) p[i][j] += vx[i][j] * vy[i][j];
          }
      const Mat<3, 3> r = abs_transform(kOu, p);
      for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t j = 0; j < 3; ++j)
          out[((static_cast<std::size_t>(kk) * g.c + cc) * 3 + i) * 3 + j] = r[i][j];
    }
  return out;
}

// |fast - reference| <= gamma_terms * bound + u |reference| (the final rounding) for every element, and the
// largest share of the tolerance used (printed: how close the kernel runs to the bound).
void expect_within(const std::vector<float>& fast, const std::vector<float>& ref,
                   const std::vector<double>& bound, double terms, const char* what) {
  ASSERT_EQ(fast.size(), ref.size());
  double worst = 0.0;
  int bad = 0;
  for (std::size_t i = 0; i < fast.size(); ++i) {
    const double tol = gamma(terms) * bound[i] + std::ldexp(std::fabs(static_cast<double>(ref[i])), -24);
    const double err = std::fabs(static_cast<double>(fast[i]) - static_cast<double>(ref[i]));
    if (!(err <= tol) && bad++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: winograd " << fast[i] << " vs reference " << ref[i]
                    << " (tolerance " << tol << ")";
    if (tol > 0) worst = std::max(worst, err / tol);
  }
  std::printf("%s: largest error %.3g of the derived tolerance\n", what, worst);
}

// Backward-data's bound: dy [n, k, p, q] convolved with w' [c, k, 3, 3] = w [k, c, 2 - r, 2 - s], padding
// 2 - pad (the forward's bound on those operands).
std::vector<double> data_grad_bound(const Conv2dShape& g, const std::vector<float>& w,
                                    const std::vector<float>& dy) {
  std::vector<float> wf(g.w_size());
  for (int kk = 0; kk < g.k; ++kk)
    for (int cc = 0; cc < g.c; ++cc)
      for (int r = 0; r < 9; ++r)
        wf[(static_cast<std::size_t>(cc) * g.k + kk) * 9 + r] =
            w[(static_cast<std::size_t>(kk) * g.c + cc) * 9 + 8 - r];
  return forward_bound(g.n, g.k, g.p(), g.q(), g.c, 2 - g.pad_h, dy, wf, g.h, g.w);
}

// dw against the backward-weights bound, db against a plain sum's: gamma_{N P Q} sum |dy|.
void expect_weight_grads_within(const Conv2dShape& g, const std::vector<float>& x,
                                const std::vector<float>& dy, const std::vector<float>& dw,
                                const std::vector<float>& dw_ref, const std::vector<float>& db,
                                const std::vector<float>& db_ref, double roundings, const char* dw_name,
                                const char* db_name) {
  const double tiles = std::ceil(g.p() / 4.0) * std::ceil(g.q() / 4.0);
  expect_within(dw, dw_ref, weights_bound(g, x, dy), g.n * tiles + roundings, dw_name);
  std::vector<double> db_bound(db.size(), 0.0);
  for (std::size_t i = 0; i < dy.size(); ++i)
    db_bound[(i / (g.y_size() / g.n / g.k)) % g.k] += std::fabs(static_cast<double>(dy[i]));
  expect_within(db, db_ref, db_bound, static_cast<double>(g.n) * g.p() * g.q(), db_name);
}

class CpuFastConv2dWinograd : public ::testing::TestWithParam<Conv2dShape> {
 protected:
  void SetUp() override {
    if (!cpu_fast::winograd_available()) GTEST_SKIP() << "this host's oneDNN has no Winograd convolution";
    cpu_fast::set_conv_algo(cpu_fast::ConvAlgo::Winograd);
  }
  void TearDown() override { cpu_fast::set_conv_algo(cpu_fast::ConvAlgo::Direct); }
};

TEST_P(CpuFastConv2dWinograd, EachDirectionWithinTheDerivedBound) {
  const Conv2dShape g = GetParam();
  const auto x = testing::uniform_floats(g.x_size(), 11), w = testing::uniform_floats(g.w_size(), 12);
  const auto b = testing::uniform_floats(static_cast<std::size_t>(g.k), 13),
             dy = testing::uniform_floats(g.y_size(), 14);
  constexpr double kTransformRoundings = 2 * 5 + 2 * 5 + 2 * 5 + 2;

  std::vector<float> y(g.y_size(), NAN), y_ref(g.y_size());
  cpu_fast::conv2d_forward(g, x.data(), w.data(), b.data(), y.data());
  ASSERT_NE(cpu_fast::conv2d_impl(g, true, "fwd").find("wino"), std::string::npos)
      << cpu_fast::conv2d_impl(g, true, "fwd");
  cpu::conv2d_forward<float>(g, x.data(), w.data(), b.data(), y_ref.data());
  expect_within(y, y_ref, forward_bound(g.n, g.c, g.h, g.w, g.k, g.pad_h, x, w, g.p(), g.q()),
                g.c + kTransformRoundings, "y");

  std::vector<float> dx(g.x_size(), NAN), dw(g.w_size(), NAN), db(static_cast<std::size_t>(g.k), NAN);
  std::vector<float> dx_ref(g.x_size()), dw_ref(g.w_size()), db_ref(db.size());
  cpu_fast::conv2d_backward(g, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
  for (const char* d : {"bwd_data", "bwd_weights"})
    ASSERT_NE(cpu_fast::conv2d_impl(g, true, d).find("wino"), std::string::npos)
        << d << ": " << cpu_fast::conv2d_impl(g, true, d);
  cpu::conv2d_backward<float>(g, x.data(), w.data(), dy.data(), dx_ref.data(), dw_ref.data(), db_ref.data());
  expect_within(dx, dx_ref, data_grad_bound(g, w, dy), g.k + kTransformRoundings, "dx");
  expect_weight_grads_within(g, x, dy, dw, dw_ref, db, db_ref, kTransformRoundings, "dw", "db");
}

// bf16 operands (kernels/cpu_fast/conv2d_algo.h): oneDNN's float32 Winograd on them widened, which is exact,
// so dw and db are float32 Winograd's results on those values (the bounds above), and y and dx are those
// results w rounded once to bf16, nearest even: |bf16(w) - w| <= 2^-8 |w|. With E the Winograd bound
// (|w - exact| <= E) and the reference within 2^-24 |exact| of exact (float64 sums rounded to float):
//   |got - ref| <= (1 + 2^-8) E + (2^-8 + 2^-24) |exact|,   |exact| <= (1 + 2^-23) |ref|.
void expect_bf16_within(const std::vector<bfloat16>& got, const std::vector<float>& ref,
                        const std::vector<double>& bound, double terms, const char* what) {
  ASSERT_EQ(got.size(), ref.size());
  const double r = testing::kBf16Rounding, u = std::ldexp(1.0, -24);
  double worst = 0.0;
  int bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double exact = (1 + 2 * u) * std::fabs(static_cast<double>(ref[i]));
    const double tol = (1 + r) * gamma(terms) * bound[i] + (r + u) * exact;
    const double err = std::fabs(static_cast<double>(from_bfloat16(got[i])) - static_cast<double>(ref[i]));
    if (!(err <= tol) && bad++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: bf16 winograd " << from_bfloat16(got[i]) << " vs reference "
                    << ref[i] << " (tolerance " << tol << ")";
    if (tol > 0) worst = std::max(worst, err / tol);
  }
  std::printf("%s: largest error %.3g of the derived tolerance\n", what, worst);
}

std::vector<bfloat16> to_bf16(const std::vector<float>& v) {
  std::vector<bfloat16> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = to_bfloat16(v[i]);
  return out;
}

std::vector<float> widened(const std::vector<bfloat16>& v) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = from_bfloat16(v[i]);
  return out;
}

TEST_P(CpuFastConv2dWinograd, Bf16OperandsWidenedWithinTheDerivedBound) {
  const Conv2dShape g = GetParam();
  const auto x = to_bf16(testing::uniform_floats(g.x_size(), 31)),
             w = to_bf16(testing::uniform_floats(g.w_size(), 32));
  const auto dy = to_bf16(testing::uniform_floats(g.y_size(), 34));
  const auto b = testing::uniform_floats(static_cast<std::size_t>(g.k), 33);
  const auto xf = widened(x), wf = widened(w), dyf = widened(dy);
  bfloat16 poison;
  std::memset(&poison, 0xFF, sizeof poison);  // NaN: an output not written fails
  constexpr double kTransformRoundings = 2 * 5 + 2 * 5 + 2 * 5 + 2;

  // dw through oneDNN's backward-weights, as the float32 test's (the im2col GEMM's rule would take 7x9's).
  cpu_fast::set_weights_gemm(cpu_fast::WeightsGemm::Never);
  cpu_fast::ConvSaved saved;
  std::vector<bfloat16> y(g.y_size(), poison), dx(g.x_size(), poison);
  std::vector<float> dw(g.w_size(), NAN), db(static_cast<std::size_t>(g.k), NAN);
  cpu_fast::conv2d_forward_bf16(g, x.data(), w.data(), b.data(), y.data(), &saved);
  cpu_fast::conv2d_backward_bf16(g, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(), &saved);
  cpu_fast::set_weights_gemm(cpu_fast::WeightsGemm::Rule);
  for (const char* d : {"fwd", "bwd_data", "bwd_weights"})
    ASSERT_NE(cpu_fast::conv2d_impl(g, true, d, true).find("wino"), std::string::npos)
        << d << ": " << cpu_fast::conv2d_impl(g, true, d, true);

  std::vector<float> y_ref(g.y_size()), dx_ref(g.x_size()), dw_ref(g.w_size()), db_ref(db.size());
  cpu::conv2d_forward<float>(g, xf.data(), wf.data(), b.data(), y_ref.data());
  cpu::conv2d_backward<float>(g, xf.data(), wf.data(), dyf.data(), dx_ref.data(), dw_ref.data(),
                              db_ref.data());
  expect_bf16_within(y, y_ref, forward_bound(g.n, g.c, g.h, g.w, g.k, g.pad_h, xf, wf, g.p(), g.q()),
                     g.c + kTransformRoundings, "bf16 y");
  expect_bf16_within(dx, dx_ref, data_grad_bound(g, wf, dyf), g.k + kTransformRoundings, "bf16 dx");
  expect_weight_grads_within(g, xf, dyf, dw, dw_ref, db, db_ref, kTransformRoundings, "bf16 dw", "bf16 db");
}

INSTANTIATE_TEST_SUITE_P(Shapes, CpuFastConv2dWinograd,
                         ::testing::Values(testing::square_conv(2, 16, 10, 11, 32, 3, 1, 1),
                                           testing::square_conv(3, 32, 7, 9, 16, 3, 1, 1),
                                           testing::square_conv(2, 16, 13, 6, 16, 3, 1, 1)),
                         [](const ::testing::TestParamInfo<Conv2dShape>& test) {
                           const Conv2dShape& g = test.param;
                           return fmt::format("n{}c{}h{}w{}k{}", g.n, g.c, g.h, g.w, g.k);
                         });

// auto: each direction runs one of the two, timed on the first call, and keeps it.
TEST(CpuFastConv2dAlgo, AutoPicksOneAndKeepsIt) {
  if (!cpu_fast::winograd_available()) GTEST_SKIP() << "this host's oneDNN has no Winograd convolution";
  cpu_fast::set_conv_algo(cpu_fast::ConvAlgo::Auto);
  const Conv2dShape g = testing::square_conv(2, 16, 12, 12, 16, 3, 1, 1);
  const auto x = testing::uniform_floats(g.x_size(), 21), w = testing::uniform_floats(g.w_size(), 22);
  std::vector<float> y(g.y_size(), NAN), y_ref(g.y_size());
  cpu_fast::conv2d_forward(g, x.data(), w.data(), nullptr, y.data());
  const std::string first = cpu_fast::conv2d_impl(g, false, "fwd");
  EXPECT_TRUE(first.find("wino") != std::string::npos || first.find("jit") != std::string::npos) << first;
  cpu_fast::conv2d_forward(g, x.data(), w.data(), nullptr, y.data());
  EXPECT_EQ(cpu_fast::conv2d_impl(g, false, "fwd"), first);
  cpu::conv2d_forward<float>(g, x.data(), w.data(), nullptr, y_ref.data());
  expect_within(y, y_ref, forward_bound(g.n, g.c, g.h, g.w, g.k, g.pad_h, x, w, g.p(), g.q()), g.c + 32, "y");
  // bf16: the bf16 direct kernel or the widened float32 Winograd, kept (each one's accuracy: the tests above
  // and tests/cpu/bf16_autocast_test.cpp).
  const auto xb = to_bf16(x), wb = to_bf16(w);
  std::vector<bfloat16> yb(g.y_size());
  cpu_fast::conv2d_forward_bf16(g, xb.data(), wb.data(), nullptr, yb.data());
  const std::string first_bf16 = cpu_fast::conv2d_impl(g, false, "fwd", true);
  EXPECT_TRUE(first_bf16.find("wino") != std::string::npos ||
              first_bf16.find("jit_bf16") != std::string::npos)
      << first_bf16;
  cpu_fast::conv2d_forward_bf16(g, xb.data(), wb.data(), nullptr, yb.data());
  EXPECT_EQ(cpu_fast::conv2d_impl(g, false, "fwd", true), first_bf16);
  cpu_fast::set_conv_algo(cpu_fast::ConvAlgo::Direct);
  // A shape Winograd does not take (stride 2) stays direct under every setting.
  EXPECT_FALSE(cpu_fast::winograd_shape(testing::square_conv(2, 16, 12, 12, 16, 3, 2, 1)));
  EXPECT_FALSE(cpu_fast::winograd_shape(testing::square_conv(2, 16, 12, 12, 16, 1, 1, 0)));
}

}  // namespace
}  // namespace engine
