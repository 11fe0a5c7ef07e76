// The CUDA GELU (kernels/cuda/gelu.cu) against the double reference (kernels/cpu/gelu) on odd sizes (945:
// the scalar path and a tail; 100003 with an offset pointer: the unaligned path), outputs poisoned first.
// Tolerance per element from float32 (tests/common/gelu_tolerance.h: erfc_float and exp_float, a few ulp, and
// the function's own condition number x^2 in its left tail). The scale op (airbench's Mul) is bitwise equal.

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/stream.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cpu/scale.h"
#include "kernels/cuda/gelu.h"
#include "kernels/cuda/scale.h"
#include "tests/common/elementwise_inputs.h"
#include "tests/common/gelu_tolerance.h"
#include "tests/common/gpu.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

void check_gelu(std::int64_t n, std::int64_t offset) {
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const auto size = static_cast<std::size_t>(n);
  std::vector<float> x = testing::elementwise_inputs(size, 51), dy = testing::elementwise_inputs(size, 52);
  const float specials[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 0.5f, -0.5f, 3.0f, -3.0f, 12.0f, -12.0f};
  for (std::size_t i = 0; i < std::min(size, std::size(specials)); ++i) x[i] = specials[i];
  std::vector<double> xd(x.begin(), x.end()), dyd(dy.begin(), dy.end()), y_ref(size), dx_ref(size);
  cpu::gelu_forward(xd.data(), y_ref.data(), n);
  cpu::gelu_backward(xd.data(), dyd.data(), dx_ref.data(), n);

  // `offset` floats in front move the data off 16-byte alignment: the scalar kernels run.
  std::vector<float> x_pad(static_cast<std::size_t>(offset), 0.0f), dy_pad = x_pad;
  x_pad.insert(x_pad.end(), x.begin(), x.end());
  dy_pad.insert(dy_pad.end(), dy.begin(), dy.end());
  Tensor x_d = to_device(x_pad, s), dy_d = to_device(dy_pad, s);
  Tensor y_d = poisoned<float>(n + offset, s), dx_d = poisoned<float>(n + offset, s);
  cuda::gelu_forward(s, x_d.data<float>() + offset, y_d.data<float>() + offset, n);
  cuda::gelu_backward(s, x_d.data<float>() + offset, dy_d.data<float>() + offset, dx_d.data<float>() + offset,
                      n);
  const auto y = to_host<float>(y_d, s), dx = to_host<float>(dx_d, s);
  int bad = 0;
  for (std::size_t i = 0; i < size && bad < 5; ++i) {
    const std::size_t at = i + static_cast<std::size_t>(offset);
    const double ey = std::fabs(static_cast<double>(y[at]) - y_ref[i]),
                 edx = std::fabs(static_cast<double>(dx[at]) - dx_ref[i]);
    if (!(ey <= testing::gelu_forward_tolerance(xd[i], y_ref[i])) ||
        !(edx <= testing::gelu_backward_tolerance(xd[i], dyd[i]))) {
      ADD_FAILURE() << "n " << n << " [" << i << "] x " << x[i] << ": y " << y[at] << " vs " << y_ref[i]
                    << ", dx " << dx[at] << " vs " << dx_ref[i];
      ++bad;
    }
  }
}

TEST(CudaGelu, WithinFloatRoundingOfTheReferenceAligned) {
  SKIP_WITHOUT_GPU();
  check_gelu(945, 0);
  check_gelu(100003, 0);
}

TEST(CudaGelu, WithinFloatRoundingOfTheReferenceUnaligned) {
  SKIP_WITHOUT_GPU();
  check_gelu(100003, 1);
}

TEST(CudaGelu, NanAndInfinityAsTheReference) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {nan, inf, -inf}, dy = {1.0f, 1.0f, 1.0f};
  Tensor x_d = to_device(x, s), dy_d = to_device(dy, s);
  Tensor y_d = poisoned<float>(3, s), dx_d = poisoned<float>(3, s);
  cuda::gelu_forward(s, x_d.data<float>(), y_d.data<float>(), 3);
  cuda::gelu_backward(s, x_d.data<float>(), dy_d.data<float>(), dx_d.data<float>(), 3);
  const auto y = to_host<float>(y_d, s), dx = to_host<float>(dx_d, s);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], inf);
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_TRUE(std::isnan(dx[0]));
  EXPECT_TRUE(std::isnan(dx[1])) << "PyTorch too: x phi(x) is inf * 0 at +inf";
}

TEST(CudaScale, EqualsTheReferenceBitwise) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const std::int64_t n = 1001;
  const auto x = testing::elementwise_inputs(static_cast<std::size_t>(n), 53);
  std::vector<float> y_ref(x.size());
  cpu::scale(x.data(), 1.0 / 9.0, y_ref.data(), n);
  Tensor x_d = to_device(x, s), y_d = poisoned<float>(n, s);
  cuda::scale(s, x_d.data<float>(), 1.0 / 9.0, y_d.data<float>(), n);
  EXPECT_TRUE(bitwise_equal(to_host<float>(y_d, s), y_ref));
}

}  // namespace
}  // namespace engine
