// Residual add reference: gradient check w.r.t. both inputs, known values, float vs double.

#include "kernels/cpu/residual_add.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/common/gradcheck.h"

namespace engine::cpu {
namespace {

constexpr std::int64_t kCount = 3 * 5 * 7 * 9;

TEST(ResidualAddReference, GradientCheck) {
  std::vector<double> a = testing::random_values(kCount, 51), b = testing::random_values(kCount, 52);
  testing::GradCheckCase c{{{"a", &a}, {"b", &b}},
                           [&](std::uint64_t) {
                             std::vector<double> y(a.size());
                             residual_add_forward(a.data(), b.data(), y.data(), kCount);
                             return y;
                           },
                           [&](const std::vector<double>& dy, std::uint64_t) {
                             std::vector<double> da(a.size(), 123.0), db(b.size(), 456.0);
                             residual_add_backward(dy.data(), da.data(), db.data(), kCount);
                             return std::vector<std::vector<double>>{da, db};
                           }};
  EXPECT_GRADIENTS_MATCH(c);
}

TEST(ResidualAddReference, KnownValues) {
  // [1, 2, -3] + [0.5, -2, 4] = [1.5, 0, 1]; both inputs get the whole dy.
  const std::vector<double> a = {1, 2, -3}, b = {0.5, -2, 4}, dy = {1, 2, 3};
  std::vector<double> y(3), da(3, 9.0), db(3, 9.0);
  residual_add_forward(a.data(), b.data(), y.data(), 3);
  residual_add_backward(dy.data(), da.data(), db.data(), 3);
  EXPECT_EQ(y, (std::vector<double>{1.5, 0, 1}));
  EXPECT_EQ(da, dy);
  EXPECT_EQ(db, dy);
}

TEST(ResidualAddReference, RejectsNegativeCount) {
  double v = 0;
  EXPECT_THROW(residual_add_forward(&v, &v, &v, -1), Error);
}

TEST(ResidualAddReference, FloatMatchesDouble) {
  // The sum of two floats is formed exactly in double and rounded once: |float - double| <= 2^-24 |double|.
  const std::vector<double> a0 = testing::random_values(kCount, 53), b0 = testing::random_values(kCount, 54);
  const std::vector<float> af(a0.begin(), a0.end()), bf(b0.begin(), b0.end());
  const std::vector<double> ad(af.begin(), af.end()), bd(bf.begin(), bf.end());
  std::vector<double> yd(kCount);
  std::vector<float> yf(kCount), daf(kCount), dbf(kCount);
  residual_add_forward(ad.data(), bd.data(), yd.data(), kCount);
  residual_add_forward(af.data(), bf.data(), yf.data(), kCount);
  residual_add_backward(af.data(), daf.data(), dbf.data(), kCount);
  for (std::int64_t i = 0; i < kCount; ++i) {
    EXPECT_NEAR(static_cast<double>(yf[i]), yd[i], 0x1p-24 * std::abs(yd[i])) << i;
  }
  EXPECT_EQ(daf, af);
  EXPECT_EQ(dbf, af);
}

}  // namespace
}  // namespace engine::cpu
