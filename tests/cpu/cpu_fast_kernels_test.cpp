// The fast float32 CPU kernels (kernels/cpu_fast: oneDNN convolution and GEMM) against the
// float64-accumulating reference (kernels/cpu) on odd shapes, strides and paddings, with and without bias and
// dx.
//
// Tolerance: the reference rounds a float64 sum once; the fast path sums in float32 in oneDNN's blocked
// order. For a sum of K terms the float32 error is bounded by about K * 2^-24 * sum|terms| and is in practice
// ~sqrt(K) * 2^-24 * sum|terms|; we allow 1e-5 * (sum of |terms|) per output, computed exactly alongside,
// plus 1e-6 absolute. K here is up to ~600 (conv dW over a batch), so 1e-5 is ~20 times the expected error
// and still far below anything a wrong index would give.

#include <array>
#include <cmath>
#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu_fast/conv2d.h"
#include "kernels/cpu_fast/linear.h"
#include "tests/common/test_data.h"

namespace engine {
namespace {

std::vector<float> absolute(const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = std::fabs(v[i]);
  return out;
}

// |fast - reference| <= 1e-5 * magnitude + 1e-6, magnitude = the same op on |inputs| (the sum of |terms|).
void expect_close(const std::vector<float>& fast, const std::vector<float>& reference,
                  const std::vector<float>& magnitude, const char* what) {
  ASSERT_EQ(fast.size(), reference.size());
  int bad = 0;
  for (std::size_t i = 0; i < fast.size() && bad < 5; ++i) {
    const double tol = 1e-5 * static_cast<double>(magnitude[i]) + 1e-6;
    if (!(std::fabs(static_cast<double>(fast[i]) - static_cast<double>(reference[i])) <= tol)) {
      ADD_FAILURE() << what << "[" << i << "]: fast " << fast[i] << " vs reference " << reference[i];
      ++bad;
    }
  }
}

struct ConvCase {
  Conv2dShape shape;
  bool bias;
  bool dx;
};

// A stable, readable name for a case ("n3c5h7w9k4r3s1p1_bias_dx"): test names and ctest's listing use it.
// A rectangular kernel ("r1x7s1x1p0x3") names both axes.
std::string case_name(const ConvCase& c) {
  const Conv2dShape& g = c.shape;
  const bool square = g.r == g.s && g.stride_h == g.stride_w && g.pad_h == g.pad_w;
  const std::string geometry =
      square ? fmt::format("r{}s{}p{}", g.r, g.stride_h, g.pad_h)
             : fmt::format("r{}x{}s{}x{}p{}x{}", g.r, g.s, g.stride_h, g.stride_w, g.pad_h, g.pad_w);
  return fmt::format("n{}c{}h{}w{}k{}{}{}{}", g.n, g.c, g.h, g.w, g.k, geometry, c.bias ? "_bias" : "",
                     c.dx ? "_dx" : "");
}

// A kh x kw kernel with per-axis stride and padding (inception_v3's 1x7 and 7x1).
Conv2dShape rect_conv(int n, int c, int h, int w, int k, std::array<int, 2> kernel, std::array<int, 2> stride,
                      std::array<int, 2> pad) {
  Conv2dShape g = testing::square_conv(n, c, h, w, k, kernel[0], stride[0], pad[0]);
  g.s = kernel[1];
  g.stride_w = stride[1];
  g.pad_w = pad[1];
  return g;
}
void PrintTo(const ConvCase& c, std::ostream* out) { *out << case_name(c); }

class CpuFastConv2d : public ::testing::TestWithParam<ConvCase> {};

TEST_P(CpuFastConv2d, MatchesTheReference) {
  const ConvCase& c = GetParam();
  const Conv2dShape& g = c.shape;
  const auto x = testing::uniform_floats(g.x_size(), 1), w = testing::uniform_floats(g.w_size(), 2);
  const auto b = testing::uniform_floats(static_cast<std::size_t>(g.k), 3),
             dy = testing::uniform_floats(g.y_size(), 4);
  const float* bias = c.bias ? b.data() : nullptr;

  std::vector<float> y_fast(g.y_size(), NAN), y_ref(g.y_size()), y_mag(g.y_size());
  cpu_fast::conv2d_forward(g, x.data(), w.data(), bias, y_fast.data());
  cpu::conv2d_forward<float>(g, x.data(), w.data(), bias, y_ref.data());
  const auto ax = absolute(x), aw = absolute(w), ab = absolute(b), ady = absolute(dy);
  cpu::conv2d_forward<float>(g, ax.data(), aw.data(), c.bias ? ab.data() : nullptr, y_mag.data());
  expect_close(y_fast, y_ref, y_mag, "y");

  std::vector<float> dx_fast(g.x_size(), NAN), dx_ref(g.x_size()), dx_mag(g.x_size());
  std::vector<float> dw_fast(g.w_size(), NAN), dw_ref(g.w_size()), dw_mag(g.w_size());
  std::vector<float> db_fast(static_cast<std::size_t>(g.k), NAN), db_ref(db_fast.size()),
      db_mag(db_fast.size());
  cpu_fast::conv2d_backward(g, x.data(), w.data(), dy.data(), c.dx ? dx_fast.data() : nullptr, dw_fast.data(),
                            c.bias ? db_fast.data() : nullptr);
  cpu::conv2d_backward<float>(g, x.data(), w.data(), dy.data(), dx_ref.data(), dw_ref.data(), db_ref.data());
  cpu::conv2d_backward<float>(g, ax.data(), aw.data(), ady.data(), dx_mag.data(), dw_mag.data(),
                              db_mag.data());
  if (c.dx) expect_close(dx_fast, dx_ref, dx_mag, "dx");
  expect_close(dw_fast, dw_ref, dw_mag, "dw");
  if (c.bias) expect_close(db_fast, db_ref, db_mag, "db");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CpuFastConv2d,
    ::testing::Values(ConvCase{testing::square_conv(3, 5, 7, 9, 4, 3, 1, 1), true, true},
                      ConvCase{testing::square_conv(2, 3, 9, 7, 6, 3, 2, 1), false, true},
                      ConvCase{testing::square_conv(2, 4, 8, 8, 5, 1, 1, 0), false, true},    // pointwise
                      ConvCase{testing::square_conv(2, 4, 8, 8, 5, 1, 2, 0), true, true},     // 1x1 stride 2
                      ConvCase{testing::square_conv(4, 1, 28, 28, 8, 3, 1, 0), true, false},  // mnist conv1
                      ConvCase{testing::square_conv(2, 6, 11, 10, 7, 5, 3, 2), true, true},
                      // rectangular kernels, per-axis stride and padding (inception_v3: 1x7, 7x1)
                      ConvCase{rect_conv(3, 5, 9, 11, 6, {1, 7}, {1, 1}, {0, 3}), true, true},
                      ConvCase{rect_conv(3, 5, 9, 11, 6, {7, 1}, {1, 1}, {3, 0}), false, true},
                      ConvCase{rect_conv(2, 5, 9, 11, 4, {3, 1}, {2, 1}, {1, 0}), true, true},
                      ConvCase{rect_conv(2, 3, 7, 13, 5, {3, 5}, {1, 3}, {0, 2}), true, false}),
    [](const ::testing::TestParamInfo<ConvCase>& test) { return case_name(test.param); });

// The primitives are cached per shape: a second call with other buffers and values must use them, not the
// first call's (a plan that kept a pointer would give the first result again).
TEST(CpuFastConv2d, CachedPlanUsesEachCallsBuffers) {
  const Conv2dShape g = testing::square_conv(2, 6, 10, 10, 8, 3, 1, 1);
  for (std::uint32_t seed = 30; seed < 33; ++seed) {
    const auto x = testing::uniform_floats(g.x_size(), seed),
               w = testing::uniform_floats(g.w_size(), seed + 10);
    std::vector<float> y_fast(g.y_size(), NAN), y_ref(g.y_size()), y_mag(g.y_size());
    cpu_fast::conv2d_forward(g, x.data(), w.data(), nullptr, y_fast.data());
    cpu::conv2d_forward<float>(g, x.data(), w.data(), nullptr, y_ref.data());
    const auto ax = absolute(x), aw = absolute(w);
    cpu::conv2d_forward<float>(g, ax.data(), aw.data(), nullptr, y_mag.data());
    expect_close(y_fast, y_ref, y_mag, "y");
  }
}

TEST(CpuFastLinear, MatchesTheReference) {
  for (const bool with_bias : {true, false}) {
    const LinearShape g{.n = 7, .in_features = 33, .out_features = 11};
    const auto x = testing::uniform_floats(g.x_size(), 5), w = testing::uniform_floats(g.w_size(), 6);
    const auto b = testing::uniform_floats(static_cast<std::size_t>(g.out_features), 7),
               dy = testing::uniform_floats(g.y_size(), 8);
    const auto ax = absolute(x), aw = absolute(w), ab = absolute(b), ady = absolute(dy);
    const float* bias = with_bias ? b.data() : nullptr;
    std::vector<float> y_fast(g.y_size(), NAN), y_ref(g.y_size()), y_mag(g.y_size());
    cpu_fast::linear_forward(g, x.data(), w.data(), bias, y_fast.data());
    cpu::linear_forward<float>(g, x.data(), w.data(), bias, y_ref.data());
    cpu::linear_forward<float>(g, ax.data(), aw.data(), with_bias ? ab.data() : nullptr, y_mag.data());
    expect_close(y_fast, y_ref, y_mag, "y");

    std::vector<float> dx_fast(g.x_size(), NAN), dx_ref(g.x_size()), dx_mag(g.x_size());
    std::vector<float> dw_fast(g.w_size(), NAN), dw_ref(g.w_size()), dw_mag(g.w_size());
    std::vector<float> db_fast(static_cast<std::size_t>(g.out_features), NAN), db_ref(db_fast.size()),
        db_mag(db_fast.size());
    cpu_fast::linear_backward(g, x.data(), w.data(), dy.data(), dx_fast.data(), dw_fast.data(),
                              with_bias ? db_fast.data() : nullptr);
    cpu::linear_backward<float>(g, x.data(), w.data(), dy.data(), dx_ref.data(), dw_ref.data(),
                                db_ref.data());
    cpu::linear_backward<float>(g, ax.data(), aw.data(), ady.data(), dx_mag.data(), dw_mag.data(),
                                db_mag.data());
    expect_close(dx_fast, dx_ref, dx_mag, "dx");
    expect_close(dw_fast, dw_ref, dw_mag, "dw");
    if (with_bias) expect_close(db_fast, db_ref, db_mag, "db");
  }
}

}  // namespace
}  // namespace engine
