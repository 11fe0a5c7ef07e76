#pragma once
// bf16 autocast's tolerances (kernels/ops/autocast_bf16.h), shared by the CPU emulation's tests and the GPU
// test that compares CUDA with it.
//
// ref is the float64 result on the bf16-rounded operands, mag the same op on their absolute values. The fp32
// accumulation of L exact products (a product of two 8-bit significands fits in fp32's 24) is within
// e = (L + 2) 2^-24 mag of ref (the plain-summation bound; oneDNN's or cuDNN's blocking only reorders it).
// The output is then rounded to bf16, nearest even: |bf16(v) - v| <= 2^-8 |v|, so
// |got - ref| <= 2^-8 |ref| + (1 + 2^-8) e (y, dx, dW and db are all rounded).
// On CUDA a bias is added to the bf16 output of cuDNN / cuBLAS (as PyTorch's autocast does there), so y with
// a bias is rounded twice: the first rounding moves the sum c by at most 2^-8 |c| <= 2^-8 (mag + e), which
// joins e before the final rounding (`rounded_twice`).

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/dtype.h"
#include "core/philox.h"

namespace engine::testing {

inline constexpr double kBf16Rounding = 0x1p-8;  // unit roundoff of bf16's 8-bit significand

inline double fp32_sum_error(std::int64_t terms) { return static_cast<double>(terms + 2) * 0x1p-24; }

inline float bf16_value(float v) { return from_bfloat16(to_bfloat16(v)); }

// n floats with |v| in [0.1, 1) and random signs: never zero, and mostly not bf16 values (rounding matters).
inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float magnitude = 0.1f + 0.9f * philox_uniform(seed, 3, 2 * i);
    v[i] = philox_uniform(seed, 3, 2 * i + 1) < 0.5f ? -magnitude : magnitude;
  }
  return v;
}

inline std::vector<double> bf16_rounded(const std::vector<float>& v) {
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<double>(bf16_value(v[i]));
  return out;
}

inline std::vector<double> abs_values(const std::vector<double>& v) {
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = std::fabs(v[i]);
  return out;
}

// The bound above for one element: a rounded output, or (rounded = false) an fp32 sum left unrounded.
inline double bf16_tolerance(double ref, double mag, std::int64_t terms, bool rounded,
                             bool rounded_twice = false) {
  double sum_err = fp32_sum_error(terms) * mag;
  if (rounded_twice) sum_err += kBf16Rounding * (mag + sum_err);
  return rounded ? kBf16Rounding * std::fabs(ref) + (1 + kBf16Rounding) * sum_err : sum_err;
}

// |got - ref| <= factor * bf16_tolerance for every element, and a rounded output holds bf16 values only.
inline ::testing::AssertionResult bf16_matches(const std::vector<float>& got, const std::vector<double>& ref,
                                               const std::vector<double>& mag, std::int64_t terms,
                                               bool rounded, double factor = 1.0,
                                               bool rounded_twice = false) {
  if (got.size() != ref.size() || mag.size() != ref.size()) {
    return ::testing::AssertionFailure()
           << "sizes " << got.size() << ", " << ref.size() << ", " << mag.size();
  }
  std::size_t bad = 0;
  std::string report;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double tol = factor * bf16_tolerance(ref[i], mag[i], terms, rounded, rounded_twice);
    const double err = std::fabs(static_cast<double>(got[i]) - ref[i]);
    const bool is_bf16 = !rounded || bf16_value(got[i]) == got[i];
    if (!(err <= tol) || !is_bf16) {
      if (++bad <= 6) {
        report += fmt::format("\n  [{}] got {} want {:.9g} err {:.3g} tol {:.3g}{}", i, got[i], ref[i], err,
                              tol, is_bf16 ? "" : " (not a bf16 value)");
      }
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.size() << " elements off:" << report;
}

}  // namespace engine::testing
