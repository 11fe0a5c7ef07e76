// The elementwise CUDA ops against the CPU reference: ReLU, residual add, dropout, global average pooling,
// bias add / bias grad. Each of them is computed exactly as the reference computes it (same comparisons, the
// same double operations rounded once), so most comparisons are bit for bit; the reductions (avgpool
// forward, bias grads) add in double in another order, so they match to the final float rounding.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "core/stream.h"
#include "kernels/cpu/avgpool.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cpu/relu.h"
#include "kernels/cpu/residual_add.h"
#include "kernels/cuda/avgpool.h"
#include "kernels/cuda/bias.h"
#include "kernels/cuda/dropout.h"
#include "kernels/cuda/relu.h"
#include "kernels/cuda/residual_add.h"
#include "tests/common/gpu.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

constexpr int kN = 3, kC = 5, kH = 7, kW = 9;
constexpr std::int64_t kSize = std::int64_t{kN} * kC * kH * kW;  // 945: odd, not a multiple of 4

TEST(CudaRelu, ForwardAndBackwardEqualTheReferenceBitwise) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const auto x = nonzero_floats(kSize, 1);
  const auto dy = nonzero_floats(kSize, 2);
  std::vector<double> y_ref(kSize), dx_ref(kSize);
  cpu::relu_forward(widen(x).data(), y_ref.data(), kSize);
  cpu::relu_backward(widen(x).data(), widen(dy).data(), dx_ref.data(), kSize);

  Tensor x_d = to_device(x, s), dy_d = to_device(dy, s);
  Tensor y_d = poisoned<float>(kSize, s), dx_d = poisoned<float>(kSize, s);
  cuda::relu_forward(s, x_d.data<float>(), y_d.data<float>(), kSize);
  cuda::relu_backward(s, x_d.data<float>(), dy_d.data<float>(), dx_d.data<float>(), kSize);
  EXPECT_TRUE(bitwise_equal(to_host<float>(y_d, s), narrow(y_ref)));
  EXPECT_TRUE(bitwise_equal(to_host<float>(dx_d, s), narrow(dx_ref)));
}

TEST(CudaRelu, KinkNanAndInfinityFollowTheReferenceRule) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {0.0f, -0.0f, nan, inf, -inf, 1e-38f, -1e-38f, 2.5f, -2.5f};
  const std::vector<float> dy = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f};
  const auto n = static_cast<std::int64_t>(x.size());
  std::vector<float> y_ref(x.size()), dx_ref(x.size());
  cpu::relu_forward(x.data(), y_ref.data(), n);
  cpu::relu_backward(x.data(), dy.data(), dx_ref.data(), n);
  Tensor x_d = to_device(x, s), dy_d = to_device(dy, s);
  Tensor y_d = poisoned<float>(n, s), dx_d = poisoned<float>(n, s);
  cuda::relu_forward(s, x_d.data<float>(), y_d.data<float>(), n);
  cuda::relu_backward(s, x_d.data<float>(), dy_d.data<float>(), dx_d.data<float>(), n);
  const auto y = to_host<float>(y_d, s), dx = to_host<float>(dx_d, s);
  for (std::size_t i = 0; i < x.size(); ++i) {
    // NaN payloads may differ between host and device NaN constants; compare "is NaN" for NaN entries.
    if (std::isnan(y_ref[i])) {
      EXPECT_TRUE(std::isnan(y[i])) << i;
    } else {
      EXPECT_EQ(std::bit_cast<std::uint32_t>(y[i]), std::bit_cast<std::uint32_t>(y_ref[i]))
          << i << ": " << y[i] << " vs " << y_ref[i];
    }
  }
  EXPECT_TRUE(bitwise_equal(dx, dx_ref));
}

TEST(CudaResidualAdd, ForwardAndBackwardEqualTheReferenceBitwise) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const auto a = nonzero_floats(kSize, 3), b = nonzero_floats(kSize, 4), dy = nonzero_floats(kSize, 5);
  std::vector<double> y_ref(kSize), da_ref(kSize), db_ref(kSize);
  cpu::residual_add_forward(widen(a).data(), widen(b).data(), y_ref.data(), kSize);
  cpu::residual_add_backward(widen(dy).data(), da_ref.data(), db_ref.data(), kSize);

  Tensor a_d = to_device(a, s), b_d = to_device(b, s), dy_d = to_device(dy, s);
  Tensor y_d = poisoned<float>(kSize, s), da_d = poisoned<float>(kSize, s), db_d = poisoned<float>(kSize, s);
  cuda::residual_add_forward(s, a_d.data<float>(), b_d.data<float>(), y_d.data<float>(), kSize);
  cuda::residual_add_backward(s, dy_d.data<float>(), da_d.data<float>(), db_d.data<float>(), kSize);
  EXPECT_TRUE(bitwise_equal(to_host<float>(y_d, s), narrow(y_ref)));
  EXPECT_TRUE(bitwise_equal(to_host<float>(da_d, s), narrow(da_ref)));
  EXPECT_TRUE(bitwise_equal(to_host<float>(db_d, s), narrow(db_ref)));

  // In place: y aliases a; da aliases dy (the skipped copy) while db is still written.
  cuda::residual_add_forward(s, a_d.data<float>(), b_d.data<float>(), a_d.data<float>(), kSize);
  EXPECT_TRUE(bitwise_equal(to_host<float>(a_d, s), narrow(y_ref)));
  Tensor db2_d = poisoned<float>(kSize, s);
  cuda::residual_add_backward(s, dy_d.data<float>(), dy_d.data<float>(), db2_d.data<float>(), kSize);
  EXPECT_TRUE(bitwise_equal(to_host<float>(db2_d, s), dy));
  EXPECT_TRUE(bitwise_equal(to_host<float>(dy_d, s), dy));
}

TEST(CudaDropout, MaskEqualsTheCpuMaskBitwise) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  for (const float p : {0.0f, 0.1f, 0.5f, 0.9f, 1.0f}) {
    for (const std::uint64_t offset : {0ull, 7ull, (1ull << 40) + 3}) {
      std::vector<std::uint8_t> ref(kSize);
      cpu::dropout_mask(p, 1234, offset, ref.data(), kSize);
      Tensor mask_d = poisoned<std::uint8_t>(kSize, s);
      cuda::dropout_mask(s, p, 1234, offset, mask_d.data<std::uint8_t>(), kSize);
      EXPECT_TRUE(bitwise_equal(to_host<std::uint8_t>(mask_d, s), ref)) << "p=" << p << " offset=" << offset;
    }
  }
}

TEST(CudaDropout, ForwardAndBackwardEqualTheReferenceBitwise) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const auto x = nonzero_floats(kSize, 6), dy = nonzero_floats(kSize, 7);
  Tensor x_d = to_device(x, s), dy_d = to_device(dy, s);
  for (const float p : {0.0f, 0.3f, 1.0f}) {
    std::vector<double> y_ref(kSize), dx_ref(kSize);
    cpu::dropout_forward(p, 99, 5, widen(x).data(), y_ref.data(), kSize);
    cpu::dropout_backward(p, 99, 5, widen(dy).data(), dx_ref.data(), kSize);
    Tensor y_d = poisoned<float>(kSize, s), dx_d = poisoned<float>(kSize, s);
    cuda::dropout_forward(s, p, 99, 5, x_d.data<float>(), y_d.data<float>(), kSize);
    cuda::dropout_backward(s, p, 99, 5, dy_d.data<float>(), dx_d.data<float>(), kSize);
    // float(double(x) * (1 / (1 - p))) on both sides, each product rounded once.
    EXPECT_TRUE(bitwise_equal(to_host<float>(y_d, s), narrow(y_ref))) << "p=" << p;
    EXPECT_TRUE(bitwise_equal(to_host<float>(dx_d, s), narrow(dx_ref))) << "p=" << p;
  }
}

TEST(CudaDropout, RejectsAProbabilityOutsideZeroToOne) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  Tensor x_d = poisoned<float>(8, stream.get());
  EXPECT_THROW(cuda::dropout_forward(stream.get(), 1.5f, 1, 0, x_d.data<float>(), x_d.data<float>(), 8),
               Error);
  EXPECT_THROW(cuda::dropout_forward(stream.get(), std::numeric_limits<float>::quiet_NaN(), 1, 0,
                                     x_d.data<float>(), x_d.data<float>(), 8),
               Error);
}

TEST(CudaGlobalAvgPool, ForwardMatchesToTheLastBitAndBackwardBitwise) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const auto x = nonzero_floats(kSize, 8);
  const auto dy = nonzero_floats(kN * kC, 9);
  std::vector<double> y_ref(kN * kC), dx_ref(kSize);
  cpu::global_avgpool_forward(kN, kC, kH, kW, widen(x).data(), y_ref.data());
  cpu::global_avgpool_backward(kN, kC, kH, kW, widen(dy).data(), dx_ref.data());

  Tensor x_d = to_device(x, s), dy_d = to_device(dy, s);
  Tensor y_d = poisoned<float>(kN * kC, s), dx_d = poisoned<float>(kSize, s);
  cuda::global_avgpool_forward(s, kN, kC, kH, kW, x_d.data<float>(), y_d.data<float>());
  cuda::global_avgpool_backward(s, kN, kC, kH, kW, dy_d.data<float>(), dx_d.data<float>());
  // The plane sum is in double on both sides (another order: ~1e-16 relative), then rounded to float once:
  // at most one float ulp (2^-23 relative) apart.
  EXPECT_TRUE(close_to(to_host<float>(y_d, s), y_ref, abs_of(y_ref), 0x1p-23));
  EXPECT_TRUE(bitwise_equal(to_host<float>(dx_d, s), narrow(dx_ref)));
}

// Grid-stride loops that wrap: the launchers cap the grid at 65536 blocks (kernels/cuda/common.cuh), so more
// than 65536 x 256 = 16,777,216 elements (elementwise kernels) or 65536 x 8 warps = 524,288 planes (one warp
// per plane) take a second trip around the loop. The same rules as the small shapes above, so the same
// tolerances: ReLU and the avgpool backward bitwise, the avgpool forward to one float ulp.
constexpr std::int64_t kOneGridOfElements = std::int64_t{65536} * 256;
constexpr std::int64_t kOneGridOfPlanes = std::int64_t{65536} * 8;

TEST(CudaGridStride, ReluWithMoreElementsThanOneGridMatchesBitwise) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const std::int64_t n = kOneGridOfElements + 12345;  // wraps once, and ends mid-block
  const auto x = nonzero_floats(static_cast<std::size_t>(n), 51);
  const auto dy = nonzero_floats(static_cast<std::size_t>(n), 52);
  std::vector<float> y_ref(static_cast<std::size_t>(n)), dx_ref(static_cast<std::size_t>(n));
  cpu::relu_forward(x.data(), y_ref.data(), n);
  cpu::relu_backward(x.data(), dy.data(), dx_ref.data(), n);
  Tensor x_d = to_device(x, s), dy_d = to_device(dy, s);
  Tensor y_d = poisoned<float>(n, s), dx_d = poisoned<float>(n, s);
  cuda::relu_forward(s, x_d.data<float>(), y_d.data<float>(), n);
  cuda::relu_backward(s, x_d.data<float>(), dy_d.data<float>(), dx_d.data<float>(), n);
  EXPECT_TRUE(bitwise_equal(to_host<float>(y_d, s), y_ref));
  EXPECT_TRUE(bitwise_equal(to_host<float>(dx_d, s), dx_ref));
}

TEST(CudaGridStride, GlobalAvgPoolWithMorePlanesThanOneGridMatches) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const int n = 4101, c = 128, h = 6, w = 6;  // 524,928 planes; 18.9 M elements: both kernels wrap
  const std::int64_t planes = std::int64_t{n} * c, size = planes * h * w;
  static_assert(std::int64_t{4101} * 128 > kOneGridOfPlanes);
  static_assert(std::int64_t{4101} * 128 * 36 > kOneGridOfElements);
  const auto x = nonzero_floats(static_cast<std::size_t>(size), 53);
  const auto dy = nonzero_floats(static_cast<std::size_t>(planes), 54);
  std::vector<double> y_ref(static_cast<std::size_t>(planes)), dx_ref(static_cast<std::size_t>(size));
  cpu::global_avgpool_forward(n, c, h, w, widen(x).data(), y_ref.data());
  cpu::global_avgpool_backward(n, c, h, w, widen(dy).data(), dx_ref.data());
  Tensor x_d = to_device(x, s), dy_d = to_device(dy, s);
  Tensor y_d = poisoned<float>(planes, s), dx_d = poisoned<float>(size, s);
  cuda::global_avgpool_forward(s, n, c, h, w, x_d.data<float>(), y_d.data<float>());
  cuda::global_avgpool_backward(s, n, c, h, w, dy_d.data<float>(), dx_d.data<float>());
  EXPECT_TRUE(close_to(to_host<float>(y_d, s), y_ref, abs_of(y_ref), 0x1p-23));
  EXPECT_TRUE(bitwise_equal(to_host<float>(dx_d, s), narrow(dx_ref)));
}

// Bias add is one float addition (bitwise the double sum rounded: the sum of two floats of similar size is
// exact in double). Bias grads are double sums rounded once: one ulp.
TEST(CudaBias, NchwAddAndGradMatchTheReference) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const auto y = nonzero_floats(kSize, 10), bias = nonzero_floats(kC, 11);
  std::vector<double> added(kSize), grad(kC, 0.0);
  for (std::int64_t i = 0; i < kSize; ++i) {
    const auto c = static_cast<std::size_t>((i / (kH * kW)) % kC);
    added[static_cast<std::size_t>(i)] =
        static_cast<double>(y[static_cast<std::size_t>(i)]) + static_cast<double>(bias[c]);
    grad[c] += static_cast<double>(y[static_cast<std::size_t>(i)]);
  }
  Tensor y_d = to_device(y, s), b_d = to_device(bias, s), db_d = poisoned<float>(kC, s);
  cuda::bias_grad_nchw(s, y_d.data<float>(), db_d.data<float>(), kN, kC, kH * kW);
  cuda::bias_add_nchw(s, y_d.data<float>(), b_d.data<float>(), kN, kC, kH * kW);
  EXPECT_TRUE(close_to(to_host<float>(db_d, s), grad, abs_of(grad), 0x1p-23));
  EXPECT_TRUE(bitwise_equal(to_host<float>(y_d, s), narrow(added)));
}

TEST(CudaBias, RowsAddAndGradMatchTheReference) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  for (const auto& [rows, cols] : {std::pair{3, 11}, std::pair{37, 70}, std::pair{129, 10}}) {
    const auto y = nonzero_floats(static_cast<std::size_t>(rows * cols), 12);
    const auto bias = nonzero_floats(static_cast<std::size_t>(cols), 13);
    std::vector<double> added(y.size()), grad(static_cast<std::size_t>(cols), 0.0);
    for (std::size_t i = 0; i < y.size(); ++i) {
      const std::size_t j = i % static_cast<std::size_t>(cols);
      added[i] = static_cast<double>(y[i]) + static_cast<double>(bias[j]);
      grad[j] += static_cast<double>(y[i]);
    }
    Tensor y_d = to_device(y, s), b_d = to_device(bias, s), db_d = poisoned<float>(cols, s);
    cuda::bias_grad_rows(s, y_d.data<float>(), db_d.data<float>(), rows, cols);
    cuda::bias_add_rows(s, y_d.data<float>(), b_d.data<float>(), rows, cols);
    EXPECT_TRUE(close_to(to_host<float>(db_d, s), grad, abs_of(grad), 0x1p-23)) << rows << "x" << cols;
    EXPECT_TRUE(bitwise_equal(to_host<float>(y_d, s), narrow(added))) << rows << "x" << cols;
  }
}

}  // namespace
}  // namespace engine
