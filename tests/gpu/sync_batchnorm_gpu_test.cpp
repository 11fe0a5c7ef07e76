// SyncBatchNorm's device path (kernels/cuda/sync_batchnorm.h through dist::sync_batchnorm_*) against the
// float64 reference, in a world of one (dist::make_single_process_group: the collectives are identities, so
// the result is plain batch norm and the reference is cpu::batchnorm2d_*), in the NCHW and the NHWC layout,
// and the NHWC path against the NCHW one. The stages, the Chan combination and the global backward
// coefficients all run; the multi-rank combination is checked on two ranks sharing one GPU by
// tests/gpu/cnn_train_ddp_gpu_test.cpp (NCHW) and at the end of this file (NHWC against NCHW). Shapes: odd
// sizes, a large offset (|mean| >> std), several reduction chunks, several NHWC channel tiles (C = 70: three
// tiles of 32, the last partial). Tolerances as tests/gpu/cuda_batchnorm2d_test.cpp derives them: statistics
// and the running ones within one float ulp of the double values, y within 8u of its terms' magnitude, dx
// within 16u.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/execution_context.h"
#include "core/stream.h"
#include "dist/single_process_group.h"
#include "dist/sync_batchnorm.h"
#include "kernels/cpu/batchnorm2d.h"
#include "kernels/ops/transpose.h"
#include "tests/common/gpu.h"
#include "tests/cpu/cnn_train_test_util.h"
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

// The inputs of a case, in the NCHW order.
struct CaseData {
  BatchNorm2dShape shape;
  std::vector<float> x, dy, gamma, beta, rm, rv;
};

CaseData case_data(const SyncBnCase& p) {
  CaseData d;
  d.shape = BatchNorm2dShape{.n = p.n, .c = p.c, .h = p.h, .w = p.w};
  const std::size_t size = d.shape.x_size(), c = static_cast<std::size_t>(p.c);
  d.x = nonzero_floats(size, 61);
  d.dy = nonzero_floats(size, 62);
  for (float& v : d.x) v += p.offset;
  d.gamma = nonzero_floats(c, 63);
  d.beta = nonzero_floats(c, 64);
  d.rm = nonzero_floats(c, 65);
  d.rv = nonzero_floats(c, 66, 0.5f, 1.5f);
  for (float& v : d.rv) v = std::fabs(v);
  return d;
}

// What one forward and one backward of SyncBatchNorm on the device give, 4-d outputs in the NCHW order.
struct DeviceRun {
  std::vector<float> y, mean, invstd, rm, rv, dx, dgamma, dbeta;
};

// SyncBatchNorm in a world of one on the device with x, y, dy, dx in `layout` (NHWC: the inputs transposed
// on the device, the outputs transposed back, both by the transpose kernel that tests/gpu/cuda_nhwc_test.cpp
// checks bitwise). The backward takes `saved_mean` / `saved_invstd` when given, else the forward's.
DeviceRun run_on_device(const CaseData& d, Layout layout, const std::vector<float>* saved_mean = nullptr,
                        const std::vector<float>* saved_invstd = nullptr) {
  Stream stream(0);
  const cudaStream_t s = stream.get();
  ExecutionContext ctx;
  ctx.device = Device::cuda(0);
  ctx.stream = s;
  const std::unique_ptr<dist::ProcessGroup> pg = dist::make_single_process_group();
  const BatchNorm2dShape& b = d.shape;
  const Shape xs{b.n, b.c, b.h, b.w};
  const auto in_layout = [&](const std::vector<float>& v) {
    return ops::to_layout(ctx, to_device(v, s).view(xs), layout);
  };
  const auto poisoned_4d = [&] {
    Tensor t = Tensor::empty(xs, DType::F32, Device::cuda(0), s, layout);
    t.fill_bytes(0xFF, s);
    return t;
  };
  const auto nchw_values = [&](const Tensor& t) {
    EXPECT_EQ(t.layout(), layout);
    return to_host<float>(ops::to_layout(ctx, t, Layout::NCHW), s);
  };
  const Tensor x_d = in_layout(d.x), dy_d = in_layout(d.dy);
  const Tensor g_d = to_device(d.gamma, s), b_d = to_device(d.beta, s);
  const Tensor rm_d = to_device(d.rm, s), rv_d = to_device(d.rv, s);
  const Tensor y_d = poisoned_4d(), dx_d = poisoned_4d();
  const Tensor mean_d = poisoned<float>(b.c, s), invstd_d = poisoned<float>(b.c, s);
  const Tensor dgamma_d = poisoned<float>(b.c, s), dbeta_d = poisoned<float>(b.c, s);
  dist::sync_batchnorm_forward_training(*pg, x_d, g_d, b_d, y_d, mean_d, invstd_d, rm_d, rv_d,
                                        cpu::kBatchNormDefaultMomentum, cpu::kBatchNormDefaultEps, s);
  DeviceRun r;
  r.y = nchw_values(y_d);
  r.mean = to_host<float>(mean_d, s);
  r.invstd = to_host<float>(invstd_d, s);
  r.rm = to_host<float>(rm_d, s);
  r.rv = to_host<float>(rv_d, s);
  const Tensor m_in = saved_mean != nullptr ? to_device(*saved_mean, s) : mean_d;
  const Tensor i_in = saved_invstd != nullptr ? to_device(*saved_invstd, s) : invstd_d;
  dist::sync_batchnorm_backward_training(*pg, x_d, g_d, m_in, i_in, dy_d, dx_d, dgamma_d, dbeta_d, s);
  r.dx = nchw_values(dx_d);
  r.dgamma = to_host<float>(dgamma_d, s);
  r.dbeta = to_host<float>(dbeta_d, s);
  return r;
}

// The scales of the case's outputs (NCHW order), from the float64 reference: y's and dx's terms, the
// statistics' slivers (see the file comment).
struct Scales {
  std::vector<double> y, dx, dgamma, dbeta;
};

Scales scales_of(const CaseData& d, const std::vector<double>& mean_ref,
                 const std::vector<double>& invstd_ref, const std::vector<double>& y_ref,
                 const std::vector<double>& saved_mean, const std::vector<double>& saved_invstd,
                 const std::vector<double>& dgamma_ref, const std::vector<double>& dbeta_ref) {
  const std::size_t size = d.shape.x_size(), c = static_cast<std::size_t>(d.shape.c);
  const auto hw = static_cast<std::size_t>(d.shape.h) * static_cast<std::size_t>(d.shape.w);
  const auto xd = widen(d.x), gd = widen(d.gamma), dyd = widen(d.dy);
  const double m = static_cast<double>(d.shape.count());
  Scales sc{std::vector<double>(size), std::vector<double>(size), std::vector<double>(c),
            std::vector<double>(c)};
  std::vector<double> sum_abs_dy(c, 0.0), sum_abs_dy_xhat(c, 0.0);
  for (std::size_t i = 0; i < size; ++i) {
    const std::size_t ch = (i / hw) % c;
    const double shift = xd[ch * hw];
    sc.y[i] =
        (std::fabs(xd[i] - shift) + std::fabs(mean_ref[ch] - shift)) * std::fabs(gd[ch] * invstd_ref[ch]) +
        std::fabs(y_ref[i]);
    const double xhat = (xd[i] - saved_mean[ch]) * saved_invstd[ch];
    sum_abs_dy[ch] += std::fabs(dyd[i]);
    sum_abs_dy_xhat[ch] += std::fabs(dyd[i] * xhat);
    sc.dx[i] = std::fabs(gd[ch] * saved_invstd[ch]) *
               (std::fabs(dyd[i]) + std::fabs(dbeta_ref[ch] / m) + std::fabs(xhat * dgamma_ref[ch] / m));
  }
  for (std::size_t ch = 0; ch < c; ++ch) {
    sc.dgamma[ch] = std::fabs(dgamma_ref[ch]) + 1e-9 * sum_abs_dy_xhat[ch];
    sc.dbeta[ch] = std::fabs(dbeta_ref[ch]) + 1e-9 * sum_abs_dy[ch];
  }
  return sc;
}

class SyncBatchNormGpu : public ::testing::TestWithParam<SyncBnCase> {};

// Both layouts against the float64 reference (cpu::batchnorm2d_*), NHWC through channel_reduce_nhwc.cuh and
// batchnorm_nhwc_parts.cuh, NCHW through channel_reduce.cuh and batchnorm_parts.cuh.
TEST_P(SyncBatchNormGpu, WorldOfOneMatchesTheBatchNormReferenceInBothLayouts) {
  SKIP_WITHOUT_GPU();
  const SyncBnCase p = GetParam();
  const CaseData d = case_data(p);
  const BatchNorm2dShape& shape = d.shape;
  const std::size_t size = shape.x_size(), c = static_cast<std::size_t>(p.c);
  const auto xd = widen(d.x), gd = widen(d.gamma), bd = widen(d.beta), dyd = widen(d.dy);
  std::vector<double> y_ref(size), mean_ref(c), invstd_ref(c), rm_ref = widen(d.rm), rv_ref = widen(d.rv);
  cpu::batchnorm2d_forward_training(shape, xd.data(), gd.data(), bd.data(), y_ref.data(), mean_ref.data(),
                                    invstd_ref.data(), rm_ref.data(), rv_ref.data());
  for (const Layout layout : {Layout::NCHW, Layout::NHWC}) {
    const std::string in = fmt::format(" ({})", layout_name(layout));
    const DeviceRun r = run_on_device(d, layout);
    EXPECT_TRUE(close_to(r.mean, mean_ref,
                         plus_sliver(mean_ref, 1e-9 * std::fabs(static_cast<double>(p.offset))), kOneUlp))
        << "mean" << in;
    EXPECT_TRUE(close_to(r.invstd, invstd_ref, plus_sliver(invstd_ref, 0.0), kOneUlp)) << "invstd" << in;
    EXPECT_TRUE(close_to(r.rm, rm_ref, plus_sliver(rm_ref, 0.0), kOneUlp)) << "running_mean" << in;
    EXPECT_TRUE(close_to(r.rv, rv_ref, plus_sliver(rv_ref, 0.0), kOneUlp)) << "running_var" << in;

    // Backward from this run's saved statistics (the reference sees the same floats).
    const auto saved_mean = widen(r.mean), saved_invstd = widen(r.invstd);
    std::vector<double> dx_ref(size), dgamma_ref(c), dbeta_ref(c);
    cpu::batchnorm2d_backward_training(shape, xd.data(), gd.data(), saved_mean.data(), saved_invstd.data(),
                                       dyd.data(), dx_ref.data(), dgamma_ref.data(), dbeta_ref.data());
    const Scales sc =
        scales_of(d, mean_ref, invstd_ref, y_ref, saved_mean, saved_invstd, dgamma_ref, dbeta_ref);
    EXPECT_TRUE(close_to(r.y, y_ref, sc.y, 8 * kU)) << "y" << in;
    EXPECT_TRUE(close_to(r.dx, dx_ref, sc.dx, 16 * kU)) << "dx" << in;
    EXPECT_TRUE(close_to(r.dgamma, dgamma_ref, sc.dgamma, kOneUlp)) << "dgamma" << in;
    EXPECT_TRUE(close_to(r.dbeta, dbeta_ref, sc.dbeta, kOneUlp)) << "dbeta" << in;
  }
}

// NHWC against NCHW on the device, the backward of both from the NCHW run's saved statistics. The two
// layouts run the same float arithmetic on the same values (the shift K = x[0, c, 0, 0] is the same element);
// only the order of the double additions in the reductions differs (other chunks and tiles), which moves a
// double sum by at most M * 2^-53 of its terms' magnitude, ~1e-12 here. So:
//   mean, invstd, running_mean, running_var, dgamma, dbeta: one double rounded once to float in each
//     layout, doubles 1e-12 apart: the same float or a neighbour, 1 ulp (2^-23 relative) of the value plus
//     the reference test's slivers (a mean or a sum near zero after cancellation);
//   y = fmaf((x - K) - (mean - K), scale, beta): mean - K and scale may differ by 1 ulp each, the two
//     roundings after them by u each: within 8u of y's terms (the y scale of the reference test);
//   dx = scale * (dy - mean_dy - xhat * mean_dy_xhat) with mean, invstd, scale the same floats and mean_dy,
//     mean_dy_xhat 1 ulp apart, the three roundings by u each: within 16u of dx's terms.
TEST_P(SyncBatchNormGpu, NhwcMatchesTheNchwPath) {
  SKIP_WITHOUT_GPU();
  const SyncBnCase p = GetParam();
  const CaseData d = case_data(p);
  const std::size_t size = d.shape.x_size(), c = static_cast<std::size_t>(p.c);
  const DeviceRun nchw = run_on_device(d, Layout::NCHW);
  const DeviceRun nhwc = run_on_device(d, Layout::NHWC, &nchw.mean, &nchw.invstd);
  const auto wide = [](const std::vector<float>& v) { return widen(v); };
  // The reference supplies the scales only (terms' magnitudes); the values compared are the two runs'.
  const auto xd = widen(d.x), gd = widen(d.gamma), bd = widen(d.beta), dyd = widen(d.dy);
  std::vector<double> y_ref(size), mean_ref(c), invstd_ref(c), rm_ref = widen(d.rm), rv_ref = widen(d.rv);
  cpu::batchnorm2d_forward_training(d.shape, xd.data(), gd.data(), bd.data(), y_ref.data(), mean_ref.data(),
                                    invstd_ref.data(), rm_ref.data(), rv_ref.data());
  const auto saved_mean = widen(nchw.mean), saved_invstd = widen(nchw.invstd);
  std::vector<double> dx_ref(size), dgamma_ref(c), dbeta_ref(c);
  cpu::batchnorm2d_backward_training(d.shape, xd.data(), gd.data(), saved_mean.data(), saved_invstd.data(),
                                     dyd.data(), dx_ref.data(), dgamma_ref.data(), dbeta_ref.data());
  const Scales sc =
      scales_of(d, mean_ref, invstd_ref, y_ref, saved_mean, saved_invstd, dgamma_ref, dbeta_ref);
  const double mean_sliver = 1e-9 * std::fabs(static_cast<double>(p.offset));
  EXPECT_TRUE(close_to(nhwc.mean, wide(nchw.mean), plus_sliver(wide(nchw.mean), mean_sliver), kOneUlp))
      << "mean";
  EXPECT_TRUE(close_to(nhwc.invstd, wide(nchw.invstd), plus_sliver(wide(nchw.invstd), 0.0), kOneUlp))
      << "invstd";
  EXPECT_TRUE(close_to(nhwc.rm, wide(nchw.rm), plus_sliver(wide(nchw.rm), mean_sliver), kOneUlp))
      << "running_mean";
  EXPECT_TRUE(close_to(nhwc.rv, wide(nchw.rv), plus_sliver(wide(nchw.rv), 0.0), kOneUlp)) << "running_var";
  EXPECT_TRUE(close_to(nhwc.y, wide(nchw.y), sc.y, 8 * kU)) << "y";
  EXPECT_TRUE(close_to(nhwc.dx, wide(nchw.dx), sc.dx, 16 * kU)) << "dx";
  EXPECT_TRUE(close_to(nhwc.dgamma, wide(nchw.dgamma), sc.dgamma, kOneUlp)) << "dgamma";
  EXPECT_TRUE(close_to(nhwc.dbeta, wide(nchw.dbeta), sc.dbeta, kOneUlp)) << "dbeta";
}

INSTANTIATE_TEST_SUITE_P(Shapes, SyncBatchNormGpu,
                         ::testing::Values(SyncBnCase{3, 5, 7, 9, 0.0f}, SyncBnCase{2, 3, 5, 5, 1000.0f},
                                           SyncBnCase{37, 4, 33, 17, 0.0f}, SyncBnCase{4, 70, 33, 33, 0.0f}),
                         case_name);

// cnn_train with two gloo ranks sharing GPU 0 and --sync-bn: the NHWC run takes the NCHW run's step
// (resnet18, one SGD step, float32). The bound is that of tests/gpu/cnn_train_ddp_gpu_test.cpp, 1e-4 of each
// tensor's largest value: cuDNN's NHWC and NCHW algorithms differ and carry about 1e-5 relative error of
// their own, SyncBatchNorm's two layouts differ by float32 ulps (NhwcMatchesTheNchwPath above). As there, a
// ReLU input within those roundings of 0 flips between the runs and breaks the bound (the first GPU run:
// up to 2e-2 of the bn biases' largest values); a failure prints where each difference sits and the largest
// one elsewhere, which tells a flip (one channel far above the rest) from a layout error (everywhere).
TEST(SyncBatchNormGpuDdp, TwoGlooRanksOnOneGpuInNhwcTakeTheNchwStep) {
  SKIP_WITHOUT_GPU();
  namespace t = apps::testing;
  const std::string root = t::tiny_folder_dataset("gpu_sync_bn_nhwc");
  const std::string nchw = t::temp_dir("gpu_sync_bn_nchw_out"), nhwc = t::temp_dir("gpu_sync_bn_nhwc_out");
  const std::vector<std::string> ddp = {"--gpus",        "0,0", "--backend",    "gloo", "--sync-bn",
                                        "--limit-train", "16",  "--limit-test", "6"};
  ::setenv("ENGINE_PRINT_CONV_PLANS", "1", 1);  // cuDNN's choices, printed below when the comparison fails
  const t::RunResult a = t::run_train(t::with_args(t::tiny_folder_args(root, nchw, "resnet18", 8, 1), ddp));
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const t::RunResult b = t::run_train(t::with_args(t::tiny_folder_args(root, nhwc, "resnet18", 8, 1),
                                                   t::with_args(ddp, {"--layout", "nhwc"})));
  ::unsetenv("ENGINE_PRINT_CONV_PLANS");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_NE(b.output.find("2 rank(s) through gloo"), std::string::npos) << b.output;
  const std::vector<t::TensorDifference> diffs =
      t::checkpoint_differences(nchw + "/epoch1.safetensors", nhwc + "/epoch1.safetensors");
  for (const t::TensorDifference& d : diffs) {
    EXPECT_LE(d.worst, 1e-4 * d.scale) << t::describe(d);
  }
  EXPECT_GT(diffs.size(), 180u) << "resnet18's weights, BatchNorm buffers and momentum buffers";
  if (HasFailure()) {
    std::printf("NCHW:\n%sNHWC:\n%s", t::lines_with(a.output, "conv plan").c_str(),
                t::lines_with(b.output, "conv plan").c_str());
  }
}

}  // namespace
}  // namespace engine
