// Dropout reference: gradient check with a fixed mask, mask bits pinned to known Philox outputs, keep
// fraction over 1e6 draws, exact scaling, determinism in (seed, offset), p = 0 and p = 1, bad p.

#include "kernels/cpu/dropout.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/philox.h"
#include "tests/common/float_checks.h"
#include "tests/common/gradcheck.h"

namespace engine::cpu {
namespace {

constexpr std::int64_t kCount = 3 * 5 * 7 * 9;

std::vector<std::uint8_t> mask_of(float p, std::uint64_t seed, std::uint64_t offset, std::int64_t n) {
  std::vector<std::uint8_t> m(static_cast<std::size_t>(n));
  dropout_mask(p, seed, offset, m.data(), n);
  return m;
}

TEST(DropoutReference, GradientCheckFixedMask) {
  // The checker hands every forward the same seed, so each perturbed forward sees the same mask.
  std::vector<double> x = testing::random_values(kCount, 61);
  constexpr float kP = 0.3f;
  constexpr std::uint64_t kOffset = 7;
  testing::GradCheckCase c{{{"x", &x}},
                           [&](std::uint64_t seed) {
                             std::vector<double> y(x.size());
                             dropout_forward(kP, seed, kOffset, x.data(), y.data(), kCount);
                             return y;
                           },
                           [&](const std::vector<double>& dy, std::uint64_t seed) {
                             std::vector<double> dx(x.size(), 123.0);
                             dropout_backward(kP, seed, kOffset, dy.data(), dx.data(), kCount);
                             return std::vector<std::vector<double>>{dx};
                           }};
  EXPECT_GRADIENTS_MATCH(c);
}

TEST(DropoutReference, KnownValuesMaskFromPhiloxOutputs) {
  // Block 0 of stream (seed 0, offset 0) is Philox4x32-10 at counter 0, key 0: Random123's known answer
  // 6627e8d5 e169c58d bc57ac4c 9b00dbd8. Block 1 (counter {1,0,0,0}) is f8e4cca4 5cb200db b1a574eb 097eff67.
  // uniform = (word >> 8) / 2^24:
  //   0x6627e8 / 2^24 = 0.39905   0xe169c5 -> 0.88052   0xbc57ac -> 0.73571   0x9b00db -> 0.60548
  //   0xf8e4cc -> 0.97224         0x5cb200 -> 0.36209   0xb1a574 -> 0.69393   0x097eff -> 0.03709
  const std::uint32_t block0[4] = {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8};
  for (int i = 0; i < 4; ++i) ASSERT_EQ(philox_word(0, 0, i), block0[i]) << "core/philox.h changed";
  ASSERT_EQ(philox_word(0, 0, 4), 0xf8e4cca4u);
  EXPECT_FLOAT_EQ(philox_uniform(0, 0, 0), static_cast<float>(0x6627e8) / 16777216.0f);

  // keep iff uniform >= p.
  EXPECT_EQ(mask_of(0.5f, 0, 0, 8), (std::vector<std::uint8_t>{0, 1, 1, 1, 1, 0, 1, 0}));
  EXPECT_EQ(mask_of(0.7f, 0, 0, 8), (std::vector<std::uint8_t>{0, 1, 1, 0, 1, 0, 0, 0}));
  EXPECT_EQ(mask_of(0.03f, 0, 0, 8), (std::vector<std::uint8_t>{1, 1, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(mask_of(0.04f, 0, 0, 8), (std::vector<std::uint8_t>{1, 1, 1, 1, 1, 1, 1, 0}));

  // Forward and backward with p = 0.5 (scale 2): x = 1..8 -> [0, 4, 6, 8, 10, 0, 14, 0];
  // dy = 1 everywhere -> dx = [0, 2, 2, 2, 2, 0, 2, 0].
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<double> y(8), dx(8, 99.0);
  dropout_forward(0.5f, 0, 0, x.data(), y.data(), 8);
  EXPECT_EQ(y, (std::vector<double>{0, 4, 6, 8, 10, 0, 14, 0}));
  const std::vector<double> dy(8, 1.0);
  dropout_backward(0.5f, 0, 0, dy.data(), dx.data(), 8);
  EXPECT_EQ(dx, (std::vector<double>{0, 2, 2, 2, 2, 0, 2, 0}));
}

TEST(DropoutReference, KnownValuesSeedAndOffsetPackIntoPhiloxCounterAndKey) {
  // Random123's third known answer: counter {243f6a88, 85a308d3, 13198a2e, 03707344}, key {a4093822,
  // 299f31d0} -> d16cfe09 94fdcceb 5001e420 24126ea1. In the engine's convention that is seed
  // 0x299f31d0a4093822, offset 0x0370734413198a2e, block 0x85a308d3243f6a88.
  const PhiloxBlock b = philox_block(0x299f31d0a4093822ull, 0x0370734413198a2eull, 0x85a308d3243f6a88ull);
  EXPECT_EQ(b.v[0], 0xd16cfe09u);
  EXPECT_EQ(b.v[3], 0x24126ea1u);
}

TEST(DropoutReference, KeepFractionOverMillionElements) {
  // kept ~ Binomial(n, 1 - p): mean n(1-p), sigma sqrt(n p (1-p)) (~300 for p = 0.1 at n = 1e6). Allow 5
  // sigma. (The uniform is a multiple of 2^-24, so P(keep) differs from 1 - p by < 2^-24: negligible here.)
  constexpr std::int64_t n = 1'000'000;
  for (const float p : {0.1f, 0.5f, 0.9f}) {
    const std::vector<std::uint8_t> m = mask_of(p, 2024, 3, n);
    std::int64_t kept = 0;
    for (const std::uint8_t v : m) kept += v;
    const double pd = static_cast<double>(p);
    const double mean = static_cast<double>(n) * (1.0 - pd);
    const double sigma = std::sqrt(static_cast<double>(n) * pd * (1.0 - pd));
    EXPECT_LE(std::abs(static_cast<double>(kept) - mean), 5.0 * sigma) << "p=" << p << " kept=" << kept;
  }
}

TEST(DropoutReference, ScalingIsExactAndFollowsTheMask) {
  for (const float p : {0.25f, 0.5f}) {
    const std::vector<double> x = testing::random_values(kCount, 62);
    std::vector<double> y(x.size()), dx(x.size());
    dropout_forward(p, 5, 9, x.data(), y.data(), kCount);
    dropout_backward(p, 5, 9, x.data(), dx.data(), kCount);  // dy = x: backward is the same map
    const std::vector<std::uint8_t> m = mask_of(p, 5, 9, kCount);
    const double scale = 1.0 / (1.0 - static_cast<double>(p));  // 4/3 and 2
    for (std::int64_t i = 0; i < kCount; ++i) {
      const double expected = m[i] ? x[i] * scale : 0.0;
      EXPECT_EQ(y[i], expected) << i;
      EXPECT_EQ(dx[i], expected) << i;
    }
  }
}

TEST(DropoutReference, SameSeedAndOffsetGiveTheSameMaskOthersDiffer) {
  constexpr std::int64_t n = 100'000;
  const auto a = mask_of(0.5f, 42, 1, n);
  EXPECT_EQ(a, mask_of(0.5f, 42, 1, n));
  // Independent masks at p = 0.5 disagree on half the elements: ~50000 +- 158. Ask for > 45000.
  for (const auto& other : {mask_of(0.5f, 42, 2, n), mask_of(0.5f, 43, 1, n)}) {
    std::int64_t differ = 0;
    for (std::int64_t i = 0; i < n; ++i) differ += a[i] != other[i] ? 1 : 0;
    EXPECT_GT(differ, 45'000);
  }
}

TEST(DropoutReference, KnownValuesPZeroIsIdentityPOneIsZeros) {
  const std::vector<double> x = testing::random_values(kCount, 63);
  std::vector<double> y(x.size()), dx(x.size(), 5.0);
  dropout_forward(0.0f, 1, 1, x.data(), y.data(), kCount);
  EXPECT_EQ(y, x);
  dropout_forward(1.0f, 1, 1, x.data(), y.data(), kCount);
  EXPECT_EQ(y, std::vector<double>(x.size(), 0.0));  // zeros, not NaN from 0 * (1/0)
  dropout_backward(1.0f, 1, 1, x.data(), dx.data(), kCount);
  EXPECT_EQ(dx, std::vector<double>(x.size(), 0.0));
}

TEST(DropoutReference, RejectsPOutsideZeroOne) {
  double v = 1.0, out = 0.0;
  std::uint8_t m = 0;
  for (const float p : {-0.1f, 1.5f, std::numeric_limits<float>::quiet_NaN()}) {
    EXPECT_THROW(dropout_forward(p, 0, 0, &v, &out, 1), Error) << p;
    EXPECT_THROW(dropout_backward(p, 0, 0, &v, &out, 1), Error) << p;
    EXPECT_THROW(dropout_mask(p, 0, 0, &m, 1), Error) << p;
  }
}

TEST(DropoutReference, FloatMatchesDouble) {
  // Same mask; a kept value is x * scale in double rounded once: |float - double| <= 2^-24 |double|.
  const std::vector<double> x0 = testing::random_values(kCount, 64);
  const std::vector<float> xf(x0.begin(), x0.end());
  const std::vector<double> xd(xf.begin(), xf.end());
  std::vector<double> yd(kCount);
  std::vector<float> yf(kCount);
  dropout_forward(0.3f, 8, 8, xd.data(), yd.data(), kCount);
  dropout_forward(0.3f, 8, 8, xf.data(), yf.data(), kCount);
  testing::expect_rounded_once(yf, yd, "y");
}

}  // namespace
}  // namespace engine::cpu
