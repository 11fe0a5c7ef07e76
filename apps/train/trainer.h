#pragma once
// Trainer: one process's training run, as cnn_train drives it. Its code, by concern: trainer.cpp (setup),
// trainer_epoch.cpp (the training steps of an epoch, CUDA graphs, stop votes), trainer_run.cpp (the epochs
// and evaluation), trainer_checkpoints.cpp (--resume, checkpoints), trainer_predictions.cpp (the test set's
// predictions). What a run reports goes to its observers (apps/train/run_observer.h), attached with attach():
// the loop calls them and knows no output.
//
//   setup (constructor)  device, data, model, optimizer, schedule, loaders; --resume/--eval-only checkpoint
//                        (--resume auto: the newest in --checkpoint-dir, apps/train/resume_auto.h; a
//                        checkpoint written mid-epoch continues at its sampler position). Every error here is
//                        bad input (cnn_train exits 2).
//   run()                for each epoch: sampler/augmentation epoch set; per batch: forward, loss, backward,
//                        and every --accumulate K batches an SGD step (each micro-batch's loss gradient
//                        scaled by 1/K, so the step sees the mean); the loss sum and correct count
//                        accumulate where the logits live and are read once per epoch; evaluation over every
//                        test sample exactly once; the observers told of each step, evaluation and epoch.
//                        Errors here are failures while running (exit 1); a NaN/Inf loss is NonFiniteLoss,
//                        naming the epoch and the step.
//   CUDA graphs          --cuda-graph (apps/train/cuda_graph_policy.h): after kCudaGraphWarmupSteps eager
//   steps the
//                        whole step (data kernel, forward, loss, backward, the reducer's all-reduces, SGD) is
//                        captured once (apps/train/training_graph.h) and replayed per step after publishing
//                        its StepState; the epoch's last partial batch is dropped. Where a step cannot be
//                        captured, eager steps with one log line saying why.
//   checkpoints          save_checkpoint(), when the checkpoint policy (an observer) asks; rank 0 writes
//   them:
//                        every --save-every N epochs and at the end (every epoch with
//                        --resume auto), on a stop, and mid-epoch every --save-every-steps K optimizer steps
//                        (stepS.safetensors: weights, momentum, dropout offset, the sampler's position and
//                        the epoch's partial loss and accuracy sums over all ranks; the previous one is
//                        removed).
//   stop signals         SIGTERM/SIGINT/SIGUSR1 (apps/train/stop_signal.h): after the step in progress the
//   ranks
//                        agree to stop (a one-number all-reduce after every optimizer step on the CPU, every
//                        kStopVoteSteps steps on a GPU, where it costs a host synchronization), rank 0 writes
//                        a mid-epoch checkpoint, and run() throws StopRequested.
//
// Data parallelism (apps/train/ddp.h, over dist/) enters through one interface, DataParallel, attached once
// the model is built, finalized and loaded: it is told where each backward stands, averages the gradients,
// makes the ranks agree before an evaluation, and sums the epoch totals. TrainConfig::world_size/rank shard
// the samplers; rank 0 alone saves, and its outputs are attached on rank 0 alone. Nothing else in the loop
// knows about processes.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "apps/train/checkpoint_lock.h"
#include "apps/train/cuda_graph_policy.h"
#include "apps/train/epoch_log.h"
#include "apps/train/run_clock.h"
#include "apps/train/run_observer.h"
#include "apps/train/test_time_augmentation.h"
#include "apps/train/train_config.h"
#include "apps/train/train_data.h"
#include "apps/train/train_device.h"
#include "apps/train/training_graph.h"
#include "core/error.h"
#include "core/trace.h"
#include "data/loader.h"
#include "layers/model.h"
#include "layers/models.h"
#include "layers/softmax_cross_entropy.h"
#include "optim/checkpoint.h"
#include "optim/ema.h"
#include "optim/lr_schedule.h"
#include "optim/param_groups.h"
#include "optim/sgd.h"

namespace engine::apps {

// The sums behind an epoch's loss and accuracy: over this process's samples until reduce_totals runs.
struct EpochTotals {
  double loss_sum = 0.0;
  std::int64_t correct = 0;
  std::int64_t samples = 0;
};

inline EpochTotals operator+(const EpochTotals& a, const EpochTotals& b) {
  return {a.loss_sum + b.loss_sum, a.correct + b.correct, a.samples + b.samples};
}

// A NaN or Inf training loss: the run stops (exit 1). An engine::Error (its message starts with file:line)
// so a caller that catches the engine's errors catches it too; a type of its own for a caller that must
// tell it apart (the run's data were fine, its numerics were not).
class NonFiniteLoss : public Error {
 public:
  using Error::Error;
};

// A stop signal ended the run after the checkpoint was written (cnn_train exits 128 + signal).
class StopRequested : public std::runtime_error {
 public:
  StopRequested(const std::string& what, int signal) : std::runtime_error(what), signal_(signal) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

// GPU ranks vote on stopping once per this many optimizer steps (CPU ranks after every step).
inline constexpr std::int64_t kStopVoteSteps = 16;

// What the Trainer asks of data parallelism. Every call is made on every rank at the same point of the loop.
class DataParallel {
 public:
  virtual ~DataParallel() = default;
  // Before each backward: whether it ends an optimizer step (false for the first K-1 micro-batches of
  // --accumulate K, whose gradients stay local).
  virtual void before_backward(bool ends_step) = 0;
  // After each backward: the model's gradients are this step's averaged ones (when ends_step) for the work
  // queued from now on.
  virtual void after_backward() = 0;
  // After a step that failed between before_backward and after_backward (a CUDA graph capture that ended
  // inside it): the step's partial communication state is dropped, so the step can run again eagerly.
  virtual void abandon_step() = 0;
  // Before each evaluation (and checkpoint): every rank holds the same weights and buffers.
  virtual void before_evaluate(std::int64_t epochs_done) = 0;
  // Once per epoch (and per evaluation): the totals become sums over every rank. `train` is empty for an
  // evaluation alone.
  virtual void reduce_totals(EpochTotals& train, EpochTotals& test) = 0;
  // True on every rank when `local` is true on any (a stop signal reached some rank).
  virtual bool any_rank(bool local) = 0;
  // Once, before the first step: every rank starts at the same point (each found its checkpoint itself:
  // --resume auto on nodes without a shared --checkpoint-dir would not). Throws engine::Error otherwise.
  virtual void check_same_start(std::int64_t epoch, std::int64_t position) = 0;
  // --trace, for a traced batch that ends an optimizer step: trace_step_begin() right before its step span
  // opens, returning the time the all-reduces are timed from (the span begins there: Recorder::begin_at;
  // nullopt: now); trace_step_end() after the step, to put each bucket's
  // all-reduce on `recorder`'s communication track, anchored at `step_span`; trace_done() after the last
  // traced step (nothing is timed from there on). The defaults record nothing.
  virtual std::optional<std::chrono::steady_clock::time_point> trace_step_begin() { return std::nullopt; }
  virtual void trace_step_end(trace::Recorder& /*recorder*/, std::size_t /*step_span*/) {}
  virtual void trace_done() {}
};

struct TrainerHooks {
  // Makes the model's batch norms (--sync-bn); empty: layers::BatchNorm2d.
  layers::BatchNormFactory make_batchnorm;
  // Attaches data parallelism to the finished model (the Trainer owns the result and destroys it before the
  // model); empty: none. Needed for --accumulate > 1.
  std::function<std::unique_ptr<DataParallel>(layers::Model& model)> data_parallel;
  // What the data parallelism does inside a step, for --cuda-graph (apps/train/cuda_graph_policy.h): its
  // group is gloo; --sync-bn over more than one rank.
  bool gloo = false;
  bool sync_bn = false;
};

class Trainer {
 public:
  explicit Trainer(TrainConfig config, TrainerHooks hooks = {});
  ~Trainer();

  // Trains from the start (or the resumed epoch) to --epochs, or evaluates with --eval-only. Returns the
  // final test accuracy in percent.
  double run();

  // Adds an observer of the run (apps/train/run_observer.h); before run().
  void attach(std::unique_ptr<RunObserver> observer) { observers_.attach(std::move(observer)); }

  // Writes a checkpoint of where the run stands (the checkpoint policy, apps/train/observers.h, calls it from
  // its events; every rank at the same point): inside an epoch, at a step boundary, a mid-epoch one (a
  // collective); after an epoch, an end-of-epoch one. Rank 0 writes; nothing without --checkpoint-dir.
  void save_checkpoint();

  // The test set's predictions with the final weights (the average with --eval-ema), in the test set's order:
  // one more pass over it, one process (--confusion, --misclassified).
  struct Prediction {
    int truth = 0, guess = 0;
  };
  std::vector<Prediction> predict_test_set();

  layers::Model& model() { return *model_; }
  const layers::Model& model() const { return *model_; }
  const TrainDevice& device() const { return *device_; }
  const TrainConfig& config() const { return config_; }
  const TrainData& data() const { return data_; }
  DataParallel* data_parallel() const { return data_parallel_.get(); }
  std::int64_t optimizer_steps() const { return sgd_->steps(); }
  const std::vector<EpochMetrics>& history() const { return history_; }
  std::int64_t start_epoch() const { return start_epoch_; }
  // The epochs before this run (--resume: from the checkpoint's metadata) and this run's.
  std::vector<EpochMetrics> whole_history() const {
    std::vector<EpochMetrics> all = earlier_epochs_;
    all.insert(all.end(), history_.begin(), history_.end());
    return all;
  }

 private:
  // Fills epoch, lr, steps. `position`: the sampler entries of this epoch already done (a mid-epoch resume).
  EpochTotals train_epoch(std::int64_t epoch, std::int64_t position, EpochMetrics& metrics);
  std::string resolve_resume() const;  // --resume, or --resume auto's file ("" when none)
  void restore(const optim::LoadedCheckpoint& loaded, const std::string& path);
  bool vote_stop(bool at_epoch_end);  // a collective with data parallelism
  void save_mid_epoch(std::int64_t epoch, std::int64_t position, const EpochTotals& partial);
  optim::TrainingState training_state(std::int64_t epochs_done) const;  // with the run's metadata
  void write_checkpoint(const std::string& path, const optim::TrainingState& state);
  [[noreturn]] void stop(const std::string& saved);
  EpochTotals evaluate(std::int64_t epochs_done);  // this rank's share (DataParallel sums them)
  Tensor tta_logits(const data::Batch& batch);     // the weighted average of the views' logits
  EpochTotals read_totals(std::int64_t samples);   // one device-to-host read of the accumulators
  void save(std::int64_t epochs_done);
  void check_losses(std::int64_t epoch, std::int64_t first,
                    std::int64_t steps);  // CUDA: steps [first, steps)
  double train_epochs();                  // run() for training: the epochs; returns the final test accuracy
  double evaluate_only();                 // run() for --eval-only
  // Tells the observers of an evaluation's totals (over every rank); returns its accuracy.
  double report_evaluation(std::int64_t epochs_done, const EpochTotals& test, double seconds, bool alone);
  // An evaluation without an epoch (--eval-only, or a resumed run already complete), reported.
  double evaluate_alone(std::int64_t epochs_done, bool alone);
  // Captures `step` (one whole training step) into graph_ and runs it; a failure falls back to eager steps
  // (--cuda-graph auto, one rank) or ends the run naming the reason.
  void capture_step(const std::function<void()>& step, std::int64_t epoch, std::int64_t position);

  TrainConfig config_;
  TrainerHooks hooks_;
  // Rank 0's lock on --checkpoint-dir (apps/train/checkpoint_lock.h). Declared first: released last, after
  // the last checkpoint is written.
  std::unique_ptr<CheckpointDirLock> checkpoint_lock_;
  std::unique_ptr<TrainDevice> device_;
  TrainData data_;
  std::unique_ptr<layers::Model> model_;
  std::unique_ptr<DataParallel> data_parallel_;  // after model_: destroyed before it
  std::unique_ptr<optim::Sgd> sgd_;
  std::unique_ptr<optim::WeightAverage> ema_;  // --ema-every K > 0
  std::unique_ptr<optim::LrSchedule> schedule_;
  std::unique_ptr<data::Loader> train_loader_, test_loader_;
  // --tta: the extra views' loaders (the same sampler as test_loader_, one fixed view each) and their weights
  // in the average of the logits (the plain view's weight first).
  std::vector<std::unique_ptr<data::Loader>> tta_loaders_;
  std::vector<optim::ParamGroupRule> param_group_rules_;  // --param-group, parsed
  TtaPlan tta_;  // --tta's views after the plain one: tta_loaders_[v] serves tta_.views[v]
  layers::SoftmaxCrossEntropy train_loss_, test_loss_;
  Tensor accumulators_;                // 16 bytes where the logits live: double loss_sum, int64 correct
  Tensor step_losses_;                 // CUDA: pinned, one float per step of the epoch, read once per epoch
  std::vector<EpochMetrics> history_;  // this run's epochs
  std::vector<EpochMetrics> earlier_epochs_;  // the resumed checkpoint's
  std::int64_t start_epoch_ = 0;
  std::uint64_t seed_ = 0;           // the run's seed (the checkpoint's on --resume)
  std::int64_t start_position_ = 0;  // the sampler position in start_epoch_ (a mid-epoch checkpoint)
  EpochTotals resumed_totals_;       // rank 0: that epoch's sums over all ranks before the checkpoint
  std::string resumed_from_;         // the checkpoint loaded for training, or ""
  std::string mid_epoch_file_;       // the newest mid-epoch checkpoint written (removed after the next save)
  RunObservers observers_;
  RunClock* clock_ = nullptr;  // the run's timings (apps/train/run_clock.h): the first of observers_
  std::vector<float> host_step_losses_;  // CPU: this epoch's losses, per batch (EpochEnd::step_losses)
  std::span<const float> epoch_losses_;  // the last epoch's: host_step_losses_ or in step_losses_
  // Where the run stands, for save_checkpoint(): inside an epoch (its loop's counters) or after
  // `epochs_done`.
  struct Position {
    bool inside_epoch = false;
    std::int64_t epochs_done = 0;
    std::int64_t epoch = 0, position = 0, first = 0, steps = 0, samples = 0;
  } here_;
  // --cuda-graph (apps/train/cuda_graph_policy.h, apps/train/training_graph.h). Declared last: destroyed
  // first, after its last replay, while the model, optimizer and loaders it points into still exist.
  CudaGraphPlan graph_plan_;
  Tensor step_losses_device_;           // graphs: one float per step of the epoch, written at the slot
  std::int64_t graph_eager_steps_ = 0;  // eager steps so far (the warm-up before the capture)
  bool new_head_ = false;      // the model's classifier replaced (--new-head, or the checkpoint's run had it)
  bool graph_failed_ = false;  // the capture failed: eager steps for the rest of the run
  std::unique_ptr<TrainingGraph> graph_;  // null: eager steps without the step state
};

}  // namespace engine::apps
