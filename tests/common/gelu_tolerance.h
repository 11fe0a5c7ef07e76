#pragma once
// How far a float32 GELU (kernels/cpu_fast/gelu, kernels/cuda/gelu: kernels/elementwise_math.h's erfc_float,
// Numerical Recipes' erfcc fit through Cephes' expf polynomial, and exp_float) may be from the
// double reference (kernels/cpu/gelu), per element. u = 2^-24 is float's unit roundoff; the bounds are stated
// with eps = 2u for headroom.
//
// Forward y = 0.5 x erfc(t), t = -x/sqrt(2):
//   - t rounded (relative u) moves erfc(t) by u |t| |erfc'(t) / erfc(t)| <= u |t| (2|t| + 1.2) = u (x^2 +
//   0.85|x|):
//     the function's own condition number (x^2 in the left tail), which any float implementation pays;
//   - erfc_float: a few ulp (Cephes' erfcf; its e^(-t^2) as a square adds 3u), budgeted 8u; the product: u
//     (0.5 x is exact).
//   |y - ref| <= (x^2 + |x| + 16) eps |ref|.
// Backward dx = dy (Phi(x) + x phi(x)): Phi as above; x phi(x) = x k exp(-x^2/2): x^2 rounded moves exp by
//   (x^2/2) u, expf 2 ulp (4u), three products 3u; the sum and the product with dy, 2u, relative to the sum
//   of the terms' magnitudes.
//   |dx - ref| <= (x^2 + |x| + 16) eps (|Phi(x)| + |x phi(x)|) |dy|.
// A tiny absolute floor covers results in float's subnormal range (|x| > 13), where ulps stop being relative.

#include <cmath>
#include <numbers>

namespace engine::testing {

inline constexpr double kFloatEps = 1.1920928955078125e-07;  // 2^-23
inline constexpr double kGeluAbsFloor = 1e-40;

inline double gelu_forward_tolerance(double x, double reference) {
  return (x * x + std::fabs(x) + 16.0) * kFloatEps * std::fabs(reference) + kGeluAbsFloor;
}

inline double gelu_backward_tolerance(double x, double dy) {
  const double phi_cdf = 0.5 * std::erfc(-x / std::numbers::sqrt2);
  const double x_pdf = x * std::exp(-0.5 * x * x) * std::numbers::inv_sqrtpi / std::numbers::sqrt2;
  return (x * x + std::fabs(x) + 16.0) * kFloatEps * (std::fabs(phi_cdf) + std::fabs(x_pdf)) * std::fabs(dy) +
         kGeluAbsFloor;
}

}  // namespace engine::testing
