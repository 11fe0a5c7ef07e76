// --tensorboard DIR (apps/train/observers.h, apps/train/tensorboard_log.h): a new run's first batch as the
// model saw it, the step losses on the --tensorboard-every grid (one loss per optimizer step: not with
// --accumulate > 1), and per epoch its numbers, histograms and gradient norms.

#include <memory>

#include "apps/train/observers.h"
#include "apps/train/tensorboard_log.h"
#include "apps/train/train_config.h"
#include "apps/train/trainer.h"

namespace engine::apps {

namespace {

class TensorboardObserver final : public RunObserver {
 public:
  explicit TensorboardObserver(const Trainer& trainer)
      : trainer_(trainer),
        tensorboard_(std::make_unique<TensorboardLog>(
            trainer.config().tensorboard, trainer.optimizer_steps() + 1, trainer.config().tensorboard_every)),
        samples_pending_(trainer.optimizer_steps() == 0) {}  // a new run: its first batch is drawn

  void step_end(const StepEnd& e) override {
    if (!samples_pending_ || e.batch_data == nullptr) return;
    const TrainData& data = trainer_.data();  // what the model sees: the augmented batch
    tensorboard_->samples(*e.batch_data, data.mean, data.std, data.train.class_names,
                          trainer_.device().context().stream);
    samples_pending_ = false;
  }

  void epoch_end(const EpochEnd& e) override {
    if (trainer_.config().accumulate == 1) {  // one loss per optimizer step
      const auto step_before = e.optimizer_steps - static_cast<std::int64_t>(e.step_losses.size());
      tensorboard_->step_losses(step_before + 1, e.step_losses);
    }
    tensorboard_->epoch(e.metrics, e.optimizer_steps, trainer_.model());
  }

 private:
  const Trainer& trainer_;
  std::unique_ptr<TensorboardLog> tensorboard_;
  bool samples_pending_;
};

}  // namespace

std::unique_ptr<RunObserver> make_tensorboard_observer(const Trainer& trainer) {
  return std::make_unique<TensorboardObserver>(trainer);
}

}  // namespace engine::apps
