// The run's log lines (apps/train/observers.h): the epoch line (apps/train/epoch_log.h) and, on rank 0, what
// a run says before its first epoch and after its last.

#include <fmt/format.h>

#include "apps/train/observers.h"
#include "apps/train/progress_bar.h"
#include "apps/train/train_config.h"
#include "apps/train/trainer.h"

namespace engine::apps {

namespace {

class EpochLogObserver final : public RunObserver {
 public:
  EpochLogObserver(std::string device_label, bool epoch_lines_only)
      : label_(std::move(device_label)), epoch_lines_only_(epoch_lines_only) {}

  void run_start(const RunStart& e) override {
    if (epoch_lines_only_ || e.eval_only || e.start_epoch < e.config.epochs) return;
    print_log_line(
        fmt::format("cnn_train: the checkpoint has {} epochs done, --epochs is {}: nothing to train",
                    e.start_epoch, e.config.epochs));
  }

  void evaluation_end(const EvaluationEnd& e) override {
    if (epoch_lines_only_ || !e.alone) return;
    print_log_line(
        fmt::format("{} Eval | Samples: {} | Test Loss: {:.4f} | Test Acc: {:.2f}% | Time: {:.2f}s", label_,
                    with_thousands(e.samples), e.loss, e.accuracy, e.seconds));
  }

  void epoch_end(const EpochEnd& e) override { print_log_line(format_epoch_line(label_, e.metrics)); }

  void run_end(const RunEnd& e) override {
    if (epoch_lines_only_ || !e.completed) return;
    print_log_line(fmt::format("Test Acc: {:.2f}%", e.test_acc));
  }

 private:
  std::string label_;
  bool epoch_lines_only_;
};

}  // namespace

std::unique_ptr<RunObserver> make_epoch_log_observer(const Trainer& trainer, bool epoch_lines_only) {
  return std::make_unique<EpochLogObserver>(trainer.device().label(), epoch_lines_only);
}

}  // namespace engine::apps
