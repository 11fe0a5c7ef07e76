// kernels/cpu_fast/conv2d_weights_gemm.h: a convolution's dw (and db) as im2col GEMMs, against the float64
// reference (kernels/cpu/conv2d.h) on odd sizes, strides 1 and 2, padding, dilation, 4x4 maps, 1x1 and 3x3
// kernels, dw and db poisoned with NaN first; with the batch in one chunk and split into several (a small
// column budget: the chunks' products are summed in float32 by the GEMM).
//
// Tolerances (tests/common/bf16_tolerance.h): each dw is a float32 sum of L = N P Q products, within
// (L + 2) 2^-24 |x| |dy| of the float64 sum on the same operands. bf16: the operands are bf16 values, their
// products exact in float32, the reference run on the bf16-rounded inputs. float32: each product rounds
// once more, which the same bound covers (the inner product's gamma_L). db: float32 plane sums in double.
// Blocked layouts (nChw16c, nChw8c, and one operand blocked with the other NCHW): the same sums on x and dy
// stored blocked, so the same bounds.

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "core/dtype.h"
#include "core/error.h"
#include "core/layout.h"
#include "kernels/cpu/cast.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu_fast/conv2d.h"
#include "kernels/cpu_fast/conv2d_weights_gemm.h"
#include "tests/common/bf16_tolerance.h"
#include "tests/common/blocked_data.h"
#include "tests/common/test_data.h"

namespace engine {
namespace {

using testing::abs_values;
using testing::bf16_matches;
using testing::bf16_rounded;
using testing::in_layout;
using testing::random_floats;

std::vector<double> widened(const std::vector<float>& v) { return {v.begin(), v.end()}; }

std::vector<bfloat16> to_bf16(const std::vector<float>& v) {
  std::vector<bfloat16> out(v.size());
  cpu::cast_f32_to_bf16(v.data(), out.data(), static_cast<std::int64_t>(v.size()));
  return out;
}

// One sample's column bytes: a budget of `samples` of them splits the batch into chunks of that many.
long budget_of(const Conv2dShape& g, int samples, std::size_t element) {
  return static_cast<long>(samples) * g.c * g.r * g.s * g.p() * g.q() * static_cast<long>(element);
}

class WeightsGemm : public ::testing::TestWithParam<std::tuple<Conv2dShape, int>> {
 protected:
  // Runs `bf16` or float32 on the same random x and dy, with and without a bias gradient, and checks both.
  void check(bool bf16) { check(bf16, std::get<0>(GetParam()), std::get<1>(GetParam()), {}); }

 public:
  static void check(bool bf16, const Conv2dShape& g, int chunk_samples, cpu_fast::GemmLayouts layouts) {
    const std::vector<float> x = random_floats(g.x_size(), 31), dy = random_floats(g.y_size(), 32),
                             w = random_floats(g.w_size(), 33);
    const std::vector<float> x_stored = in_layout(x, g.n, g.c, g.h * g.w, layouts.x),
                             dy_stored = in_layout(dy, g.n, g.k, g.p() * g.q(), layouts.dy);
    const std::vector<double> xr = bf16 ? bf16_rounded(x) : widened(x),
                              dyr = bf16 ? bf16_rounded(dy) : widened(dy), wr = widened(w);
    const std::vector<double> xa = abs_values(xr), dya = abs_values(dyr);
    const auto k = static_cast<std::size_t>(g.k);
    std::vector<double> dw_ref(g.w_size()), dw_mag(g.w_size()), db_ref(k), db_mag(k);
    cpu::conv2d_backward<double>(g, xr.data(), wr.data(), dyr.data(), nullptr, dw_ref.data(), db_ref.data());
    cpu::conv2d_backward<double>(g, xa.data(), wr.data(), dya.data(), nullptr, dw_mag.data(), db_mag.data());
    const long budget =
        chunk_samples > 0 ? budget_of(g, chunk_samples, bf16 ? 2 : 4) : cpu_fast::kColBudgetBytes;
    const std::int64_t terms = static_cast<std::int64_t>(g.n) * g.p() * g.q();
    for (const bool with_bias : {true, false}) {
      std::vector<float> dw(g.w_size(), std::nanf("")), db(k, std::nanf(""));
      float* db_ptr = with_bias ? db.data() : nullptr;
      if (bf16) {
        const std::vector<bfloat16> xb = to_bf16(x_stored), dyb = to_bf16(dy_stored);
        cpu_fast::conv2d_weights_gemm(g, xb.data(), dyb.data(), dw.data(), db_ptr, layouts, budget);
      } else {
        cpu_fast::conv2d_weights_gemm(g, x_stored.data(), dy_stored.data(), dw.data(), db_ptr, layouts,
                                      budget);
      }
      EXPECT_TRUE(bf16_matches(dw, dw_ref, dw_mag, terms, false)) << "dw, bias " << with_bias;
      if (with_bias) {
        EXPECT_TRUE(bf16_matches(db, db_ref, db_mag, terms, false)) << "db";
      } else {
        for (const float v : db) EXPECT_TRUE(std::isnan(v)) << "db written without a bias";
      }
    }
  }
};

TEST_P(WeightsGemm, Float32IsTheReference) { check(false); }

TEST_P(WeightsGemm, Bf16IsTheReferenceOnRoundedOperands) {
  if (!cpu_fast::native_bf16()) GTEST_SKIP() << "this host runs no native bf16 GEMM (avx512_bf16)";
  check(true);
}

Conv2dShape dilated(Conv2dShape g) {
  g.dilation_h = 2;
  g.dilation_w = 2;
  return g;
}

Conv2dShape rectangular(Conv2dShape g) {
  g.stride_w = 1;
  g.pad_w = 0;
  g.w += 2;
  return g;
}

// (shape, samples per chunk: 0 the default budget, one chunk at these sizes)
INSTANTIATE_TEST_SUITE_P(
    OddSizes, WeightsGemm,
    ::testing::Values(std::make_tuple(testing::square_conv(3, 5, 9, 7, 6, 3, 2, 1), 0),
                      std::make_tuple(testing::square_conv(5, 7, 9, 9, 11, 3, 2, 1), 2),
                      std::make_tuple(testing::square_conv(5, 17, 4, 4, 9, 3, 1, 1), 0),
                      std::make_tuple(testing::square_conv(7, 17, 4, 4, 9, 3, 1, 1), 3),
                      std::make_tuple(testing::square_conv(3, 9, 7, 5, 13, 3, 1, 2), 1),
                      std::make_tuple(testing::square_conv(5, 7, 9, 11, 5, 1, 2, 0), 2),
                      std::make_tuple(testing::square_conv(3, 5, 5, 7, 3, 1, 1, 0), 0),
                      std::make_tuple(testing::square_conv(3, 6, 11, 9, 5, 5, 3, 2), 2),
                      std::make_tuple(dilated(testing::square_conv(3, 5, 9, 9, 7, 3, 1, 1)), 2),
                      std::make_tuple(rectangular(testing::square_conv(3, 5, 9, 7, 7, 3, 2, 1)), 1)));

// x and dy read in place in oneDNN's blocked layouts (kernels/cpu_fast/conv2d.cpp passes the call's layouts):
// C and K whole blocks, odd maps, strides 1 and 2, several chunks; one operand blocked, the other NCHW (a
// tensor whose channels do not fill blocks stays NCHW).
TEST(WeightsGemmBlocked, Bf16AndFloat32AreTheReference) {
  const Layout b16 = Layout::NCHW16c, b8 = Layout::NCHW8c, plain = Layout::NCHW;
  const std::vector<std::tuple<Conv2dShape, int, cpu_fast::GemmLayouts>> cases = {
      {testing::square_conv(3, 16, 9, 9, 32, 3, 2, 1), 2, {b16, b16}},
      {testing::square_conv(5, 32, 5, 5, 16, 3, 1, 1), 0, {b16, b16}},
      {testing::square_conv(3, 16, 7, 7, 8, 3, 2, 1), 1, {b8, b8}},
      {testing::square_conv(3, 3, 9, 9, 16, 3, 1, 1), 2, {plain, b16}},
      {testing::square_conv(3, 16, 7, 7, 5, 3, 2, 1), 0, {b16, plain}}};
  for (const auto& [g, chunk_samples, layouts] : cases) {
    SCOPED_TRACE(::testing::Message() << "C " << g.c << " K " << g.k << " layouts "
                                      << static_cast<int>(layouts.x) << "/" << static_cast<int>(layouts.dy));
    WeightsGemm::check(false, g, chunk_samples, layouts);
    if (cpu_fast::native_bf16()) WeightsGemm::check(true, g, chunk_samples, layouts);
  }
  if (!cpu_fast::native_bf16()) GTEST_SKIP() << "float32 checked; this host runs no native bf16 GEMM";
}

// Through conv2d.h's bf16 backward with blocked activations (ConvLayouts): a strided 3x3 takes the GEMM (the
// rule's shape) reading nChw16c x and dy in place; dw within the bound above.
TEST(WeightsGemmBlocked, Conv2dBackwardBf16TakesItInTheBlockedLayout) {
  if (!cpu_fast::native_bf16()) GTEST_SKIP() << "this host runs no native bf16 convolution (avx512_bf16)";
  const Conv2dShape g = testing::square_conv(3, 16, 9, 9, 32, 3, 2, 1);
  const Layout b16 = Layout::NCHW16c;
  const std::vector<float> x = random_floats(g.x_size(), 41), dy = random_floats(g.y_size(), 42),
                           w = random_floats(g.w_size(), 43);
  const std::vector<double> xr = bf16_rounded(x), dyr = bf16_rounded(dy), wr = bf16_rounded(w);
  const std::vector<double> xa = abs_values(xr), dya = abs_values(dyr);
  std::vector<double> dw_ref(g.w_size()), dw_mag(g.w_size());
  cpu::conv2d_backward<double>(g, xr.data(), wr.data(), dyr.data(), nullptr, dw_ref.data(), nullptr);
  cpu::conv2d_backward<double>(g, xa.data(), wr.data(), dya.data(), nullptr, dw_mag.data(), nullptr);
  const std::vector<bfloat16> xb = to_bf16(in_layout(x, g.n, g.c, g.h * g.w, b16)),
                              dyb = to_bf16(in_layout(dy, g.n, g.k, g.p() * g.q(), b16)), wb = to_bf16(w);
  std::vector<float> dw(g.w_size(), std::nanf(""));
  cpu_fast::conv2d_backward_bf16(g, xb.data(), wb.data(), dyb.data(), nullptr, dw.data(), nullptr, nullptr,
                                 {b16, b16});
  EXPECT_TRUE(bf16_matches(dw, dw_ref, dw_mag, static_cast<std::int64_t>(g.n) * g.p() * g.q(), false));
  EXPECT_EQ(cpu_fast::conv2d_impl(g, false, "bwd_weights", true, {b16, b16}), "engine:im2col_gemm");
}

TEST(WeightsGemmInput, GroupedAndNullAreRefused) {
  Conv2dShape g = testing::square_conv(2, 4, 5, 5, 4, 3, 1, 1);
  std::vector<float> x(g.x_size(), 1.0f), dy(g.y_size(), 1.0f), dw(g.w_size());
  EXPECT_THROW(cpu_fast::conv2d_weights_gemm(g, x.data(), nullptr, dw.data(), nullptr), Error);
  EXPECT_THROW(cpu_fast::conv2d_weights_gemm(g, x.data(), dy.data(), dw.data(), nullptr, {}, 0), Error);
  // A blocked layout whose blocks x's 4 channels do not fill.
  EXPECT_THROW(
      cpu_fast::conv2d_weights_gemm(g, x.data(), dy.data(), dw.data(), nullptr, {Layout::NCHW8c, {}}), Error);
  g.groups = 2;
  try {
    cpu_fast::conv2d_weights_gemm(g, x.data(), dy.data(), dw.data(), nullptr);
    ADD_FAILURE() << "a grouped convolution was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("groups 2"), std::string::npos) << e.what();
  }
}

// The rule: bf16 strided 3x3 and 3x3 under 8x8 outputs (and the shapes it leaves to oneDNN).
TEST(WeightsGemmRule, TakesTheShapesOneDnnRunsSlowly) {
  EXPECT_TRUE(cpu_fast::weights_grad_gemm(testing::square_conv(64, 64, 32, 32, 128, 3, 2, 1), true));
  EXPECT_TRUE(cpu_fast::weights_grad_gemm(testing::square_conv(64, 512, 4, 4, 512, 3, 1, 1), true));
  EXPECT_FALSE(cpu_fast::weights_grad_gemm(testing::square_conv(64, 256, 8, 8, 256, 3, 1, 1), true));
  EXPECT_FALSE(cpu_fast::weights_grad_gemm(testing::square_conv(64, 64, 32, 32, 128, 3, 2, 1), false));
  Conv2dShape grouped = testing::square_conv(64, 64, 32, 32, 128, 3, 2, 1);
  grouped.groups = 2;
  EXPECT_FALSE(cpu_fast::weights_grad_gemm(grouped, true));
}

}  // namespace
}  // namespace engine
