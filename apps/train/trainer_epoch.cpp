#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include <fmt/format.h>

#include "apps/train/cuda_graph_policy.h"
#include "apps/train/step_state.h"
#include "apps/train/stop_signal.h"
#include "apps/train/trainer.h"
#include "apps/train/trainer_internal.h"
#include "core/error.h"
#include "core/trace.h"
#include "optim/param_groups.h"

namespace engine::apps {

using namespace trainer_internal;  // the Trainer's own helpers (trainer_internal.h)

bool Trainer::vote_stop(bool at_epoch_end) {
  const bool local = stop_requested();
  if (!data_parallel_) return local;
  const std::int64_t every = device_->context().device.is_cuda() ? kStopVoteSteps : 1;
  if (!at_epoch_end && sgd_->steps() % every != 0) return false;
  return data_parallel_->any_rank(local);
}

[[noreturn]] void Trainer::stop(const std::string& saved) {
  throw StopRequested(fmt::format("stopped by {} {}", stop_signal_name(), saved), stop_signal());
}

EpochTotals Trainer::read_totals(std::int64_t samples) {
  const Tensor host = accumulators_.to(Device::cpu(), device_->context().stream);
  EpochTotals t;
  std::memcpy(&t.loss_sum, host.data<std::uint8_t>(), 8);
  std::memcpy(&t.correct, host.data<std::uint8_t>() + 8, 8);
  t.samples = samples;
  return t;
}

void Trainer::capture_step(const std::function<void()>& step, std::int64_t epoch, std::int64_t position) {
  const std::string failed = graph_->capture(step);
  if (data_parallel_ && config_.world_size > 1) {
    // Capture is a collective property of the NCCL calls inside (every rank captures them, or none): a rank
    // whose capture failed ends the run on all, after one vote outside any graph.
    const bool anywhere = data_parallel_->any_rank(!failed.empty());
    ENGINE_CHECK(
        !anywhere, "the CUDA graph capture of the training step failed {}; run with --cuda-graph off",
        failed.empty() ? std::string("on another rank (its message says why)") : "on this rank: " + failed);
  }
  if (failed.empty()) {
    graph_->launch_captured();
    if (config_.is_main()) {
      print_line(
          fmt::format("cnn_train: CUDA graph: the training step is captured after {} eager step(s) "
                      "({} kernels, {} dropout draws) and replayed from here on",
                      graph_eager_steps_, graph_->kernel_nodes(), graph_->dropout_forwards()));
    }
    return;
  }
  ENGINE_CHECK(config_.cuda_graph != CudaGraphMode::On,
               "--cuda-graph on: the capture of the training step failed: {}", failed);
  if (config_.is_main()) print_line("cnn_train: CUDA graph off (eager steps): the capture failed: " + failed);
  graph_failed_ = true;
  // The capture may have ended inside backward, after some gradient buckets were queued: the Reducer's step
  // state goes back to the step's start before the step runs again.
  if (data_parallel_) data_parallel_->abandon_step();
  // The capture took the loader's batch on the host but ran nothing (the host state is the step's start
  // again). The augment kernel reads the batch's position from the step state, not from the loader's count,
  // so restarting the epoch's count keeps next() from running out early; then the step runs eagerly.
  train_loader_->start_epoch(static_cast<std::uint64_t>(epoch), position);
  step();
  ++graph_eager_steps_;
}

void Trainer::check_losses(std::int64_t epoch, std::int64_t first, std::int64_t steps) {
  if (!step_losses_.defined()) return;
  if (graph_) {  // the loss kernel wrote each step's loss at its slot in device memory
    step_losses_.copy_from(step_losses_device_, device_->context().stream);
    device_->synchronize();
  }
  const float* losses = step_losses_.data<float>();
  for (std::int64_t s = first; s < steps; ++s) {
    if (!std::isfinite(losses[s])) {
      throw NonFiniteLoss(fmt::format("the training loss is {} at epoch {}, step {} (of {}); stopping",
                                      losses[s], epoch + 1, s + 1, steps),
                          __FILE__, __LINE__);
    }
  }
}

EpochTotals Trainer::train_epoch(std::int64_t epoch, std::int64_t position, EpochMetrics& m) {
  const bool lr_per_step = schedule_->config().unit == optim::ScheduleUnit::Step;
  double lr = lr_per_step ? schedule_->lr_at_step(sgd_->steps()) : schedule_->lr(epoch);
  if (optim::param_groups_change_with_epoch(param_group_rules_)) {  // --param-group ...:epochs=N
    sgd_->set_groups(optim::param_groups_for(*model_, param_group_rules_, config_.weight_decay, epoch));
  }
  void* stream = device_->context().stream;
  accumulators_.fill_bytes(0, stream);
  const layers::LossAccumulators acc{reinterpret_cast<double*>(accumulators_.data<std::uint8_t>()),
                                     reinterpret_cast<std::int64_t*>(accumulators_.data<std::uint8_t>() + 8)};
  // The sampler's and augmentation's epoch; a mid-epoch resume skips the batches every rank already did.
  train_loader_->start_epoch(static_cast<std::uint64_t>(epoch), position);
  const std::int64_t per_step = config_.batch_size * config_.world_size;  // sampler entries per batch
  const std::int64_t first = position / per_step;
  const std::int64_t batches = first + train_loader_->num_batches();
  std::int64_t steps = first, samples = 0;
  host_step_losses_.clear();
  here_ = {.inside_epoch = true, .epoch = epoch, .position = position, .first = first};
  observers_.epoch_start({.epoch = epoch, .first = first, .batches = batches});
  ExecutionContext& ctx = model_->context();
  // One batch through forward, loss, backward and (when it ends an optimizer step) SGD: run eagerly, or
  // captured into the graph (then every per-step value comes from the step state graph_ published).
  auto train_batch = [&](const data::Batch& batch, std::int64_t group_size, bool ends_step) {
    layers::LossAccumulators step_acc = acc;
    if (graph_) {
      step_acc.step_losses = step_losses_device_.data<float>();
      step_acc.loss_slot = graph_->device_refs().loss_slot;
      step_acc.slots = step_losses_device_.numel();
    }
    const Tensor logits = model_->forward(batch.images, layers::Mode::Train);
    Tensor loss;
    {
      const trace::TraceScope traced("loss", [] { return std::string("loss (softmax cross-entropy)"); });
      loss = train_loss_.forward(ctx, logits, batch.labels, step_acc);
    }
    if (loss.device().is_cpu()) {
      const float value = loss.data<float>()[0];
      host_step_losses_.push_back(value);  // on the CPU the loss is on the host for free
      if (!std::isfinite(value)) {
        throw NonFiniteLoss(fmt::format("the training loss is {} at epoch {}, step {} (of {}); stopping",
                                        value, epoch + 1, steps + 1, batches),
                            __FILE__, __LINE__);
      }
    } else if (!graph_) {
      step_losses_.flat_range(steps, {1}).copy_from(loss, stream);  // queued; checked once per epoch
    }
    if (data_parallel_) data_parallel_->before_backward(ends_step);
    Tensor dlogits;
    {
      const trace::TraceScope traced("loss", [] { return std::string("loss backward"); });
      dlogits = train_loss_.backward(1.0 / static_cast<double>(group_size));
    }
    model_->backward(dlogits);
    if (data_parallel_) data_parallel_->after_backward();
    if (ends_step) {
      const trace::TraceScope traced("optimizer", [] { return std::string("SGD step"); });
      sgd_->step(lr);
      if (ema_) ema_->after_step(sgd_->steps());
    }
  };
  const std::int64_t loader_batches = train_loader_->num_batches();
  for (std::int64_t k = 0; k < loader_batches; ++k) {
    // --accumulate K: batches [g, g + K) make one optimizer step (the epoch's last group may be shorter),
    // each contributing 1/size of its loss gradient, so the step sees their mean.
    const std::int64_t group_start = steps - steps % config_.accumulate;
    const std::int64_t group_size = std::min(config_.accumulate, batches - group_start);
    const bool ends_step = steps - group_start == group_size - 1;
    if (ends_step && lr_per_step) lr = schedule_->lr_at_step(sgd_->steps());  // m.lr logs the epoch's last
    if (graph_) {
      graph_->publish(make_step_state({.epoch = static_cast<std::uint64_t>(epoch),
                                       .loader_batch = k,
                                       .batches_before = first,
                                       .batch_size = config_.batch_size,
                                       .optimizer_steps = sgd_->steps(),
                                       .dropout_offset = ctx.dropout_offset,
                                       .lr = lr}));
    }
    std::int64_t batch_samples = config_.batch_size;  // every graph step's batch is full (drop_last)
    observers_.step_begin(
        {.epoch = epoch, .batch = k, .optimizer_steps = sgd_->steps(), .ends_step = ends_step});
    data::Batch batch;  // an eager step's
    bool eager = false;
    if (graph_ && graph_->captured()) {
      graph_->replay();
    } else if (graph_ && graph_eager_steps_ >= kCudaGraphWarmupSteps && !graph_failed_) {
      capture_step(
          [&] {
            data::Batch captured;
            ENGINE_CHECK(train_loader_->next(captured),
                         "the training loader ended before batch {} of {} (a bug)", k + 1, loader_batches);
            train_batch(captured, group_size, ends_step);
          },
          epoch, position);
    } else {
      bool got = false;
      {
        const trace::TraceScope waiting(
            "data", [] { return std::string("next batch"); }, trace::Track::kData);
        got = train_loader_->next(batch);
      }
      ENGINE_CHECK(got, "the training loader ended before batch {} of {} (a bug)", k + 1, loader_batches);
      train_batch(batch, group_size, ends_step);
      batch_samples = batch.size();
      eager = true;
      ++graph_eager_steps_;
    }
    ++steps;
    samples += batch_samples;
    here_.steps = steps;
    here_.samples = samples;
    std::optional<float> host_loss;
    if (!host_step_losses_.empty()) host_loss = host_step_losses_.back();
    // A step boundary inside the epoch: do the ranks stop here? Voted before the checkpoint policy may save
    // (save_checkpoint()): a signal that comes during that save stops the run at a later step.
    const bool stopping = ends_step && steps < batches && vote_stop(false);
    observers_.step_end({.epoch = epoch,
                         .batch = k,
                         .steps = steps,
                         .first = first,
                         .batches = batches,
                         .samples = samples,
                         .optimizer_steps = sgd_->steps(),
                         .ends_step = ends_step,
                         .loss = host_loss,
                         .batch_data = eager ? &batch : nullptr});
    if (stopping) {
      observers_.stop_requested({.epoch = epoch, .optimizer_steps = sgd_->steps(), .mid_epoch = true});
      stop(config_.checkpoint_dir.empty()
               ? "(nothing saved: --checkpoint-dir is empty)"
               : fmt::format("at epoch {}, step {} of {}: {}", epoch + 1, steps, batches,
                             config_.is_main() ? "saved " + mid_epoch_file_ : "rank 0 saved the checkpoint"));
    }
  }
  if (ema_ && ema_->config().lookahead) ema_->finish_epoch();  // airbench: the average goes into the weights
  device_->synchronize();
  check_losses(epoch, first, steps);
  observers_.epoch_trained({.epoch = epoch, .steps = steps, .samples = samples});
  epoch_losses_ = step_losses_.defined() ? std::span<const float>(step_losses_.data<float>() + first,
                                                                  static_cast<std::size_t>(steps - first))
                                         : std::span<const float>(host_step_losses_);
  m.epoch = epoch + 1;
  m.lr = lr;
  m.steps = steps;
  m.batch_size = config_.batch_size;
  m.world_size = config_.world_size;
  EpochTotals totals = read_totals(samples);
  if (position > 0 && config_.is_main()) totals = totals + resumed_totals_;  // the sums before the resume
  return totals;
}

}  // namespace engine::apps
