// The CUDA softmax (kernels/cuda/softmax.cu: one warp per row, kernels/softmax_math.h's formulas) against the
// double reference (kernels/cpu/softmax) on odd sizes (a row shorter than a warp, one of 1001 classes, rows
// past one grid's worth of warps), outputs poisoned first, within the per-element bounds of
// tests/common/softmax_tolerance.h; in place too. Skips visibly without a device.

#include <vector>

#include <gtest/gtest.h>

#include "core/stream.h"
#include "kernels/cuda/softmax.h"
#include "tests/common/gpu.h"
#include "tests/common/softmax_tolerance.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

void check(std::int64_t rows, std::int64_t k, bool in_place) {
  SCOPED_TRACE(::testing::Message() << rows << " x " << k << (in_place ? " in place" : ""));
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const testing::SoftmaxInputs in = testing::softmax_inputs(rows, k, 53);
  Tensor x_d = to_device(in.x, s), dy_d = to_device(in.dy, s);
  Tensor y_d = in_place ? x_d : poisoned<float>(rows * k, s);
  Tensor dx_d = in_place ? dy_d : poisoned<float>(rows * k, s);
  cuda::softmax_forward(s, x_d.data<float>(), y_d.data<float>(), rows, k);
  const std::vector<float> y = to_host<float>(y_d, s);
  cuda::softmax_backward(s, y_d.data<float>(), dy_d.data<float>(), dx_d.data<float>(), rows, k);
  EXPECT_EQ(testing::softmax_mismatches(in, y, to_host<float>(dx_d, s), rows, k), "");
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
