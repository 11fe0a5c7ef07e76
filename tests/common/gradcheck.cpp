#include "tests/common/gradcheck.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "core/philox.h"

namespace engine::testing {
namespace {

double objective(const std::vector<double>& y, const std::vector<double>& probe) {
  double sum = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) sum += y[i] * probe[i];
  return sum;
}

// Every index of an input of n elements, or a random sample of max_elements_per_input distinct ones (in
// increasing order), drawn from the seed and the input's position so that each input gets its own sample.
std::vector<std::size_t> elements_to_check(std::size_t n, const GradCheckOptions& o, std::size_t input) {
  std::vector<std::size_t> all(n);
  std::iota(all.begin(), all.end(), std::size_t{0});
  if (o.max_elements_per_input == 0 || n <= o.max_elements_per_input) return all;
  // A partial Fisher-Yates shuffle: the first m entries become a uniform sample without repetition.
  const std::size_t m = o.max_elements_per_input;
  for (std::size_t i = 0; i < m; ++i) {
    const std::size_t j = i + philox_word(o.seed, 0x5a3b1e00 + input, i) % (n - i);
    std::swap(all[i], all[j]);
  }
  all.resize(m);
  std::sort(all.begin(), all.end());
  return all;
}

}  // namespace

std::vector<double> random_values(std::size_t n, std::uint64_t seed, double lo, double hi) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    // 53 random bits from two words, so every double in [0, 1) is reachable.
    const PhiloxBlock b = philox_block(seed, /*offset=*/0x7e57, i);
    const std::uint64_t bits = (static_cast<std::uint64_t>(b.v[0]) << 21) ^ b.v[1];
    const double u = static_cast<double>(bits & ((1ull << 53) - 1)) / 9007199254740992.0;
    v[i] = lo + (hi - lo) * u;
  }
  return v;
}

std::vector<double> distinct_values(std::size_t n, std::uint64_t seed, double gap) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = (static_cast<double>(i) - static_cast<double>(n) / 2.0) * gap;
  // Fisher-Yates with Philox draws.
  for (std::size_t i = n; i > 1; --i) {
    const std::size_t j = philox_word(seed, 0x5f1e, i) % i;
    std::swap(v[i - 1], v[j]);
  }
  return v;
}

GradCheckResult check_gradients(const GradCheckCase& c, const GradCheckOptions& o) {
  GradCheckResult result;
  const std::uint64_t seed = o.seed;

  const std::vector<double> y0 = c.forward(seed);
  const std::vector<double> probe = random_values(y0.size(), seed ^ 0xabcdef, -1.0, 1.0);
  const std::vector<std::vector<double>> analytic = c.backward(probe, seed);

  if (analytic.size() != c.inputs.size()) {
    result.ok = false;
    result.report =
        fmt::format("backward returned {} gradients for {} inputs", analytic.size(), c.inputs.size());
    return result;
  }

  int mismatches_reported = 0;
  for (std::size_t k = 0; k < c.inputs.size(); ++k) {
    std::vector<double>& x = *c.inputs[k].data;
    const std::string& name = c.inputs[k].name;
    if (analytic[k].size() != x.size()) {
      result.ok = false;
      result.report +=
          fmt::format("gradient of '{}' has {} elements, the input {}\n", name, analytic[k].size(), x.size());
      continue;
    }
    const std::vector<std::size_t> indices = elements_to_check(x.size(), o, k);
    std::size_t skipped_here = 0;
    for (const std::size_t i : indices) {
      const double original = x[i];
      x[i] = original + o.step;
      const double f_plus = objective(c.forward(seed), probe);
      x[i] = original - o.step;
      const double f_minus = objective(c.forward(seed), probe);
      x[i] = original;
      const double f_zero = objective(c.forward(seed), probe);

      const double numeric = (f_plus - f_minus) / (2.0 * o.step);
      const double right = (f_plus - f_zero) / o.step;
      const double left = (f_zero - f_minus) / o.step;
      if (std::abs(right - left) > o.kink_threshold * std::max(1.0, std::abs(numeric))) {
        ++skipped_here;
        continue;
      }
      const double a = analytic[k][i];
      const double scale = std::max({std::abs(a), std::abs(numeric), 1.0});
      const double error = std::abs(a - numeric) / scale;
      result.worst_error = std::max(result.worst_error, error);
      ++result.checked;
      if (!(error <= o.tolerance)) {  // also catches NaN
        result.ok = false;
        if (mismatches_reported++ < 10) {
          result.report +=
              fmt::format("d/d{}[{}]: analytic {:.10g}, numeric {:.10g} (relative error {:.3g})\n", name, i,
                          a, numeric, error);
        }
      }
    }
    result.skipped += skipped_here;
    if (!indices.empty() &&
        static_cast<double>(skipped_here) > o.max_skipped_fraction * static_cast<double>(indices.size())) {
      result.ok = false;
      result.report += fmt::format(
          "'{}': {} of {} elements sat on a kink and were skipped; the check proves "
          "too little (choose inputs away from kinks)\n",
          name, skipped_here, indices.size());
    }
  }
  return result;
}

}  // namespace engine::testing
