#include <algorithm>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "apps/train/stop_signal.h"
#include "apps/train/trainer.h"
#include "apps/train/trainer_internal.h"
#include "apps/train/training_plot.h"
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

double Trainer::run() {
  const TrainConfig& c = config_;
  if (!c.eval_only.empty()) {
    const auto start = Clock::now();
    EpochTotals test = evaluate(start_epoch_);
    EpochTotals none;
    if (data_parallel_) data_parallel_->reduce_totals(none, test);
    const double n = static_cast<double>(std::max<std::int64_t>(test.samples, 1));
    const double acc = 100.0 * static_cast<double>(test.correct) / n;
    if (c.is_main()) {
      print_line(fmt::format("{} Eval | Samples: {} | Test Loss: {:.4f} | Test Acc: {:.2f}% | Time: {:.2f}s",
                             device_->label(), with_thousands(test.samples), test.loss_sum / n, acc,
                             seconds_since(start)));
      print_line(fmt::format("Test Acc: {:.2f}%", acc));
      if (!c.confusion.empty() || !c.misclassified.empty()) write_evaluation_pictures();
    }
    return acc;
  }
  install_stop_handlers();  // from here on a stop signal ends the run after a checkpoint
  std::ofstream metrics;
  if (c.is_main() && !c.metrics.empty()) {
    metrics.open(c.metrics, resumed_from_.empty() ? std::ios::trunc : std::ios::app);
    ENGINE_CHECK(metrics.good(), "--metrics '{}': cannot write the file", c.metrics);
  }
  double last_acc = 0.0;
  if (start_epoch_ >= c.epochs && c.is_main()) {
    print_line(fmt::format("cnn_train: the checkpoint has {} epochs done, --epochs is {}: nothing to train",
                           start_epoch_, c.epochs));
  }
  // Time to accuracy (benchmarks/time_to_accuracy.sh) counts from here: the data is loaded (on a GPU,
  // resident there), the model built and initialized.
  const auto run_start = Clock::now();
  for (std::int64_t epoch = start_epoch_; epoch < c.epochs; ++epoch) {
    device_->reset_peak_memory();
    const auto start = Clock::now();
    EpochMetrics m;
    const std::int64_t position = epoch == start_epoch_ ? start_position_ : 0;
    EpochTotals train = train_epoch(epoch, position, m);
    m.seconds = seconds_since(start);
    EpochTotals test = evaluate(epoch + 1);
    if (data_parallel_) data_parallel_->reduce_totals(train, test);
    const double n = static_cast<double>(std::max<std::int64_t>(train.samples, 1));
    m.train_loss = train.loss_sum / n;
    m.train_acc = 100.0 * static_cast<double>(train.correct) / n;
    const std::int64_t resumed = position > 0 ? resumed_totals_.samples : 0;  // trained before the resume
    m.images_per_second = static_cast<double>(train.samples - resumed) / std::max(m.seconds, 1e-9);
    const double tn = static_cast<double>(std::max<std::int64_t>(test.samples, 1));
    m.test_loss = test.loss_sum / tn;
    m.test_acc = 100.0 * static_cast<double>(test.correct) / tn;
    m.elapsed_seconds = seconds_since(run_start);  // the totals are on the host: the evaluation has ended
    m.memory_mb = static_cast<double>(device_->peak_memory_bytes()) / (1024.0 * 1024.0);
    m.precision = std::string(choice_name(kPrecisionChoices, c.precision));
    for (const data::Dataset* d : {&data_.train, &data_.test})
      m.bad_images_skipped += d->on_disk() ? d->source->skipped() : 0;
    // bf16 autocast: a writer of the weights that forgot the mirror is caught here, once an epoch.
    model_->check_bf16_mirror(fmt::format("epoch {}", epoch + 1));
    last_acc = m.test_acc;
    history_.push_back(m);
    if (c.is_main() || c.log_all_ranks) print_line(format_epoch_line(device_->label(), m));
    const std::int64_t done = epoch + 1;
    const bool stopping = done < c.epochs && vote_stop(true);
    if (c.is_main()) {
      if (metrics.is_open()) {
        metrics << format_metrics_json(m) << '\n';
        metrics.flush();
      }
      if (!c.checkpoint_dir.empty() && ((c.save_every > 0 && done % c.save_every == 0) || done == c.epochs ||
                                        c.resume_auto() || stopping)) {
        save(done);
      }
      if (!c.plot.empty())
        plot_or_warn(whole_history(), c.plot, fmt::format("{} on {}", model_->name(), c.dataset));
      if (tensorboard_) tensorboard_->epoch(m, sgd_->steps(), *model_);
    }
    if (stopping) {
      if (data_parallel_) data_parallel_->any_rank(false);  // nobody leaves before rank 0's file is complete
      stop(c.checkpoint_dir.empty()
               ? "(nothing saved: --checkpoint-dir is empty)"
               : fmt::format("after epoch {}: saved {}/epoch{}.safetensors", done, c.checkpoint_dir, done));
    }
  }
  if (history_.empty()) {  // a resumed run that was already complete: report its accuracy
    EpochTotals test = evaluate(start_epoch_);
    EpochTotals none;
    if (data_parallel_) data_parallel_->reduce_totals(none, test);
    last_acc = 100.0 * static_cast<double>(test.correct) /
               static_cast<double>(std::max<std::int64_t>(test.samples, 1));
  }
  if (c.is_main()) print_line(fmt::format("Test Acc: {:.2f}%", last_acc));
  if (c.is_main() && (!c.confusion.empty() || !c.misclassified.empty())) write_evaluation_pictures();
  return last_acc;
}

}  // namespace engine::apps
