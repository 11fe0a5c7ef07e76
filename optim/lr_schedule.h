#pragma once
// Learning-rate schedules, changed once per EPOCH (unit epoch, the default: every step of epoch e uses lr(e);
// e counts from 0), as the usual CIFAR/ImageNet recipes step a torch scheduler once at the end of each epoch,
// or once per optimizer STEP (unit step: step t of the run, counted from 0 over all epochs, uses lr(t)).
//
//   lr(x) = base_lr * warmup(x) * main(x)       x = the epoch (unit epoch) or the step (unit step)
//
// Per step, every length given in epochs becomes S = steps_per_epoch times as many steps: W =
// warmup_epochs*S, N = step_epochs*S (so step decays still fall on epoch boundaries), T = total_epochs*S. A
// torch LambdaLR(opt, lambda t: warmup(t) * main(t)) stepped after every optimizer step gives the same
// doubles.
//
//   warmup(e) = (e + 1) / W  for e < W = warmup_epochs, else 1        (linear, reaching base_lr at epoch W-1)
//   main(e):
//     constant  1
//     step      gamma ^ floor(e / N)              one --step-epochs value N  (torch StepLR(step_size=N,
//     gamma))
//               gamma ^ #{m in milestones : m <= e}   several values   (torch MultiStepLR(milestones, gamma))
//     cosine    (1 + cos(pi * e / T)) / 2,  T = total epochs           (torch CosineAnnealingLR(T_max=T,
//                                                                        eta_min=0))
//     triangle  piecewise linear through (0, start), (P, 1), (T, end), P = floor(peak * T)   (airbench94's
//               one-cycle: a linear rise to base_lr at the fraction `peak` of the run, then a linear fall to
//               end * base_lr at the last step; airbench94 uses start 0.2, peak 0.23, end 0.07, per step)
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

enum class ScheduleKind { Constant, Step, Cosine, Triangle };
enum class ScheduleUnit { Epoch, Step };

// "constant", "step", "cosine", "triangle"; anything else throws engine::Error naming the text.
ScheduleKind parse_schedule_kind(std::string_view text);
std::string_view schedule_kind_name(ScheduleKind kind);
// "epoch", "step"; anything else throws engine::Error naming the text.
ScheduleUnit parse_schedule_unit(std::string_view text);

struct LrScheduleConfig {
  ScheduleKind kind = ScheduleKind::Constant;
  double base_lr = 0.1;
  std::vector<std::int64_t> step_epochs =
      {};  // step: one value = a period, several = milestones (increasing)
  double gamma = 0.1;
  std::int64_t warmup_epochs = 0;
  std::int64_t total_epochs = 1;  // cosine's and triangle's T
  ScheduleUnit unit = ScheduleUnit::Epoch;
  std::int64_t steps_per_epoch = 1;  // optimizer steps in an epoch; used by unit step
  double triangle_start = 0.2;       // triangle: the factor at x = 0
  double triangle_peak = 0.23;       // triangle: where (a fraction of T) the factor is 1
  double triangle_end = 0.07;        // triangle: the factor at x = T

  // Throws engine::Error naming the bad field: base_lr < 0 or NaN, gamma <= 0, step without --step-epochs,
  // a step value <= 0, milestones not increasing, warmup_epochs < 0, total_epochs < 1, steps_per_epoch < 1,
  // a triangle start or end < 0 or a peak outside [0, 1].
  void validate() const;
};

class LrSchedule {
 public:
  explicit LrSchedule(LrScheduleConfig config);

  // The learning rate of every step of `epoch` (0-based) under unit epoch; under unit step, the rate of the
  // epoch's first step.
  double lr(std::int64_t epoch) const;
  // The learning rate of optimizer step `step` (0-based, counted over the whole run), whatever the unit:
  // under unit epoch it is lr(step / steps_per_epoch).
  double lr_at_step(std::int64_t step) const;
  const LrScheduleConfig& config() const { return config_; }

 private:
  // x counts epochs or steps; `per` = steps per unit of x in the lengths given in epochs (1 or S).
  double at(std::int64_t x, std::int64_t per) const;
  double main_factor(std::int64_t x, std::int64_t per) const;
  LrScheduleConfig config_;
};

// "30,60" -> {30, 60}. Throws engine::Error naming the text for anything but positive integers.
std::vector<std::int64_t> parse_epoch_list(std::string_view text);

}  // namespace engine::optim
