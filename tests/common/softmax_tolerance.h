#pragma once
// How far a float32 softmax (kernels/softmax_math.h: the CPU's fast path and the CUDA row kernel) may be
// from the double reference (kernels/cpu/softmax.h), per element of a row of length k, for float inputs
// exact in both. u = 2^-24 is float's unit roundoff; the bounds are stated with eps = 2u for headroom (the
// second-order terms, and the multiply-adds the GPU fuses), as tests/common/activation_tolerance.h does.
//   forward   t_j = x_j - m is exact or one rounding (|dt| <= u |t_j|, so e^t moves by u |t_j|
//             relatively); exp_float within 2 ulp (4u); the sum of k positive terms in any order within
//             (k - 1) u of the exact sum of the computed e_j (so within (k - 1 + 4 + max|t|) u of the true
//             one); the reciprocal 1 / s and the product e_j (1 / s) one rounding each. Relative to y_j:
//               |y_j - ref| <= eps |ref| (|t_j| + max_i |t_i| + k + 9).
//   backward  from the same float y and dy in both: d = sum_j dy_j y_j, k products and k - 1 additions in
//             any order, within k u S of the exact one (S = sum_j |dy_j y_j|); dy_i - d one rounding; the
//             product y_i (...) one rounding:
//               |dx_i - ref| <= eps |y_i| (k S + 2 |dy_i - d|).
// A tiny absolute floor covers results in float's subnormal range.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu/softmax.h"
#include "tests/common/gradcheck.h"

namespace engine::testing {

inline constexpr double kSoftmaxEps = 1.1920928955078125e-07;  // 2^-23 = 2u
inline constexpr double kSoftmaxAbsFloor = 1e-40;

// Per element of row-major [rows, k] x (the float inputs, widened) and ref = the reference's y.
inline std::vector<double> softmax_forward_tolerance(const std::vector<double>& x,
                                                     const std::vector<double>& ref, std::int64_t rows,
                                                     std::int64_t k) {
  std::vector<double> tol(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    const double* xr = x.data() + r * k;
    const double m = *std::max_element(xr, xr + k);
    double max_t = 0.0;
    for (std::int64_t j = 0; j < k; ++j) max_t = std::max(max_t, m - xr[j]);
    for (std::int64_t j = 0; j < k; ++j) {
      const auto i = static_cast<std::size_t>(r * k + j);
      tol[i] = kSoftmaxEps * std::fabs(ref[i]) * ((m - xr[j]) + max_t + static_cast<double>(k) + 9.0) +
               kSoftmaxAbsFloor;
    }
  }
  return tol;
}

// Per element, for the float y and dy both backwards were given (widened).
inline std::vector<double> softmax_backward_tolerance(const std::vector<double>& y,
                                                      const std::vector<double>& dy, std::int64_t rows,
                                                      std::int64_t k) {
  std::vector<double> tol(y.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double d = 0.0, s = 0.0;
    for (std::int64_t j = 0; j < k; ++j) {
      const auto i = static_cast<std::size_t>(r * k + j);
      d += dy[i] * y[i];
      s += std::fabs(dy[i] * y[i]);
    }
    for (std::int64_t j = 0; j < k; ++j) {
      const auto i = static_cast<std::size_t>(r * k + j);
      tol[i] = kSoftmaxEps * std::fabs(y[i]) * (static_cast<double>(k) * s + 2.0 * std::fabs(dy[i] - d)) +
               kSoftmaxAbsFloor;
    }
  }
  return tol;
}

// Float inputs of an odd [rows, k] case: x in [-8, 8], every third row's first logit 30 (its other e_j then
// nearly 0), dy in [-1, 1].
struct SoftmaxInputs {
  std::vector<float> x, dy;
};

inline SoftmaxInputs softmax_inputs(std::int64_t rows, std::int64_t k, std::uint64_t seed) {
  const auto n = static_cast<std::size_t>(rows * k);
  const std::vector<double> x = random_values(n, seed, -8.0, 8.0), dy = random_values(n, seed + 1, -1.0, 1.0);
  SoftmaxInputs in{std::vector<float>(x.begin(), x.end()), std::vector<float>(dy.begin(), dy.end())};
  for (std::int64_t r = 0; r < rows; r += 3) in.x[static_cast<std::size_t>(r * k)] = 30.0F;
  return in;
}

// The first mismatches ("" when none) of a float kernel's y (from in.x) and dx (from its own y and in.dy)
// against the reference on the same floats, beyond the bounds above. A NaN left in an output (poisoned
// before the call) fails.
inline std::string softmax_mismatches(const SoftmaxInputs& in, const std::vector<float>& y,
                                      const std::vector<float>& dx, std::int64_t rows, std::int64_t k) {
  const std::vector<double> xd(in.x.begin(), in.x.end()), dyd(in.dy.begin(), in.dy.end()),
      yd(y.begin(), y.end());
  std::vector<double> y_ref(xd.size(), std::numeric_limits<double>::quiet_NaN()), dx_ref = y_ref;
  cpu::softmax_forward(xd.data(), y_ref.data(), rows, k);
  cpu::softmax_backward(yd.data(), dyd.data(), dx_ref.data(), rows, k);
  const std::vector<double> ty = softmax_forward_tolerance(xd, y_ref, rows, k);
  const std::vector<double> tdx = softmax_backward_tolerance(yd, dyd, rows, k);
  std::ostringstream out;
  int bad = 0;
  for (std::size_t i = 0; i < xd.size() && bad < 5; ++i) {
    const double ey = std::fabs(yd[i] - y_ref[i]), edx = std::fabs(double(dx[i]) - dx_ref[i]);
    if (!(ey <= ty[i]) || !(edx <= tdx[i])) {
      out << "[" << i << "] x " << in.x[i] << ": y " << y[i] << " vs " << y_ref[i] << " (bound " << ty[i]
          << "), dx " << dx[i] << " vs " << dx_ref[i] << " (bound " << tdx[i] << ")\n";
      ++bad;
    }
  }
  return out.str();
}

}  // namespace engine::testing
