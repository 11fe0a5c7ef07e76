// AvgPool2d on the GPU against the CPU reference, bit for bit in both directions (the same double sums and
// quotients in the same order: kernels/cuda/avgpool2d.h), over overlapping, padded (up to kernel - 1),
// rectangular and global windows, with and without the padding counted; outputs poisoned first. (bf16
// storage: tests/gpu/cuda_bf16_kernels_test.cpp; NHWC: tests/gpu/cuda_nhwc_test.cpp.)
#include <ostream>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/stream.h"
#include "kernels/cpu/avgpool2d.h"
#include "kernels/cuda/avgpool2d.h"
#include "tests/common/gpu.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

struct AvgCase {
  int kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
  bool count_include_pad;
  bool ceil_mode = false;
};

void PrintTo(const AvgCase& p, std::ostream* os) {
  *os << fmt::format("kernel {}x{} stride {}x{} pad {}x{} count_include_pad {} ceil_mode {}", p.kernel_h,
                     p.kernel_w, p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.count_include_pad, p.ceil_mode);
}

AvgPool2dShape shape_of(const AvgCase& c) {
  return {{.n = 3,
           .c = 5,
           .h = 7,
           .w = 9,
           .kernel_h = c.kernel_h,
           .kernel_w = c.kernel_w,
           .stride_h = c.stride_h,
           .stride_w = c.stride_w,
           .pad_h = c.pad_h,
           .pad_w = c.pad_w,
           .ceil_mode = c.ceil_mode},
          c.count_include_pad};
}

class CudaAvgPool2d : public ::testing::TestWithParam<AvgCase> {};

TEST_P(CudaAvgPool2d, ForwardAndBackwardEqualTheReferenceBitwise) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const AvgPool2dShape shape = shape_of(GetParam());
  const auto in_size = static_cast<std::size_t>(shape.input_size());
  const auto out_size = static_cast<std::size_t>(shape.output_size());
  const auto x = nonzero_floats(in_size, 31);
  const auto dy = nonzero_floats(out_size, 32);
  std::vector<float> y_ref(out_size), dx_ref(in_size);
  cpu::avgpool2d_forward(shape, x.data(), y_ref.data());
  cpu::avgpool2d_backward(shape, dy.data(), dx_ref.data());

  Tensor x_d = to_device(x, s), dy_d = to_device(dy, s);
  Tensor y_d = poisoned<float>(shape.output_size(), s);
  Tensor dx_d = poisoned<float>(shape.input_size(), s);
  cuda::avgpool2d_forward(s, shape, x_d.data<float>(), y_d.data<float>());
  cuda::avgpool2d_backward(s, shape, dy_d.data<float>(), dx_d.data<float>());
  EXPECT_TRUE(bitwise_equal(to_host<float>(y_d, s), y_ref));
  EXPECT_TRUE(bitwise_equal(to_host<float>(dx_d, s), dx_ref));
}

INSTANTIATE_TEST_SUITE_P(Windows, CudaAvgPool2d,
                         ::testing::Values(AvgCase{2, 2, 2, 2, 0, 0, true},   // odd input: ragged edge
                                           AvgCase{3, 3, 2, 2, 1, 1, true},   // overlapping + padded
                                           AvgCase{3, 3, 2, 2, 1, 1, false},  // ... padding not counted
                                           AvgCase{3, 3, 1, 1, 2, 2, false},  // padding = kernel - 1
                                           AvgCase{3, 2, 2, 1, 1, 1, false},  // rectangular
                                           AvgCase{7, 9, 1, 1, 0, 0, true},   // one window per plane
                                           // ceil mode: one more window per axis, overhanging the padding
                                           AvgCase{4, 4, 2, 2, 1, 1, true, true},
                                           AvgCase{4, 4, 2, 2, 1, 1, false, true},
                                           AvgCase{2, 2, 2, 2, 0, 0, true, true}),
                         [](const ::testing::TestParamInfo<AvgCase>& param) {
                           const AvgCase& p = param.param;
                           return fmt::format("k{}x{}_s{}x{}_p{}x{}_{}{}", p.kernel_h, p.kernel_w, p.stride_h,
                                              p.stride_w, p.pad_h, p.pad_w,
                                              p.count_include_pad ? "include" : "exclude",
                                              p.ceil_mode ? "_ceil" : "");
                         });

TEST(CudaAvgPool2dRules, RejectsPaddingAsLargeAsTheKernel) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  AvgPool2dShape shape = shape_of({3, 3, 1, 1, 3, 1, false});
  Tensor buf = poisoned<float>(4096, stream.get());
  EXPECT_THROW(cuda::avgpool2d_forward(stream.get(), shape, buf.data<float>(), buf.data<float>()), Error);
}

}  // namespace
}  // namespace engine
