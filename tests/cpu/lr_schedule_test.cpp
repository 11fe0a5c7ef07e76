// LR schedules (optim/lr_schedule.h) against values computed by hand from PyTorch's formulas, and against a
// replay of torch's own recursive CosineAnnealingLR / MultiStepLR updates (torch/optim/lr_scheduler.py).
//
//   StepLR(step_size=N):        lr_e = base * gamma ** (e // N)
//   MultiStepLR(milestones):    lr_e = base * gamma ** bisect_right(milestones, e)
//   CosineAnnealingLR(T, 0):    lr_e = base * (1 + cos(pi * e / T)) / 2
//   warmup W (LambdaLR):        lr_e = base * min(1, (e + 1) / W) * main_factor(e)

#include "optim/lr_schedule.h"

#include <cmath>
#include <numbers>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"

namespace engine::optim {
namespace {

LrSchedule make(ScheduleKind kind, double base, std::vector<std::int64_t> steps, double gamma,
                std::int64_t warmup, std::int64_t total) {
  return LrSchedule(LrScheduleConfig{.kind = kind,
                                     .base_lr = base,
                                     .step_epochs = std::move(steps),
                                     .gamma = gamma,
                                     .warmup_epochs = warmup,
                                     .total_epochs = total});
}

TEST(LrSchedule, ConstantKeepsTheBaseRate) {
  const LrSchedule s = make(ScheduleKind::Constant, 0.1, {}, 0.1, 0, 5);
  for (int e = 0; e < 5; ++e) EXPECT_EQ(s.lr(e), 0.1);
}

TEST(LrSchedule, OneStepValueIsStepLR) {
  const LrSchedule s = make(ScheduleKind::Step, 0.1, {30}, 0.1, 0, 90);
  EXPECT_DOUBLE_EQ(s.lr(0), 0.1);
  EXPECT_DOUBLE_EQ(s.lr(29), 0.1);
  EXPECT_DOUBLE_EQ(s.lr(30), 0.01);  // 0.1 * 0.1^1
  EXPECT_DOUBLE_EQ(s.lr(59), 0.01);
  EXPECT_DOUBLE_EQ(s.lr(60), 0.001);  // 0.1 * 0.1^2: a period, it keeps decaying
  EXPECT_DOUBLE_EQ(s.lr(89), 0.001);
}

TEST(LrSchedule, SeveralStepValuesAreMultiStepLRMilestones) {
  const LrSchedule s = make(ScheduleKind::Step, 0.1, {30, 60}, 0.1, 0, 100);
  EXPECT_DOUBLE_EQ(s.lr(29), 0.1);
  EXPECT_DOUBLE_EQ(s.lr(30), 0.01);
  EXPECT_DOUBLE_EQ(s.lr(59), 0.01);
  EXPECT_DOUBLE_EQ(s.lr(60), 0.001);
  EXPECT_DOUBLE_EQ(s.lr(99), 0.001);  // no third milestone: no more decay
  // torch's MultiStepLR multiplies the group's lr by gamma at each milestone: the same to the last bits.
  double torch_lr = 0.1;
  for (int e = 0; e < 100; ++e) {
    if (e == 30 || e == 60) torch_lr *= 0.1;
    EXPECT_NEAR(s.lr(e), torch_lr, 1e-15 * torch_lr) << "epoch " << e;
  }
}

TEST(LrSchedule, CosineIsCosineAnnealingLRWithTmaxTheEpochs) {
  const LrSchedule s = make(ScheduleKind::Cosine, 0.1, {}, 0.1, 0, 10);
  EXPECT_DOUBLE_EQ(s.lr(0), 0.1);
  EXPECT_DOUBLE_EQ(s.lr(2),
                   0.09045084971874737);  // 0.1 * (1 + cos(pi/5)) / 2, cos(pi/5) = 0.8090169943749475
  EXPECT_DOUBLE_EQ(s.lr(5), 0.05);        // 0.1 * (1 + cos(pi/2)) / 2
  EXPECT_DOUBLE_EQ(s.lr(9), 0.002447174185242325);  // 0.1 * (1 + cos(9pi/10)) / 2, cos = -0.9510565162951535
  // torch's recursive form: lr_e = (1 + cos(pi e/T)) / (1 + cos(pi (e-1)/T)) * lr_{e-1}.
  double torch_lr = 0.1;
  for (int e = 1; e < 10; ++e) {
    torch_lr *= (1 + std::cos(std::numbers::pi * e / 10)) / (1 + std::cos(std::numbers::pi * (e - 1) / 10));
    EXPECT_NEAR(s.lr(e), torch_lr, 1e-14 * torch_lr) << "epoch " << e;
  }
}

TEST(LrSchedule, LinearWarmupMultipliesTheMainSchedule) {
  const LrSchedule s = make(ScheduleKind::Cosine, 0.1, {}, 0.1, 5, 10);
  EXPECT_DOUBLE_EQ(s.lr(0), 0.02);                 // 0.1 * 1/5 * 1
  EXPECT_DOUBLE_EQ(s.lr(2), 0.05427050983124842);  // 0.1 * 3/5 * 0.9045084971874737
  EXPECT_DOUBLE_EQ(s.lr(4), 0.1 * (1 + std::cos(std::numbers::pi * 4 / 10)) / 2);  // warmup factor 5/5 = 1
  EXPECT_DOUBLE_EQ(s.lr(5), 0.05);
  const LrSchedule c = make(ScheduleKind::Constant, 0.4, {}, 0.1, 4, 10);
  EXPECT_DOUBLE_EQ(c.lr(0), 0.1);
  EXPECT_DOUBLE_EQ(c.lr(1), 0.2);
  EXPECT_DOUBLE_EQ(c.lr(3), 0.4);
  EXPECT_DOUBLE_EQ(c.lr(7), 0.4);
}

TEST(LrSchedule, RejectsBadSettingsByFlag) {
  auto message = [](const LrScheduleConfig& c) {
    try {
      c.validate();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto config = [](auto&& change) {
    LrScheduleConfig c;
    change(c);
    return c;
  };
  EXPECT_NE(message(config([](auto& c) { c.kind = ScheduleKind::Step; })).find("--step-epochs"),
            std::string::npos);
  EXPECT_NE(message(config([](auto& c) { c.base_lr = -1; })).find("--lr"), std::string::npos);
  EXPECT_NE(message(config([](auto& c) { c.base_lr = std::nan(""); })).find("--lr"), std::string::npos);
  EXPECT_NE(message(config([](auto& c) { c.gamma = 0; })).find("--gamma"), std::string::npos);
  EXPECT_NE(message(config([](auto& c) {
              c.kind = ScheduleKind::Step;
              c.step_epochs = {60, 30};
            })).find("not increasing"),
            std::string::npos);
  EXPECT_NE(message(config([](auto& c) { c.total_epochs = 0; })).find("--epochs"), std::string::npos);
  EXPECT_EQ(parse_epoch_list("30,60"), (std::vector<std::int64_t>{30, 60}));
  EXPECT_THROW(parse_epoch_list("30,,60"), Error);
  EXPECT_THROW(parse_epoch_list("abc"), Error);
  EXPECT_THROW(parse_epoch_list("-3"), Error);
  EXPECT_THROW(parse_schedule_kind("linear"), Error);
}

// Per-step schedules. The expected sequences were printed by torch 2 (/work/torch-venv) driving an SGD
// optimizer in float64 and stepping the scheduler after every optimizer step (S = 7 steps per epoch,
// 3 epochs, T = 21 steps):
//   triangle: LambdaLR(opt, lambda t: np.interp(t, [0, floor(0.23*T), T], [0.2, 1, 0.07])), base 0.5
//   cosine:   CosineAnnealingLR(opt, T_max=T), base 0.1 (torch's recursive form: within 1e-15 relative)
//   step:     StepLR(opt, step_size=2*S, gamma=0.1), base 0.1
LrScheduleConfig per_step(ScheduleKind kind, double base) {
  LrScheduleConfig c;
  c.kind = kind;
  c.base_lr = base;
  c.total_epochs = 3;
  c.unit = ScheduleUnit::Step;
  c.steps_per_epoch = 7;
  return c;
}

TEST(LrSchedulePerStep, TriangleIsAirbenchsOneCycleAsTorchLambdaLR) {
  const std::vector<double> torch_lr = {0.1,
                                        0.2,
                                        0.30000000000000004,
                                        0.4,
                                        0.5,
                                        0.4726470588235294,
                                        0.44529411764705884,
                                        0.41794117647058826,
                                        0.3905882352941177,
                                        0.3632352941176471,
                                        0.33588235294117647,
                                        0.3085294117647059,
                                        0.2811764705882353,
                                        0.2538235294117647,
                                        0.22647058823529415,
                                        0.19911764705882357,
                                        0.17176470588235293,
                                        0.14441176470588235,
                                        0.11705882352941177,
                                        0.08970588235294119,
                                        0.06235294117647061};
  const LrSchedule s(per_step(ScheduleKind::Triangle, 0.5));
  ASSERT_EQ(torch_lr.size(), 21u);
  // np.interp and our two-segment form round differently by an ulp or two of the factor.
  for (std::size_t t = 0; t < torch_lr.size(); ++t) {
    EXPECT_NEAR(s.lr_at_step(static_cast<std::int64_t>(t)), torch_lr[t], 4e-16 * 0.5) << "step " << t;
  }
  // The knots by hand: P = floor(0.23 * 21) = 4; factor 0.2 at 0, 1 at P, 0.07 at T (and after).
  EXPECT_DOUBLE_EQ(s.lr_at_step(0), 0.5 * 0.2);
  EXPECT_DOUBLE_EQ(s.lr_at_step(4), 0.5);
  EXPECT_DOUBLE_EQ(s.lr_at_step(12), 0.5 * (1.0 + (0.07 - 1.0) * 8.0 / 17.0));
  EXPECT_DOUBLE_EQ(s.lr_at_step(21), 0.5 * 0.07);
  EXPECT_DOUBLE_EQ(s.lr_at_step(99), 0.5 * 0.07);
  EXPECT_DOUBLE_EQ(s.lr(1), s.lr_at_step(7));  // per step, lr(e) is the rate of the epoch's first step
}

TEST(LrSchedulePerStep, TriangleWithItsPeakAtAnEndHasOneSegment) {
  LrScheduleConfig c = per_step(ScheduleKind::Triangle, 1.0);
  c.triangle_peak = 0.0;  // no rise: 1 at step 0, then down
  EXPECT_DOUBLE_EQ(LrSchedule(c).lr_at_step(0), 1.0);
  EXPECT_DOUBLE_EQ(LrSchedule(c).lr_at_step(21), 0.07);
  c.triangle_peak = 1.0;  // no fall: the peak is the last knot
  EXPECT_DOUBLE_EQ(LrSchedule(c).lr_at_step(0), 0.2);
  EXPECT_DOUBLE_EQ(LrSchedule(c).lr_at_step(20), 0.2 + 0.8 * 20.0 / 21.0);
  EXPECT_DOUBLE_EQ(LrSchedule(c).lr_at_step(21), 0.07);
}

TEST(LrSchedulePerStep, CosineIsCosineAnnealingLROverTheSteps) {
  const std::vector<double> torch_lr = {0.1,
                                        0.09944154131125643,
                                        0.09777864028930704,
                                        0.09504844339512096,
                                        0.09131193871579975,
                                        0.08665259359149131,
                                        0.08117449009293667,
                                        0.075,
                                        0.06826705121831975,
                                        0.06112604669781571,
                                        0.053736504679321215,
                                        0.0462634953206788,
                                        0.03887395330218428,
                                        0.031732948781680245,
                                        0.025000000000000012,
                                        0.018825509907063328,
                                        0.013347406408508684,
                                        0.008688061284200249,
                                        0.004951556604879048,
                                        0.002221359710692972,
                                        0.0005584586887435739};
  const LrSchedule s(per_step(ScheduleKind::Cosine, 0.1));
  for (std::size_t t = 0; t < torch_lr.size(); ++t) {
    // torch's recursion accumulates a relative rounding error of ~1e-16 per step; 21 steps stay under 1e-14.
    EXPECT_NEAR(s.lr_at_step(static_cast<std::int64_t>(t)), torch_lr[t], 1e-14 * torch_lr[t]) << "step " << t;
  }
}

TEST(LrSchedulePerStep, StepDecaysFallOnEpochBoundaries) {
  LrScheduleConfig c = per_step(ScheduleKind::Step, 0.1);
  c.step_epochs = {2};
  const LrSchedule s(c);
  for (std::int64_t t = 0; t < 21; ++t) {
    const double torch_lr = t < 14 ? 0.1 : 0.010000000000000002;  // StepLR(step_size=14)
    EXPECT_NEAR(s.lr_at_step(t), torch_lr, 1e-17) << "step " << t;
  }
}

TEST(LrSchedulePerStep, WarmupRisesEveryStep) {
  LrScheduleConfig c = per_step(ScheduleKind::Constant, 0.7);
  c.warmup_epochs = 1;  // W = 7 steps: (t + 1) / 7
  const LrSchedule s(c);
  for (std::int64_t t = 0; t < 7; ++t) EXPECT_DOUBLE_EQ(s.lr_at_step(t), 0.7 * (t + 1) / 7.0) << t;
  EXPECT_DOUBLE_EQ(s.lr_at_step(7), 0.7);
}

TEST(LrSchedulePerStep, UnitEpochHoldsTheRateThroughTheEpoch) {
  LrScheduleConfig c = per_step(ScheduleKind::Cosine, 0.1);
  c.unit = ScheduleUnit::Epoch;
  const LrSchedule s(c);
  for (std::int64_t t = 0; t < 21; ++t) EXPECT_EQ(s.lr_at_step(t), s.lr(t / 7)) << t;
  EXPECT_NE(s.lr_at_step(6), s.lr_at_step(7));
}

TEST(LrSchedulePerStep, RejectsBadTriangleAndUnit) {
  LrScheduleConfig c = per_step(ScheduleKind::Triangle, 0.1);
  c.triangle_peak = 1.5;
  EXPECT_THROW(c.validate(), Error);
  c.triangle_peak = 0.5;
  c.triangle_start = -0.1;
  EXPECT_THROW(c.validate(), Error);
  c.triangle_start = 0.2;
  c.steps_per_epoch = 0;
  EXPECT_THROW(c.validate(), Error);
  EXPECT_THROW(parse_schedule_unit("batch"), Error);
  EXPECT_EQ(parse_schedule_unit("step"), ScheduleUnit::Step);
  EXPECT_EQ(parse_schedule_kind("triangle"), ScheduleKind::Triangle);
}

}  // namespace
}  // namespace engine::optim
