// The fast float32 CPU kernels other than convolution and linear (kernels/cpu_fast: ReLU, dropout, max
// pooling, residual add, BatchNorm2d training, SGD) against the float64-accumulating reference (kernels/cpu)
// on odd sizes (not multiples of the vector width, above and below the threading threshold), outputs
// poisoned with NaN first so a skipped element shows.
//
// Tolerances: ReLU, dropout, max pooling without overlapping windows and the residual add do no rounding the
// reference does not (see their headers), so they must agree bit for bit. BatchNorm2d computes in double in
// both, only the sums' order differs, so outputs agree to about one float rounding (2^-24 relative); 1e-5
// relative plus 1e-5 absolute (outputs are a few units) leaves headroom and is far below any wrong index.
// SGD: float arithmetic on three terms against double rounded once: within 1e-6 relative of |p| + lr*|terms|
// (a few ulps).

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "kernels/cpu/batchnorm2d.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cpu/maxpool2d.h"
#include "kernels/cpu/relu.h"
#include "kernels/cpu/residual_add.h"
#include "kernels/cpu/sgd.h"
#include "kernels/cpu_fast/batchnorm2d.h"
#include "kernels/cpu_fast/dropout.h"
#include "kernels/cpu_fast/maxpool2d.h"
#include "kernels/cpu_fast/relu.h"
#include "kernels/cpu_fast/residual_add.h"
#include "kernels/cpu_fast/sgd.h"
#include "tests/common/test_data.h"

namespace engine {
namespace {

std::vector<float> poisoned(std::size_t n) { return std::vector<float>(n, NAN); }

// Bitwise equality, NaN equal to NaN (ReLU propagates it).
void expect_same(const std::vector<float>& fast, const std::vector<float>& ref, const char* what) {
  ASSERT_EQ(fast.size(), ref.size());
  int bad = 0;
  for (std::size_t i = 0; i < fast.size() && bad < 5; ++i) {
    const bool same = fast[i] == ref[i] || (std::isnan(fast[i]) && std::isnan(ref[i]));
    if (!same) {
      ADD_FAILURE() << what << "[" << i << "]: fast " << fast[i] << " vs reference " << ref[i];
      ++bad;
    }
  }
}

void expect_close(const std::vector<float>& fast, const std::vector<float>& ref, double rel, double abs_tol,
                  const char* what) {
  ASSERT_EQ(fast.size(), ref.size());
  int bad = 0;
  for (std::size_t i = 0; i < fast.size() && bad < 5; ++i) {
    const double tol = rel * std::fabs(static_cast<double>(ref[i])) + abs_tol;
    if (!(std::fabs(static_cast<double>(fast[i]) - static_cast<double>(ref[i])) <= tol)) {
      ADD_FAILURE() << what << "[" << i << "]: fast " << fast[i] << " vs reference " << ref[i];
      ++bad;
    }
  }
}

// Below and above kParallelMinElements (32768), none a multiple of 8.
const std::int64_t kSizes[] = {1, 7, 1001, 40001, 200003};

TEST(CpuFastRelu, EqualsTheReference) {
  for (const std::int64_t n : kSizes) {
    auto x = testing::uniform_floats(static_cast<std::size_t>(n), 11);
    x[0] = NAN;
    if (n > 3) x[3] = 0.0f;
    const auto dy = testing::uniform_floats(x.size(), 12);
    auto y = poisoned(x.size()), y_ref = poisoned(x.size()), dx = poisoned(x.size()),
         dx_ref = poisoned(x.size());
    cpu_fast::relu_forward(x.data(), y.data(), n);
    cpu::relu_forward<float>(x.data(), y_ref.data(), n);
    expect_same(y, y_ref, "relu y");
    cpu_fast::relu_backward(x.data(), dy.data(), dx.data(), n);
    cpu::relu_backward<float>(x.data(), dy.data(), dx_ref.data(), n);
    expect_same(dx, dx_ref, "relu dx");
  }
}

TEST(CpuFastDropout, EqualsTheReferenceMask) {
  for (const float p : {0.0f, 0.25f, 0.5f, 1.0f}) {
    for (const std::int64_t n : kSizes) {
      const auto x = testing::uniform_floats(static_cast<std::size_t>(n), 13);
      auto y = poisoned(x.size()), y_ref = poisoned(x.size()), dx = poisoned(x.size()),
           dx_ref = poisoned(x.size());
      cpu_fast::dropout_forward(p, 42, 7, x.data(), y.data(), n);
      cpu::dropout_forward<float>(p, 42, 7, x.data(), y_ref.data(), n);
      expect_same(y, y_ref, "dropout y");
      cpu_fast::dropout_backward(p, 42, 8, x.data(), dx.data(), n);
      cpu::dropout_backward<float>(p, 42, 8, x.data(), dx_ref.data(), n);
      expect_same(dx, dx_ref, "dropout dx");
    }
  }
}

TEST(CpuFastResidualAdd, EqualsTheReference) {
  for (const std::int64_t n : kSizes) {
    const auto a = testing::uniform_floats(static_cast<std::size_t>(n), 14),
               b = testing::uniform_floats(a.size(), 15, -1e4f, 1e4f);
    auto y = poisoned(a.size()), y_ref = poisoned(a.size());
    cpu_fast::residual_add_forward(a.data(), b.data(), y.data(), n);
    cpu::residual_add_forward<float>(a.data(), b.data(), y_ref.data(), n);
    expect_same(y, y_ref, "residual y");
  }
}

TEST(CpuFastMaxPool2d, EqualsTheReference) {
  // 2x2/2 as in the zoo (odd sizes drop the last row/column), 3x3/2 with padding (overlapping windows: dx
  // sums in float, still exact here since at most a few terms meet... compared with a tolerance), 3x3/1.
  struct Case {
    Pool2dShape s;
    bool overlap;
  };
  const Case cases[] = {
      {{.n = 3, .c = 5, .h = 9, .w = 11, .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2}, false},
      {{.n = 8, .c = 64, .h = 26, .w = 26, .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2},
       false},
      {{.n = 2,
        .c = 3,
        .h = 13,
        .w = 7,
        .kernel_h = 3,
        .kernel_w = 3,
        .stride_h = 2,
        .stride_w = 2,
        .pad_h = 1,
        .pad_w = 1},
       true},
      {{.n = 2, .c = 17, .h = 10, .w = 9, .kernel_h = 3, .kernel_w = 3, .stride_h = 1, .stride_w = 1}, true},
  };
  for (const Case& c : cases) {
    const Pool2dShape& s = c.s;
    auto x = testing::uniform_floats(static_cast<std::size_t>(s.input_size()), 16);
    x[1] = x[0];  // a tie: the first in scan order must win in both
    // NaN wins (two in one 2x2 window of the first case: the later one), and a window of -inf gives its first
    // cell: the 2x2 fast path and the generic loop must agree with the reference on both.
    x[3] = x[13] = std::nanf("");
    for (const std::size_t i : {22u, 23u, 33u, 34u}) x[i] = -std::numeric_limits<float>::infinity();
    const auto dy = testing::uniform_floats(static_cast<std::size_t>(s.output_size()), 17);
    auto y = poisoned(dy.size()), y_ref = poisoned(dy.size());
    std::vector<std::int32_t> arg(dy.size(), -7), arg_ref(dy.size(), -7);
    cpu_fast::maxpool2d_forward(s, x.data(), y.data(), arg.data());
    cpu::maxpool2d_forward<float>(s, x.data(), y_ref.data(), arg_ref.data());
    expect_same(y, y_ref, "maxpool y");
    EXPECT_EQ(arg, arg_ref);
    auto dx = poisoned(x.size()), dx_ref = poisoned(x.size());
    cpu_fast::maxpool2d_backward(s, dy.data(), arg.data(), dx.data());
    cpu::maxpool2d_backward<float>(s, dy.data(), arg_ref.data(), dx_ref.data());
    if (c.overlap) {
      expect_close(dx, dx_ref, 1e-6, 1e-6, "maxpool dx");  // float sum of up to 9 terms in [-1, 1]
    } else {
      expect_same(dx, dx_ref, "maxpool dx");
    }
  }
}

TEST(CpuFastMaxPool2d, RejectsAnArgmaxOutsideThePlane) {
  const Pool2dShape s{
      .n = 1, .c = 1, .h = 4, .w = 4, .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2};
  const std::vector<float> dy(4, 1.0f);
  const std::vector<std::int32_t> arg = {0, 2, 16, 10};
  std::vector<float> dx(16);
  EXPECT_THROW(cpu_fast::maxpool2d_backward(s, dy.data(), arg.data(), dx.data()), Error);
}

TEST(CpuFastBatchNorm2d, TrainingMatchesTheReference) {
  const BatchNorm2dShape shapes[] = {{.n = 3, .c = 5, .h = 7, .w = 9},
                                     {.n = 8, .c = 64, .h = 13, .w = 11},
                                     {.n = 2, .c = 3, .h = 1, .w = 1},
                                     // 2x2 and 3x3: the per-channel loops' constant plane sizes
                                     {.n = 5, .c = 6, .h = 2, .w = 2},
                                     {.n = 4, .c = 3, .h = 3, .w = 3}};
  for (const BatchNorm2dShape& g : shapes) {
    for (const bool affine : {true, false}) {
      // An offset mean (3) against a spread of 1: the centring must happen before the scaling.
      const auto x = testing::uniform_floats(g.x_size(), 18, 2.0f, 4.0f),
                 dy = testing::uniform_floats(g.x_size(), 19);
      const auto gamma = testing::uniform_floats(static_cast<std::size_t>(g.c), 20, 0.5f, 1.5f),
                 beta = testing::uniform_floats(static_cast<std::size_t>(g.c), 21);
      const float* gp = affine ? gamma.data() : nullptr;
      const float* bp = affine ? beta.data() : nullptr;
      const std::size_t c = static_cast<std::size_t>(g.c);
      auto y = poisoned(x.size()), y_ref = poisoned(x.size());
      auto mean = poisoned(c), mean_ref = poisoned(c), invstd = poisoned(c), invstd_ref = poisoned(c);
      std::vector<float> rm(c, 0.5f), rv(c, 2.0f), rm_ref = rm, rv_ref = rv;
      cpu_fast::batchnorm2d_forward_training(g, x.data(), gp, bp, y.data(), mean.data(), invstd.data(),
                                             rm.data(), rv.data());
      cpu::batchnorm2d_forward_training<float>(g, x.data(), gp, bp, y_ref.data(), mean_ref.data(),
                                               invstd_ref.data(), rm_ref.data(), rv_ref.data());
      // y's terms are O(|gamma| * |xhat| + |beta|) ~ a few units: 1e-5 absolute is ~100 ulps of them.
      expect_close(y, y_ref, 1e-5, 1e-5, "bn y");
      expect_same(mean, mean_ref, "bn save_mean");  // the same double sum, rounded once
      expect_close(invstd, invstd_ref, 1e-6, 0.0, "bn save_invstd");
      expect_close(rm, rm_ref, 1e-6, 0.0, "bn running_mean");
      expect_close(rv, rv_ref, 1e-6, 0.0, "bn running_var");

      auto dx = poisoned(x.size()), dx_ref = poisoned(x.size());
      auto dgamma = poisoned(c), dgamma_ref = poisoned(c), dbeta = poisoned(c), dbeta_ref = poisoned(c);
      cpu_fast::batchnorm2d_backward_training(g, x.data(), gp, mean.data(), invstd.data(), dy.data(),
                                              dx.data(), dgamma.data(), dbeta.data());
      cpu::batchnorm2d_backward_training<float>(g, x.data(), gp, mean.data(), invstd.data(), dy.data(),
                                                dx_ref.data(), dgamma_ref.data(), dbeta_ref.data());
      // dx's terms are O(gamma * invstd * (|dy| + |xhat|)) ~ a few units; the sums are double in both.
      expect_close(dx, dx_ref, 1e-5, 1e-5, "bn dx");
      expect_close(dbeta, dbeta_ref, 1e-6, 1e-6, "bn dbeta");
      expect_close(dgamma, dgamma_ref, 1e-5, 1e-5, "bn dgamma");
    }
  }
}

TEST(CpuFastSgd, MatchesTheReference) {
  const cpu::SgdOptions options[] = {
      {.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4},
      {.lr = 0.1, .momentum = 0.0, .weight_decay = 1e-3},
      {.lr = 0.01, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.0, .nesterov = false},
      {.lr = 0.02, .momentum = 0.8, .weight_decay = 1e-4, .nesterov = true},
  };
  for (const cpu::SgdOptions& o : options) {
    for (const std::int64_t n : kSizes) {
      const std::size_t size = static_cast<std::size_t>(n);
      auto p = testing::uniform_floats(size, 22), p_ref = p, buf = poisoned(size), buf_ref = poisoned(size);
      for (int step = 0; step < 3; ++step) {
        const auto grad = testing::uniform_floats(size, 23 + static_cast<std::uint32_t>(step));
        cpu_fast::sgd_step(o, p.data(), grad.data(), buf.data(), n, step == 0);
        cpu::sgd_step<float>(o, p_ref.data(), grad.data(), buf_ref.data(), n, step == 0);
        // |p| <= ~1 and lr * |update| <= ~0.3: a few float ulps of 1 per step, three steps.
        expect_close(p, p_ref, 1e-6, 1e-6, "sgd params");
        if (o.momentum != 0.0) expect_close(buf, buf_ref, 1e-6, 1e-6, "sgd momentum");
        p = p_ref;  // the next step starts from the same point in both
        buf = buf_ref;
      }
    }
  }
}

}  // namespace
}  // namespace engine
