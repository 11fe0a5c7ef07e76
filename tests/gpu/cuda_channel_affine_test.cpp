// The CUDA per-channel scale and shift against the float64 reference: y and dx bitwise (the same double
// product and sum, rounded once), the parameter gradients to the final float rounding (a fixed-order block
// sum in double). NCHW and NHWC shapes, each half alone, odd sizes; outputs poisoned first.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "core/stream.h"
#include "kernels/cpu/channel_affine.h"
#include "kernels/cuda/channel_affine.h"
#include "tests/common/gpu.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

TEST(CudaChannelAffine, ForwardAndBackwardEqualTheReference) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  // NCHW [3, 5, 7, 9], NHWC [3, 5, 7, 9] (rows of 5 channels), [N, F], one value for everything.
  const ChannelAffineShape shapes[] = {{3, 5, 63}, {3 * 63, 5, 1}, {7, 11, 1}, {1, 1, 3 * 5 * 7 * 9}};
  for (const ChannelAffineShape& sh : shapes) {
    for (const int halves : {3, 1, 2}) {  // bit 0: scale, bit 1: shift
      const auto n = static_cast<std::size_t>(sh.numel()), c = static_cast<std::size_t>(sh.channels);
      const auto x = nonzero_floats(n, 1), dy = nonzero_floats(n, 2), scale = nonzero_floats(c, 3),
                 shift = nonzero_floats(c, 4);
      const std::vector<double> xd = widen(x), dyd = widen(dy), sd = widen(scale), td = widen(shift);
      const double* sp = (halves & 1) ? sd.data() : nullptr;
      const double* tp = (halves & 2) ? td.data() : nullptr;
      std::vector<double> y_ref(n), dx_ref(n), ds_ref(c), dt_ref(c);
      cpu::channel_affine_forward<double>(sh, xd.data(), sp, tp, y_ref.data());
      cpu::channel_affine_backward<double>(sh, xd.data(), sp, dyd.data(), dx_ref.data(), ds_ref.data(),
                                           dt_ref.data());

      Tensor x_d = to_device(x, s), dy_d = to_device(dy, s), s_d = to_device(scale, s),
             t_d = to_device(shift, s);
      Tensor y_d = poisoned<float>(sh.numel(), s), dx_d = poisoned<float>(sh.numel(), s);
      Tensor ds_d = poisoned<float>(sh.channels, s), dt_d = poisoned<float>(sh.channels, s);
      const float* sdev = (halves & 1) ? s_d.data<float>() : nullptr;
      const float* tdev = (halves & 2) ? t_d.data<float>() : nullptr;
      cuda::channel_affine_forward(s, sh, x_d.data<float>(), sdev, tdev, y_d.data<float>());
      cuda::channel_affine_backward(s, sh, x_d.data<float>(), sdev, dy_d.data<float>(), dx_d.data<float>(),
                                    ds_d.data<float>(), dt_d.data<float>());
      EXPECT_TRUE(bitwise_equal(to_host<float>(y_d, s), narrow(y_ref))) << "y, halves " << halves;
      EXPECT_TRUE(bitwise_equal(to_host<float>(dx_d, s), narrow(dx_ref))) << "dx, halves " << halves;
      const double rtol =
          2 * kFloatUnitRoundoff;  // the final rounding, and double-order effects far below it
      EXPECT_TRUE(close_to(to_host<float>(ds_d, s), ds_ref, max_abs_or_one(ds_ref), rtol)) << "dscale";
      EXPECT_TRUE(close_to(to_host<float>(dt_d, s), dt_ref, max_abs_or_one(dt_ref), rtol)) << "dshift";
    }
  }
}

}  // namespace
}  // namespace engine
