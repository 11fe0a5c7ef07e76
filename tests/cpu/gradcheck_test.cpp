// The gradient checker itself: it passes a right gradient, fails a wrong one (the cases a test relies on),
// skips kinks, and refuses to pass when it skipped too much.
#include "tests/common/gradcheck.h"

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

namespace engine::testing {
namespace {

// y_i = x_i^3 * w, a smooth op with two inputs.
GradCheckCase cube_case(std::vector<double>& x, std::vector<double>& w, double wrong_factor) {
  GradCheckCase c;
  c.inputs = {{"x", &x}, {"w", &w}};
  c.forward = [&x, &w](std::uint64_t) {
    std::vector<double> y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * x[i] * x[i] * w[0];
    return y;
  };
  c.backward = [&x, &w, wrong_factor](const std::vector<double>& dy, std::uint64_t) {
    std::vector<double> dx(x.size()), dw(1, 0.0);
    for (std::size_t i = 0; i < x.size(); ++i) {
      dx[i] = dy[i] * 3.0 * x[i] * x[i] * w[0] * (i == 2 ? wrong_factor : 1.0);
      dw[0] += dy[i] * x[i] * x[i] * x[i];
    }
    return std::vector<std::vector<double>>{dx, dw};
  };
  return c;
}

TEST(GradCheck, AcceptsTheRightGradient) {
  std::vector<double> x = random_values(7, 1), w = {0.7};
  const GradCheckResult r = check_gradients(cube_case(x, w, 1.0));
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_EQ(r.checked, 8u);
  EXPECT_EQ(r.skipped, 0u);
  EXPECT_LT(r.worst_error, 1e-8);
}

TEST(GradCheck, RejectsAGradientOffByOnePercentInOneElement) {
  std::vector<double> x = {0.5, -0.8, 0.9, 0.3}, w = {1.3};
  const GradCheckResult r = check_gradients(cube_case(x, w, 1.01));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.report.find("d/dx[2]"), std::string::npos) << r.report;
}

TEST(GradCheck, RejectsAWrongNumberOfGradients) {
  std::vector<double> x = {0.5}, w = {1.0};
  GradCheckCase c = cube_case(x, w, 1.0);
  c.backward = [](const std::vector<double>&, std::uint64_t) {
    return std::vector<std::vector<double>>{{1.0}};
  };
  EXPECT_FALSE(check_gradients(c).ok);
}

// |x|: a kink at 0. An element exactly at the kink is skipped, the others are checked.
GradCheckCase abs_case(std::vector<double>& x) {
  GradCheckCase c;
  c.inputs = {{"x", &x}};
  c.forward = [&x](std::uint64_t) {
    std::vector<double> y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = std::abs(x[i]);
    return y;
  };
  c.backward = [&x](const std::vector<double>& dy, std::uint64_t) {
    std::vector<double> dx(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) dx[i] = dy[i] * (x[i] > 0 ? 1.0 : -1.0);
    return std::vector<std::vector<double>>{dx};
  };
  return c;
}

TEST(GradCheck, SkipsAKinkAndChecksTheRest) {
  std::vector<double> x = {0.4, 0.0, -0.6, 0.2, -0.1};
  const GradCheckResult r = check_gradients(abs_case(x));
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_EQ(r.skipped, 1u);
  EXPECT_EQ(r.checked, 4u);
}

TEST(GradCheck, FailsWhenMostElementsSitOnKinks) {
  std::vector<double> x = {0.0, 0.0, 0.0, 0.5};
  const GradCheckResult r = check_gradients(abs_case(x));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.report.find("kink"), std::string::npos) << r.report;
}

TEST(GradCheck, SameSeedReachesEveryForward) {
  std::vector<double> x = {0.3, 0.6};
  GradCheckCase c;
  c.inputs = {{"x", &x}};
  std::vector<std::uint64_t> seeds;
  c.forward = [&](std::uint64_t seed) {
    seeds.push_back(seed);
    return x;
  };
  c.backward = [](const std::vector<double>& dy, std::uint64_t) {
    return std::vector<std::vector<double>>{dy};
  };
  EXPECT_TRUE(check_gradients(c).ok);
  ASSERT_GT(seeds.size(), 1u);
  for (std::uint64_t s : seeds) EXPECT_EQ(s, seeds.front());
}

TEST(GradCheck, DistinctValuesAreSpacedAndShuffled) {
  const std::vector<double> v = distinct_values(50, 3, 0.01);
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 1; i < sorted.size(); ++i) EXPECT_NEAR(sorted[i] - sorted[i - 1], 0.01, 1e-12);
  EXPECT_NE(v, sorted) << "not shuffled";
}

}  // namespace
}  // namespace engine::testing
