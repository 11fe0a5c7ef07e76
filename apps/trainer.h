#pragma once
// Trainer: one process's training run, as cnn_train drives it.
//
//   setup (constructor)  device, data, model, optimizer, schedule, loaders; --resume/--eval-only checkpoint.
//                        Every error here is bad input (cnn_train exits 2).
//   run()                for each epoch: sampler/augmentation epoch set, forward, loss, backward,
//                        [hooks.after_backward], SGD step; the loss sum and correct count accumulate where
//                        the logits live and are read once per epoch; evaluation over every test sample
//                        exactly once; [hooks.reduce_totals]; the log line, --metrics, checkpoints, --plot.
//                        Errors here are failures while running (exit 1); a NaN/Inf loss is NonFiniteLoss,
//                        naming the epoch and the step.
//
// The seam for DistributedDataParallel (dist/): the launcher sets TrainConfig::world_size/rank/device_index
// (the samplers shard by them, only rank 0 logs and saves), registers the Reducer on the model's grad-ready
// hook (model()), waits for its all-reduces in hooks.after_backward, and sums the epoch totals across ranks
// in hooks.reduce_totals. Nothing else in the loop knows about processes.

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "apps/epoch_log.h"
#include "apps/train_config.h"
#include "apps/train_data.h"
#include "apps/train_device.h"
#include "data/loader.h"
#include "layers/model.h"
#include "layers/softmax_cross_entropy.h"
#include "optim/checkpoint.h"
#include "optim/lr_schedule.h"
#include "optim/sgd.h"

namespace engine::apps {

// The sums behind an epoch's loss and accuracy: over this process's samples until reduce_totals runs.
struct EpochTotals {
  double loss_sum = 0.0;
  std::int64_t correct = 0;
  std::int64_t samples = 0;
};

// A NaN or Inf training loss: the run stops (exit 1).
class NonFiniteLoss : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TrainerHooks {
  std::function<void(layers::Model& model)> after_backward;                  // before every optimizer step
  std::function<void(EpochTotals& train, EpochTotals& test)> reduce_totals;  // once per epoch
};

class Trainer {
 public:
  explicit Trainer(TrainConfig config, TrainerHooks hooks = {});
  ~Trainer();

  // Trains from the start (or the resumed epoch) to --epochs, or evaluates with --eval-only. Returns the
  // final test accuracy in percent.
  double run();

  layers::Model& model() { return *model_; }
  const TrainDevice& device() const { return *device_; }
  const TrainConfig& config() const { return config_; }
  const std::vector<EpochMetrics>& history() const { return history_; }
  std::int64_t start_epoch() const { return start_epoch_; }

 private:
  EpochTotals train_epoch(std::int64_t epoch, EpochMetrics& metrics);  // fills epoch, lr, steps
  EpochTotals evaluate();
  EpochTotals read_totals(std::int64_t samples);  // one device-to-host read of the accumulators
  void save(std::int64_t epochs_done);
  void check_losses(std::int64_t epoch, std::int64_t steps);  // CUDA: the epoch's per-step losses

  TrainConfig config_;
  TrainerHooks hooks_;
  std::unique_ptr<TrainDevice> device_;
  TrainData data_;
  std::unique_ptr<layers::Model> model_;
  std::unique_ptr<optim::Sgd> sgd_;
  std::unique_ptr<optim::LrSchedule> schedule_;
  std::unique_ptr<data::Loader> train_loader_, test_loader_;
  layers::SoftmaxCrossEntropy train_loss_, test_loss_;
  Tensor accumulators_;  // 16 bytes where the logits live: double loss_sum, int64 correct
  Tensor step_losses_;   // CUDA: pinned, one float per step of the epoch, read once per epoch
  std::vector<EpochMetrics> history_;
  std::int64_t start_epoch_ = 0;
  std::uint64_t seed_ = 0;  // the run's seed (the checkpoint's on --resume)
};

}  // namespace engine::apps
