// SGD reference (torch.optim.SGD semantics): gradient check of the update map (p, g, buf) -> (p', buf')
// for every variant, steps computed by hand, bad options, float vs double.

#include "kernels/cpu/sgd.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/common/float_checks.h"
#include "tests/common/gradcheck.h"

namespace engine::cpu {
namespace {

constexpr std::int64_t kCount = 17;

// The update is linear in (p, g, buf). Its Jacobian, derived by hand from torch's algorithm (see sgd.h):
// with d = g + wd*p, c = d(buf')/d(d), e = d(buf')/d(buf), s_d = d(step)/d(d), s_b = d(step)/d(buf):
//   momentum == 0:        buf' = buf                  c = 0,        e = 1, step = d:           s_d = 1, s_b =
//   0 first step:           buf' = d                    c = 1,        e = 0 later steps:          buf' =
//   m*buf + (1-damp)*d   c = 1-damp,   e = m plain momentum:       step = buf'                 s_d = c, s_b =
//   e nesterov:             step = d + m*buf'           s_d = 1+m*c,  s_b = m*e
// and p' = p - lr*step. For the probe (a on p', b on buf') the vector-Jacobian product is
//   dp = a*(1 - lr*s_d*wd) + b*c*wd,   dg = -a*lr*s_d + b*c,   dbuf = -a*lr*s_b + b*e.
// The gradient check compares these coefficients with central differences of sgd_step itself, so a wrong
// coefficient in the implementation (a dampening on the first step, a missing weight decay) fails.
struct Variant {
  const char* name;
  SgdOptions options;
  bool first_step;
};

void check_gradients(const Variant& v) {
  SCOPED_TRACE(v.name);
  std::vector<double> p = testing::random_values(kCount, 81), g = testing::random_values(kCount, 82),
                      buf = testing::random_values(kCount, 83);
  const SgdOptions& o = v.options;
  testing::GradCheckCase gc{{{"p", &p}, {"g", &g}, {"buf", &buf}},
                            [&](std::uint64_t) {
                              std::vector<double> new_p = p, new_buf = buf;
                              sgd_step(o, new_p.data(), g.data(), new_buf.data(), kCount, v.first_step);
                              new_p.insert(new_p.end(), new_buf.begin(), new_buf.end());
                              return new_p;
                            },
                            [&](const std::vector<double>& dy, std::uint64_t) {
                              const double m = o.momentum, lr = o.lr, wd = o.weight_decay;
                              double c = 0, e = 1, s_d = 1, s_b = 0;
                              if (m != 0.0) {
                                c = v.first_step ? 1.0 : 1.0 - o.dampening;
                                e = v.first_step ? 0.0 : m;
                                s_d = o.nesterov ? 1.0 + m * c : c;
                                s_b = o.nesterov ? m * e : e;
                              }
                              std::vector<double> dp(kCount), dg(kCount), dbuf(kCount);
                              for (std::int64_t i = 0; i < kCount; ++i) {
                                const double a = dy[i], b = dy[kCount + i];
                                dp[i] = a * (1.0 - lr * s_d * wd) + b * c * wd;
                                dg[i] = -a * lr * s_d + b * c;
                                dbuf[i] = -a * lr * s_b + b * e;
                              }
                              return std::vector<std::vector<double>>{dp, dg, dbuf};
                            }};
  EXPECT_GRADIENTS_MATCH(gc);
}

// Weight decay and learning rate large enough that a dropped term is far above the 1e-6 tolerance.
TEST(SgdReference, GradientCheckWeightDecayNoMomentum) {
  check_gradients({"wd", {.lr = 0.5, .weight_decay = 0.1}, false});
}
TEST(SgdReference, GradientCheckMomentumFirstStep) {
  check_gradients(
      {"momentum first", {.lr = 0.5, .momentum = 0.9, .dampening = 0.3, .weight_decay = 0.1}, true});
}
TEST(SgdReference, GradientCheckMomentumDampeningLaterStep) {
  check_gradients(
      {"momentum later", {.lr = 0.5, .momentum = 0.9, .dampening = 0.3, .weight_decay = 0.1}, false});
}
TEST(SgdReference, GradientCheckNesterovFirstStep) {
  check_gradients(
      {"nesterov first", {.lr = 0.5, .momentum = 0.9, .weight_decay = 0.1, .nesterov = true}, true});
}
TEST(SgdReference, GradientCheckNesterovLaterStep) {
  check_gradients(
      {"nesterov later", {.lr = 0.5, .momentum = 0.9, .weight_decay = 0.1, .nesterov = true}, false});
}

// Runs three steps on one parameter p0 = 1 with gradients 0.5, -0.25, 1 (lr 0.1, weight decay 5e-4) and
// compares p and buf after each step with the hand computation.
void expect_steps(const SgdOptions& o, const double (&expected_p)[3], const double (&expected_buf)[3]) {
  const double grads[3] = {0.5, -0.25, 1.0};
  double p = 1.0, buf = 0.0;
  for (int step = 0; step < 3; ++step) {
    sgd_step(o, &p, &grads[step], &buf, 1, /*first_step=*/step == 0);
    EXPECT_NEAR(p, expected_p[step], 1e-15) << "step " << step + 1;
    if (o.momentum != 0.0) {
      EXPECT_NEAR(buf, expected_buf[step], 1e-15) << "step " << step + 1;
    }
  }
}

TEST(SgdReference, KnownValuesMomentum) {
  // momentum 0.9, dampening 0, weight decay 5e-4, lr 0.1; d = g + 5e-4 * p.
  // 1: d = 0.5 + 0.0005                   = 0.5005;           buf = d = 0.5005;                p = 1 -
  // 0.05005 = 0.94995 2: d = -0.25 + 5e-4 * 0.94995         = -0.249525025;     buf = 0.9*0.5005 + d =
  // 0.200924975
  //                                                           p = 0.94995 - 0.0200924975 = 0.9298575025
  // 3: d = 1 + 5e-4 * 0.9298575025        = 1.00046492875125; buf = 0.9*0.200924975 + d = 1.18129740625125
  //                                                           p = 0.9298575025 - 0.118129740625125 =
  //                                                           0.811727761874875
  expect_steps({.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4}, {0.94995, 0.9298575025, 0.811727761874875},
               {0.5005, 0.200924975, 1.18129740625125});
}

TEST(SgdReference, KnownValuesNesterov) {
  // Same, nesterov: step = d + 0.9 * buf.
  // 1: d = 0.5005; buf = 0.5005; step = 1.9 * 0.5005 = 0.95095;          p = 1 - 0.095095 = 0.904905
  // 2: d = -0.25 + 5e-4 * 0.904905 = -0.2495475475; buf = 0.45045 + d = 0.2009024525
  //    step = d + 0.9 * buf = -0.2495475475 + 0.18081220725 = -0.06873534025; p = 0.904905 + 0.006873534025 =
  //    0.911778534025
  // 3: d = 1 + 5e-4 * 0.911778534025 = 1.0004558892670125; buf = 0.9 * 0.2009024525 + d = 1.1812680965170125
  //    step = d + 0.9 * buf = 2.0635971761323238;                        p = 0.911778534025 -
  //    0.20635971761323238
  //                                                                        = 0.7054188164117676
  expect_steps({.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = true},
               {0.904905, 0.911778534025, 0.7054188164117676}, {0.5005, 0.2009024525, 1.1812680965170125});
}

TEST(SgdReference, KnownValuesDampeningSkippedOnFirstStep) {
  // torch quirk: the first step sets buf = d WITHOUT the (1 - dampening) factor. dampening 0.1:
  // 1: buf = 0.5005 (not 0.45045);       p = 0.94995
  // 2: d = -0.249525025; buf = 0.9*0.5005 + 0.9*d = 0.45045 - 0.2245725225 = 0.2258774775; p = 0.92736225225
  // 3: d = 1 + 5e-4 * 0.92736225225 = 1.000463681126125; buf = 0.9*0.2258774775 + 0.9*d = 1.1037070427635125
  //    p = 0.92736225225 - 0.11037070427635125 = 0.8169915479736487
  expect_steps({.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .weight_decay = 5e-4},
               {0.94995, 0.92736225225, 0.8169915479736487}, {0.5005, 0.2258774775, 1.1037070427635125});
}

TEST(SgdReference, KnownValuesNoMomentumLeavesBufferAlone) {
  // Plain SGD with weight decay: p -= 0.1 * (g + 5e-4 p).
  // 1: p = 1 - 0.1 * 0.5005 = 0.94995;  2: p = 0.94995 + 0.0249525025 = 0.9749025025
  // 3: p = 0.9749025025 - 0.1 * (1 + 5e-4 * 0.9749025025) = 0.874853757374875
  expect_steps({.lr = 0.1, .weight_decay = 5e-4}, {0.94995, 0.9749025025, 0.874853757374875}, {0, 0, 0});
  // The buffer may be null without momentum.
  double p = 1.0;
  const double g = 0.5;
  sgd_step(SgdOptions{.lr = 0.1}, &p, &g, static_cast<double*>(nullptr), 1, true);
  EXPECT_EQ(p, 0.95);
}

std::string error_of(const SgdOptions& o) {
  try {
    o.validate();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SgdReference, RejectsBadOptions) {
  EXPECT_NE(error_of({.lr = 0.1, .nesterov = true}).find("nesterov"), std::string::npos);
  EXPECT_NE(error_of({.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true}).find("dampening"),
            std::string::npos);
  EXPECT_NE(error_of({.lr = -0.1}).find("learning rate"), std::string::npos);
  EXPECT_NE(error_of({.lr = 0.1, .momentum = -0.9}).find("momentum"), std::string::npos);
  EXPECT_NE(error_of({.lr = 0.1, .weight_decay = -1e-4}).find("weight_decay"), std::string::npos);
  EXPECT_EQ(error_of({.lr = 0.1, .momentum = 0.9, .nesterov = true}), "(no error)");
  // sgd_step validates too, and wants a buffer when momentum is on.
  double p = 1.0, g = 1.0;
  EXPECT_THROW(sgd_step(SgdOptions{.lr = 0.1, .nesterov = true}, &p, &g, &g, 1, true), Error);
  EXPECT_THROW(
      sgd_step(SgdOptions{.lr = 0.1, .momentum = 0.9}, &p, &g, static_cast<double*>(nullptr), 1, true),
      Error);
}

TEST(SgdReference, FloatMatchesDouble) {
  // One step from the same float-representable p, g, buf: identical double arithmetic, then p' and buf' are
  // each rounded once to float, so |float - double| <= 2^-24 |double|.
  const std::vector<double> p0 = testing::random_values(kCount, 84), g0 = testing::random_values(kCount, 85),
                            b0 = testing::random_values(kCount, 86);
  for (const bool nesterov : {false, true}) {
    const SgdOptions o{.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = nesterov};
    std::vector<float> pf(p0.begin(), p0.end()), gf(g0.begin(), g0.end()), bf(b0.begin(), b0.end());
    std::vector<double> pd(pf.begin(), pf.end()), gd(gf.begin(), gf.end()), bd(bf.begin(), bf.end());
    sgd_step(o, pf.data(), gf.data(), bf.data(), kCount, false);
    sgd_step(o, pd.data(), gd.data(), bd.data(), kCount, false);
    testing::expect_rounded_once(pf, pd, "param");
    testing::expect_rounded_once(bf, bd, "momentum buffer");
  }
}

}  // namespace
}  // namespace engine::cpu
