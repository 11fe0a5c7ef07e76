// The CUDA softmax (kernels/cuda/softmax.cu: one warp per row, kernels/softmax_math.h's formulas) against the
// double reference (kernels/cpu/softmax) on odd sizes (a row shorter than a warp, one of 1001 classes, rows
// past one grid's worth of warps), outputs poisoned first, within the per-element bounds of
// tests/common/softmax_tolerance.h; in place too. Skips visibly without a device.

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/stream.h"
#include "kernels/cpu/softmax.h"
#include "kernels/cuda/softmax.h"
#include "tests/common/gpu.h"
#include "tests/common/gradcheck.h"
#include "tests/common/softmax_tolerance.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

void check(std::int64_t rows, std::int64_t k, bool in_place) {
  SCOPED_TRACE(::testing::Message() << rows << " x " << k << (in_place ? " in place" : ""));
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const auto n = static_cast<std::size_t>(rows * k);
  const std::vector<double> xr = testing::random_values(n, 53, -8.0, 8.0);
  const std::vector<double> dyr = testing::random_values(n, 54, -1.0, 1.0);
  std::vector<float> x(xr.begin(), xr.end()), dy(dyr.begin(), dyr.end());
  for (std::int64_t r = 0; r < rows; r += 3) x[static_cast<std::size_t>(r * k)] = 30.0F;
  const std::vector<double> xd(x.begin(), x.end()), dyd(dy.begin(), dy.end());
  std::vector<double> y_ref(n);
  cpu::softmax_forward(xd.data(), y_ref.data(), rows, k);

  Tensor x_d = to_device(x, s), dy_d = to_device(dy, s);
  Tensor y_d = in_place ? x_d : poisoned<float>(rows * k, s);
  cuda::softmax_forward(s, x_d.data<float>(), y_d.data<float>(), rows, k);
  const std::vector<float> y = to_host<float>(y_d, s);
  const std::vector<double> yd(y.begin(), y.end());
  std::vector<double> dx_ref(n);
  cpu::softmax_backward(yd.data(), dyd.data(), dx_ref.data(), rows, k);
  Tensor dx_d = in_place ? dy_d : poisoned<float>(rows * k, s);
  cuda::softmax_backward(s, y_d.data<float>(), dy_d.data<float>(), dx_d.data<float>(), rows, k);
  const std::vector<float> dx = to_host<float>(dx_d, s);

  const std::vector<double> ty = testing::softmax_forward_tolerance(xd, y_ref, rows, k);
  const std::vector<double> tdx = testing::softmax_backward_tolerance(yd, dyd, rows, k);
  int bad = 0;
  for (std::size_t i = 0; i < n && bad < 5; ++i) {
    const double ey = std::fabs(double(y[i]) - y_ref[i]), edx = std::fabs(double(dx[i]) - dx_ref[i]);
    if (!(ey <= ty[i]) || !(edx <= tdx[i])) {
      ADD_FAILURE() << "[" << i << "] x " << x[i] << ": y " << y[i] << " vs " << y_ref[i] << " (bound "
                    << ty[i] << "), dx " << dx[i] << " vs " << dx_ref[i] << " (bound " << tdx[i] << ")";
      ++bad;
    }
  }
}

TEST(CudaSoftmax, WithinFloatRoundingOfTheReference) {
  SKIP_WITHOUT_GPU();
  check(7, 13, false);
  check(5, 1, false);
  check(37, 1001, false);
  check(600001, 3, false);  // more rows than one grid's warps: the grid-stride loop
}

TEST(CudaSoftmax, InPlace) {
  SKIP_WITHOUT_GPU();
  check(7, 13, true);
  check(37, 1001, true);
}

}  // namespace
}  // namespace engine
