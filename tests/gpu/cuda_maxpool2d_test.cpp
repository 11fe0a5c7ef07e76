// MaxPool2d on the GPU against the CPU reference: values, int32 argmax (the first maximum in row-major window
// order wins a tie) and the gather backward, all bit for bit, over overlapping, padded and non-square
// windows. The inputs take 8 distinct values only, so nearly every window has ties.
#include <cmath>
#include <limits>
#include <ostream>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/stream.h"
#include "kernels/cpu/maxpool2d.h"
#include "kernels/cuda/maxpool2d.h"
#include "tests/common/gpu.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

// Nonzero values in {+-0.25, +-0.5, +-0.75, +-1}: ties everywhere.
std::vector<float> tied_values(std::size_t n, std::uint64_t seed) {
  auto v = nonzero_floats(n, seed, 0.2f, 1.0f);
  for (float& x : v) x = std::copysign(std::ceil(std::fabs(x) * 4.0f) / 4.0f, x);
  return v;
}

struct PoolCase {
  int kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
  bool ceil_mode = false;
};

// Readable parameter names in gtest/ctest output.
void PrintTo(const PoolCase& p, std::ostream* os) {
  *os << fmt::format("kernel {}x{} stride {}x{} pad {}x{} ceil_mode {}", p.kernel_h, p.kernel_w, p.stride_h,
                     p.stride_w, p.pad_h, p.pad_w, p.ceil_mode);
}

class CudaMaxPool2d : public ::testing::TestWithParam<PoolCase> {};

TEST_P(CudaMaxPool2d, ForwardArgmaxAndBackwardEqualTheReferenceBitwise) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const PoolCase pc = GetParam();
  const Pool2dShape shape{.n = 3,
                          .c = 5,
                          .h = 7,
                          .w = 9,
                          .kernel_h = pc.kernel_h,
                          .kernel_w = pc.kernel_w,
                          .stride_h = pc.stride_h,
                          .stride_w = pc.stride_w,
                          .pad_h = pc.pad_h,
                          .pad_w = pc.pad_w,
                          .ceil_mode = pc.ceil_mode};
  const auto in_size = static_cast<std::size_t>(shape.input_size());
  const auto out_size = static_cast<std::size_t>(shape.output_size());
  const auto x = tied_values(in_size, 21);
  const auto dy = nonzero_floats(out_size, 22);
  std::vector<float> y_ref(out_size), dx_ref(in_size);
  std::vector<std::int32_t> argmax_ref(out_size);
  cpu::maxpool2d_forward(shape, x.data(), y_ref.data(), argmax_ref.data());
  cpu::maxpool2d_backward(shape, dy.data(), argmax_ref.data(), dx_ref.data());

  Tensor x_d = to_device(x, s), dy_d = to_device(dy, s);
  Tensor y_d = poisoned<float>(shape.output_size(), s);
  Tensor argmax_d = poisoned<std::int32_t>(shape.output_size(), s);
  Tensor dx_d = poisoned<float>(shape.input_size(), s);
  cuda::maxpool2d_forward(s, shape, x_d.data<float>(), y_d.data<float>(), argmax_d.data<std::int32_t>());
  cuda::maxpool2d_backward(s, shape, dy_d.data<float>(), argmax_d.data<std::int32_t>(), dx_d.data<float>());
  EXPECT_TRUE(bitwise_equal(to_host<float>(y_d, s), y_ref));
  EXPECT_TRUE(bitwise_equal(to_host<std::int32_t>(argmax_d, s), argmax_ref));
  // The gather adds the same dy values in the same (output) order as the CPU's scatter, in double.
  EXPECT_TRUE(bitwise_equal(to_host<float>(dx_d, s), dx_ref));
}

INSTANTIATE_TEST_SUITE_P(
    Windows, CudaMaxPool2d,
    ::testing::Values(PoolCase{2, 2, 2, 2, 0, 0},         // ResNet/VGG style, odd input: ragged edge
                      PoolCase{3, 3, 2, 2, 1, 1},         // overlapping + padded
                      PoolCase{3, 3, 1, 1, 1, 1},         // every cell in up to 9 windows
                      PoolCase{3, 2, 2, 1, 0, 1},         // non-square kernel and stride
                      PoolCase{7, 9, 1, 1, 0, 0},         // one window per plane (global)
                      PoolCase{2, 2, 2, 2, 0, 0, true},   // ceil mode: clipped last windows
                      PoolCase{4, 4, 2, 2, 1, 1, true}),  // ... past the right padding
    [](const ::testing::TestParamInfo<PoolCase>& param) {
      const PoolCase& p = param.param;
      return fmt::format("k{}x{}_s{}x{}_p{}x{}{}", p.kernel_h, p.kernel_w, p.stride_h, p.stride_w, p.pad_h,
                         p.pad_w, p.ceil_mode ? "_ceil" : "");
    });

TEST(CudaMaxPool2dRules, NanWinsTheLastNanWinsAndTheFirstMaximumWins) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const Pool2dShape shape{.n = 1,
                          .c = 1,
                          .h = 2,
                          .w = 4,
                          .kernel_h = 2,
                          .kernel_w = 2,
                          .stride_h = 2,
                          .stride_w = 2,
                          .pad_h = 0,
                          .pad_w = 0};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // The scan takes `v > best || isnan(v)` in row-major window order (PyTorch's rule,
  // kernels/cpu/maxpool2d.h). Window 0: 1, 3 / 3, 2 -> the first 3 (index 1): an equal value does not replace
  // it. Window 1: 5, NaN / 9, NaN -> 5 (2), then NaN (3) replaces it, 9 (6) does not replace a NaN, and the
  // second NaN (7) replaces the first: index 7, the LAST NaN.
  const std::vector<float> x = {1.0f, 3.0f, 5.0f, nan, 3.0f, 2.0f, 9.0f, nan};
  std::vector<float> y_ref(2);
  std::vector<std::int32_t> argmax_ref(2);
  cpu::maxpool2d_forward(shape, x.data(), y_ref.data(), argmax_ref.data());
  ASSERT_EQ(argmax_ref, (std::vector<std::int32_t>{1, 7}));
  Tensor x_d = to_device(x, s), y_d = poisoned<float>(2, s), argmax_d = poisoned<std::int32_t>(2, s);
  cuda::maxpool2d_forward(s, shape, x_d.data<float>(), y_d.data<float>(), argmax_d.data<std::int32_t>());
  EXPECT_EQ(to_host<std::int32_t>(argmax_d, s), argmax_ref);
  const auto y = to_host<float>(y_d, s);
  EXPECT_EQ(y[0], 3.0f);
  EXPECT_TRUE(std::isnan(y[1]));
}

TEST(CudaMaxPool2dRules, RejectsPaddingAboveHalfTheKernel) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const Pool2dShape shape{.n = 1,
                          .c = 1,
                          .h = 4,
                          .w = 4,
                          .kernel_h = 2,
                          .kernel_w = 2,
                          .stride_h = 2,
                          .stride_w = 2,
                          .pad_h = 2,
                          .pad_w = 0};
  Tensor buf = poisoned<float>(64, stream.get());
  Tensor idx = poisoned<std::int32_t>(64, stream.get());
  EXPECT_THROW(cuda::maxpool2d_forward(stream.get(), shape, buf.data<float>(), buf.data<float>(),
                                       idx.data<std::int32_t>()),
               Error);
}

}  // namespace
}  // namespace engine
