// Tests of the batchnorm2d CPU reference: hand-computed values (training forward, running statistics with the
// unbiased variance, training backward, eval forward and backward), gradient checks in training mode (where
// the batch statistics depend on x) and eval mode, errors, and float against double.

#include "kernels/cpu/batchnorm2d.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/common/float_checks.h"
#include "tests/common/gradcheck.h"

namespace engine::cpu {
namespace {

using engine::testing::as_floats;
using engine::testing::expect_rounded_once;
using engine::testing::GradCheckCase;
using engine::testing::random_values;

constexpr double kEps = kBatchNormDefaultEps;

void expect_near(const std::vector<double>& actual, const std::vector<double>& expected, const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], 1e-12) << what << "[" << i << "]";
}

// The known-value batch: x[N=2, C=2, H=1, W=2], gamma = [2, -1], beta = [0.5, 3].
//   channel 0 holds (n0: 1, 3; n1: 5, 7):   mean 4, sum (x-mean)^2 = 9+1+1+9 = 20, biased var 5, unbiased
//   20/3 channel 1 holds (n0: -1, -1; n1: 1, 1): mean 0, sum (x-mean)^2 = 4,           biased var 1, unbiased
//   4/3
const BatchNorm2dShape kShape{.n = 2, .c = 2, .h = 1, .w = 2};
const std::vector<double> kX = {1, 3, -1, -1, 5, 7, 1, 1};  // NCHW: n0c0, n0c1, n1c0, n1c1
const std::vector<double> kGamma = {2, -1}, kBeta = {0.5, 3};
// dy: channel 0 gets (0, 0, 0, 4), channel 1 gets (1, 0, 2, 1).
const std::vector<double> kDy = {0, 0, 1, 0, 0, 4, 2, 1};

TEST(BatchNorm2dReference, KnownValuesTrainingForwardAndRunningStats) {
  const double t = 1.0 / std::sqrt(5.0 + kEps), s = 1.0 / std::sqrt(1.0 + kEps);  // the two invstd
  std::vector<double> y(8), mean(2), invstd(2), running_mean = {0.5, 1}, running_var = {1, 2};
  batchnorm2d_forward_training(kShape, kX.data(), kGamma.data(), kBeta.data(), y.data(), mean.data(),
                               invstd.data(), running_mean.data(), running_var.data());
  // Channel 0: y = 2 * t * (x - 4) + 0.5, x - 4 = (-3, -1, 1, 3)    (t ~ 1/sqrt(5): y ~ -2.18,
  // -0.39, 1.39, 3.18) Channel 1: y = -s * x + 3                                        (s ~ 1: y ~ 4, 4, 2,
  // 2)
  expect_near(y, {0.5 - 6 * t, 0.5 - 2 * t, 3 + s, 3 + s, 0.5 + 2 * t, 0.5 + 6 * t, 3 - s, 3 - s}, "y");
  expect_near(mean, {4, 0}, "save_mean");
  expect_near(invstd, {t, s}, "save_invstd");
  // momentum 0.1, UNBIASED variance (the biased one would give 0.9 + 0.5 = 1.4 and 1.8 + 0.1 = 1.9):
  //   running_mean = 0.9 * [0.5, 1] + 0.1 * [4, 0]      = [0.85, 0.9]
  //   running_var  = 0.9 * [1, 2]   + 0.1 * [20/3, 4/3] = [0.9 + 2/3, 1.8 + 2/15]
  expect_near(running_mean, {0.85, 0.9}, "running_mean");
  expect_near(running_var, {0.9 + 2.0 / 3.0, 1.8 + 2.0 / 15.0}, "running_var");
}

TEST(BatchNorm2dReference, KnownValuesTrainingBackward) {
  const double t = 1.0 / std::sqrt(5.0 + kEps), s = 1.0 / std::sqrt(1.0 + kEps);
  const std::vector<double> mean = {4, 0}, invstd = {t, s};
  std::vector<double> dx(8), dgamma(2), dbeta(2);
  batchnorm2d_backward_training(kShape, kX.data(), kGamma.data(), mean.data(), invstd.data(), kDy.data(),
                                dx.data(), dgamma.data(), dbeta.data());
  // With M = 4 and xhat = (x - mean) * invstd; dx = gamma * invstd * (dy - dbeta/M - xhat * dgamma/M).
  // Channel 0: xhat = t(-3,-1,1,3), dy = (0,0,0,4): dbeta = 4, dgamma = 4 * 3t = 12t,
  //   dx = 2t * ((0,0,0,4) - 1 - 3t^2 (-3,-1,1,3))   (t^2 ~ 1/5: dx ~ 2t (0.8, -0.4, -1.6, 1.2))
  // Channel 1: xhat = s(-1,-1,1,1), dy = (1,0,2,1): dbeta = 4, dgamma = s(-1 + 0 + 2 + 1) = 2s,
  //   dx = -s * ((1,0,2,1) - 1 - (s^2/2)(-1,-1,1,1))   (s ~ 1: dx ~ (-0.5, 0.5, -0.5, 0.5))
  const double a = 3 * t * t, b = s * s / 2;
  const std::vector<double> dx0 = {2 * t * (-1 + 3 * a), 2 * t * (-1 + a), 2 * t * (-1 - a),
                                   2 * t * (3 - 3 * a)};
  const std::vector<double> dx1 = {-s * (0 + b), -s * (-1 + b), -s * (1 - b), -s * (0 - b)};
  expect_near(dx, {dx0[0], dx0[1], dx1[0], dx1[1], dx0[2], dx0[3], dx1[2], dx1[3]}, "dx");
  expect_near(dgamma, {12 * t, 2 * s}, "dgamma");
  expect_near(dbeta, {4, 4}, "dbeta");
  // Each channel's dx sums to zero: the mean subtraction removes any uniform shift of x.
  EXPECT_NEAR(dx0[0] + dx0[1] + dx0[2] + dx0[3], 0.0, 1e-12);
}

TEST(BatchNorm2dReference, KnownValuesEvalForwardBackward) {
  // running_mean = [0.5, 1], running_var = [4, 0.25]: invstd u0 = 1/sqrt(4 + eps) ~ 1/2, u1 = 1/sqrt(0.25 +
  // eps) ~ 2.
  const std::vector<double> running_mean = {0.5, 1}, running_var = {4, 0.25};
  const double u0 = 1.0 / std::sqrt(4.0 + kEps), u1 = 1.0 / std::sqrt(0.25 + kEps);
  std::vector<double> y(8);
  batchnorm2d_forward_eval(kShape, kX.data(), kGamma.data(), kBeta.data(), running_mean.data(),
                           running_var.data(), y.data());
  // Channel 0: y = 2 u0 (x - 0.5) + 0.5, x - 0.5 = (0.5, 2.5, 4.5, 6.5)   (~ 1, 3, 5, 7)
  // Channel 1: y = -u1 (x - 1) + 3,      x - 1 = (-2, -2, 0, 0)          (~ 7, 7, 3, 3)
  expect_near(y, {1 * u0 + 0.5, 5 * u0 + 0.5, 2 * u1 + 3, 2 * u1 + 3, 9 * u0 + 0.5, 13 * u0 + 0.5, 3, 3},
              "y");

  // dx = dy * gamma * invstd; dgamma = sum dy (x - running_mean) invstd; dbeta = sum dy:
  //   channel 0: dx = 2 u0 (0,0,0,4) = (0,0,0,8u0) ~ (0,0,0,4);  dgamma = 4 * 6.5 u0 = 26 u0 ~ 13
  //   channel 1: dx = -u1 (1,0,2,1) ~ (-2,0,-4,-2);             dgamma = 1 * (-2) u1 = -2 u1 ~ -4
  std::vector<double> dx(8), dgamma(2), dbeta(2);
  batchnorm2d_backward_eval(kShape, kX.data(), kGamma.data(), running_mean.data(), running_var.data(),
                            kDy.data(), dx.data(), dgamma.data(), dbeta.data());
  expect_near(dx, {0, 0, -u1, 0, 0, 8 * u0, -2 * u1, -u1}, "dx");
  expect_near(dgamma, {26 * u0, -2 * u1}, "dgamma");
  expect_near(dbeta, {4, 4}, "dbeta");
}

// Gradient check of x, gamma and beta in training mode: y depends on x also through the batch mean and
// variance, which is what the two extra terms of the training dx account for.
void check_training_gradients(const BatchNorm2dShape& g) {
  const std::size_t c = static_cast<std::size_t>(g.c);
  std::vector<double> x = random_values(g.x_size(), 51);
  std::vector<double> gamma = random_values(c, 52, 0.5, 1.5), beta = random_values(c, 53);
  auto run_forward = [&](std::vector<double>& mean, std::vector<double>& invstd) {
    std::vector<double> y(g.x_size()), running_mean(c, 0.0), running_var(c, 1.0);
    batchnorm2d_forward_training(g, x.data(), gamma.data(), beta.data(), y.data(), mean.data(), invstd.data(),
                                 running_mean.data(), running_var.data());
    return y;
  };
  GradCheckCase gc;
  gc.inputs = {{"x", &x}, {"gamma", &gamma}, {"beta", &beta}};
  gc.forward = [&](std::uint64_t) {
    std::vector<double> mean(c), invstd(c);
    return run_forward(mean, invstd);
  };
  gc.backward = [&](const std::vector<double>& dy, std::uint64_t) {
    std::vector<double> mean(c), invstd(c);
    run_forward(mean, invstd);
    std::vector<double> dx(g.x_size()), dgamma(c), dbeta(c);
    batchnorm2d_backward_training(g, x.data(), gamma.data(), mean.data(), invstd.data(), dy.data(), dx.data(),
                                  dgamma.data(), dbeta.data());
    return std::vector<std::vector<double>>{dx, dgamma, dbeta};
  };
  EXPECT_GRADIENTS_MATCH(gc);
}

TEST(BatchNorm2dReference, GradientCheckTrainingOddSizes) {
  check_training_gradients({.n = 3, .c = 5, .h = 7, .w = 9});
}
TEST(BatchNorm2dReference, GradientCheckTrainingSmallBatch) {
  check_training_gradients({.n = 2, .c = 3, .h = 2, .w = 3});
}

TEST(BatchNorm2dReference, GradientCheckEval) {
  const BatchNorm2dShape g{.n = 3, .c = 5, .h = 7, .w = 9};
  const std::size_t c = 5;
  std::vector<double> x = random_values(g.x_size(), 61);
  std::vector<double> gamma = random_values(c, 62, 0.5, 1.5), beta = random_values(c, 63);
  const std::vector<double> running_mean = random_values(c, 64, -0.5, 0.5),
                            running_var = random_values(c, 65, 0.5, 2);
  GradCheckCase gc;
  gc.inputs = {{"x", &x}, {"gamma", &gamma}, {"beta", &beta}};
  gc.forward = [&](std::uint64_t) {
    std::vector<double> y(g.x_size());
    batchnorm2d_forward_eval(g, x.data(), gamma.data(), beta.data(), running_mean.data(), running_var.data(),
                             y.data());
    return y;
  };
  gc.backward = [&](const std::vector<double>& dy, std::uint64_t) {
    std::vector<double> dx(g.x_size()), dgamma(c), dbeta(c);
    batchnorm2d_backward_eval(g, x.data(), gamma.data(), running_mean.data(), running_var.data(), dy.data(),
                              dx.data(), dgamma.data(), dbeta.data());
    return std::vector<std::vector<double>>{dx, dgamma, dbeta};
  };
  EXPECT_GRADIENTS_MATCH(gc);
}

TEST(BatchNorm2dReference, NonAffineEqualsUnitGammaZeroBeta) {
  const BatchNorm2dShape g{.n = 2, .c = 3, .h = 3, .w = 2};
  const std::vector<double> x = random_values(g.x_size(), 71), dy = random_values(g.x_size(), 72);
  const std::vector<double> ones(3, 1.0), zeros(3, 0.0);
  std::vector<double> y1(g.x_size()), y2(g.x_size()), m1(3), m2(3), v1(3), v2(3);
  batchnorm2d_forward_training(g, x.data(), ones.data(), zeros.data(), y1.data(), m1.data(), v1.data(),
                               static_cast<double*>(nullptr), static_cast<double*>(nullptr));
  batchnorm2d_forward_training(g, x.data(), static_cast<const double*>(nullptr),
                               static_cast<const double*>(nullptr), y2.data(), m2.data(), v2.data(),
                               static_cast<double*>(nullptr), static_cast<double*>(nullptr));
  EXPECT_EQ(y1, y2);
  std::vector<double> dx1(g.x_size()), dx2(g.x_size()), dgamma(3), dbeta(3);
  batchnorm2d_backward_training(g, x.data(), ones.data(), m1.data(), v1.data(), dy.data(), dx1.data(),
                                dgamma.data(), dbeta.data());
  batchnorm2d_backward_training(g, x.data(), static_cast<const double*>(nullptr), m1.data(), v1.data(),
                                dy.data(), dx2.data(), static_cast<double*>(nullptr),
                                static_cast<double*>(nullptr));
  EXPECT_EQ(dx1, dx2);
}

TEST(BatchNorm2dReference, RejectsOneValuePerChannelInTraining) {
  const BatchNorm2dShape g{.n = 1, .c = 3, .h = 1, .w = 1};  // one value per channel: no unbiased variance
  std::vector<double> x = {1, 2, 3}, y(3), mean(3), invstd(3), rm(3, 0.0), rv(3, 1.0);
  try {
    batchnorm2d_forward_training(g, x.data(), static_cast<const double*>(nullptr),
                                 static_cast<const double*>(nullptr), y.data(), mean.data(), invstd.data(),
                                 rm.data(), rv.data());
    ADD_FAILURE() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected more than 1 value per channel when training"),
              std::string::npos)
        << e.what();
  }
  // Eval mode has no such restriction.
  EXPECT_NO_THROW(batchnorm2d_forward_eval(g, x.data(), static_cast<const double*>(nullptr),
                                           static_cast<const double*>(nullptr), rm.data(), rv.data(),
                                           y.data()));
}

TEST(BatchNorm2dReference, RejectsInvalidArguments) {
  std::vector<double> buf(64);
  const BatchNorm2dShape bad{.n = 2, .c = 0, .h = 2, .w = 2};
  EXPECT_THROW(bad.validate(), Error);
  EXPECT_THROW(
      batchnorm2d_forward_eval(bad, buf.data(), buf.data(), buf.data(), buf.data(), buf.data(), buf.data()),
      Error);
  const BatchNorm2dShape g{.n = 2, .c = 2, .h = 2, .w = 2};
  double* p = buf.data();
  EXPECT_THROW(
      batchnorm2d_forward_training(g, p, p, p, p + 8, p + 16, p + 20, p + 24, p + 28, /*momentum=*/1.5),
      Error);
  EXPECT_THROW(
      batchnorm2d_forward_training(g, p, p, p, p + 8, p + 16, p + 20, p + 24, p + 28, 0.1, /*eps=*/-1.0),
      Error);
  EXPECT_THROW(
      batchnorm2d_forward_training(g, p, p, p, p + 8, p + 16, p + 20, p + 24, static_cast<double*>(nullptr)),
      Error);  // running_var without running_mean
}

TEST(BatchNorm2dReference, FloatMatchesDouble) {
  const BatchNorm2dShape g{.n = 3, .c = 4, .h = 5, .w = 7};  // 105 values per channel
  const std::size_t c = 4;
  // An offset mean per channel (x in [1, 3)) so the mean subtraction matters.
  const std::vector<float> xf = as_floats(random_values(g.x_size(), 81, 1.0, 3.0));
  const std::vector<float> gf = as_floats(random_values(c, 82, 0.5, 1.5)),
                           bf = as_floats(random_values(c, 83));
  const std::vector<float> dyf = as_floats(random_values(g.x_size(), 84));
  const std::vector<double> xd(xf.begin(), xf.end()), gd(gf.begin(), gf.end()), bd(bf.begin(), bf.end()),
      dyd(dyf.begin(), dyf.end());

  std::vector<float> yf(g.x_size()), mf(c), sf(c), rmf(c, 0.25f), rvf(c, 1.5f);
  std::vector<double> yd(g.x_size()), md(c), sd(c), rmd(c, 0.25), rvd(c, 1.5);
  batchnorm2d_forward_training(g, xf.data(), gf.data(), bf.data(), yf.data(), mf.data(), sf.data(),
                               rmf.data(), rvf.data());
  batchnorm2d_forward_training(g, xd.data(), gd.data(), bd.data(), yd.data(), md.data(), sd.data(),
                               rmd.data(), rvd.data());
  // Forward: both instantiations run the same double arithmetic on the same (float) values and round once,
  // so |f - d| <= 2^-24 |d| (half an ulp) for y, the saved statistics and the running statistics.
  expect_rounded_once(yf, yd, "y");
  expect_rounded_once(mf, md, "save_mean");
  expect_rounded_once(sf, sd, "save_invstd");
  expect_rounded_once(rmf, rmd, "running_mean");
  expect_rounded_once(rvf, rvd, "running_var");

  // Backward: the float path reads its saved mean and invstd rounded to float (relative error <= 2^-24),
  // which moves xhat by about 2^-24 (|xhat| + |mean| invstd) ~ 1e-6 at most here (mean ~2, invstd ~1.7,
  // |xhat| < 2); dx, dgamma and dbeta are O(1) (dgamma, dbeta sums of 105 O(1) terms: O(10)), so an error
  // above 1e-5 per unit of max(|value|, 1) means a real difference, not rounding.
  std::vector<float> dxf(g.x_size()), dgf(c), dbf(c);
  std::vector<double> dxd(g.x_size()), dgd(c), dbd(c);
  batchnorm2d_backward_training(g, xf.data(), gf.data(), mf.data(), sf.data(), dyf.data(), dxf.data(),
                                dgf.data(), dbf.data());
  batchnorm2d_backward_training(g, xd.data(), gd.data(), md.data(), sd.data(), dyd.data(), dxd.data(),
                                dgd.data(), dbd.data());
  auto expect_close = [](const std::vector<float>& f, const std::vector<double>& ref, const char* what) {
    for (std::size_t i = 0; i < f.size(); ++i) {
      EXPECT_LE(std::abs(static_cast<double>(f[i]) - ref[i]), 1e-5 * std::max(std::abs(ref[i]), 1.0))
          << what << "[" << i << "]";
    }
  };
  expect_close(dxf, dxd, "dx");
  expect_close(dgf, dgd, "dgamma");
  expect_close(dbf, dbd, "dbeta");
}

}  // namespace
}  // namespace engine::cpu
