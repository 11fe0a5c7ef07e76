#pragma once
// The two exact claims the float32 kernel tests make, stated once:
// - rounded once: the float64 reference kernels are templates that accumulate in double. Fed the same float
//   values (so every product is exact in double), the float and double instantiations run the same double
//   arithmetic and the float one rounds each result once: |f - d| <= 2^-24 |d|, half an ulp.
// - bitwise: a fast kernel that runs the reference's operations in the reference's order gives its bits.

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

}  // namespace engine::testing
