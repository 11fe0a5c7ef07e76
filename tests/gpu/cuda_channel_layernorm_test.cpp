// The CUDA layer normalization over each pixel's channels against the float64 reference: every output
// within half a float ulp of the reference plus the double-order differences (the threads run
// kernels/channel_layernorm_math.h's double arithmetic per pixel and round once; dgamma and dbeta are
// fixed-order block sums in double). NCHW and NHWC shapes and [N, F], odd sizes; outputs poisoned first.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "core/stream.h"
#include "kernels/cpu/channel_layernorm.h"
#include "kernels/cuda/channel_layernorm.h"
#include "tests/common/gpu.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

constexpr double kEps = 1e-6;

// Each element's scale: |want| + 2^-16 max |want|; times close_to's rtol 2^-24, the bound is
// 2^-24 |want| (the one rounding) + 2^-40 max |want| (the double-order differences, far larger than they
// are).
std::vector<double> tolerances(const std::vector<double>& want) {
  double scale = 0.0;
  for (const double v : want) scale = std::max(scale, std::fabs(v));
  std::vector<double> t(want.size());
  for (std::size_t i = 0; i < want.size(); ++i) t[i] = std::fabs(want[i]) + 0x1p-16 * scale;
  return t;
}

TEST(CudaChannelLayerNorm, ForwardAndBackwardAreTheReferenceRoundedOnce) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  // NCHW [3, 5, 7, 9], NHWC [3, 5, 7, 9] (rows of 5 channels), [N, F], 96 channels of 8x8.
  const ChannelAffineShape shapes[] = {{3, 5, 63}, {3 * 63, 5, 1}, {7, 11, 1}, {4, 96, 64}};
  for (const ChannelAffineShape& sh : shapes) {
    const auto n = static_cast<std::size_t>(sh.numel()), c = static_cast<std::size_t>(sh.channels);
    const auto x = nonzero_floats(n, 1), dy = nonzero_floats(n, 2), gamma = nonzero_floats(c, 3),
               beta = nonzero_floats(c, 4);
    const std::vector<double> xd = widen(x), dyd = widen(dy), gd = widen(gamma), bd = widen(beta);
    std::vector<double> y_ref(n), dx_ref(n), dg_ref(c), db_ref(c);
    cpu::channel_layernorm_forward<double>(sh, kEps, xd.data(), gd.data(), bd.data(), y_ref.data());
    cpu::channel_layernorm_backward<double>(sh, kEps, xd.data(), gd.data(), dyd.data(), dx_ref.data(),
                                            dg_ref.data(), db_ref.data());
    Tensor x_d = to_device(x, s), dy_d = to_device(dy, s), g_d = to_device(gamma, s),
           b_d = to_device(beta, s);
    Tensor y_d = poisoned<float>(sh.numel(), s), dx_d = poisoned<float>(sh.numel(), s);
    Tensor dg_d = poisoned<float>(sh.channels, s), db_d = poisoned<float>(sh.channels, s);
    cuda::channel_layernorm_forward(s, sh, kEps, x_d.data<float>(), g_d.data<float>(), b_d.data<float>(),
                                    y_d.data<float>());
    cuda::channel_layernorm_backward(s, sh, kEps, x_d.data<float>(), g_d.data<float>(), dy_d.data<float>(),
                                     dx_d.data<float>(), dg_d.data<float>(), db_d.data<float>());
    EXPECT_TRUE(close_to(to_host<float>(y_d, s), y_ref, tolerances(y_ref), kFloatUnitRoundoff)) << "y";
    EXPECT_TRUE(close_to(to_host<float>(dx_d, s), dx_ref, tolerances(dx_ref), kFloatUnitRoundoff)) << "dx";
    EXPECT_TRUE(close_to(to_host<float>(dg_d, s), dg_ref, tolerances(dg_ref), kFloatUnitRoundoff))
        << "dgamma";
    EXPECT_TRUE(close_to(to_host<float>(db_d, s), db_ref, tolerances(db_ref), kFloatUnitRoundoff)) << "dbeta";
  }
}

}  // namespace
}  // namespace engine
