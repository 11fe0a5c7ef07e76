#pragma once
// RunObserver: what a training run reports, as it happens, to whoever listens, and nothing more. The Trainer
// calls its list of observers (RunObservers) at each point below and does nothing else with outputs: the
// epoch line, the progress bar, --metrics, --plot, --tensorboard, --trace, --confusion/--misclassified and
// the checkpoint policy are each an observer (apps/train/observers.h), attached by the program from its flags
// (apps/train/run_outputs.h); a test attaches a RecordingObserver (apps/train/recording_observer.h).
//
// Every rank calls its own list at the same points; rank 0's outputs are attached on rank 0 alone. An event
// refers to the run's state: an observer copies what it keeps. Exceptions thrown by an observer end the run.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "apps/train/epoch_log.h"
#include "data/loader.h"

namespace engine::apps {

struct TrainConfig;

// The run begins: the setup is done (data, model, a resumed checkpoint), no step has run. --eval-only too.
struct RunStart {
  const TrainConfig& config;
  std::int64_t start_epoch = 0;      // epochs done before this run (--resume)
  std::int64_t optimizer_steps = 0;  // optimizer steps done before this run
  bool resumed = false;              // the run continues a checkpoint's training
  bool eval_only = false;            // --eval-only: one evaluation, no epoch
};

// An epoch's training steps begin.
struct EpochStart {
  std::int64_t epoch = 0;    // 0-based
  std::int64_t first = 0;    // the batch this run starts the epoch at (> 0: a mid-epoch resume)
  std::int64_t batches = 0;  // the epoch's batches, `first` included
};

// Before a batch's step (eager or CUDA graph), before its batch is drawn.
struct StepBegin {
  std::int64_t epoch = 0;
  std::int64_t batch = 0;            // the loader's batch of this run's share of the epoch, 0-based
  std::int64_t optimizer_steps = 0;  // done before this batch
  bool ends_step = false;            // the batch ends an optimizer step (--accumulate K: every K-th)
};

// After a batch's step.
struct StepEnd {
  std::int64_t epoch = 0;
  std::int64_t batch = 0;            // as StepBegin's
  std::int64_t steps = 0;            // the epoch's batches done (from its start, `first` counted)
  std::int64_t first = 0;            // as EpochStart's
  std::int64_t batches = 0;          // as EpochStart's
  std::int64_t samples = 0;          // the samples this process trained in the epoch since `first`
  std::int64_t optimizer_steps = 0;  // done, this batch's included
  bool ends_step = false;
  std::optional<float> loss;                // the batch's training loss, where it is on the host (the CPU)
  const data::Batch* batch_data = nullptr;  // the batch as the model saw it; null for a replayed graph
};

// An epoch's training steps are done and their work finished (the device synchronized): its training time
// ends here, before its evaluation.
struct EpochTrained {
  std::int64_t epoch = 0;
  std::int64_t steps = 0;    // as StepEnd's
  std::int64_t samples = 0;  // as StepEnd's
};

// After the evaluation of an epoch (or --eval-only's, or a finished run's on --resume): sums over every rank.
struct EvaluationEnd {
  std::int64_t epochs_done = 0;
  std::int64_t samples = 0;
  double loss = 0.0;      // mean test loss
  double accuracy = 0.0;  // percent
  double seconds = 0.0;
  bool alone = false;  // --eval-only: an evaluation without training
};

// After an epoch's evaluation: its metrics (Trainer::history()'s newest).
struct EpochEnd {
  const EpochMetrics& metrics;
  std::int64_t optimizer_steps = 0;    // done
  std::span<const float> step_losses;  // each of this run's batches of the epoch, in order (this rank's)
  bool stopping = false;               // a stop signal ends the run after this epoch
};

// A checkpoint file was written (rank 0).
struct CheckpointWritten {
  std::string path;
  std::int64_t epochs_done = 0;
  std::int64_t optimizer_steps = 0;
  bool mid_epoch = false;  // stepN.safetensors: inside an epoch
};

// Every rank agreed to stop (a stop signal): after this the run throws StopRequested.
struct StopEvent {
  std::int64_t epoch = 0;  // 0-based: the epoch in progress (mid_epoch) or just done
  std::int64_t optimizer_steps = 0;
  bool mid_epoch = false;
};

// The run ended: `completed` with its final test accuracy, or by an exception (a stop, a failure).
struct RunEnd {
  double test_acc = 0.0;  // percent
  bool completed = false;
};

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void run_start(const RunStart& /*e*/) {}
  virtual void epoch_start(const EpochStart& /*e*/) {}
  virtual void step_begin(const StepBegin& /*e*/) {}
  virtual void step_end(const StepEnd& /*e*/) {}
  virtual void epoch_trained(const EpochTrained& /*e*/) {}
  virtual void evaluation_end(const EvaluationEnd& /*e*/) {}
  virtual void epoch_end(const EpochEnd& /*e*/) {}
  virtual void checkpoint_written(const CheckpointWritten& /*e*/) {}
  virtual void stop_requested(const StopEvent& /*e*/) {}
  virtual void run_end(const RunEnd& /*e*/) {}
};

// The list the Trainer calls: each event goes to every observer, in the order they were attached.
class RunObservers final : public RunObserver {
 public:
  void attach(std::unique_ptr<RunObserver> observer) { list_.push_back(std::move(observer)); }

  void run_start(const RunStart& e) override;
  void epoch_start(const EpochStart& e) override;
  void step_begin(const StepBegin& e) override;
  void step_end(const StepEnd& e) override;
  void epoch_trained(const EpochTrained& e) override;
  void evaluation_end(const EvaluationEnd& e) override;
  void epoch_end(const EpochEnd& e) override;
  void checkpoint_written(const CheckpointWritten& e) override;
  void stop_requested(const StopEvent& e) override;
  void run_end(const RunEnd& e) override;

 private:
  std::vector<std::unique_ptr<RunObserver>> list_;
};

}  // namespace engine::apps
