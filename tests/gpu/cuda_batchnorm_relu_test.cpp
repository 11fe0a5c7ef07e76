// BatchNorm2d with the fused ReLU on the GPU (kernels/cuda/batchnorm2d.h: `relu` forward, `relu_y`
// backward) against the float64 reference of the UNFUSED ops: cpu::batchnorm2d_* then cpu::relu_* (forward),
// cpu::relu_backward then cpu::batchnorm2d_backward_* (backward). Training and eval; odd sizes, one shape
// with several reduction chunks (the last-block finish adds them); run to run bitwise equality.
//
// Tolerances (u = 2^-24), those of cuda_batchnorm2d_test.cpp, since ReLU adds no rounding (it selects):
//  - statistics, running stats, dgamma, dbeta: double sums, one rounding to float: one ulp (2^-23 relative)
//    of the value, plus 1e-9 of the channel's sum of magnitudes for values that cancel to near zero;
//  - y: ~5 float roundings of terms bounded by (|x - K| + |mean - K|) |gamma invstd| plus the output's:
//    8u on that magnitude plus |y|;
//  - dx: ~8 roundings of terms bounded by |gamma invstd| (|dy| + |mean_dy| + |xhat mean_dy_xhat|): 16u.
// The backward reference is fed what the GPU's backward is fed: its saved statistics and its fused output
// (as ReLU's input for the mask: relu(v) > 0 exactly when v > 0), so a value at the kink masks alike.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/stream.h"
#include "kernels/cpu/batchnorm2d.h"
#include "kernels/cpu/relu.h"
#include "kernels/cuda/batchnorm2d.h"
#include "tests/common/gpu.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

constexpr double kU = kFloatUnitRoundoff;
constexpr double kOneUlp = 0x1p-23;

struct Data {
  BatchNorm2dShape g;
  std::size_t size = 0, hw = 0, c = 0;
  std::vector<float> x, dy, gamma, beta, rm, rv;
  std::size_t channel_of(std::size_t i) const { return (i / hw) % c; }
};

Data make_data(const BatchNorm2dShape& g) {
  Data d;
  d.g = g;
  d.size = g.x_size();
  d.hw = static_cast<std::size_t>(g.h) * static_cast<std::size_t>(g.w);
  d.c = static_cast<std::size_t>(g.c);
  d.x = nonzero_floats(d.size, 61);
  for (float& v : d.x) v += 3.0f;  // an offset mean: the centring matters
  d.dy = nonzero_floats(d.size, 62, -1.0f, 1.0f);
  d.gamma = nonzero_floats(d.c, 63, 0.5f, 1.5f);
  d.beta = nonzero_floats(d.c, 64, -0.5f, 0.5f);  // ReLU then cuts a good share of each channel
  // Running statistics near x's (mean about 3, variance about 1/3). nonzero_floats draws random signs: a
  // negative running variance makes eval's 1/sqrt(var + eps) NaN in the reference and the kernel alike
  // (channel 7 of the 8-channel shape), which compares nothing.
  d.rm = nonzero_floats(d.c, 65, 2.5f, 3.5f);
  d.rv = nonzero_floats(d.c, 66, 0.5f, 1.5f);
  for (float& v : d.rm) v = std::fabs(v);
  for (float& v : d.rv) v = std::fabs(v);
  return d;
}

// The tolerance scales of the header for y (from the normalisation's terms) and dx (from the backward's).
std::vector<double> y_scale(const Data& d, const std::vector<double>& mean, const std::vector<double>& invstd,
                            const std::vector<double>& y_ref) {
  std::vector<double> s(d.size);
  for (std::size_t i = 0; i < d.size; ++i) {
    const std::size_t ch = d.channel_of(i);
    const double shift = static_cast<double>(d.x[ch * d.hw]);
    s[i] = (std::fabs(static_cast<double>(d.x[i]) - shift) + std::fabs(mean[ch] - shift)) *
               std::fabs(static_cast<double>(d.gamma[ch]) * invstd[ch]) +
           std::fabs(y_ref[i]);
  }
  return s;
}

std::vector<double> dx_scale(const Data& d, const std::vector<double>& masked,
                             const std::vector<double>& mean, const std::vector<double>& invstd,
                             bool batch_terms) {
  const double m = static_cast<double>(d.g.count());
  std::vector<double> sum_dy(d.c, 0.0), sum_dy_xhat(d.c, 0.0), s(d.size);
  for (std::size_t i = 0; i < d.size; ++i) {
    const std::size_t ch = d.channel_of(i);
    sum_dy[ch] += std::fabs(masked[i]);
    sum_dy_xhat[ch] += std::fabs(masked[i] * (static_cast<double>(d.x[i]) - mean[ch]) * invstd[ch]);
  }
  for (std::size_t i = 0; i < d.size; ++i) {
    const std::size_t ch = d.channel_of(i);
    const double xhat = (static_cast<double>(d.x[i]) - mean[ch]) * invstd[ch];
    const double batch = batch_terms ? sum_dy[ch] / m + std::fabs(xhat) * sum_dy_xhat[ch] / m : 0.0;
    s[i] = std::fabs(static_cast<double>(d.gamma[ch]) * invstd[ch]) * (std::fabs(masked[i]) + batch) + 1e-30;
  }
  return s;
}

// One ulp of each per-channel value, plus 1e-9 of the magnitude of its terms when it is a sum (`terms`, one
// per element; empty for the statistics) that may cancel to near zero.
std::vector<double> sum_scale(const Data& d, const std::vector<double>& ref,
                              const std::vector<double>& terms) {
  std::vector<double> magnitude(d.c, 0.0), s(d.c);
  for (std::size_t i = 0; i < terms.size(); ++i) magnitude[d.channel_of(i)] += std::fabs(terms[i]);
  for (std::size_t ch = 0; ch < d.c; ++ch) s[ch] = std::fabs(ref[ch]) + 1e-9 * magnitude[ch];
  return s;
}

class CudaBatchNormRelu : public ::testing::TestWithParam<BatchNorm2dShape> {};

TEST_P(CudaBatchNormRelu, TrainingMatchesTheReferenceOfBatchNormThenRelu) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const Data d = make_data(GetParam());
  const auto n = static_cast<std::int64_t>(d.size);
  const auto xd = widen(d.x), gd = widen(d.gamma), bd = widen(d.beta), dyd = widen(d.dy);
  std::vector<double> bn_out(d.size), y_ref(d.size), mean_ref(d.c), invstd_ref(d.c), rm_ref = widen(d.rm),
                                                                                     rv_ref = widen(d.rv);
  cpu::batchnorm2d_forward_training(d.g, xd.data(), gd.data(), bd.data(), bn_out.data(), mean_ref.data(),
                                    invstd_ref.data(), rm_ref.data(), rv_ref.data());
  cpu::relu_forward(bn_out.data(), y_ref.data(), n);

  Tensor x_d = to_device(d.x, s), g_d = to_device(d.gamma, s), b_d = to_device(d.beta, s);
  Tensor rm_d = to_device(d.rm, s), rv_d = to_device(d.rv, s);
  Tensor y_d = poisoned<float>(n, s), mean_d = poisoned<float>(d.g.c, s),
         invstd_d = poisoned<float>(d.g.c, s);
  cuda::batchnorm2d_forward_training(s, d.g, x_d.data<float>(), g_d.data<float>(), b_d.data<float>(),
                                     y_d.data<float>(), mean_d.data<float>(), invstd_d.data<float>(),
                                     rm_d.data<float>(), rv_d.data<float>(), cpu::kBatchNormDefaultMomentum,
                                     cpu::kBatchNormDefaultEps, /*relu=*/true);
  const auto y = to_host<float>(y_d, s), mean = to_host<float>(mean_d, s),
             invstd = to_host<float>(invstd_d, s);
  EXPECT_TRUE(close_to(y, y_ref, y_scale(d, mean_ref, invstd_ref, y_ref), 8 * kU)) << "y";
  EXPECT_TRUE(close_to(mean, mean_ref, sum_scale(d, mean_ref, {}), kOneUlp)) << "save_mean";
  EXPECT_TRUE(close_to(invstd, invstd_ref, sum_scale(d, invstd_ref, {}), kOneUlp)) << "save_invstd";
  EXPECT_TRUE(close_to(to_host<float>(rm_d, s), rm_ref, sum_scale(d, rm_ref, {}), kOneUlp)) << "running_mean";
  EXPECT_TRUE(close_to(to_host<float>(rv_d, s), rv_ref, sum_scale(d, rv_ref, {}), kOneUlp)) << "running_var";

  // Backward: ReLU's backward (its input's sign: the GPU's output's), then BatchNorm's from the saved stats.
  const std::vector<double> y_gpu = widen(y), saved_mean = widen(mean), saved_invstd = widen(invstd);
  std::vector<double> masked(d.size), dx_ref(d.size), dgamma_ref(d.c), dbeta_ref(d.c);
  cpu::relu_backward(y_gpu.data(), dyd.data(), masked.data(), n);
  cpu::batchnorm2d_backward_training(d.g, xd.data(), gd.data(), saved_mean.data(), saved_invstd.data(),
                                     masked.data(), dx_ref.data(), dgamma_ref.data(), dbeta_ref.data());
  Tensor dy_d = to_device(d.dy, s), dx_d = poisoned<float>(n, s);
  Tensor dgamma_d = poisoned<float>(d.g.c, s), dbeta_d = poisoned<float>(d.g.c, s);
  cuda::batchnorm2d_backward_training(s, d.g, x_d.data<float>(), g_d.data<float>(), mean_d.data<float>(),
                                      invstd_d.data<float>(), dy_d.data<float>(), dx_d.data<float>(),
                                      dgamma_d.data<float>(), dbeta_d.data<float>(), y_d.data<float>());
  const auto dx = to_host<float>(dx_d, s);
  EXPECT_TRUE(close_to(dx, dx_ref, dx_scale(d, masked, saved_mean, saved_invstd, true), 16 * kU)) << "dx";
  std::vector<double> dy_xhat(d.size);
  for (std::size_t i = 0; i < d.size; ++i) {
    const std::size_t ch = d.channel_of(i);
    dy_xhat[i] = masked[i] * (xd[i] - saved_mean[ch]) * saved_invstd[ch];
  }
  EXPECT_TRUE(close_to(to_host<float>(dgamma_d, s), dgamma_ref, sum_scale(d, dgamma_ref, dy_xhat), kOneUlp))
      << "dgamma";
  EXPECT_TRUE(close_to(to_host<float>(dbeta_d, s), dbeta_ref, sum_scale(d, dbeta_ref, masked), kOneUlp))
      << "dbeta";

  // Deterministic: whichever block finishes a channel last, the partials are added in the same order.
  Tensor dx2_d = poisoned<float>(n, s), dgamma2_d = poisoned<float>(d.g.c, s);
  cuda::batchnorm2d_backward_training(s, d.g, x_d.data<float>(), g_d.data<float>(), mean_d.data<float>(),
                                      invstd_d.data<float>(), dy_d.data<float>(), dx2_d.data<float>(),
                                      dgamma2_d.data<float>(), nullptr, y_d.data<float>());
  EXPECT_TRUE(bitwise_equal(to_host<float>(dx2_d, s), dx)) << "dx run to run";
  EXPECT_TRUE(bitwise_equal(to_host<float>(dgamma2_d, s), to_host<float>(dgamma_d, s)))
      << "dgamma run to run";
}

// A conv bias folded into the BatchNorm (layers/fusion.h): the kernel sees x without the bias and adds the
// bias to the batch mean in its running-mean update only. Reference: the biased input x + b through the
// unfused ops. The tolerances are the ones above: y's terms are the same (x and its mean shift together).
TEST_P(CudaBatchNormRelu, TrainingWithAFoldedConvBiasMatchesTheReferenceOfTheBiasedInput) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const Data d = make_data(GetParam());
  const auto n = static_cast<std::int64_t>(d.size);
  const std::vector<float> bias = nonzero_floats(d.c, 67, -0.5f, 0.5f);
  std::vector<double> biased(d.size);
  for (std::size_t i = 0; i < d.size; ++i) {
    biased[i] = static_cast<double>(d.x[i]) + static_cast<double>(bias[d.channel_of(i)]);
  }
  const auto gd = widen(d.gamma), bd = widen(d.beta);
  std::vector<double> bn_out(d.size), y_ref(d.size), mean_ref(d.c), invstd_ref(d.c), rm_ref = widen(d.rm),
                                                                                     rv_ref = widen(d.rv);
  cpu::batchnorm2d_forward_training(d.g, biased.data(), gd.data(), bd.data(), bn_out.data(), mean_ref.data(),
                                    invstd_ref.data(), rm_ref.data(), rv_ref.data());
  cpu::relu_forward(bn_out.data(), y_ref.data(), n);
  std::vector<double> mean_of_x(d.c);  // the saved mean is x's: backward sees x
  for (std::size_t ch = 0; ch < d.c; ++ch) mean_of_x[ch] = mean_ref[ch] - static_cast<double>(bias[ch]);

  Tensor x_d = to_device(d.x, s), g_d = to_device(d.gamma, s), b_d = to_device(d.beta, s);
  Tensor bias_d = to_device(bias, s), rm_d = to_device(d.rm, s), rv_d = to_device(d.rv, s);
  Tensor y_d = poisoned<float>(n, s), mean_d = poisoned<float>(d.g.c, s),
         invstd_d = poisoned<float>(d.g.c, s);
  cuda::batchnorm2d_forward_training(s, d.g, x_d.data<float>(), g_d.data<float>(), b_d.data<float>(),
                                     y_d.data<float>(), mean_d.data<float>(), invstd_d.data<float>(),
                                     rm_d.data<float>(), rv_d.data<float>(), cpu::kBatchNormDefaultMomentum,
                                     cpu::kBatchNormDefaultEps, /*relu=*/true, bias_d.data<float>());
  EXPECT_TRUE(close_to(to_host<float>(y_d, s), y_ref, y_scale(d, mean_of_x, invstd_ref, y_ref), 8 * kU))
      << "y";
  EXPECT_TRUE(close_to(to_host<float>(mean_d, s), mean_of_x, sum_scale(d, mean_of_x, {}), kOneUlp))
      << "save_mean";
  EXPECT_TRUE(close_to(to_host<float>(rm_d, s), rm_ref, sum_scale(d, rm_ref, {}), kOneUlp)) << "running_mean";
  EXPECT_TRUE(close_to(to_host<float>(rv_d, s), rv_ref, sum_scale(d, rv_ref, {}), kOneUlp)) << "running_var";
}

TEST_P(CudaBatchNormRelu, EvalMatchesTheReferenceOfBatchNormThenRelu) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const Data d = make_data(GetParam());
  const auto n = static_cast<std::int64_t>(d.size);
  const auto xd = widen(d.x), gd = widen(d.gamma), bd = widen(d.beta), dyd = widen(d.dy), rmd = widen(d.rm),
             rvd = widen(d.rv);
  std::vector<double> bn_out(d.size), y_ref(d.size), invstd(d.c);
  for (std::size_t ch = 0; ch < d.c; ++ch) invstd[ch] = 1.0 / std::sqrt(rvd[ch] + cpu::kBatchNormDefaultEps);
  cpu::batchnorm2d_forward_eval(d.g, xd.data(), gd.data(), bd.data(), rmd.data(), rvd.data(), bn_out.data());
  cpu::relu_forward(bn_out.data(), y_ref.data(), n);
  Tensor x_d = to_device(d.x, s), g_d = to_device(d.gamma, s), b_d = to_device(d.beta, s);
  Tensor rm_d = to_device(d.rm, s), rv_d = to_device(d.rv, s), y_d = poisoned<float>(n, s);
  cuda::batchnorm2d_forward_eval(s, d.g, x_d.data<float>(), g_d.data<float>(), b_d.data<float>(),
                                 rm_d.data<float>(), rv_d.data<float>(), y_d.data<float>(),
                                 cpu::kBatchNormDefaultEps, /*relu=*/true);
  const auto y = to_host<float>(y_d, s);
  // Eval's shift is the running mean: y's terms are |x - running_mean| |gamma invstd|.
  std::vector<double> ys(d.size);
  for (std::size_t i = 0; i < d.size; ++i) {
    const std::size_t ch = d.channel_of(i);
    ys[i] = std::fabs(xd[i] - rmd[ch]) * std::fabs(gd[ch] * invstd[ch]) + std::fabs(y_ref[i]);
  }
  EXPECT_TRUE(close_to(y, y_ref, ys, 8 * kU)) << "eval y";

  const std::vector<double> y_gpu = widen(y);
  std::vector<double> masked(d.size), dx_ref(d.size), dgamma_ref(d.c), dbeta_ref(d.c);
  cpu::relu_backward(y_gpu.data(), dyd.data(), masked.data(), n);
  cpu::batchnorm2d_backward_eval(d.g, xd.data(), gd.data(), rmd.data(), rvd.data(), masked.data(),
                                 dx_ref.data(), dgamma_ref.data(), dbeta_ref.data());
  Tensor dy_d = to_device(d.dy, s), dx_d = poisoned<float>(n, s);
  Tensor dgamma_d = poisoned<float>(d.g.c, s), dbeta_d = poisoned<float>(d.g.c, s);
  cuda::batchnorm2d_backward_eval(s, d.g, x_d.data<float>(), g_d.data<float>(), rm_d.data<float>(),
                                  rv_d.data<float>(), dy_d.data<float>(), dx_d.data<float>(),
                                  dgamma_d.data<float>(), dbeta_d.data<float>(), cpu::kBatchNormDefaultEps,
                                  y_d.data<float>());
  EXPECT_TRUE(close_to(to_host<float>(dx_d, s), dx_ref, dx_scale(d, masked, rmd, invstd, false), 16 * kU))
      << "eval dx";
  std::vector<double> dy_xhat(d.size);
  for (std::size_t i = 0; i < d.size; ++i) {
    const std::size_t ch = d.channel_of(i);
    dy_xhat[i] = masked[i] * (xd[i] - rmd[ch]) * invstd[ch];
  }
  EXPECT_TRUE(close_to(to_host<float>(dgamma_d, s), dgamma_ref, sum_scale(d, dgamma_ref, dy_xhat), kOneUlp))
      << "eval dgamma";
  EXPECT_TRUE(close_to(to_host<float>(dbeta_d, s), dbeta_ref, sum_scale(d, dbeta_ref, masked), kOneUlp))
      << "eval dbeta";
}

// Odd sizes; 16 x 8 x 33 x 31 puts M = 16,368 values in each channel: 4 chunks for the last-block finish.
INSTANTIATE_TEST_SUITE_P(Shapes, CudaBatchNormRelu,
                         ::testing::Values(BatchNorm2dShape{.n = 3, .c = 5, .h = 7, .w = 9},
                                           BatchNorm2dShape{.n = 16, .c = 8, .h = 33, .w = 31}));

}  // namespace
}  // namespace engine
