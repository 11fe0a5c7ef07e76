// The progress bar of an epoch's steps (apps/train/progress_bar.h) as an observer (apps/train/observers.h):
// made at each epoch's start, erased after its last step (before the evaluation) and when the run ends.

#include <memory>

#include "apps/train/observers.h"
#include "apps/train/progress_bar.h"

namespace engine::apps {

namespace {

class ProgressBarObserver final : public RunObserver {
 public:
  void epoch_start(const EpochStart& e) override {
    bar_ = std::make_unique<ProgressBar>(e.batches, e.first, /*enabled=*/true);
  }

  void step_end(const StepEnd& e) override {
    if (!bar_) return;
    if (e.loss) bar_->add_loss(*e.loss);  // on the CPU the loss is on the host for free
    bar_->update(e.steps, e.samples);
    if (e.steps == e.batches) clear();
  }

  void run_end(const RunEnd& /*e*/) override { clear(); }

 private:
  void clear() {
    if (bar_) bar_->clear();
    bar_.reset();
  }

  std::unique_ptr<ProgressBar> bar_;
};

}  // namespace

std::unique_ptr<RunObserver> make_progress_bar_observer() { return std::make_unique<ProgressBarObserver>(); }

}  // namespace engine::apps
