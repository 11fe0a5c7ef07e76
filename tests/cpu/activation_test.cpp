// The pointwise activations (Sigmoid, Tanh, SiLU, HardSigmoid, HardSwish, Clip, LeakyRelu):
//  - the float64 reference (kernels/cpu/activation.h): gradient check on an odd size (945 values 0.01 apart,
//    so no perturbation crosses a kink), hand-computed values, NaN propagation, float = double rounded once;
//  - the fast float32 path (kernels/cpu_fast/activation.h, the functors the GPU runs) against the reference
//    on odd sizes below and above the threading threshold, outputs poisoned with NaN first, within the
//    per-element bounds of tests/common/activation_tolerance.h;
//  - the Activation layer (layers/activation.h) runs the op, and refuses parameters it cannot take.

#include "kernels/cpu/activation.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu_fast/activation.h"
#include "kernels/elementwise_math.h"
#include "layers/activation.h"
#include "layers/model.h"
#include "layers/sequential.h"
#include "tests/common/activation_tolerance.h"
#include "tests/common/elementwise_inputs.h"
#include "tests/common/gradcheck.h"
#include "tests/cpu/layer_test_util.h"

namespace engine {
namespace {

using testing::activation_cases;

std::string name_of(const ActivationParams& p) {
  return fmt::format("{}(alpha {}, beta {})", activation_name(p.kind), p.alpha, p.beta);
}

TEST(ActivationReference, GradientCheck) {
  for (const ActivationParams& p : activation_cases()) {
    SCOPED_TRACE(name_of(p));
    // 945 distinct values 0.01 apart over about [-4.7, 4.7]: both saturations, the kinks at 0, +-3, 6 and
    // HardSigmoid's +-2.5 / -3, 3 passed by (skipped there by the checker, never straddled).
    std::vector<double> x = testing::distinct_values(3 * 5 * 7 * 9, 21);
    const auto n = static_cast<std::int64_t>(x.size());
    testing::GradCheckCase c{{{"x", &x}},
                             [&](std::uint64_t) {
                               std::vector<double> y(x.size(), std::numeric_limits<double>::quiet_NaN());
                               cpu::activation_forward(p, x.data(), y.data(), n);
                               return y;
                             },
                             [&](const std::vector<double>& dy, std::uint64_t) {
                               std::vector<double> saved = x;  // or the output, as the layer keeps it
                               if (activation_backward_reads_output(p.kind))
                                 cpu::activation_forward(p, x.data(), saved.data(), n);
                               std::vector<double> dx(
                                   x.size(), std::numeric_limits<double>::quiet_NaN());  // overwritten
                               cpu::activation_backward(p, saved.data(), dy.data(), dx.data(), n);
                               return std::vector<std::vector<double>>{dx};
                             }};
    EXPECT_GRADIENTS_MATCH(c);
  }
}

TEST(ActivationReference, KnownValues) {
  auto y = [](ActivationParams p, double x) { return cpu::activation_value(p, x); };
  auto d = [](ActivationParams p, double x) { return cpu::activation_derivative(p, x); };
  const ActivationParams sig{ActivationKind::Sigmoid}, tanh_{ActivationKind::Tanh},
      silu{ActivationKind::SiLU};
  const double e = std::exp(1.0);
  EXPECT_DOUBLE_EQ(y(sig, 0.0), 0.5);
  EXPECT_DOUBLE_EQ(y(sig, 1.0), e / (1.0 + e));
  EXPECT_DOUBLE_EQ(d(sig, 0.0), 0.25);
  EXPECT_DOUBLE_EQ(y(tanh_, 1.0), (e * e - 1.0) / (e * e + 1.0));
  EXPECT_DOUBLE_EQ(d(tanh_, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(y(silu, 2.0), 2.0 * e * e / (1.0 + e * e));
  EXPECT_DOUBLE_EQ(d(silu, 0.0), 0.5);
  const ActivationParams hsig{ActivationKind::HardSigmoid, 0.25f, 0.5f};
  EXPECT_EQ(y(hsig, 1.0), 0.75);
  EXPECT_EQ(y(hsig, 3.0), 1.0);
  EXPECT_EQ(y(hsig, -3.0), 0.0);
  EXPECT_EQ(d(hsig, 1.0), 0.25);
  EXPECT_EQ(d(hsig, 2.0), 0.0) << "at the kink t = 1: PyTorch's hardsigmoid passes nothing";
  const ActivationParams hsw{ActivationKind::HardSwish};
  EXPECT_EQ(y(hsw, 1.5), 1.5 * 4.5 / 6.0);
  EXPECT_EQ(y(hsw, -4.0), 0.0);
  EXPECT_EQ(y(hsw, 5.0), 5.0);
  EXPECT_EQ(d(hsw, 1.5), 1.0);
  EXPECT_EQ(d(hsw, 3.0), 1.5) << "PyTorch's hardswish_backward: (2x + 3) / 6 on [-3, 3]";
  EXPECT_EQ(d(hsw, -3.0), -0.5);
  const ActivationParams relu6{ActivationKind::Clip, 0.0f, 6.0f};
  EXPECT_EQ(y(relu6, -1.0), 0.0);
  EXPECT_EQ(y(relu6, 7.0), 6.0);
  EXPECT_EQ(y(relu6, 2.5), 2.5);
  EXPECT_EQ(d(relu6, 2.5), 1.0);
  EXPECT_EQ(d(relu6, 6.0), 0.0) << "PyTorch's hardtanh (nn.ReLU6) passes nothing at its bounds";
  EXPECT_EQ(d(relu6, 0.0), 0.0);
  const ActivationParams leaky{ActivationKind::LeakyRelu, 0.125f};
  EXPECT_EQ(y(leaky, -2.0), -0.25);
  EXPECT_EQ(y(leaky, 3.0), 3.0);
  EXPECT_EQ(d(leaky, -2.0), 0.125);
  EXPECT_EQ(d(leaky, 0.0), 0.125) << "PyTorch: the negative slope at 0";
}

TEST(ActivationReference, NanPropagatesForward) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const ActivationParams& p : activation_cases()) {
    double y = 0.0;
    cpu::activation_forward(p, &nan, &y, 1);
    EXPECT_TRUE(std::isnan(y)) << name_of(p);
    float yf = 0.0f;
    const float nanf = std::numeric_limits<float>::quiet_NaN();
    cpu_fast::activation_forward(p, &nanf, &yf, 1);
    EXPECT_TRUE(std::isnan(yf)) << name_of(p) << " (fast path)";
  }
}

TEST(ActivationReference, FloatIsTheDoubleRoundedOnce) {
  for (const ActivationParams& p : activation_cases()) {
    const std::vector<double> xs = testing::random_values(945, 22, -8.0, 8.0);
    const std::vector<double> dys = testing::random_values(945, 23);
    std::vector<float> xf(xs.begin(), xs.end()), dyf(dys.begin(), dys.end()), yf(945), dxf(945);
    std::vector<double> xd(xf.begin(), xf.end()), dyd(dyf.begin(), dyf.end()), yd(945), dxd(945);
    cpu::activation_forward(p, xd.data(), yd.data(), 945);
    cpu::activation_forward(p, xf.data(), yf.data(), 945);
    // Backward from the same saved values in both (the float forward's output where backward reads it).
    const bool out = activation_backward_reads_output(p.kind);
    const std::vector<double> saved_d = out ? std::vector<double>(yf.begin(), yf.end()) : xd;
    cpu::activation_backward(p, saved_d.data(), dyd.data(), dxd.data(), 945);
    cpu::activation_backward(p, out ? yf.data() : xf.data(), dyf.data(), dxf.data(), 945);
    for (std::size_t i = 0; i < 945; ++i) {
      ASSERT_EQ(yf[i], static_cast<float>(yd[i])) << name_of(p) << " [" << i << "]";
      ASSERT_EQ(dxf[i], static_cast<float>(dxd[i])) << name_of(p) << " [" << i << "]";
    }
  }
}

// The polynomial e^x and tanh both paths share, against double over the whole float range where the
// result is a normal float: within 2 ulp (tests/common/activation_tolerance.h takes that bound).
TEST(ElementwiseMath, ExpAndTanhAreWithinTwoUlpOverTheFloatRange) {
  double worst_exp = 0.0, worst_tanh = 0.0;
  auto ulps = [](float got, double ref) {
    return std::fabs(double(got) - ref) / std::ldexp(1.0, std::ilogb(static_cast<float>(ref)) - 23);
  };
  for (float x = -90.0f; x < 90.0f;
       x = std::nextafter(x, 100.0f) + (std::fabs(x) > 1e-3f ? std::fabs(x) * 1e-5f : 1e-8f)) {
    const double e = std::exp(double(x));
    if (e > 1.2e-38 && e < 3.4e38) worst_exp = std::max(worst_exp, ulps(elementwise::exp_float(x), e));
    const double t = std::tanh(double(x));
    if (t != 0.0) worst_tanh = std::max(worst_tanh, ulps(elementwise::tanh_float(x), t));
  }
  EXPECT_LE(worst_exp, 2.0);
  EXPECT_LE(worst_tanh, 2.0);
  EXPECT_TRUE(std::isnan(elementwise::exp_float(NAN)));
  EXPECT_EQ(elementwise::exp_float(89.0f), INFINITY);
  EXPECT_EQ(elementwise::exp_float(-88.0f), 0.0f) << "below FLT_MIN: +0, no subnormal";
  EXPECT_EQ(elementwise::tanh_float(20.0f), 1.0f);
  EXPECT_EQ(elementwise::tanh_float(-20.0f), -1.0f);
  EXPECT_TRUE(std::isnan(elementwise::tanh_float(NAN)));
}

// Sigmoid's exponential (exp_float_beside_one) drops exp_float's selects for 1 + e^x only: sigmoid must be
// bitwise 1 / (1 + exp_float(-x)) everywhere, checked at every 997th bit pattern of float (both signs, the
// infinities and NaNs among them) and at the cut-offs and their neighbours.
TEST(ElementwiseMath, SigmoidsExponentialGivesExpFloatsBits) {
  auto expect_same = [](float x) {
    const float got = elementwise::sigmoid(x), want = 1.0f / (1.0f + elementwise::exp_float(-x));
    if (std::isnan(want)) return std::isnan(got);
    return std::bit_cast<std::uint32_t>(got) == std::bit_cast<std::uint32_t>(want);
  };
  std::int64_t differ = 0;
  float first = 0.0f;
  for (std::uint64_t b = 0; b <= 0xffffffffu; b += 997) {
    const float x = std::bit_cast<float>(static_cast<std::uint32_t>(b));
    if (!expect_same(x) && differ++ == 0) first = x;
  }
  for (const float edge :
       {88.72283905206835f, -87.33654475055310f, 88.0f, 87.0f, 86.9f, 89.0f, 0.0f, 1e-30f, INFINITY, NAN}) {
    for (const float s : {edge, -edge}) {
      float x = s;
      for (int i = 0; i < 64; ++i, x = std::nextafter(x, INFINITY))
        if (!expect_same(x) && differ++ == 0) first = x;
    }
  }
  EXPECT_EQ(differ, 0) << "first at x = " << first;
}

TEST(CpuFastActivation, WithinFloatRoundingOfTheReference) {
  for (const ActivationParams& p : activation_cases()) {
    for (const std::int64_t n : {std::int64_t{1}, std::int64_t{7}, std::int64_t{1001}, std::int64_t{40001}}) {
      const auto size = static_cast<std::size_t>(n);
      std::vector<float> x = testing::elementwise_inputs(size, 41),
                         dy = testing::elementwise_inputs(size, 42);
      const float specials[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 3.0f,   -3.0f,
                                6.0f, -2.5f, 2.5f,   60.0f,   -60.0f, -100.0f};
      for (std::size_t i = 0; i < std::min(size, std::size(specials)); ++i) x[i] = specials[i];
      std::vector<double> xd(x.begin(), x.end()), dyd(dy.begin(), dy.end()), y_ref(size), dx_ref(size);
      // Each backward from what its own forward kept (the output, for Sigmoid and Tanh).
      const bool out = activation_backward_reads_output(p.kind);
      cpu::activation_forward(p, xd.data(), y_ref.data(), n);
      cpu::activation_backward(p, out ? y_ref.data() : xd.data(), dyd.data(), dx_ref.data(), n);
      std::vector<float> y(size, NAN), dx(size, NAN);
      cpu_fast::activation_forward(p, x.data(), y.data(), n);
      cpu_fast::activation_backward(p, out ? y.data() : x.data(), dy.data(), dx.data(), n);
      int bad = 0;
      for (std::size_t i = 0; i < size && bad < 5; ++i) {
        const double ey = std::fabs(double(y[i]) - y_ref[i]), edx = std::fabs(double(dx[i]) - dx_ref[i]);
        const bool dx_ok = edx <= testing::activation_backward_tolerance(p, xd[i], dyd[i]) ||
                           (testing::activation_near_kink(p, xd[i]) &&
                            (dx[i] == 0.0f || std::fabs(double(dx[i]) - dyd[i] * double(p.alpha)) <=
                                                  testing::activation_backward_tolerance(p, xd[i], dyd[i])));
        if (!(ey <= testing::activation_forward_tolerance(p, xd[i])) || !dx_ok) {
          ADD_FAILURE() << name_of(p) << " n " << n << " [" << i << "] x " << x[i] << ": y " << y[i] << " vs "
                        << y_ref[i] << ", dx " << dx[i] << " vs " << dx_ref[i];
          ++bad;
        }
      }
    }
  }
}

}  // namespace
}  // namespace engine

namespace engine::layers {
namespace {

using testing::cpu_context;
using testing::host_values;
using testing::random_tensor;

TEST(ActivationLayer, ForwardAndBackwardAreTheReferenceInEveryDtype) {
  for (const ActivationParams& p : engine::testing::activation_cases()) {
    for (const DType dtype : {DType::F64, DType::F32}) {
      auto net = std::make_unique<Sequential>();
      net->emplace<Activation>(p);
      Model m("act", std::move(net));
      m.set_needs_input_grad(true);
      m.finalize(cpu_context(dtype), 0);
      EXPECT_EQ(m.parameter_count(), 0);
      const Tensor x = random_tensor({3, 5, 7, 9}, dtype, 31, -8.0, 8.0);
      const Tensor dy = random_tensor({3, 5, 7, 9}, dtype, 32);
      const std::vector<double> y = host_values(m.forward(x, Mode::Train));
      const std::vector<double> dx = host_values(m.backward(dy));
      const std::vector<double> xv = host_values(x), dyv = host_values(dy);
      const auto n = static_cast<std::int64_t>(xv.size());
      std::vector<double> y_ref(xv.size()), dx_ref(xv.size());
      const bool out = activation_backward_reads_output(p.kind);
      if (dtype == DType::F64) {
        cpu::activation_forward(p, xv.data(), y_ref.data(), n);
        cpu::activation_backward(p, out ? y_ref.data() : xv.data(), dyv.data(), dx_ref.data(), n);
      } else {  // the fast path's functors
        std::vector<float> xf(xv.begin(), xv.end()), dyf(dyv.begin(), dyv.end()), yf(xv.size()),
            dxf(xv.size());
        cpu_fast::activation_forward(p, xf.data(), yf.data(), n);
        cpu_fast::activation_backward(p, out ? yf.data() : xf.data(), dyf.data(), dxf.data(), n);
        y_ref.assign(yf.begin(), yf.end());
        dx_ref.assign(dxf.begin(), dxf.end());
      }
      EXPECT_EQ(y, y_ref) << m.root().describe();
      EXPECT_EQ(dx, dx_ref);
    }
  }
}

TEST(ActivationLayer, RefusesParametersItCannotTake) {
  EXPECT_THROW((Activation{{ActivationKind::Clip, 2.0f, 1.0f}}), Error);
  EXPECT_THROW((Activation{{ActivationKind::Clip, NAN, 1.0f}}), Error);
  EXPECT_THROW((Activation{{ActivationKind::LeakyRelu, INFINITY, 0.0f}}), Error);
  EXPECT_THROW((Activation{{ActivationKind::HardSigmoid, 0.2f, NAN}}), Error);
  EXPECT_NO_THROW((Activation{{ActivationKind::Clip, -INFINITY, INFINITY}}));
  EXPECT_EQ((Activation{{ActivationKind::SiLU}}).kind(), "SiLU");
}

}  // namespace
}  // namespace engine::layers
