// The fused softmax cross-entropy against the CPU reference (float64): the loss, the gradient, the
// device-side loss and correct-count accumulations, the argmax rule, and a bad label.
//
// Tolerances. A row's loss is logsumexp(z) - (1 - eps) z[label] - (eps/k) sum z, computed in float from k
// exponentials and sums (expf/logf are within 2 ulp), so its error is at most about (k + 8) u * m_row, where
// m_row = |max z| + log k + |z[label]| + sum |z| / k bounds every intermediate (u = 2^-24). The batch mean's
// error is the mean of these (the row losses are added in double). A gradient entry (softmax_j - q_j) dloss/n
// inherits the logsumexp error as a relative error of softmax_j, plus a few roundings.
#include <algorithm>
#include <cmath>
#include <limits>
#include <ostream>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/stream.h"
#include "kernels/cpu/softmax_cross_entropy.h"
#include "kernels/cuda/softmax_cross_entropy.h"
#include "tests/common/gpu.h"
#include "tests/gpu/kernel_test_util.h"

namespace engine {
namespace {

using namespace cuda_test;

std::vector<std::int32_t> random_labels(int n, int k, std::uint64_t seed) {
  std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    labels[static_cast<std::size_t>(i)] = std::min(
        k - 1,
        static_cast<int>(philox_uniform(seed, 3, static_cast<std::uint64_t>(i)) * static_cast<float>(k)));
  }
  return labels;
}

struct XentCase {
  int n, k;
  double label_smoothing;
};

// Readable parameter names in gtest/ctest output.
void PrintTo(const XentCase& p, std::ostream* os) {
  *os << fmt::format("n {} k {} label_smoothing {}", p.n, p.k, p.label_smoothing);
}

class CudaSoftmaxCrossEntropy : public ::testing::TestWithParam<XentCase> {};

TEST_P(CudaSoftmaxCrossEntropy, LossGradientAndMetricsMatchTheReference) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const auto [n, k, eps] = GetParam();
  const auto size = static_cast<std::size_t>(n) * static_cast<std::size_t>(k);
  const auto logits = nonzero_floats(size, 31, 0.1f, 4.0f);
  const auto labels = random_labels(n, k, 32);
  const double dloss = 0.75;
  const auto z = widen(logits);
  const double loss_ref = cpu::softmax_cross_entropy_forward(z.data(), labels.data(), n, k, eps);
  std::vector<double> grad_ref(size);
  cpu::softmax_cross_entropy_backward(z.data(), labels.data(), n, k, eps, grad_ref.data(), dloss);
  const std::int64_t correct_ref = cpu::count_correct(logits.data(), labels.data(), n, k);

  // Bounds from the header comment.
  const double u = kFloatUnitRoundoff;
  double loss_bound = 0.0;
  std::vector<double> grad_scale(size);
  for (int i = 0; i < n; ++i) {
    const double* row = z.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(k);
    double max_z = row[0], sum_abs = 0.0;
    for (int j = 0; j < k; ++j) {
      max_z = std::max(max_z, row[j]);
      sum_abs += std::fabs(row[j]);
    }
    const double m_row = std::fabs(max_z) + std::log(static_cast<double>(k)) +
                         std::fabs(row[labels[static_cast<std::size_t>(i)]]) + sum_abs / k;
    const double row_err = (k + 8) * u * m_row;
    loss_bound += row_err / n;
    for (int j = 0; j < k; ++j) {
      const std::size_t e =
          static_cast<std::size_t>(i) * static_cast<std::size_t>(k) + static_cast<std::size_t>(j);
      // |softmax - q| dloss/n with softmax off by row_err + 4u relative, q by 2u.
      // softmax_j <= |softmax_j - q_j| + q_j <= |grad_ref| n / dloss + 1.
      const double softmax_bound = std::fabs(grad_ref[e]) * n / dloss + 1.0;
      grad_scale[e] = ((row_err + 4 * u) * softmax_bound + 4 * u) * dloss / n;
    }
  }

  Tensor z_d = to_device(logits, s), labels_d = to_device(labels, s);
  Tensor loss_d = poisoned<float>(1, s), grad_d = poisoned<float>(static_cast<std::int64_t>(size), s);
  Tensor loss_sum_d = Tensor::zeros({1}, DType::F64, Device::cuda(0), s);
  Tensor correct64_d = Tensor::empty({1}, DType::F64, Device::cuda(0), s);  // int64 storage (same size)
  correct64_d.fill_bytes(0, s);
  auto* correct_ptr = static_cast<std::int64_t*>(correct64_d.raw_data());
  for (int call = 0; call < 2; ++call) {
    cuda::softmax_cross_entropy(s, z_d.data<float>(), labels_d.data<std::int32_t>(), n, k, eps,
                                loss_d.data<float>(), grad_d.data<float>(), loss_sum_d.data<double>(),
                                correct_ptr, dloss);
  }
  const auto loss = to_host<float>(loss_d, s);
  EXPECT_NEAR(static_cast<double>(loss[0]), loss_ref, loss_bound + u * std::fabs(loss_ref));
  EXPECT_TRUE(close_to(to_host<float>(grad_d, s), grad_ref, grad_scale, 1.0));
  // Two calls accumulated: loss_sum = 2 * n * mean loss, correct = 2 * count.
  const auto loss_sum = to_host<double>(loss_sum_d, s);
  EXPECT_NEAR(loss_sum[0], 2.0 * n * loss_ref, 2.0 * n * (loss_bound + u * std::fabs(loss_ref)));
  std::int64_t correct = -1;
  CUDA_CHECK(cudaMemcpy(&correct, correct_ptr, sizeof(correct), cudaMemcpyDeviceToHost));
  EXPECT_EQ(correct, 2 * correct_ref);

  // Deterministic: another run gives the same bits (no atomics; fixed reduction order).
  Tensor loss2_d = poisoned<float>(1, s), grad2_d = poisoned<float>(static_cast<std::int64_t>(size), s);
  cuda::softmax_cross_entropy(s, z_d.data<float>(), labels_d.data<std::int32_t>(), n, k, eps,
                              loss2_d.data<float>(), grad2_d.data<float>(), nullptr, nullptr, dloss);
  EXPECT_TRUE(bitwise_equal(to_host<float>(loss2_d, s), loss));
  EXPECT_TRUE(bitwise_equal(to_host<float>(grad2_d, s), to_host<float>(grad_d, s)));

  // Evaluation passes no gradient (nullptr): the same loss bits, and the metrics still accumulate.
  Tensor loss3_d = poisoned<float>(1, s), correct3_d = Tensor::empty({1}, DType::F64, Device::cuda(0), s);
  correct3_d.fill_bytes(0, s);
  auto* correct3_ptr = static_cast<std::int64_t*>(correct3_d.raw_data());
  cuda::softmax_cross_entropy(s, z_d.data<float>(), labels_d.data<std::int32_t>(), n, k, eps,
                              loss3_d.data<float>(), nullptr, nullptr, correct3_ptr, dloss);
  EXPECT_TRUE(bitwise_equal(to_host<float>(loss3_d, s), loss));
  std::int64_t correct3 = -1;
  CUDA_CHECK(cudaMemcpy(&correct3, correct3_ptr, sizeof(correct3), cudaMemcpyDeviceToHost));
  EXPECT_EQ(correct3, correct_ref);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaSoftmaxCrossEntropy,
                         ::testing::Values(XentCase{3, 10, 0.0}, XentCase{37, 10, 0.1}, XentCase{5, 33, 0.0},
                                           XentCase{129, 100, 0.2}, XentCase{2, 1000, 0.1},
                                           // More rows than one grid covers (65536 blocks x 8 warps =
                                           // 524288): the grid-stride loop wraps.
                                           XentCase{600001, 10, 0.1}),
                         [](const ::testing::TestParamInfo<XentCase>& param) {
                           const XentCase& p = param.param;
                           return fmt::format("n{}_k{}_smoothing{}", p.n, p.k,
                                              static_cast<int>(p.label_smoothing * 100));
                         });

TEST(CudaSoftmaxCrossEntropyRules, ArgmaxFollowsTheReferenceOnTiesAndNan) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const int k = 40;  // more than a warp: candidates from several lanes are compared
  std::vector<std::vector<float>> rows = {
      std::vector<float>(k, 1.0f),   // all tied: class 0
      std::vector<float>(k, -inf),   // all -inf: class 0
      std::vector<float>(k, 0.5f),   // NaNs at 35 and 3: the first (3)
      std::vector<float>(k, 0.25f),  // ties at 2.0 in 33 and 1: class 1
  };
  rows[2][35] = nan;
  rows[2][3] = nan;
  rows[3][33] = 2.0f;
  rows[3][1] = 2.0f;
  std::vector<float> logits;
  for (const auto& r : rows) logits.insert(logits.end(), r.begin(), r.end());
  const int n = static_cast<int>(rows.size());
  std::vector<std::int32_t> ref(static_cast<std::size_t>(n));
  cpu::predict_classes(logits.data(), n, k, ref.data());
  ASSERT_EQ(ref, (std::vector<std::int32_t>{0, 0, 3, 1}));
  Tensor z_d = to_device(logits, s), pred_d = poisoned<std::int32_t>(n, s);
  cuda::predict_classes(s, z_d.data<float>(), n, k, pred_d.data<std::int32_t>());
  EXPECT_EQ(to_host<std::int32_t>(pred_d, s), ref);
}

TEST(CudaSoftmaxCrossEntropyRules, ALabelOutOfRangeGivesNanAndNeverCounts) {
  SKIP_WITHOUT_GPU();
  Stream stream(0);
  const cudaStream_t s = stream.get();
  const int n = 3, k = 5;
  const auto logits = nonzero_floats(n * k, 41);
  const std::vector<std::int32_t> labels = {0, k, -1};
  Tensor z_d = to_device(logits, s), labels_d = to_device(labels, s);
  Tensor loss_d = poisoned<float>(1, s), grad_d = poisoned<float>(n * k, s);
  Tensor correct_d = Tensor::empty({1}, DType::F64, Device::cuda(0), s);
  correct_d.fill_bytes(0, s);
  auto* correct_ptr = static_cast<std::int64_t*>(correct_d.raw_data());
  cuda::softmax_cross_entropy(s, z_d.data<float>(), labels_d.data<std::int32_t>(), n, k, 0.0,
                              loss_d.data<float>(), grad_d.data<float>(), nullptr, correct_ptr);
  EXPECT_TRUE(std::isnan(to_host<float>(loss_d, s)[0]));
  const auto grad = to_host<float>(grad_d, s);
  for (int j = 0; j < k; ++j) {
    EXPECT_FALSE(std::isnan(grad[static_cast<std::size_t>(j)])) << "row 0 has a valid label";
    EXPECT_TRUE(std::isnan(grad[static_cast<std::size_t>(k + j)]));
    EXPECT_TRUE(std::isnan(grad[static_cast<std::size_t>(2 * k + j)]));
  }
  std::int64_t correct = -1;
  CUDA_CHECK(cudaMemcpy(&correct, correct_ptr, sizeof(correct), cudaMemcpyDeviceToHost));
  EXPECT_EQ(correct, cpu::count_correct(logits.data(), std::vector<std::int32_t>{0, -7, -7}.data(), n, k));
}

}  // namespace
}  // namespace engine
