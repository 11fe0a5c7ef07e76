#pragma once
// A generic gradient checker, after Caffe's GradientChecker: central differences in float64 against the
// backward an op implements by hand.
//
// The op is seen as y = f(inputs...). The checker draws a fixed random probe p and checks the gradient of
// the scalar L = sum_i p_i * y_i: backward(dy = p) must return dL/dinput for every input, element by
// element, within `tolerance * max(|analytic|, |numeric|, 1)`.
//
// Why the tolerance is what it is: with step h the central difference has truncation error ~h^2 |f'''| / 6
// and rounding error ~eps * |L| / h (eps = 2^-52). With h = 1e-5 both are below ~1e-9 for the O(1)
// inputs the tests use, so 1e-6 leaves three orders of margin while a wrong gradient (a missing term, a
// wrong index, a dropped scale) is off by O(1e-2) or more.
//
// Kinks (ReLU at 0, a max-pool tie, a clamp): where the left and right one-sided differences disagree,
// the function is not differentiable at that point and the element is skipped, as Caffe does. To keep a
// test from passing by skipping everything, the checker fails when more than `max_skipped_fraction` of
// the elements of an input were skipped.
//
// Random ops (dropout): forward and backward receive the same seed on every call, so the RNG is
// re-seeded before every forward and the perturbed evaluations see the same mask as the analytic one.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace engine::testing {

struct GradCheckInput {
  std::string name;           // for messages: "x", "weight", ...
  std::vector<double>* data;  // perturbed in place, restored after each element
};

struct GradCheckCase {
  std::vector<GradCheckInput> inputs;
  // y = f(inputs) for the current contents of the inputs.
  std::function<std::vector<double>(std::uint64_t seed)> forward;
  // Returns dL/d(input k) for each input, in the order of `inputs`, given dy.
  std::function<std::vector<std::vector<double>>(const std::vector<double>& dy, std::uint64_t seed)> backward;
};

struct GradCheckOptions {
  double step = 1e-5;
  double tolerance = 1e-6;
  double kink_threshold = 1e-3;        // |left - right| / max(1, |central|) above this marks a kink
  double max_skipped_fraction = 0.25;  // more skipped elements than this fails the check
  std::uint64_t seed = 20261122;
  // 0: perturb every element of every input. Otherwise at most this many elements per input, chosen at
  // random (distinct, from `seed`): for inputs too large to check whole, such as a model's parameters, where
  // each element costs three forward passes. The skipped fraction is then taken over the sampled elements.
  std::size_t max_elements_per_input = 0;
};

struct GradCheckResult {
  bool ok = true;
  std::size_t checked = 0;
  std::size_t skipped = 0;
  double worst_error = 0.0;  // largest |a - n| / max(|a|, |n|, 1) seen
  std::string report;        // the first mismatches, or why it failed
};

GradCheckResult check_gradients(const GradCheckCase& c, const GradCheckOptions& options = {});

// Random values in [lo, hi) from a fixed seed (Philox), for test inputs.
std::vector<double> random_values(std::size_t n, std::uint64_t seed, double lo = -1.0, double hi = 1.0);

// Values spread at least `gap` apart in random order, for ops with kinks: no two entries tie and none
// is within gap/2 of another, so a small perturbation never crosses a kink.
std::vector<double> distinct_values(std::size_t n, std::uint64_t seed, double gap = 0.01);

}  // namespace engine::testing

// Fails the current test with the checker's report when the gradients disagree.
#define EXPECT_GRADIENTS_MATCH(gradcheck_case, ...)                                      \
  do {                                                                                   \
    const auto engine_gc_result =                                                        \
        ::engine::testing::check_gradients(gradcheck_case __VA_OPT__(, ) __VA_ARGS__);   \
    EXPECT_TRUE(engine_gc_result.ok) << engine_gc_result.report;                         \
    EXPECT_GT(engine_gc_result.checked, 0u) << "the gradient check compared no element"; \
  } while (0)
