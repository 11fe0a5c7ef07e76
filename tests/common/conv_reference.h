#pragma once
// A convolution's random float inputs and the float64 reference's outputs for them (kernels/cpu/conv2d.h),
// with the same reference run on the inputs' magnitudes: the sums of |products| that float_checks.h's
// expect_float32_sum bounds a float32 kernel's error by. For the fast kernels' tests (a bias when `bias`).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/conv2d.h"
#include "tests/common/float_checks.h"
#include "tests/common/test_data.h"

namespace engine::testing {

struct ConvReference {
  std::vector<float> x, w, b, dy;                     // the inputs (b empty without a bias)
  std::vector<double> y, dx, dw, db;                  // the float64 reference's outputs
  std::vector<double> y_mag, dx_mag, dw_mag, db_mag;  // the same on |x|, |w|, |b|, |dy|

  ConvReference(const Conv2dShape& g, bool bias, std::uint32_t seed)
      : x(uniform_floats(g.x_size(), seed)),
        w(uniform_floats(g.w_size(), seed + 1)),
        b(bias ? uniform_floats(static_cast<std::size_t>(g.k), seed + 2) : std::vector<float>()),
        dy(uniform_floats(g.y_size(), seed + 3)),
        y(g.y_size()),
        dx(g.x_size()),
        dw(g.w_size()),
        db(static_cast<std::size_t>(g.k)),
        y_mag(y.size()),
        dx_mag(dx.size()),
        dw_mag(dw.size()),
        db_mag(db.size()) {
    run(g, widened(x), widened(w), widened(b), widened(dy), y, dx, dw, db);
    run(g, magnitudes(x), magnitudes(w), magnitudes(b), magnitudes(dy), y_mag, dx_mag, dw_mag, db_mag);
  }

  const float* bias() const { return b.empty() ? nullptr : b.data(); }

 private:
  static void run(const Conv2dShape& g, const std::vector<double>& xd, const std::vector<double>& wd,
                  const std::vector<double>& bd, const std::vector<double>& dyd, std::vector<double>& yd,
                  std::vector<double>& dxd, std::vector<double>& dwd, std::vector<double>& dbd) {
    cpu::conv2d_forward<double>(g, xd.data(), wd.data(), bd.empty() ? nullptr : bd.data(), yd.data());
    cpu::conv2d_backward<double>(g, xd.data(), wd.data(), dyd.data(), dxd.data(), dwd.data(), dbd.data());
  }
};

}  // namespace engine::testing
