#pragma once
// Helpers for the CUDA kernel tests (tests/gpu/cuda_*_test.cpp): random inputs that are never zero, device
// copies, outputs poisoned with NaN before a call (so an element the kernel forgot to write fails), and
// comparisons against the float64 CPU reference with tolerances that follow from fp32 arithmetic.
//
// The fp32 bound used by the GEMM-like tests: any way of adding L float products in float (any order, any
// blocking, with or without FMA) has error at most about (L + 2) * 2^-24 * sum |term| -- the classic
// recursive-summation bound gamma_L = L u / (1 - L u), u = 2^-24, plus one rounding for each product and one
// for the output. `sum |term|` is obtained by running the reference on the absolute values of the inputs
// (the "magnitude" of each output). That bound is rigorous, so a test using it cannot be flaky, and it is
// tight: a wrong index or a missing term changes an output by about sum |term| / L, orders of magnitude more.

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/cuda_check.h"
#include "core/philox.h"
#include "core/tensor.h"

namespace engine::cuda_test {

inline constexpr double kFloatUnitRoundoff = 0x1p-24;

// The rigorous fp32 error bound per unit of magnitude for a sum of `terms` products (see above).
inline double fp32_sum_bound(std::int64_t terms) {
  return static_cast<double>(terms + 2) * kFloatUnitRoundoff;
}

// n floats with |v| in [lo, hi) and random signs, never zero: a zero input could hide an unread operand.
inline std::vector<float> nonzero_floats(std::size_t n, std::uint64_t seed, float lo = 0.1f,
                                         float hi = 1.0f) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float magnitude = lo + (hi - lo) * philox_uniform(seed, 17, 2 * i);
    v[i] = philox_uniform(seed, 17, 2 * i + 1) < 0.5f ? -magnitude : magnitude;
  }
  return v;
}

inline std::vector<double> widen(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

inline std::vector<double> abs_of(const std::vector<double>& v) {
  std::vector<double> a(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) a[i] = std::fabs(v[i]);
  return a;
}

inline std::vector<double> abs_of(const std::vector<float>& v) { return abs_of(widen(v)); }

template <typename T>
Tensor to_device(const std::vector<T>& v, cudaStream_t stream) {
  return Tensor::from_vector(v, {static_cast<std::int64_t>(v.size())}).to(Device::cuda(0), stream);
}

// Device memory filled with 0xFF bytes: NaN as float, -1 as int32. Every output starts like this.
template <typename T>
Tensor poisoned(std::int64_t n, cudaStream_t stream) {
  Tensor t = Tensor::empty({n}, dtype_of<T>::value, Device::cuda(0), stream);
  t.fill_bytes(0xFF, stream);
  return t;
}

// Waits for the stream (so an asynchronous kernel error surfaces here) and copies to the host.
template <typename T>
std::vector<T> to_host(const Tensor& t, cudaStream_t stream) {
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return t.to(Device::cpu(), stream).to_vector<T>();
}

// Passes when |got[i] - ref[i]| <= rtol * scale[i] for every i (NaN fails). Reports the first mismatches.
inline ::testing::AssertionResult close_to(const std::vector<float>& got, const std::vector<double>& ref,
                                           const std::vector<double>& scale, double rtol) {
  if (got.size() != ref.size() || scale.size() != ref.size()) {
    return ::testing::AssertionFailure()
           << "size mismatch: got " << got.size() << ", ref " << ref.size() << ", scale " << scale.size();
  }
  std::size_t bad = 0;
  double worst = 0.0;
  std::string report;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - ref[i]);
    const double tol = rtol * scale[i];
    if (!(err <= tol)) {
      if (++bad <= 8) {
        report +=
            fmt::format("\n  [{}] got {} want {:.9g} |err| {:.3g} tol {:.3g}", i, got[i], ref[i], err, tol);
      }
    }
    if (scale[i] > 0.0 && err / scale[i] > worst) worst = err / scale[i];
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.size() << " elements outside rtol " << rtol
                                       << " (worst err/scale " << worst << "):" << report;
}

// scale[i] = max(|ref[i]|, 1): relative error for large values, absolute for small ones.
inline std::vector<double> max_abs_or_one(const std::vector<double>& ref) {
  std::vector<double> s(ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) s[i] = std::max(std::fabs(ref[i]), 1.0);
  return s;
}

// Bit-for-bit equality (NaN payloads included), with the first differences reported.
template <typename T>
::testing::AssertionResult bitwise_equal(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  }
  std::size_t bad = 0;
  std::string report;
  for (std::size_t i = 0; i < got.size(); ++i) {
    // Compared as bytes: T's object representation is the bits under test (NaN payloads, -0).
    if (std::bit_cast<std::array<unsigned char, sizeof(T)>>(got[i]) !=
        std::bit_cast<std::array<unsigned char, sizeof(T)>>(want[i])) {
      if (++bad <= 8) {
        report += fmt::format("\n  [{}] got {} want {}", i, got[i], want[i]);
      }
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.size() << " elements differ:" << report;
}

// Rounds every element to float (the reference computed in double, stored as the GPU stores it).
inline std::vector<float> narrow(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

}  // namespace engine::cuda_test
