// SyncBatchNorm's device path (kernels/cuda/sync_batchnorm.h through dist::sync_batchnorm_*) against the
// float64 reference, in a world of one (dist::make_single_process_group: the collectives are identities, so
// the result is plain batch norm and the reference is cpu::batchnorm2d_*). The stages, the Chan combination
// and the global backward coefficients all run; the multi-rank combination is checked on two ranks sharing
// one GPU by tests/gpu/cnn_train_ddp_gpu_test.cpp. Shapes: odd sizes, a large offset (|mean| >> std), several
// reduction chunks. Tolerances as tests/gpu/cuda_batchnorm2d_test.cpp derives them: statistics and the
// running ones within one float ulp of the double values, y within 8u of its terms' magnitude, dx within 16u.
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/stream.h"
#include "dist/single_process_group.h"
#include "dist/sync_batchnorm.h"
#include "kernels/cpu/batchnorm2d.h"
#include "tests/common/gpu.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

constexpr double kU = kFloatUnitRoundoff;
constexpr double kOneUlp = 0x1p-23;

std::vector<double> plus_sliver(const std::vector<double>& ref, double sliver) {
  std::vector<double> s(ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) s[i] = std::fabs(ref[i]) + sliver;
  return s;
}

struct SyncBnCase {
  int n, c, h, w;
  float offset;
};

void PrintTo(const SyncBnCase& p, std::ostream* os) {
  *os << fmt::format("x[{},{},{},{}] offset {}", p.n, p.c, p.h, p.w, p.offset);
}

std::string case_name(const ::testing::TestParamInfo<SyncBnCase>& param) {
  const SyncBnCase& p = param.param;
  return fmt::format("{}x{}x{}x{}_offset{}", p.n, p.c, p.h, p.w, static_cast<int>(p.offset));
}

class SyncBatchNormGpu : public ::testing::TestWithParam<SyncBnCase> {};

TEST_P(SyncBatchNormGpu, WorldOfOneMatchesTheBatchNormReference) {
  SKIP_WITHOUT_GPU();
  const SyncBnCase p = GetParam();
  const BatchNorm2dShape shape{.n = p.n, .c = p.c, .h = p.h, .w = p.w};
  const std::size_t size = shape.x_size(), c = static_cast<std::size_t>(p.c);
  const int hw = p.h * p.w;
  std::vector<float> x = nonzero_floats(size, 61), dy = nonzero_floats(size, 62);
  for (float& v : x) v += p.offset;
  const std::vector<float> gamma = nonzero_floats(c, 63), beta = nonzero_floats(c, 64);
  std::vector<float> rm = nonzero_floats(c, 65), rv = nonzero_floats(c, 66, 0.5f, 1.5f);
  for (float& v : rv) v = std::fabs(v);

  const auto xd = widen(x), gd = widen(gamma), bd = widen(beta), dyd = widen(dy);
  std::vector<double> y_ref(size), mean_ref(c), invstd_ref(c), rm_ref = widen(rm), rv_ref = widen(rv);
  cpu::batchnorm2d_forward_training(shape, xd.data(), gd.data(), bd.data(), y_ref.data(), mean_ref.data(),
                                    invstd_ref.data(), rm_ref.data(), rv_ref.data());

  Stream stream(0);
  const cudaStream_t s = stream.get();
  const std::unique_ptr<dist::ProcessGroup> pg = dist::make_single_process_group();
  const Shape xs{p.n, p.c, p.h, p.w}, cs{p.c};
  const Tensor x_d = to_device(x, s).view(xs), g_d = to_device(gamma, s), b_d = to_device(beta, s);
  const Tensor rm_d = to_device(rm, s), rv_d = to_device(rv, s);
  const Tensor y_d = poisoned<float>(static_cast<std::int64_t>(size), s).view(xs);
  const Tensor mean_d = poisoned<float>(p.c, s), invstd_d = poisoned<float>(p.c, s);
  dist::sync_batchnorm_forward_training(*pg, x_d, g_d, b_d, y_d, mean_d, invstd_d, rm_d, rv_d,
                                        cpu::kBatchNormDefaultMomentum, cpu::kBatchNormDefaultEps, s);
  const auto mean = to_host<float>(mean_d, s), invstd = to_host<float>(invstd_d, s);
  EXPECT_TRUE(close_to(mean, mean_ref, plus_sliver(mean_ref, 1e-9 * std::fabs(static_cast<double>(p.offset))),
                       kOneUlp))
      << "mean";
  EXPECT_TRUE(close_to(invstd, invstd_ref, plus_sliver(invstd_ref, 0.0), kOneUlp)) << "invstd";
  EXPECT_TRUE(close_to(to_host<float>(rm_d, s), rm_ref, plus_sliver(rm_ref, 0.0), kOneUlp)) << "running_mean";
  EXPECT_TRUE(close_to(to_host<float>(rv_d, s), rv_ref, plus_sliver(rv_ref, 0.0), kOneUlp)) << "running_var";
  std::vector<double> y_scale(size);
  for (std::size_t i = 0; i < size; ++i) {
    const std::size_t ch = (i / static_cast<std::size_t>(hw)) % c;
    const double shift = xd[ch * static_cast<std::size_t>(hw)];
    y_scale[i] =
        (std::fabs(xd[i] - shift) + std::fabs(mean_ref[ch] - shift)) * std::fabs(gd[ch] * invstd_ref[ch]) +
        std::fabs(y_ref[i]);
  }
  EXPECT_TRUE(close_to(to_host<float>(y_d, s), y_ref, y_scale, 8 * kU)) << "y";

  // Backward from the GPU's saved statistics (the reference sees the same floats).
  const auto saved_mean = widen(mean), saved_invstd = widen(invstd);
  std::vector<double> dx_ref(size), dgamma_ref(c), dbeta_ref(c);
  cpu::batchnorm2d_backward_training(shape, xd.data(), gd.data(), saved_mean.data(), saved_invstd.data(),
                                     dyd.data(), dx_ref.data(), dgamma_ref.data(), dbeta_ref.data());
  const Tensor dy_d = to_device(dy, s).view(xs);
  const Tensor dx_d = poisoned<float>(static_cast<std::int64_t>(size), s).view(xs);
  const Tensor dgamma_d = poisoned<float>(p.c, s), dbeta_d = poisoned<float>(p.c, s);
  dist::sync_batchnorm_backward_training(*pg, x_d, g_d, mean_d, invstd_d, dy_d, dx_d, dgamma_d, dbeta_d, s);
  const double m = static_cast<double>(shape.count());
  std::vector<double> sum_abs_dy(c, 0.0), sum_abs_dy_xhat(c, 0.0), dx_scale(size);
  for (std::size_t i = 0; i < size; ++i) {
    const std::size_t ch = (i / static_cast<std::size_t>(hw)) % c;
    sum_abs_dy[ch] += std::fabs(dyd[i]);
    sum_abs_dy_xhat[ch] += std::fabs(dyd[i] * (xd[i] - saved_mean[ch]) * saved_invstd[ch]);
  }
  for (std::size_t i = 0; i < size; ++i) {
    const std::size_t ch = (i / static_cast<std::size_t>(hw)) % c;
    const double xhat = (xd[i] - saved_mean[ch]) * saved_invstd[ch];
    dx_scale[i] = std::fabs(gd[ch] * saved_invstd[ch]) *
                  (std::fabs(dyd[i]) + std::fabs(dbeta_ref[ch] / m) + std::fabs(xhat * dgamma_ref[ch] / m));
  }
  EXPECT_TRUE(close_to(to_host<float>(dx_d, s), dx_ref, dx_scale, 16 * kU)) << "dx";
  std::vector<double> dgamma_scale(c), dbeta_scale(c);
  for (std::size_t ch = 0; ch < c; ++ch) {
    dgamma_scale[ch] = std::fabs(dgamma_ref[ch]) + 1e-9 * sum_abs_dy_xhat[ch];
    dbeta_scale[ch] = std::fabs(dbeta_ref[ch]) + 1e-9 * sum_abs_dy[ch];
  }
  EXPECT_TRUE(close_to(to_host<float>(dgamma_d, s), dgamma_ref, dgamma_scale, kOneUlp)) << "dgamma";
  EXPECT_TRUE(close_to(to_host<float>(dbeta_d, s), dbeta_ref, dbeta_scale, kOneUlp)) << "dbeta";
}

INSTANTIATE_TEST_SUITE_P(Shapes, SyncBatchNormGpu,
                         ::testing::Values(SyncBnCase{3, 5, 7, 9, 0.0f}, SyncBnCase{2, 3, 5, 5, 1000.0f},
                                           SyncBnCase{37, 4, 33, 17, 0.0f}),
                         case_name);

}  // namespace
}  // namespace engine
