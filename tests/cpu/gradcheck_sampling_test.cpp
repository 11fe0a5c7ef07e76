// GradCheckOptions::max_elements_per_input: the checker perturbs a random sample of that many distinct
// elements per input (for inputs too big to check whole), and still rejects a wrong gradient.
#include <set>

#include <gtest/gtest.h>

#include "tests/common/gradcheck.h"

namespace engine::testing {
namespace {

// y_i = x_i^2 * w; the x gradient is scaled by `wrong` everywhere. Records which x elements were perturbed.
GradCheckCase square_case(std::vector<double>& x, std::vector<double>& w, double wrong,
                          std::set<std::size_t>* touched) {
  GradCheckCase c;
  c.inputs = {{"x", &x}, {"w", &w}};
  const std::vector<double> original = x;
  c.forward = [&x, &w, original, touched](std::uint64_t) {
    std::vector<double> y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (x[i] != original[i]) touched->insert(i);
      y[i] = x[i] * x[i] * w[0];
    }
    return y;
  };
  c.backward = [&x, &w, wrong](const std::vector<double>& dy, std::uint64_t) {
    std::vector<double> dx(x.size()), dw(1, 0.0);
    for (std::size_t i = 0; i < x.size(); ++i) {
      dx[i] = dy[i] * 2.0 * x[i] * w[0] * wrong;
      dw[0] += dy[i] * x[i] * x[i];
    }
    return std::vector<std::vector<double>>{dx, dw};
  };
  return c;
}

TEST(GradCheckSampling, ChecksTheRequestedNumberOfDistinctElements) {
  std::vector<double> x = random_values(1000, 3, 0.5, 1.5), w = {0.8};
  std::set<std::size_t> touched;
  GradCheckOptions o;
  o.max_elements_per_input = 7;
  const GradCheckResult r = check_gradients(square_case(x, w, 1.0, &touched), o);
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_EQ(r.checked, 7u + 1u) << "7 of x, and all of w (it has one element)";
  EXPECT_EQ(touched.size(), 7u);
  // The same seed samples the same elements; another seed others.
  std::set<std::size_t> again, other;
  check_gradients(square_case(x, w, 1.0, &again), o);
  EXPECT_EQ(again, touched);
  o.seed += 1;
  check_gradients(square_case(x, w, 1.0, &other), o);
  EXPECT_NE(other, touched);
}

TEST(GradCheckSampling, RejectsAWrongGradientAndZeroMeansEveryElement) {
  std::vector<double> x = random_values(50, 4, 0.5, 1.5), w = {1.1};
  std::set<std::size_t> touched;
  GradCheckOptions o;
  o.max_elements_per_input = 3;
  EXPECT_FALSE(check_gradients(square_case(x, w, 1.01, &touched), o).ok);
  touched.clear();
  o.max_elements_per_input = 0;
  const GradCheckResult all = check_gradients(square_case(x, w, 1.0, &touched), o);
  EXPECT_TRUE(all.ok) << all.report;
  EXPECT_EQ(all.checked, 51u);
  EXPECT_EQ(touched.size(), 50u);
}

}  // namespace
}  // namespace engine::testing
