// The fast float32 global average pool (kernels/cpu_fast/global_avgpool.h) against the float64 reference on
// the same float inputs, odd sizes (planes shorter than, equal to and longer than its 16 lanes, with tails),
// outputs poisoned with NaN first.
//
// Forward bound, derived (u = 2^-24, S = sum |x| over the plane, m = floor(H W / 16)): the fast path's 16
// float lanes each sum m of the plane's floats from zero, m - 1 roundings of at most u times the running
// |sum| <= the lane's share of S, so the lanes are within (m - 1) u S of their exact sums together; the rest
// (fewer than 16 floats) and the fold of the widened lanes are double additions, within H W 2^-53 S, as
// is the reference's in-order double sum. After the division by H W (one double rounding each, under the
// same slack) the two differ by ((m - 1) u + 2 H W 2^-53) S / H W; the fast path then rounds to float once:
// |y - ref| <= u |ref| + that, whose second term is taken twice for headroom:
//   u |ref| + 2 (m - 1) u S / (H W) + 2^-51 S.
// Backward is the reference's arithmetic: bit for bit with its float instantiation.

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "kernels/cpu/avgpool.h"
#include "kernels/cpu_fast/global_avgpool.h"
#include "tests/common/gradcheck.h"

namespace engine {
namespace {

void check(int n, int c, int h, int w) {
  SCOPED_TRACE(::testing::Message() << n << "x" << c << "x" << h << "x" << w);
  const std::size_t planes = static_cast<std::size_t>(n) * c, hw = static_cast<std::size_t>(h) * w;
  const std::vector<double> x0 = testing::random_values(planes * hw, 71, -3.0, 5.0),
                            dy0 = testing::random_values(planes, 72);
  const std::vector<float> xf(x0.begin(), x0.end()), dyf(dy0.begin(), dy0.end());
  const std::vector<double> xd(xf.begin(), xf.end());
  std::vector<double> y_ref(planes);
  cpu::global_avgpool_forward(n, c, h, w, xd.data(), y_ref.data());
  std::vector<float> y(planes, NAN);
  cpu_fast::global_avgpool_forward(n, c, h, w, xf.data(), y.data());
  for (std::size_t p = 0; p < planes; ++p) {
    double s = 0.0;
    for (std::size_t i = 0; i < hw; ++i) s += std::fabs(xd[p * hw + i]);
    const std::size_t m = hw / 16;  // floats in each lane (floor)
    const double rounded = m > 1 ? static_cast<double>(m - 1) : 0.0;
    const double bound =
        0x1p-24 * std::fabs(y_ref[p]) + 2.0 * rounded * 0x1p-24 * s / static_cast<double>(hw) + 0x1p-51 * s;
    ASSERT_LE(std::fabs(static_cast<double>(y[p]) - y_ref[p]), bound) << "plane " << p;
  }
  std::vector<float> dx_ref(planes * hw), dx(planes * hw, NAN);
  cpu::global_avgpool_backward(n, c, h, w, dyf.data(), dx_ref.data());
  cpu_fast::global_avgpool_backward(n, c, h, w, dyf.data(), dx.data());
  EXPECT_EQ(dx, dx_ref);
}

TEST(GlobalAvgPoolCpuFast, WithinOneRoundingOfTheReference) {
  check(3, 5, 1, 1);    // 1x1 planes: the tail alone
  check(2, 7, 3, 5);    // 15: under the 16 lanes
  check(3, 5, 4, 4);    // 16: exactly one step
  check(2, 3, 7, 9);    // 63: three steps and a tail of 15
  check(1, 3, 17, 3);   // 51
  check(2, 3, 32, 32);  // 1024: 64 floats in each lane
  check(64, 37, 5, 7);  // 82880 values: above the threading threshold
}

TEST(GlobalAvgPoolCpuFast, RefusesEmptyShapes) {
  std::vector<float> x(4), y(4);
  EXPECT_THROW(cpu_fast::global_avgpool_forward(1, 0, 2, 2, x.data(), y.data()), Error);
  EXPECT_THROW(cpu_fast::global_avgpool_backward(1, 1, 2, -1, y.data(), x.data()), Error);
}

}  // namespace
}  // namespace engine
