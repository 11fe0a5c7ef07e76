#pragma once
// RunClock: a run's timings, taken from its events (apps/train/run_observer.h) on the host's steady clock.
// The one way a training run and a benchmark time themselves: the Trainer observes its own run with one
// (EpochMetrics' seconds, images/s and elapsed_seconds: the log line, --metrics, time_to_accuracy.sh), and
// train_bench drives one through the same events around its timed steps.
//
//   epoch seconds     from EpochStart to EpochTrained (the steps' work finished on the device)
//   elapsed seconds   from RunStart to the newest EvaluationEnd

#include <chrono>
#include <cstdint>

#include "apps/train/run_observer.h"

namespace engine::apps {

class RunClock final : public RunObserver {
 public:
  using Clock = std::chrono::steady_clock;

  void run_start(const RunStart& /*e*/) override { run_start_ = Clock::now(); }
  void epoch_start(const EpochStart& /*e*/) override { epoch_start_ = Clock::now(); }
  void epoch_trained(const EpochTrained& e) override {
    epoch_seconds_ = since(epoch_start_);
    epoch_samples_ = e.samples;
  }
  void evaluation_end(const EvaluationEnd& /*e*/) override { elapsed_seconds_ = since(run_start_); }

  // The newest epoch's training time, and its samples (this process's, since the epoch's start) per second.
  double epoch_seconds() const { return epoch_seconds_; }
  double images_per_second() const {
    return static_cast<double>(epoch_samples_) / (epoch_seconds_ > 1e-9 ? epoch_seconds_ : 1e-9);
  }
  // From the run's start to the end of its newest evaluation.
  double elapsed_seconds() const { return elapsed_seconds_; }

 private:
  static double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

  Clock::time_point run_start_ = Clock::now(), epoch_start_ = Clock::now();
  double epoch_seconds_ = 0.0, elapsed_seconds_ = 0.0;
  std::int64_t epoch_samples_ = 0;
};

}  // namespace engine::apps
