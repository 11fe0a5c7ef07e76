#pragma once
// Learning-rate schedules, changed once per EPOCH (every step of epoch e uses lr(e); e counts from 0), as the
// usual CIFAR/ImageNet recipes step a torch scheduler once at the end of each epoch.
//
//   lr(e) = base_lr * warmup(e) * main(e)
//
//   warmup(e) = (e + 1) / W  for e < W = warmup_epochs, else 1        (linear, reaching base_lr at epoch W-1)
//   main(e):
//     constant  1
//     step      gamma ^ floor(e / N)              one --step-epochs value N  (torch StepLR(step_size=N,
//     gamma))
//               gamma ^ #{m in milestones : m <= e}   several values   (torch MultiStepLR(milestones, gamma))
//     cosine    (1 + cos(pi * e / T)) / 2,  T = total epochs           (torch CosineAnnealingLR(T_max=T,
//                                                                        eta_min=0))
//
// The torch sequence for the same settings is exactly
//   sched = LambdaLR(opt, lambda e: warmup(e) * main(e)); ... sched.step() after each epoch
// (LambdaLR computes base_lr * factor(e), the same double arithmetic as here). Without warmup it equals
// StepLR / MultiStepLR / CosineAnnealingLR to the last bits: those update recursively (lr *= gamma; the
// cosine ratio formula), which can round differently by an ulp or so; tests/cpu/lr_schedule_test.cpp checks
// both against the formulas.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace engine::optim {

enum class ScheduleKind { Constant, Step, Cosine };

// "constant", "step", "cosine"; anything else throws engine::Error naming the text.
ScheduleKind parse_schedule_kind(std::string_view text);
std::string_view schedule_kind_name(ScheduleKind kind);

struct LrScheduleConfig {
  ScheduleKind kind = ScheduleKind::Constant;
  double base_lr = 0.1;
  std::vector<std::int64_t> step_epochs =
      {};  // step: one value = a period, several = milestones (increasing)
  double gamma = 0.1;
  std::int64_t warmup_epochs = 0;
  std::int64_t total_epochs = 1;  // cosine's T

  // Throws engine::Error naming the bad field: base_lr < 0 or NaN, gamma <= 0, step without --step-epochs,
  // a step value <= 0, milestones not increasing, warmup_epochs < 0, total_epochs < 1.
  void validate() const;
};

class LrSchedule {
 public:
  explicit LrSchedule(LrScheduleConfig config);

  double lr(std::int64_t epoch) const;  // the learning rate of every step of `epoch` (0-based)
  const LrScheduleConfig& config() const { return config_; }

 private:
  double main_factor(std::int64_t epoch) const;
  LrScheduleConfig config_;
};

// "30,60" -> {30, 60}. Throws engine::Error naming the text for anything but positive integers.
std::vector<std::int64_t> parse_epoch_list(std::string_view text);

}  // namespace engine::optim
