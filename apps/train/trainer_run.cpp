#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "apps/train/stop_signal.h"
#include "apps/train/trainer.h"
#include "apps/train/trainer_internal.h"
#include "core/error.h"

namespace engine::apps {

using namespace trainer_internal;  // the Trainer's own helpers (trainer_internal.h)

EpochTotals Trainer::evaluate(std::int64_t epochs_done) {
  if (data_parallel_) data_parallel_->before_evaluate(epochs_done);
  void* stream = device_->context().stream;
  accumulators_.fill_bytes(0, stream);
  const layers::LossAccumulators acc{reinterpret_cast<double*>(accumulators_.data<std::uint8_t>()),
                                     reinterpret_cast<std::int64_t*>(accumulators_.data<std::uint8_t>() + 8)};
  test_loader_->start_epoch(0);
  for (const auto& loader : tta_loaders_) loader->start_epoch(0);
  // --eval-ema: the average in the weights' place for the evaluation, then back.
  const bool on_average = config_.eval_ema && ema_ && ema_->initialized();
  if (on_average) ema_->swap_with_weights();
  std::int64_t samples = 0;
  for (data::Batch batch; test_loader_->next(batch);) {
    // Inference: no layer keeps its input for a backward, and the loss computes no gradient.
    const Tensor logits =
        tta_loaders_.empty() ? model_->forward(batch.images, layers::Mode::Inference) : tta_logits(batch);
    test_loss_.evaluate(model_->context(), logits, batch.labels, acc);
    samples += batch.size();
  }
  if (on_average) ema_->swap_with_weights();
  device_->synchronize();
  return read_totals(samples);
}

Tensor Trainer::tta_logits(const data::Batch& batch) {
  WeightedViewMean mean(device_->context(), model_->forward(batch.images, layers::Mode::Inference),
                        tta_.plain_weight);
  for (std::size_t v = 0; v < tta_loaders_.size(); ++v) {
    data::Batch view;
    const bool got = tta_loaders_[v]->next(view);
    ENGINE_CHECK(got && view.size() == batch.size(),
                 "--tta: view {} ran out of step with the test set (a bug)", v + 1);
    mean.add(model_->forward(view.images, layers::Mode::Inference), tta_.views[v].weight);
  }
  return mean.mean();
}

double Trainer::report_evaluation(std::int64_t epochs_done, const EpochTotals& test, double seconds,
                                  bool alone) {
  const double n = static_cast<double>(std::max<std::int64_t>(test.samples, 1));
  const double acc = 100.0 * static_cast<double>(test.correct) / n;
  observers_.evaluation_end({.epochs_done = epochs_done,
                             .samples = test.samples,
                             .loss = test.loss_sum / n,
                             .accuracy = acc,
                             .seconds = seconds,
                             .alone = alone});
  return acc;
}

double Trainer::evaluate_alone(std::int64_t epochs_done, bool alone) {
  const auto start = Clock::now();
  EpochTotals test = evaluate(epochs_done);
  EpochTotals none;
  if (data_parallel_) data_parallel_->reduce_totals(none, test);
  return report_evaluation(epochs_done, test, seconds_since(start), alone);
}

double Trainer::run() {
  double acc = 0.0;
  try {
    acc = config_.eval_only.empty() ? train_epochs() : evaluate_only();
  } catch (...) {
    observers_.run_end({.test_acc = 0.0, .completed = false});
    throw;
  }
  observers_.run_end({.test_acc = acc, .completed = true});
  return acc;
}

double Trainer::evaluate_only() {
  observers_.run_start(
      {.config = config_, .start_epoch = start_epoch_, .optimizer_steps = sgd_->steps(), .eval_only = true});
  return evaluate_alone(start_epoch_, true);
}

double Trainer::train_epochs() {
  const TrainConfig& c = config_;
  install_stop_handlers();  // from here on a stop signal ends the run after a checkpoint
  // Time to accuracy (benchmarks/time_to_accuracy.sh) counts from here (clock_, apps/train/run_clock.h): the
  // data is loaded (on a GPU, resident there), the model built and initialized.
  observers_.run_start({.config = c,
                        .start_epoch = start_epoch_,
                        .optimizer_steps = sgd_->steps(),
                        .resumed = !resumed_from_.empty()});
  double last_acc = 0.0;
  for (std::int64_t epoch = start_epoch_; epoch < c.epochs; ++epoch) {
    device_->reset_peak_memory();
    EpochMetrics m;
    const std::int64_t position = epoch == start_epoch_ ? start_position_ : 0;
    EpochTotals train = train_epoch(epoch, position, m);
    m.seconds = clock_->epoch_seconds();
    const auto evaluation_start = Clock::now();
    EpochTotals test = evaluate(epoch + 1);
    if (data_parallel_) data_parallel_->reduce_totals(train, test);
    report_evaluation(epoch + 1, test, seconds_since(evaluation_start), false);
    const double n = static_cast<double>(std::max<std::int64_t>(train.samples, 1));
    m.train_loss = train.loss_sum / n;
    m.train_acc = 100.0 * static_cast<double>(train.correct) / n;
    const std::int64_t resumed = position > 0 ? resumed_totals_.samples : 0;  // trained before the resume
    m.images_per_second = static_cast<double>(train.samples - resumed) / std::max(m.seconds, 1e-9);
    const double tn = static_cast<double>(std::max<std::int64_t>(test.samples, 1));
    m.test_loss = test.loss_sum / tn;
    m.test_acc = 100.0 * static_cast<double>(test.correct) / tn;
    m.elapsed_seconds = clock_->elapsed_seconds();  // to the end of the evaluation just reported
    m.memory_mb = static_cast<double>(device_->peak_memory_bytes()) / (1024.0 * 1024.0);
    m.precision = std::string(choice_name(kPrecisionChoices, c.precision));
    for (const data::Dataset* d : {&data_.train, &data_.test})
      m.bad_images_skipped += d->on_disk() ? d->source->skipped() : 0;
    // bf16 autocast: a writer of the weights that forgot the mirror is caught here, once an epoch.
    model_->check_bf16_mirror(fmt::format("epoch {}", epoch + 1));
    last_acc = m.test_acc;
    history_.push_back(m);
    const std::int64_t done = epoch + 1;
    here_ = {.inside_epoch = false, .epochs_done = done};
    const bool stopping = done < c.epochs && vote_stop(true);
    observers_.epoch_end(
        {.metrics = m, .optimizer_steps = sgd_->steps(), .step_losses = epoch_losses_, .stopping = stopping});
    if (stopping) {
      observers_.stop_requested({.epoch = epoch, .optimizer_steps = sgd_->steps(), .mid_epoch = false});
      if (data_parallel_) data_parallel_->any_rank(false);  // nobody leaves before rank 0's file is complete
      stop(c.checkpoint_dir.empty()
               ? "(nothing saved: --checkpoint-dir is empty)"
               : fmt::format("after epoch {}: saved {}/epoch{}.safetensors", done, c.checkpoint_dir, done));
    }
  }
  // A resumed run that was already complete: its accuracy.
  if (history_.empty()) last_acc = evaluate_alone(start_epoch_, false);
  return last_acc;
}

}  // namespace engine::apps
