#pragma once
// WeightAverage: an exponential moving average of a model's weights (its flat parameter buffer and its flat
// buffer of BatchNorm statistics, as airbench94 averages the whole float state dict), updated every k
// optimizer steps by one kernel per flat buffer (kernels/cpu/ema.h; cpu_fast on float32 CPU models, the CUDA
// kernel on the GPU):
//
//   ema = ema + (1 - rho) * (weights - ema),   and with lookahead: weights = ema
//
// The schedule is airbench94's: updates after optimizer step s (1-based) when s > start_step (the steps of
// the start epoch onwards) and s % every_steps == 0; the
// first such step copies the weights into the average, later ones use
//   rho(s) = decay_base ^ every_steps * (s / total_steps) ^ decay_pow
// (a weak average early, a strong one at the end). `finish_epoch()` puts the average into the weights
// (rho = 1 with copy-back), as airbench does after every epoch once the average exists.
//
// Checkpoints hold the average as "optim.ema.<state-dict name>" for every parameter and BatchNorm buffer
// (optim/checkpoint.h), so a resumed run continues it exactly; in PyTorch the averaged weights are
// {k[len("optim.ema."):]: v for k, v in sd.items() if k.startswith("optim.ema.")}.

#include <cstdint>

#include "core/execution_context.h"
#include "core/tensor.h"
#include "layers/model.h"

namespace engine::optim {

// average = average + (1 - rho) * (x - average) on any device and dtype (the kernels of kernels/*/ema),
// queued on the context's stream on CUDA. The weight average's update, and test-time augmentation's running
// mean of logits.
void accumulate_average(const ExecutionContext& ctx, const Tensor& average, const Tensor& x, double rho);

struct EmaConfig {
  std::int64_t every_steps = 5;
  std::int64_t start_step = 0;
  double decay_base = 0.95;
  double decay_pow = 3.0;
  std::int64_t total_steps = 1;
  bool lookahead = true;  // copy the average back into the weights at every update

  void validate() const;  // throws engine::Error naming the flag
};

class WeightAverage {
 public:
  // The model must be finalized and outlive this. Allocates the averages (uninitialized until the first
  // update step).
  WeightAverage(layers::Model& model, const EmaConfig& config);

  // Call after every optimizer step with the steps taken so far (Sgd::steps()). Returns true when it
  // updated (or started) the average.
  bool after_step(std::int64_t steps);
  // Once the average exists: weights = average (airbench's end-of-epoch copy). No-op before.
  void finish_epoch();
  // One update with the given decay, for tests and callers with their own schedule.
  void update(double rho, bool copy_back);
  // Swaps the weights and the average (to evaluate on the average without lookahead; swap back after).
  void swap_with_weights();

  double decay_at(std::int64_t steps) const;
  // When the run's length is known only later (steps per epoch come from the data loader).
  void set_steps(std::int64_t start_step, std::int64_t total_steps);
  bool initialized() const { return initialized_; }
  void set_initialized(bool v) { initialized_ = v; }    // a checkpoint restored the averages
  const Tensor& parameters() const { return params_; }  // flat, like Model::flat_parameters()
  const Tensor& buffers() const { return buffers_; }    // flat, like Model::flat_buffers(); may be empty
  const EmaConfig& config() const { return config_; }

 private:
  void start();
  layers::Model& model_;
  EmaConfig config_;
  Tensor params_, buffers_;
  bool initialized_ = false;
};

}  // namespace engine::optim
