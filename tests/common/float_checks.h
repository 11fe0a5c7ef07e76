#pragma once
// The two exact claims the float32 kernel tests make, stated once:
// - rounded once: the float64 reference kernels are templates that accumulate in double. Fed the same float
//   values (so every product is exact in double), the float and double instantiations run the same double
//   arithmetic and the float one rounds each result once: |f - d| <= 2^-24 |d|, half an ulp.
// - bitwise: a fast kernel that runs the reference's operations in the reference's order gives its bits.
// - summed in float32: below, expect_float32_sum.

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace engine::testing {

inline std::vector<float> as_floats(const std::vector<double>& v) { return {v.begin(), v.end()}; }

// Every f[i] is d[i] rounded once to float; a failure names what and i.
inline void expect_rounded_once(const std::vector<float>& f, const std::vector<double>& d, const char* what) {
  ASSERT_EQ(f.size(), d.size()) << what;
  for (std::size_t i = 0; i < f.size(); ++i) {
    EXPECT_LE(std::abs(static_cast<double>(f[i]) - d[i]), 0x1p-24 * std::abs(d[i]))
        << what << "[" << i << "]";
  }
}

// Every fast[i] has the bits of ref[i]; a NaN (a poisoned cell left unwritten) fails too. Names the first
// five differences.
inline void expect_bitwise(const std::vector<float>& fast, const std::vector<float>& ref,
                           const std::string& what) {
  ASSERT_EQ(fast.size(), ref.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < fast.size() && bad < 5; ++i) {
    if (!(fast[i] == ref[i])) {
      ADD_FAILURE() << what << "[" << i << "]: " << fast[i] << " vs reference " << ref[i];
      ++bad;
    }
  }
}

inline std::vector<double> widened(const std::vector<float>& v) { return {v.begin(), v.end()}; }
inline std::vector<double> magnitudes(const std::vector<float>& v) {
  std::vector<double> a(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) a[i] = std::fabs(static_cast<double>(v[i]));
  return a;
}

// - summed in float32: an output that sums `terms` products of floats in float32, in any order (with or
//   without fused multiply-adds), rounds each product and each addition once, so |fast - exact| <=
//   (terms + 1) u sum|products| with u = 2^-24 (Higham's gamma_m, first order). `mag` is sum|products|: the
//   float64 reference run on the inputs' magnitudes. Names the first five outputs outside it (NaN included).
inline void expect_float32_sum(const std::vector<float>& fast, const std::vector<double>& exact,
                               const std::vector<double>& mag, double terms, const char* what) {
  ASSERT_EQ(fast.size(), exact.size()) << what;
  ASSERT_EQ(mag.size(), exact.size()) << what;
  const double u = std::ldexp(1.0, -24);
  int bad = 0;
  for (std::size_t i = 0; i < fast.size() && bad < 5; ++i) {
    const double bound = (terms + 1) * u * mag[i] + 1e-30;
    if (!(std::fabs(static_cast<double>(fast[i]) - exact[i]) <= bound)) {
      ADD_FAILURE() << what << "[" << i << "]: fast " << fast[i] << ", float64 " << exact[i] << ", bound "
                    << bound;
      ++bad;
    }
  }
}

}  // namespace engine::testing
