// BatchNorm2d on the GPU against the float64 CPU reference: training forward (y, saved mean/invstd, running
// stats), training backward, eval forward and backward; affine and not; data with a large offset
// (|mean| >> std, where a naive E[x^2] - E[x]^2 in float would fail); a shape with several reduction chunks,
// and one with the most (64).
//
// Tolerances (u = 2^-24, the float unit roundoff):
//  - statistics, running stats, dgamma, dbeta: sums in double on both sides, then one rounding to float: the
//    GPU is within one float ulp (2^-23 relative) of the double reference;
//  - y: the GPU computes fma((x - K) - (mean - K), gamma * invstd, beta) in float (K = the channel's first
//    value): at most ~5 roundings of terms bounded by (|x - K| + |mean - K|) |gamma invstd|, plus the output
//    rounding: tolerance 8u on that magnitude plus |y|;
//  - dx: gamma invstd (dy - mean_dy - xhat mean_dy_xhat) in float from coefficients rounded from double: at
//    most ~8 roundings of terms bounded by |gamma invstd| (|dy| + |mean_dy| + |xhat mean_dy_xhat|): 16u on
//    that magnitude.
#include <cmath>
#include <ostream>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/stream.h"
#include "kernels/cpu/batchnorm2d.h"
#include "kernels/cuda/batchnorm2d.h"
#include "tests/common/gpu.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

constexpr double kU = kFloatUnitRoundoff;
constexpr double kOneUlp = 0x1p-23;

struct BnCase {
  int n, c, h, w;
  float offset;
  bool affine;
};

// Readable parameter names in gtest/ctest output.
void PrintTo(const BnCase& p, std::ostream* os) {
  *os << fmt::format("x[{},{},{},{}] offset {} {}", p.n, p.c, p.h, p.w, p.offset,
                     p.affine ? "affine" : "plain");
}

std::string case_name(const ::testing::TestParamInfo<BnCase>& param) {
  const BnCase& p = param.param;
  return fmt::format("{}x{}x{}x{}_offset{}_{}", p.n, p.c, p.h, p.w, static_cast<int>(p.offset),
                     p.affine ? "affine" : "plain");
}

// |ref| plus a sliver of the magnitude: one-ulp checks on values that could cancel to near zero.
std::vector<double> ulp_scale(const std::vector<double>& ref, const std::vector<double>& magnitude) {
  std::vector<double> s(ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) s[i] = std::fabs(ref[i]) + 1e-9 * magnitude[i];
  return s;
}

class CudaBatchNorm2d : public ::testing::TestWithParam<BnCase> {
 protected:
  void SetUp() override {
    const BnCase p = GetParam();
    shape = {.n = p.n, .c = p.c, .h = p.h, .w = p.w};
    size = shape.x_size();
    x = nonzero_floats(size, 51);
    for (float& v : x) v += p.offset;
    dy = nonzero_floats(size, 52);
    if (p.affine) {
      gamma = nonzero_floats(static_cast<std::size_t>(p.c), 53);
      beta = nonzero_floats(static_cast<std::size_t>(p.c), 54);
    }
    running_mean = nonzero_floats(static_cast<std::size_t>(p.c), 55);
    running_var = nonzero_floats(static_cast<std::size_t>(p.c), 56, 0.5f, 1.5f);
    for (float& v : running_var) v = std::fabs(v);
  }
  const float* gamma_ptr(const Tensor& t) const { return gamma.empty() ? nullptr : t.data<float>(); }
  std::size_t channel_of(std::size_t i) const {
    return (i / static_cast<std::size_t>(shape.h * shape.w)) % static_cast<std::size_t>(shape.c);
  }

  BatchNorm2dShape shape;
  std::size_t size = 0;
  std::vector<float> x, dy, gamma, beta, running_mean, running_var;
};

TEST_P(CudaBatchNorm2d, TrainingForwardAndBackwardMatchTheReference) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const auto c = static_cast<std::size_t>(shape.c);
  const bool affine = !gamma.empty();

  // Reference, in double.
  const auto xd = widen(x), gd = widen(gamma), bd = widen(beta);
  std::vector<double> y_ref(size), mean_ref(c), invstd_ref(c), rm_ref = widen(running_mean),
                                                               rv_ref = widen(running_var);
  cpu::batchnorm2d_forward_training(shape, xd.data(), affine ? gd.data() : nullptr,
                                    affine ? bd.data() : nullptr, y_ref.data(), mean_ref.data(),
                                    invstd_ref.data(), rm_ref.data(), rv_ref.data());

  Tensor x_d = to_device(x, s), g_d, b_d;
  if (affine) {
    g_d = to_device(gamma, s);
    b_d = to_device(beta, s);
  }
  Tensor rm_d = to_device(running_mean, s), rv_d = to_device(running_var, s);
  Tensor y_d = poisoned<float>(static_cast<std::int64_t>(size), s);
  Tensor mean_d = poisoned<float>(shape.c, s), invstd_d = poisoned<float>(shape.c, s);
  cuda::batchnorm2d_forward_training(
      s, shape, x_d.data<float>(), gamma_ptr(g_d), affine ? b_d.data<float>() : nullptr, y_d.data<float>(),
      mean_d.data<float>(), invstd_d.data<float>(), rm_d.data<float>(), rv_d.data<float>());
  const auto mean = to_host<float>(mean_d, s), invstd = to_host<float>(invstd_d, s);
  const std::vector<double> no_mag(c, 0.0);
  EXPECT_TRUE(close_to(mean, mean_ref, ulp_scale(mean_ref, abs_of(mean_ref)), kOneUlp)) << "save_mean";
  EXPECT_TRUE(close_to(invstd, invstd_ref, ulp_scale(invstd_ref, no_mag), kOneUlp)) << "save_invstd";
  EXPECT_TRUE(close_to(to_host<float>(rm_d, s), rm_ref, ulp_scale(rm_ref, no_mag), kOneUlp))
      << "running_mean";
  EXPECT_TRUE(close_to(to_host<float>(rv_d, s), rv_ref, ulp_scale(rv_ref, no_mag), kOneUlp)) << "running_var";

  std::vector<double> y_scale(size);
  for (std::size_t i = 0; i < size; ++i) {
    const std::size_t ch = channel_of(i);
    const double shift = xd[ch * static_cast<std::size_t>(shape.h * shape.w)];  // x[0, ch, 0, 0]
    const double sc = std::fabs((affine ? gd[ch] : 1.0) * invstd_ref[ch]);
    y_scale[i] = (std::fabs(xd[i] - shift) + std::fabs(mean_ref[ch] - shift)) * sc + std::fabs(y_ref[i]);
  }
  const auto y = to_host<float>(y_d, s);
  EXPECT_TRUE(close_to(y, y_ref, y_scale, 8 * kU)) << "y";

  // Deterministic: the same call again gives the same bits.
  Tensor y2_d = poisoned<float>(static_cast<std::int64_t>(size), s);
  Tensor mean2_d = poisoned<float>(shape.c, s), invstd2_d = poisoned<float>(shape.c, s);
  cuda::batchnorm2d_forward_training(s, shape, x_d.data<float>(), gamma_ptr(g_d),
                                     affine ? b_d.data<float>() : nullptr, y2_d.data<float>(),
                                     mean2_d.data<float>(), invstd2_d.data<float>(), nullptr, nullptr);
  EXPECT_TRUE(bitwise_equal(to_host<float>(y2_d, s), y));
  EXPECT_TRUE(bitwise_equal(to_host<float>(mean2_d, s), mean));
  EXPECT_TRUE(bitwise_equal(to_host<float>(invstd2_d, s), invstd));

  // Backward from the saved statistics (the GPU's, fed to the reference too: both see the same floats).
  const auto dyd = widen(dy), saved_mean = widen(mean), saved_invstd = widen(invstd);
  std::vector<double> dx_ref(size), dgamma_ref(c), dbeta_ref(c);
  cpu::batchnorm2d_backward_training(
      shape, xd.data(), affine ? gd.data() : nullptr, saved_mean.data(), saved_invstd.data(), dyd.data(),
      dx_ref.data(), affine ? dgamma_ref.data() : nullptr, affine ? dbeta_ref.data() : nullptr);
  Tensor dy_d = to_device(dy, s), dx_d = poisoned<float>(static_cast<std::int64_t>(size), s);
  Tensor dgamma_d = poisoned<float>(shape.c, s), dbeta_d = poisoned<float>(shape.c, s);
  cuda::batchnorm2d_backward_training(s, shape, x_d.data<float>(), gamma_ptr(g_d), mean_d.data<float>(),
                                      invstd_d.data<float>(), dy_d.data<float>(), dx_d.data<float>(),
                                      affine ? dgamma_d.data<float>() : nullptr,
                                      affine ? dbeta_d.data<float>() : nullptr);
  // Magnitudes: sum |dy| and sum |dy xhat| per channel; the dx bound of the header.
  const double m = static_cast<double>(shape.count());
  std::vector<double> sum_abs_dy(c, 0.0), sum_abs_dy_xhat(c, 0.0), dx_scale(size);
  for (std::size_t i = 0; i < size; ++i) {
    const std::size_t ch = channel_of(i);
    sum_abs_dy[ch] += std::fabs(dyd[i]);
    sum_abs_dy_xhat[ch] += std::fabs(dyd[i] * (xd[i] - saved_mean[ch]) * saved_invstd[ch]);
  }
  for (std::size_t i = 0; i < size; ++i) {
    const std::size_t ch = channel_of(i);
    const double xhat = (xd[i] - saved_mean[ch]) * saved_invstd[ch];
    // dgamma_ref/dbeta_ref are only filled when affine; recompute the channel sums for the plain case.
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    if (affine) {
      sum_dy = dbeta_ref[ch];
      sum_dy_xhat = dgamma_ref[ch];
    } else {
      sum_dy = sum_abs_dy[ch];  // an upper bound serves the magnitude equally well
      sum_dy_xhat = sum_abs_dy_xhat[ch];
    }
    dx_scale[i] = std::fabs((affine ? gd[ch] : 1.0) * saved_invstd[ch]) *
                  (std::fabs(dyd[i]) + std::fabs(sum_dy / m) + std::fabs(xhat * sum_dy_xhat / m));
  }
  EXPECT_TRUE(close_to(to_host<float>(dx_d, s), dx_ref, dx_scale, 16 * kU)) << "dx";
  if (affine) {
    EXPECT_TRUE(
        close_to(to_host<float>(dgamma_d, s), dgamma_ref, ulp_scale(dgamma_ref, sum_abs_dy_xhat), kOneUlp))
        << "dgamma";
    EXPECT_TRUE(close_to(to_host<float>(dbeta_d, s), dbeta_ref, ulp_scale(dbeta_ref, sum_abs_dy), kOneUlp))
        << "dbeta";
  }
  Tensor dx2_d = poisoned<float>(static_cast<std::int64_t>(size), s);
  cuda::batchnorm2d_backward_training(s, shape, x_d.data<float>(), gamma_ptr(g_d), mean_d.data<float>(),
                                      invstd_d.data<float>(), dy_d.data<float>(), dx2_d.data<float>(),
                                      nullptr, nullptr);
  EXPECT_TRUE(bitwise_equal(to_host<float>(dx2_d, s), to_host<float>(dx_d, s))) << "dx run to run";
}

TEST_P(CudaBatchNorm2d, EvalForwardAndBackwardMatchTheReference) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const auto c = static_cast<std::size_t>(shape.c);
  const bool affine = !gamma.empty();
  const auto xd = widen(x), gd = widen(gamma), bd = widen(beta), rm = widen(running_mean),
             rv = widen(running_var);
  const auto dyd = widen(dy);
  std::vector<double> y_ref(size), dx_ref(size), dgamma_ref(c), dbeta_ref(c);
  cpu::batchnorm2d_forward_eval(shape, xd.data(), affine ? gd.data() : nullptr, affine ? bd.data() : nullptr,
                                rm.data(), rv.data(), y_ref.data());
  cpu::batchnorm2d_backward_eval(shape, xd.data(), affine ? gd.data() : nullptr, rm.data(), rv.data(),
                                 dyd.data(), dx_ref.data(), affine ? dgamma_ref.data() : nullptr,
                                 affine ? dbeta_ref.data() : nullptr);

  Tensor x_d = to_device(x, s), dy_d = to_device(dy, s), g_d, b_d;
  if (affine) {
    g_d = to_device(gamma, s);
    b_d = to_device(beta, s);
  }
  Tensor rm_d = to_device(running_mean, s), rv_d = to_device(running_var, s);
  Tensor y_d = poisoned<float>(static_cast<std::int64_t>(size), s),
         dx_d = poisoned<float>(static_cast<std::int64_t>(size), s);
  Tensor dgamma_d = poisoned<float>(shape.c, s), dbeta_d = poisoned<float>(shape.c, s);
  cuda::batchnorm2d_forward_eval(s, shape, x_d.data<float>(), gamma_ptr(g_d),
                                 affine ? b_d.data<float>() : nullptr, rm_d.data<float>(), rv_d.data<float>(),
                                 y_d.data<float>());
  cuda::batchnorm2d_backward_eval(s, shape, x_d.data<float>(), gamma_ptr(g_d), rm_d.data<float>(),
                                  rv_d.data<float>(), dy_d.data<float>(), dx_d.data<float>(),
                                  affine ? dgamma_d.data<float>() : nullptr,
                                  affine ? dbeta_d.data<float>() : nullptr);

  std::vector<double> y_scale(size), sum_abs_dy(c, 0.0), sum_abs_dy_xhat(c, 0.0);
  for (std::size_t i = 0; i < size; ++i) {
    const std::size_t ch = channel_of(i);
    const double invstd = 1.0 / std::sqrt(rv[ch] + cpu::kBatchNormDefaultEps);
    const double sc = std::fabs((affine ? gd[ch] : 1.0) * invstd);
    // fma(x - running_mean, scale, beta): ~3 roundings of |x - mean| |scale|, one of y (8u: margin 2).
    y_scale[i] = std::fabs(xd[i] - rm[ch]) * sc + std::fabs(y_ref[i]);
    sum_abs_dy[ch] += std::fabs(dyd[i]);
    sum_abs_dy_xhat[ch] += std::fabs(dyd[i] * (xd[i] - rm[ch]) * invstd);
  }
  EXPECT_TRUE(close_to(to_host<float>(y_d, s), y_ref, y_scale, 8 * kU)) << "y";
  // dx = float(gamma invstd) * dy: two roundings of |dx|.
  EXPECT_TRUE(close_to(to_host<float>(dx_d, s), dx_ref, abs_of(dx_ref), 4 * kU)) << "dx";
  if (affine) {
    EXPECT_TRUE(
        close_to(to_host<float>(dgamma_d, s), dgamma_ref, ulp_scale(dgamma_ref, sum_abs_dy_xhat), kOneUlp))
        << "dgamma";
    EXPECT_TRUE(close_to(to_host<float>(dbeta_d, s), dbeta_ref, ulp_scale(dbeta_ref, sum_abs_dy), kOneUlp))
        << "dbeta";
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaBatchNorm2d,
                         ::testing::Values(BnCase{3, 5, 7, 9, 0.0f, true},    // the odd test shape
                                           BnCase{3, 5, 7, 9, 100.0f, true},  // |mean| / std ~ 170
                                           BnCase{4, 3, 33, 35, 0.0f,
                                                  true},                     // M = 4620: two reduction chunks
                                           BnCase{2, 4, 3, 5, 0.5f, false},  // affine = False
                                           // M = 65 * 4096 = 266240 per channel: the most chunks (64,
                                           // kernels/cuda/channel_reduce.cuh), each longer than 4096
                                           BnCase{65, 3, 64, 64, 1.0f, true}),
                         case_name);

TEST(CudaBatchNorm2dRules, TrainingRejectsOneValuePerChannel) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const BatchNorm2dShape shape{.n = 1, .c = 2, .h = 1, .w = 1};
  Tensor buf = poisoned<float>(16, stream.get());
  float* p = buf.data<float>();
  EXPECT_THROW(cuda::batchnorm2d_forward_training(stream.get(), shape, p, nullptr, nullptr, p + 2, p + 4,
                                                  p + 6, nullptr, nullptr),
               Error);
}

}  // namespace
}  // namespace engine
