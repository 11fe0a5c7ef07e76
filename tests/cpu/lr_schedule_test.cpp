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
  EXPECT_NE(message(config([](auto& c) { c.base_lr = NAN; })).find("--lr"), std::string::npos);
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

}  // namespace
}  // namespace engine::optim
