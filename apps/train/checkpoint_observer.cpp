// The checkpoint policy (apps/train/observers.h): when Trainer::save_checkpoint() runs. After an epoch every
// --save-every N epochs, after the last, after every one with --resume auto; inside an epoch every
// --save-every-steps K optimizer steps (at a step boundary that is not the epoch's end); on a stop, where the
// run stands, unless that was just saved. Attached on every rank: a mid-epoch save is a collective.

#include "apps/train/observers.h"
#include "apps/train/train_config.h"
#include "apps/train/trainer.h"

namespace engine::apps {

namespace {

class CheckpointObserver final : public RunObserver {
 public:
  explicit CheckpointObserver(Trainer& trainer) : trainer_(trainer), c_(trainer.config()) {}

  void step_end(const StepEnd& e) override {
    if (e.ends_step && e.steps < e.batches && c_.save_every_steps > 0 &&
        e.optimizer_steps % c_.save_every_steps == 0) {
      save(e.optimizer_steps);
    }
  }

  void epoch_end(const EpochEnd& e) override {
    const std::int64_t done = e.metrics.epoch;
    if ((c_.save_every > 0 && done % c_.save_every == 0) || done == c_.epochs || c_.resume_auto())
      save(e.optimizer_steps);
  }

  void stop_requested(const StopEvent& e) override {
    if (saved_at_ != e.optimizer_steps) save(e.optimizer_steps);
  }

 private:
  void save(std::int64_t optimizer_steps) {
    trainer_.save_checkpoint();
    saved_at_ = optimizer_steps;
  }

  Trainer& trainer_;
  const TrainConfig& c_;
  std::int64_t saved_at_ = -1;  // the optimizer step of the last save
};

}  // namespace

std::unique_ptr<RunObserver> make_checkpoint_observer(Trainer& trainer) {
  return std::make_unique<CheckpointObserver>(trainer);
}

}  // namespace engine::apps
