#pragma once
// How far a float32 softmax (kernels/softmax_math.h: the CPU's fast path and the CUDA row kernel) may be
// from the double reference (kernels/cpu/softmax.h), per element of a row of length k, for float inputs
// exact in both. u = 2^-24 is float's unit roundoff; the bounds are stated with eps = 2u for headroom (the
// second-order terms, and the multiply-adds the GPU fuses), as tests/common/activation_tolerance.h does.
//   forward   t_j = x_j - m is exact or one rounding (|dt| <= u |t_j|, so e^t moves by u |t_j|
//             relatively); exp_float within 2 ulp (4u); the sum of k positive terms in any order within
//             (k - 1) u of the exact sum of the computed e_j (so within (k - 1 + 4 + max|t|) u of the true
//             one); the division one rounding. Relative to y_j:
//               |y_j - ref| <= eps |ref| (|t_j| + max_i |t_i| + k + 8).
//   backward  from the same float y and dy in both: d = sum_j dy_j y_j, k products and k - 1 additions in
//             any order, within k u S of the exact one (S = sum_j |dy_j y_j|); dy_i - d one rounding; the
//             product y_i (...) one rounding:
//               |dx_i - ref| <= eps |y_i| (k S + 2 |dy_i - d|).
// A tiny absolute floor covers results in float's subnormal range.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

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
      tol[i] = kSoftmaxEps * std::fabs(ref[i]) * ((m - xr[j]) + max_t + static_cast<double>(k) + 8.0) +
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

}  // namespace engine::testing
