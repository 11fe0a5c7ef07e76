#pragma once
// How far a float32 GELU (kernels/cpu_fast/gelu, kernels/cuda/gelu: kernels/elementwise_math.h's Gelu through
// normal_tail_float and gaussian_float) may be from the double reference (kernels/cpu/gelu), per element.
// u = 2^-24 is float's unit roundoff; eps = 2u. x is a float, so the reference is taken at the very input.
//
// Forward y = x Phi(x): with q = Phi(-|x|), y = x q for x < 0, x (1 - q) above (q <= 1/2, so q's relative
//   error carries over at most once). q within (x^2/2 + 24.9) u (derived at normal_tail_float: the fit 8.0u,
//   t's rounding 6.8u, Horner 4.6u, e^(-x^2/2) (x^2/2 + 3.5) u, two products), then 1 - q and the product
//   with x, 2u:
//   |y - ref| <= (x^2/2 + 27) u |ref| <= (x^2/4 + 14) eps |ref|.
// Backward dx = dy (Phi(x) + x phi(x)): Phi as above, (x^2/2 + 25.9) u; x phi(x) = (x k) e^(-x^2/2): k
//   rounded, two products, the exponential: (x^2/2 + 6.5) u; the sum and the product with dy, 2u, relative to
//   the sum of the terms' magnitudes:
//   |dx - ref| <= (x^2/4 + 14) eps (|Phi(x)| + |x phi(x)|) |dy|.
// x^2/2 u is e^(-x^2/2)'s own: x^2 rounded once moves the exponent by u x^2/2. A tiny absolute floor covers
// results in float's subnormal range (|x| > 13.2), where ulps stop being relative.

#include <cmath>
#include <numbers>

namespace engine::testing {

inline constexpr double kFloatEps = 1.1920928955078125e-07;  // 2^-23
inline constexpr double kGeluAbsFloor = 1e-40;

inline double gelu_forward_tolerance(double x, double reference) {
  return (0.25 * x * x + 14.0) * kFloatEps * std::fabs(reference) + kGeluAbsFloor;
}

inline double gelu_backward_tolerance(double x, double dy) {
  const double phi_cdf = 0.5 * std::erfc(-x / std::numbers::sqrt2);
  const double x_pdf = x * std::exp(-0.5 * x * x) * std::numbers::inv_sqrtpi / std::numbers::sqrt2;
  return (0.25 * x * x + 14.0) * kFloatEps * (std::fabs(phi_cdf) + std::fabs(x_pdf)) * std::fabs(dy) +
         kGeluAbsFloor;
}

}  // namespace engine::testing
