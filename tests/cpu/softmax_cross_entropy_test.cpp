// Softmax cross-entropy reference: gradient checks w.r.t. the logits with and without label smoothing,
// hand-computed values, stability at large logits, the dloss scale, bad labels, argmax helpers, float vs
// double.

#include "kernels/cpu/softmax_cross_entropy.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/philox.h"
#include "tests/common/float_checks.h"
#include "tests/common/gradcheck.h"

namespace engine::cpu {
namespace {

constexpr int kN = 5, kK = 7;

std::vector<std::int32_t> random_labels(int n, int k, std::uint64_t seed) {
  std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) labels[i] = static_cast<std::int32_t>(philox_word(seed, 0, i) % k);
  return labels;
}

void check_gradients(double eps) {
  std::vector<double> z = testing::random_values(kN * kK, 71, -3.0, 3.0);
  const std::vector<std::int32_t> labels = random_labels(kN, kK, 72);
  testing::GradCheckCase c{
      {{"logits", &z}},
      [&](std::uint64_t) {
        return std::vector<double>{softmax_cross_entropy_forward(z.data(), labels.data(), kN, kK, eps)};
      },
      [&](const std::vector<double>& dy, std::uint64_t) {
        std::vector<double> dz(z.size(), 123.0);
        softmax_cross_entropy_backward(z.data(), labels.data(), kN, kK, eps, dz.data(), /*dloss=*/dy[0]);
        return std::vector<std::vector<double>>{dz};
      }};
  EXPECT_GRADIENTS_MATCH(c);
}

TEST(SoftmaxCrossEntropyReference, GradientCheck) { check_gradients(0.0); }
TEST(SoftmaxCrossEntropyReference, GradientCheckLabelSmoothing) { check_gradients(0.1); }

TEST(SoftmaxCrossEntropyReference, KnownValues) {
  // logits [1, 2, 3], label 2: loss = log(e + e^2 + e^3) - 3 = 3.40760596444438 - 3 = 0.40760596444438.
  // softmax = [e, e^2, e^3] / (e + e^2 + e^3) = [0.0900305731703805, 0.244728471054798, 0.665240955774822],
  // dlogits = softmax - onehot(2) = [0.0900305731703805, 0.244728471054798, -0.334759044225178] (n = 1).
  const std::vector<double> z = {1, 2, 3};
  const std::int32_t label = 2;
  EXPECT_NEAR(softmax_cross_entropy_forward(z.data(), &label, 1, 3), 0.40760596444438013, 1e-15);
  std::vector<double> dz(3);
  softmax_cross_entropy_backward(z.data(), &label, 1, 3, 0.0, dz.data());
  EXPECT_NEAR(dz[0], 0.09003057317038048, 1e-15);
  EXPECT_NEAR(dz[1], 0.2447284710547977, 1e-15);
  EXPECT_NEAR(dz[2], 0.665240955774822 - 1.0, 1e-15);
}

TEST(SoftmaxCrossEntropyReference, KnownValuesLabelSmoothing) {
  // eps = 0.1, k = 3: q = [0.1/3, 0.1/3, 0.9 + 0.1/3]. loss = lse - 0.9 * z_label - (0.1/3) * sum(z)
  //   = 3.40760596444438 - 2.7 - 0.2 = 0.50760596444438.
  // dlogits = softmax - q = [0.0900305731703805 - 0.0333333333333333, 0.244728471054798 - 0.0333333333333333,
  //                          0.665240955774822 - 0.933333333333333] = [0.0566972398, 0.2113951377,
  //                          -0.2680923776].
  const std::vector<double> z = {1, 2, 3};
  const std::int32_t label = 2;
  EXPECT_NEAR(softmax_cross_entropy_forward(z.data(), &label, 1, 3, 0.1), 0.50760596444438, 1e-14);
  std::vector<double> dz(3);
  softmax_cross_entropy_backward(z.data(), &label, 1, 3, 0.1, dz.data());
  EXPECT_NEAR(dz[0], 0.05669723983704714, 1e-15);
  EXPECT_NEAR(dz[1], 0.21139513772146437, 1e-15);
  EXPECT_NEAR(dz[2], -0.26809237755851134, 1e-15);
}

TEST(SoftmaxCrossEntropyReference, KnownValuesBatchMeanAndDlossScale) {
  // Two rows: [1, 2, 3] label 2 (loss 0.40760596444438) and [3, 2, 1] label 0 (the same loss by symmetry):
  // mean 0.40760596444438. Backward with dloss = 4: each row's (softmax - onehot) times 4 / n = 2.
  const std::vector<double> z = {1, 2, 3, 3, 2, 1};
  const std::vector<std::int32_t> labels = {2, 0};
  EXPECT_NEAR(softmax_cross_entropy_forward(z.data(), labels.data(), 2, 3), 0.40760596444438013, 1e-15);
  std::vector<double> dz(6);
  softmax_cross_entropy_backward(z.data(), labels.data(), 2, 3, 0.0, dz.data(), /*dloss=*/4.0);
  EXPECT_NEAR(dz[0], 2 * 0.09003057317038048, 1e-14);
  EXPECT_NEAR(dz[2], 2 * (0.665240955774822 - 1.0), 1e-14);
  EXPECT_NEAR(dz[3], 2 * (0.665240955774822 - 1.0), 1e-14);
  EXPECT_NEAR(dz[5], 2 * 0.09003057317038048, 1e-14);
}

TEST(SoftmaxCrossEntropyReference, KnownValuesStableAtLargeLogits) {
  // Shifting every logit by 1000 changes nothing (exp(1003) would overflow a double without the max shift).
  const std::vector<double> z = {1001, 1002, 1003};
  const std::int32_t label = 2;
  EXPECT_NEAR(softmax_cross_entropy_forward(z.data(), &label, 1, 3), 0.40760596444438013, 1e-12);
  std::vector<double> dz(3);
  softmax_cross_entropy_backward(z.data(), &label, 1, 3, 0.0, dz.data());
  EXPECT_NEAR(dz[0], 0.09003057317038048, 1e-12);
  EXPECT_NEAR(dz[2], 0.665240955774822 - 1.0, 1e-12);
  // And the float instantiation at logits of 1e4, beyond float's exp range (~88.7).
  const std::vector<float> zf = {1e4f, 0.0f, -1e4f};
  const std::int32_t label0 = 0;
  EXPECT_NEAR(softmax_cross_entropy_forward(zf.data(), &label0, 1, 3), 0.0, 1e-12);
  const std::int32_t label2 = 2;
  EXPECT_NEAR(softmax_cross_entropy_forward(zf.data(), &label2, 1, 3), 2e4, 1e-9);
}

std::string error_of(const std::vector<std::int32_t>& labels, int k, double eps = 0.0) {
  const std::vector<double> z(labels.size() * static_cast<std::size_t>(k), 0.0);
  try {
    softmax_cross_entropy_forward(z.data(), labels.data(), static_cast<int>(labels.size()), k, eps);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SoftmaxCrossEntropyReference, RejectsLabelOutOfRangeNamingSampleAndValue) {
  const std::string high = error_of({0, 7, 1}, 7);
  EXPECT_NE(high.find("sample 1 is 7, outside [0, 7)"), std::string::npos) << high;
  const std::string negative = error_of({-1}, 7);
  EXPECT_NE(negative.find("sample 0 is -1"), std::string::npos) << negative;
  const std::vector<double> z(7, 0.0);
  const std::int32_t bad = 9;
  std::vector<double> out(7);
  EXPECT_THROW(softmax_cross_entropy_backward(z.data(), &bad, 1, 7, 0.0, out.data()), Error);
}

TEST(SoftmaxCrossEntropyReference, RejectsLabelSmoothingOutsideZeroOne) {
  EXPECT_NE(error_of({0}, 3, 1.0).find("label_smoothing"), std::string::npos);
  EXPECT_NE(error_of({0}, 3, -0.1).find("label_smoothing"), std::string::npos);
}

TEST(SoftmaxCrossEntropyReference, PredictAndCountCorrectTiesGoToFirst) {
  // Row 0: max 5 at 1 and 3 -> 1. Row 1: all equal -> 0. Row 2: NaN at 2 -> 2. Row 3: max at 0.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> z = {0, 5, 1, 5, 2, 2, 2, 2, 1, 9, nan, 3, 4, 1, 2, 3};
  std::vector<std::int32_t> predicted(4);
  predict_classes(z.data(), 4, 4, predicted.data());
  EXPECT_EQ(predicted, (std::vector<std::int32_t>{1, 0, 2, 0}));
  const std::vector<std::int32_t> labels = {1, 0, 1, 3};
  EXPECT_EQ(count_correct(z.data(), labels.data(), 4, 4), 2);
}

TEST(SoftmaxCrossEntropyReference, FloatMatchesDouble) {
  // Same float-representable logits: both instantiations do identical double arithmetic, so the loss
  // (returned as double) agrees to double rounding, and each dlogit is rounded once: <= 2^-24 relative.
  const std::vector<double> z0 = testing::random_values(kN * kK, 73, -3.0, 3.0);
  const std::vector<float> zf(z0.begin(), z0.end());
  const std::vector<double> zd(zf.begin(), zf.end());
  const std::vector<std::int32_t> labels = random_labels(kN, kK, 74);
  for (const double eps : {0.0, 0.1}) {
    EXPECT_NEAR(softmax_cross_entropy_forward(zf.data(), labels.data(), kN, kK, eps),
                softmax_cross_entropy_forward(zd.data(), labels.data(), kN, kK, eps), 1e-15);
    std::vector<float> df(zf.size());
    std::vector<double> dd(zd.size());
    softmax_cross_entropy_backward(zf.data(), labels.data(), kN, kK, eps, df.data());
    softmax_cross_entropy_backward(zd.data(), labels.data(), kN, kK, eps, dd.data());
    testing::expect_rounded_once(df, dd, "dlogits");
  }
}

}  // namespace
}  // namespace engine::cpu
