#pragma once
// RecordingObserver: keeps what a run reported (apps/train/run_observer.h), copied, in order. The tests that
// check a run's numbers attach one and read them here, not from the printed lines.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "apps/train/run_observer.h"

namespace engine::apps {

class RecordingObserver final : public RunObserver {
 public:
  struct Step {
    std::int64_t epoch = 0, batch = 0, steps = 0, samples = 0, optimizer_steps = 0;
    bool ends_step = false;
    std::optional<float> loss;
  };
  struct Epoch {
    EpochMetrics metrics;
    std::int64_t optimizer_steps = 0;
    std::vector<float> step_losses;
    bool stopping = false;
  };

  std::int64_t run_starts = 0, step_begins = 0;
  std::int64_t start_epoch = -1, start_optimizer_steps = -1;
  bool resumed = false;
  std::vector<EpochStart> epoch_starts;
  std::vector<Step> steps;
  std::vector<EvaluationEnd> evaluations;
  std::vector<Epoch> epochs;
  std::vector<CheckpointWritten> checkpoints;
  std::vector<StopEvent> stops;
  std::optional<RunEnd> end;

  void run_start(const RunStart& e) override {
    ++run_starts;
    start_epoch = e.start_epoch;
    start_optimizer_steps = e.optimizer_steps;
    resumed = e.resumed;
  }
  void epoch_start(const EpochStart& e) override { epoch_starts.push_back(e); }
  void step_begin(const StepBegin& /*e*/) override { ++step_begins; }
  void step_end(const StepEnd& e) override {
    steps.push_back({e.epoch, e.batch, e.steps, e.samples, e.optimizer_steps, e.ends_step, e.loss});
  }
  void evaluation_end(const EvaluationEnd& e) override { evaluations.push_back(e); }
  void epoch_end(const EpochEnd& e) override {
    epochs.push_back({e.metrics, e.optimizer_steps,
                      std::vector<float>(e.step_losses.begin(), e.step_losses.end()), e.stopping});
  }
  void checkpoint_written(const CheckpointWritten& e) override { checkpoints.push_back(e); }
  void stop_requested(const StopEvent& e) override { stops.push_back(e); }
  void run_end(const RunEnd& e) override { end = e; }
};

}  // namespace engine::apps
